//! The target of a `webhook` effect: a URL parsed strictly into scheme,
//! host, port and path, so that the registry and the gate agree on where a
//! proof is sent. This module only parses; it must not resolve names or
//! open connections.

use std::net::IpAddr;

/// Longest webhook URL accepted, in bytes.
pub const MAX_URL_BYTES: usize = 2048;

/// A parsed webhook URL: `https://host[:port][/path][?query]` or the same
/// with `http://`. No user information, no fragment, no whitespace or
/// control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookUrl {
    https: bool,
    host: String,
    port: u16,
    path_and_query: String,
}

impl WebhookUrl {
    /// Parses `text`; the error is a sentence naming what is wrong.
    pub fn parse(text: &str) -> Result<WebhookUrl, String> {
        if text.len() > MAX_URL_BYTES {
            return Err(format!("is longer than {MAX_URL_BYTES} bytes"));
        }
        if let Some(c) = text.chars().find(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!(
                "contains the whitespace or control character U+{:04X}",
                u32::from(c)
            ));
        }
        if !text.is_ascii() {
            return Err("contains a non-ASCII character (write it percent-encoded)".into());
        }
        let (https, rest) = if let Some(rest) = text.strip_prefix("https://") {
            (true, rest)
        } else if let Some(rest) = text.strip_prefix("http://") {
            (false, rest)
        } else {
            return Err("must start with https:// (or http:// to a loopback host)".into());
        };
        if rest.contains('#') {
            return Err("must not contain a fragment (#)".into());
        }
        let split = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(split);
        if authority.contains('@') {
            return Err("must not contain user information (@)".into());
        }
        let (host, port) = split_host_port(authority)?;
        let port = match port {
            Some(port) => port,
            None if https => 443,
            None => 80,
        };
        let path_and_query = if path.starts_with('/') {
            path.to_owned()
        } else {
            format!("/{path}")
        };
        Ok(WebhookUrl {
            https,
            host,
            port,
            path_and_query,
        })
    }

    /// True for `https://`.
    pub fn is_https(&self) -> bool {
        self.https
    }

    /// The host: a DNS name, an IPv4 address, or an IPv6 address without
    /// brackets.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port (443 or 80 when the URL names none).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The path and query sent in the request line (at least `/`).
    pub fn path_and_query(&self) -> &str {
        &self.path_and_query
    }

    /// The `Host` header value: the host (IPv6 in brackets) and the port.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// True when the host is a loopback IP address literal (`127.0.0.0/8`,
    /// `::1`). A name, `localhost` included, is not: it would go to the
    /// system resolver, and where that answers `::1` first, another local
    /// user listening on `[::1]:<port>` would receive the request.
    pub fn is_loopback(&self) -> bool {
        self.host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }

    /// For a plain `http://` URL that may not be used, why: plain http goes
    /// only to a loopback IP literal. `None` for https and for plain http
    /// to a loopback IP literal. The reason names the fix.
    pub fn plain_http_refusal(&self) -> Option<String> {
        if self.https || self.is_loopback() {
            return None;
        }
        if is_localhost_name(&self.host) {
            return Some(format!(
                "plain http:// to {:?} is refused: a name goes to the system resolver, and another local user listening on the address it answers (such as [::1]:{port}) would receive the request; write the loopback address, http://127.0.0.1:{port}{path} (or http://[::1]:{port}{path} if the receiver listens there)",
                self.host,
                port = self.port,
                path = self.path_and_query,
            ));
        }
        Some(format!(
            "plain http:// is allowed only to a loopback IP address (127.0.0.1 or [::1]), not {:?}",
            self.host
        ))
    }
}

/// `localhost`, `localhost.` or a name under `.localhost`: names that
/// usually mean loopback but are answered by the resolver, not by us.
fn is_localhost_name(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    host == "localhost" || host.ends_with(".localhost")
}

fn split_host_port(authority: &str) -> Result<(String, Option<u16>), String> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let Some((v6, after)) = rest.split_once(']') else {
            return Err("has an unclosed [ in its host".into());
        };
        if v6.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!("host [{v6}] is not an IPv6 address"));
        }
        let port = match after {
            "" => None,
            _ => Some(
                after
                    .strip_prefix(':')
                    .ok_or("has text after its IPv6 host")?,
            ),
        };
        (v6.to_owned(), port)
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host.to_owned(), Some(port)),
            None => (authority.to_owned(), None),
        }
    };
    if host.is_empty() {
        return Err("has no host".into());
    }
    let name_ok = host.contains(':')
        || host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.'));
    if !name_ok {
        return Err(format!("host {host:?} is not a DNS name or an IP address"));
    }
    let port = match port {
        None => None,
        Some(port) => match port.parse::<u16>() {
            Ok(p) if p > 0 && port.bytes().all(|b| b.is_ascii_digit()) => Some(p),
            _ => return Err(format!("port {port:?} is not 1..=65535")),
        },
    };
    Ok((host, port))
}
