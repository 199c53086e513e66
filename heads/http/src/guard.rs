//! The Host, Origin and `Sec-Fetch-Site` guards, before anything else
//! runs (the API, MCP over HTTP and the console), with their own error.
//!
//! A browser page on another site, or one that reached a loopback port
//! through DNS rebinding, sends a `Host` that is not ours, an `Origin` that
//! is not ours, or `Sec-Fetch-Site: cross-site`; each is refused, and each
//! head answers the refusal with 403 in its own format. Programs that send
//! no `Origin` and no `Sec-Fetch-Site` are unaffected.
//!
//! Must not: authenticate, render a head's body, or know a route.
use std::net::SocketAddr;

use axum::extract::Request;
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::respond::ApiError;
use axum::http::header::{HOST, ORIGIN};

/// A request the guards refused: what was wrong (no secret, no header
/// value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Forbidden(pub &'static str);

/// The `Host` values this server answers to, and the scheme its own
/// pages' `Origin` has.
#[derive(Debug, Clone)]
pub struct AllowedHosts {
    hosts: Vec<String>,
    origin_scheme: &'static str,
}

impl AllowedHosts {
    /// A plain-HTTP server: the bound address itself, and `localhost` when
    /// it is loopback.
    pub fn for_addr(addr: SocketAddr) -> Self {
        let port = addr.port();
        let mut hosts = vec![match addr {
            SocketAddr::V4(a) => format!("{}:{port}", a.ip()),
            SocketAddr::V6(a) => format!("[{}]:{port}", a.ip()),
        }];
        if addr.ip().is_loopback() {
            hosts.push(format!("localhost:{port}"));
        }
        Self {
            hosts,
            origin_scheme: "http://",
        }
    }

    /// A plain-HTTP server on a Unix socket: clients name no port, and
    /// send `Host: localhost` (curl's `--unix-socket` does).
    pub fn unix_socket() -> Self {
        Self {
            hosts: vec!["localhost".to_owned()],
            origin_scheme: "http://",
        }
    }

    /// An https server reached only by `names` on `port` (the console):
    /// an IP address or another name in `Host` is refused, and so is an
    /// `Origin` that is not `https://` one of them. On 443, https's
    /// default port, a browser names the host without the port, and
    /// either form is allowed.
    pub fn https_names(names: &[String], port: u16) -> Self {
        let mut hosts: Vec<String> = names.iter().map(|n| format!("{n}:{port}")).collect();
        if port == 443 {
            hosts.extend(names.iter().cloned());
        }
        Self {
            hosts,
            origin_scheme: "https://",
        }
    }

    fn allows(&self, host: &str) -> bool {
        self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host))
    }
}

/// The guards as a middleware (`axum::middleware::from_fn`): a refused
/// request is answered 403 here and goes no further.
pub async fn guarded(hosts: AllowedHosts, req: Request, next: Next) -> Response {
    match check(req.headers(), &hosts) {
        Ok(()) => next.run(req).await,
        Err(Forbidden(why)) => ApiError::Forbidden(why).into_response(),
    }
}
/// Refuse a request that is cross-site or not addressed to us.
pub fn check(headers: &HeaderMap, hosts: &AllowedHosts) -> Result<(), Forbidden> {
    let mut host_values = headers.get_all(HOST).iter();
    let host = match (host_values.next(), host_values.next()) {
        (Some(h), None) => h
            .to_str()
            .map_err(|_| Forbidden("the Host header is not ASCII"))?,
        (None, _) => return Err(Forbidden("a Host header is required")),
        (Some(_), Some(_)) => return Err(Forbidden("more than one Host header")),
    };
    if !hosts.allows(host) {
        return Err(Forbidden(
            "the Host header does not name this server (DNS rebinding?)",
        ));
    }
    if let Some(origin) = headers.get(ORIGIN) {
        let same = origin
            .to_str()
            .ok()
            .and_then(|o| o.strip_prefix(hosts.origin_scheme))
            .is_some_and(|o| hosts.allows(o));
        if !same {
            return Err(Forbidden("cross-origin requests are refused"));
        }
    }
    if let Some(site) = headers.get("sec-fetch-site")
        && !matches!(site.as_bytes(), b"same-origin" | b"none")
    {
        return Err(Forbidden(
            "cross-site requests are refused (Sec-Fetch-Site)",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn allows_same_origin_and_plain_programs_and_refuses_the_rest() {
        let hosts = AllowedHosts::for_addr("127.0.0.1:8787".parse().unwrap());
        assert!(check(&headers(&[("host", "127.0.0.1:8787")]), &hosts).is_ok());
        assert!(
            check(
                &headers(&[
                    ("host", "localhost:8787"),
                    ("origin", "http://localhost:8787"),
                    ("sec-fetch-site", "same-origin")
                ]),
                &hosts
            )
            .is_ok()
        );
        for bad in [
            headers(&[]),
            headers(&[("host", "evil.example:8787")]),
            headers(&[("host", "127.0.0.1:8787"), ("host", "127.0.0.1:8787")]),
            headers(&[
                ("host", "127.0.0.1:8787"),
                ("origin", "https://evil.example"),
            ]),
            headers(&[("host", "127.0.0.1:8787"), ("origin", "null")]),
            headers(&[("host", "127.0.0.1:8787"), ("sec-fetch-site", "cross-site")]),
            headers(&[("host", "127.0.0.1:8787"), ("sec-fetch-site", "same-site")]),
        ] {
            assert!(matches!(check(&bad, &hosts), Err(Forbidden(_))), "{bad:?}");
        }
    }

    #[test]
    fn an_https_server_answers_to_its_names_and_its_https_origin_only() {
        let hosts = AllowedHosts::https_names(&["console.localhost".to_owned()], 7444);
        let ours = ("host", "console.localhost:7444");
        assert!(check(&headers(&[ours]), &hosts).is_ok());
        assert!(
            check(
                &headers(&[ours, ("origin", "https://console.localhost:7444")]),
                &hosts
            )
            .is_ok()
        );
        for (bad, why) in [
            (headers(&[("host", "127.0.0.1:7444")]), "DNS rebinding"),
            (headers(&[("host", "localhost:7444")]), "DNS rebinding"),
            (
                headers(&[("host", "console.localhost:7445")]),
                "DNS rebinding",
            ),
            // The same host over plain http, or on another port, is another origin.
            (
                headers(&[ours, ("origin", "http://console.localhost:7444")]),
                "cross-origin",
            ),
            (
                headers(&[ours, ("origin", "https://console.localhost:7445")]),
                "cross-origin",
            ),
        ] {
            let refused = check(&bad, &hosts).unwrap_err();
            assert!(format!("{refused:?}").contains(why), "{refused:?}");
        }
    }

    #[test]
    fn on_443_a_host_and_origin_without_the_port_are_the_consoles() {
        let hosts = AllowedHosts::https_names(&["laptop.example.net".to_owned()], 443);
        for host in ["laptop.example.net", "laptop.example.net:443"] {
            let ok = headers(&[("host", host), ("origin", "https://laptop.example.net")]);
            assert!(check(&ok, &hosts).is_ok(), "{host}");
        }
        let other = headers(&[("host", "other.example.net")]);
        assert!(check(&other, &hosts).is_err());
        // Off 443 the port is part of the host, as before.
        let hosts = AllowedHosts::https_names(&["laptop.example.net".to_owned()], 7444);
        assert!(check(&headers(&[("host", "laptop.example.net")]), &hosts).is_err());
    }
}
