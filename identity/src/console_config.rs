//! `[console]`: where the approval console listens, the https names a
//! browser reaches it by, and whose certificate it serves.
//!
//! The console's origin is `https://<first name>:<port>`; by default the
//! one name is [`CONSOLE_NAME`] (`console.localhost`), which browsers
//! resolve to loopback themselves. Every page link (the CLI's, the MCP
//! head's, a notification's) is built here, so all of them name the same
//! origin, which is also the passkeys' default origin.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::console_pki::CONSOLE_NAME;

/// The console of an installation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleConfig {
    /// `addr`: the port every name is served on, and one more address to
    /// listen on besides those the names resolve to.
    pub addr: SocketAddr,
    /// `names`: lowercase DNS names; the first is the origin's host
    /// (default: `console.localhost` alone).
    pub names: Vec<String>,
    /// `cert` and `key`: the operator's own certificate chain and key
    /// (PEM) for the names; `None`: the installation's console CA issues
    /// one (`pki/console.pem`).
    pub own_cert: Option<(PathBuf, PathBuf)>,
    /// `mdns`: the console answers for its `.local` names itself, over
    /// multicast DNS on the network of `addr`, with `addr`'s address (a
    /// phone on the same network then needs no DNS set up); without it a
    /// `.local` name is looked up like any other.
    pub mdns: bool,
}

/// The `[console]` section as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConsoleSection {
    addr: Option<String>,
    names: Option<Vec<String>>,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    mdns: Option<bool>,
}

impl ConsoleConfig {
    /// The section checked: an IP:port with a specific address, DNS names,
    /// and both of `cert` and `key` or neither (anchored to `root`).
    pub(crate) fn from_section(
        section: ConsoleSection,
        default_addr: &str,
        root: &Path,
    ) -> Result<ConsoleConfig, String> {
        let text = section.addr.unwrap_or_else(|| default_addr.to_owned());
        let addr = text
            .parse::<SocketAddr>()
            .map_err(|_| format!("console.addr {text:?} is not an IP:port address"))?;
        let names = section
            .names
            .unwrap_or_else(|| vec![CONSOLE_NAME.to_owned()]);
        if names.is_empty() {
            return Err("console.names must name at least one host name".into());
        }
        for name in &names {
            if !is_dns_name(name) {
                return Err(format!(
                    "console.names entry {name:?} is not a lowercase DNS name (an https name a browser opens; IP addresses are not accepted, as passkeys need a name)"
                ));
            }
        }
        let own_cert = match (section.cert, section.key) {
            (None, None) => None,
            (Some(cert), Some(key)) => Some((anchor(root, cert), anchor(root, key))),
            _ => return Err("console.cert and console.key go together".into()),
        };
        let mdns = section.mdns.unwrap_or(false);
        if mdns {
            check_mdns(addr, &names)?;
        }
        Ok(ConsoleConfig {
            addr,
            names,
            own_cert,
            mdns,
        })
    }

    /// What keeps the console from advertising itself over multicast DNS
    /// (`mdns` on, with an address given by `--listen`, say), if anything.
    pub fn check_mdns(&self) -> Result<(), String> {
        if self.mdns {
            check_mdns(self.addr, &self.names)
        } else {
            Ok(())
        }
    }

    /// The names the console advertises over multicast DNS itself: its
    /// `.local` names when `mdns` is on, none otherwise.
    pub fn mdns_names(&self) -> Vec<&str> {
        if !self.mdns {
            return Vec::new();
        }
        self.names
            .iter()
            .map(String::as_str)
            .filter(|n| is_mdns_name(n))
            .collect()
    }

    /// The console's origin: `https://<first name>:<port>` (without the
    /// port on 443, as browsers serialize an origin on https's default).
    pub fn origin(&self) -> String {
        self.origin_of(&self.names[0])
    }

    /// Every origin the console is served at, one per name.
    pub fn origins(&self) -> Vec<String> {
        self.names.iter().map(|n| self.origin_of(n)).collect()
    }

    fn origin_of(&self, name: &str) -> String {
        match self.addr.port() {
            443 => format!("https://{name}"),
            port => format!("https://{name}:{port}"),
        }
    }

    /// The console's page of proposal `id`: every byte of `id` outside the
    /// URL's unreserved characters percent-encoded, so no id can leave its
    /// path segment.
    pub fn proposal_url(&self, id: &str) -> String {
        let mut url = format!("{}/proposals/", self.origin());
        for byte in id.bytes() {
            if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
                url.push(char::from(byte));
            } else {
                url.push_str(&format!("%{byte:02X}"));
            }
        }
        url
    }
}

/// With `mdns` on: a `.local` name to advertise, and an address on a
/// network to advertise it on (multicast does not run over loopback, and a
/// phone could not reach a loopback address anyway).
fn check_mdns(addr: SocketAddr, names: &[String]) -> Result<(), String> {
    if !names.iter().any(|n| is_mdns_name(n)) {
        return Err(format!(
            "console.mdns advertises the console's .local names, and console.names ({}) has none; add one such as \"laptop.local\" (first, if a phone is to use it)",
            names.join(", ")
        ));
    }
    if addr.ip().is_loopback() {
        return Err(format!(
            "console.mdns advertises the console on a network, and console.addr {addr} is loopback; set it to this computer's address on the phone's network (for example 192.168.1.20:{})",
            addr.port()
        ));
    }
    Ok(())
}

/// One label below `local` (`laptop.local`): what multicast DNS resolves.
fn is_mdns_name(name: &str) -> bool {
    name.strip_suffix(".local")
        .is_some_and(|label| !label.is_empty() && !label.contains('.'))
}

/// A lowercase DNS name of at least two labels (`console.localhost`).
fn is_dns_name(name: &str) -> bool {
    name.len() <= 253
        && name.contains('.')
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
        && name.parse::<std::net::IpAddr>().is_err()
}

fn anchor(root: &Path, path: PathBuf) -> PathBuf {
    if path.is_absolute() {
        path
    } else {
        root.join(path)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn section(text: &str) -> Result<ConsoleConfig, String> {
        let section: ConsoleSection = toml::from_str(text).unwrap();
        ConsoleConfig::from_section(section, "127.0.0.1:7444", Path::new("/h"))
    }

    #[test]
    fn the_default_console_is_console_localhost_over_https() {
        let c = section("").unwrap();
        assert_eq!(c.origin(), "https://console.localhost:7444");
        assert_eq!(
            c.proposal_url("../x?y#z é"),
            "https://console.localhost:7444/proposals/..%2Fx%3Fy%23z%20%C3%A9"
        );
        assert_eq!(c.own_cert, None);
    }

    #[test]
    fn on_443_the_origin_has_no_port_as_browsers_write_it() {
        let c = section(
            "addr = \"0.0.0.0:443\"\nnames = [\"laptop.example.net\", \"console.localhost\"]\n",
        )
        .unwrap();
        assert_eq!(c.origin(), "https://laptop.example.net");
        assert_eq!(
            c.origins(),
            ["https://laptop.example.net", "https://console.localhost"]
        );
        assert_eq!(
            c.proposal_url("prop_1"),
            "https://laptop.example.net/proposals/prop_1"
        );
    }

    #[test]
    fn mdns_needs_a_local_name_and_an_address_on_a_network() {
        let c = section("addr = \"192.168.1.20:7444\"\nnames = [\"laptop.local\", \"console.localhost\", \"a.b.local\"]\nmdns = true\n").unwrap();
        assert!(c.mdns);
        assert_eq!(c.mdns_names(), ["laptop.local"]);
        assert_eq!(c.origin(), "https://laptop.local:7444");
        assert_eq!(c.check_mdns(), Ok(()));
        // Off: a .local name is looked up like any other.
        let c = section("names = [\"laptop.local\"]\n").unwrap();
        assert!(!c.mdns);
        assert!(c.mdns_names().is_empty());
        assert_eq!(
            section("addr = \"192.168.1.20:7444\"\nmdns = true\n").unwrap_err(),
            "console.mdns advertises the console's .local names, and console.names (console.localhost) has none; add one such as \"laptop.local\" (first, if a phone is to use it)"
        );
        assert_eq!(
            section("names = [\"laptop.local\"]\nmdns = true\n").unwrap_err(),
            "console.mdns advertises the console on a network, and console.addr 127.0.0.1:7444 is loopback; set it to this computer's address on the phone's network (for example 192.168.1.20:7444)"
        );
        let mut listening_on_loopback =
            section("addr = \"10.0.0.2:7444\"\nnames = [\"laptop.local\"]\nmdns = true\n").unwrap();
        listening_on_loopback.addr = "[::1]:7444".parse().unwrap();
        assert!(
            listening_on_loopback
                .check_mdns()
                .unwrap_err()
                .contains("[::1]:7444 is loopback")
        );
    }

    #[test]
    fn names_must_be_dns_names_and_cert_goes_with_key() {
        for (text, why) in [
            ("names = []", "at least one"),
            ("names = [\"127.0.0.1\"]", "not a lowercase DNS name"),
            ("names = [\"Console.Example\"]", "not a lowercase DNS name"),
            ("names = [\"localhost\"]", "not a lowercase DNS name"),
            ("cert = \"c.pem\"", "go together"),
            ("addr = \"console:7444\"", "not an IP:port"),
        ] {
            let e = section(text).unwrap_err();
            assert!(e.contains(why), "{text}: {e}");
        }
        let c = section("names = [\"approve.example.org\", \"console.localhost\"]\ncert = \"c.pem\"\nkey = \"/k.pem\"").unwrap();
        assert_eq!(c.origin(), "https://approve.example.org:7444");
        assert_eq!(
            c.own_cert,
            Some((PathBuf::from("/h/c.pem"), PathBuf::from("/k.pem")))
        );
    }
}
