//! Where the console listens: every address its names resolve to, on one
//! port, or nowhere.
//!
//! A port is not a boundary between the users of a host, and a browser
//! tries each address a name resolves to (Chromium resolves `*.localhost`
//! to `::1` and `127.0.0.1` itself, and tries `::1` first). Were one of
//! them left free, another user could listen there and be the console to
//! the person's browser. So the console binds all of them and refuses to
//! start, naming the address, when any one is taken. An address the host
//! does not have (`::1` with IPv6 off) cannot be taken by anyone and is
//! skipped.

use std::io::ErrorKind;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use countersign_identity::ConsoleConfig;
use tokio::net::TcpListener;

/// Why the console did not start listening.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BindError {
    /// `[console] addr` names no specific address.
    #[error(
        "console address {0} names no specific address; name the one to listen on (for example 127.0.0.1:7444)"
    )]
    Unspecified(SocketAddr),
    /// A name did not resolve.
    #[error("the console name {name:?} does not resolve: {error}")]
    Resolve {
        /// The name.
        name: String,
        /// The resolver's answer.
        error: String,
    },
    /// Another program listens on one of the addresses.
    #[error(
        "{0} is already taken by another program: a browser that resolves a console name to it would reach that program instead, so the console does not start; stop it (`ss -ltnp 'sport = :{port}'` shows it) or choose another port",
        port = .0.port()
    )]
    Taken(SocketAddr),
    /// Listening failed otherwise.
    #[error("cannot listen on {addr}: {error}")]
    Other {
        /// The address.
        addr: SocketAddr,
        /// What the system said.
        error: String,
    },
}

/// Every address the console must hold: its configured address first,
/// then each address its names resolve to (`*.localhost`: both loopback
/// addresses, as browsers resolve them; a name the console advertises
/// over multicast DNS itself: `addr`'s, the one it advertises), each once.
pub async fn addresses(console: &ConsoleConfig) -> Result<Vec<IpAddr>, BindError> {
    if console.addr.ip().is_unspecified() {
        return Err(BindError::Unspecified(console.addr));
    }
    let mut all = vec![console.addr.ip()];
    let advertised = console.mdns_names();
    for name in &console.names {
        if advertised.contains(&name.as_str()) {
            continue;
        }
        let resolved: Vec<IpAddr> = if is_localhost(name) {
            vec![
                IpAddr::V6(Ipv6Addr::LOCALHOST),
                IpAddr::V4(Ipv4Addr::LOCALHOST),
            ]
        } else {
            tokio::net::lookup_host((name.as_str(), console.addr.port()))
                .await
                .map_err(|e| BindError::Resolve {
                    name: name.clone(),
                    error: e.to_string(),
                })?
                .map(|a| a.ip())
                .collect()
        };
        for ip in resolved {
            if !all.contains(&ip) {
                all.push(ip);
            }
        }
    }
    Ok(all)
}

/// Listen on every address of [`addresses`] on the console's port (a port
/// of 0 picks one, the same for all), or on none.
pub async fn bind_all(console: &ConsoleConfig) -> Result<Vec<TcpListener>, BindError> {
    let mut port = console.addr.port();
    let mut listeners = Vec::new();
    for ip in addresses(console).await? {
        let addr = SocketAddr::new(ip, port);
        match TcpListener::bind(addr).await {
            Ok(listener) => {
                if port == 0 {
                    port = listener
                        .local_addr()
                        .map_err(|e| BindError::Other {
                            addr,
                            error: e.to_string(),
                        })?
                        .port();
                }
                listeners.push(listener);
            }
            Err(e) if e.kind() == ErrorKind::AddrInUse => return Err(BindError::Taken(addr)),
            // This host has no such address (IPv6 off): nobody can listen there.
            Err(e) if e.kind() == ErrorKind::AddrNotAvailable && !listeners.is_empty() => {
                tracing::info!(%addr, "the console skips an address this host does not have");
            }
            Err(e) => {
                return Err(BindError::Other {
                    addr,
                    error: e.to_string(),
                });
            }
        }
    }
    Ok(listeners)
}

/// `localhost` or a name below it: loopback, resolved by browsers themselves.
fn is_localhost(name: &str) -> bool {
    name == "localhost" || name.ends_with(".localhost")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn console(addr: &str) -> ConsoleConfig {
        ConsoleConfig {
            addr: addr.parse().unwrap(),
            names: vec!["console.localhost".into()],
            own_cert: None,
            mdns: false,
        }
    }

    #[tokio::test]
    async fn console_localhost_is_held_on_both_loopback_addresses() {
        let listeners = bind_all(&console("127.0.0.1:0")).await.unwrap();
        let addrs: Vec<SocketAddr> = listeners.iter().map(|l| l.local_addr().unwrap()).collect();
        assert_eq!(addrs[0].ip(), IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert!(addrs.iter().all(|a| a.port() == addrs[0].port()));
        // ::1 too, wherever this host has it.
        if std::net::TcpListener::bind("[::1]:0").is_ok() {
            assert_eq!(addrs.len(), 2, "{addrs:?}");
            assert_eq!(addrs[1].ip(), IpAddr::V6(Ipv6Addr::LOCALHOST));
        }
    }

    #[tokio::test]
    async fn an_advertised_local_name_is_held_on_addr_and_not_looked_up() {
        let mut c = console("10.1.2.3:7444");
        c.names = vec!["nowhere-at-all.local".into(), "console.localhost".into()];
        // Looked up like any name without mdns: this host does not resolve it.
        assert!(matches!(
            addresses(&c).await.unwrap_err(),
            BindError::Resolve { name, .. } if name == "nowhere-at-all.local"
        ));
        c.mdns = true;
        assert_eq!(
            addresses(&c).await.unwrap(),
            [
                IpAddr::V4(Ipv4Addr::new(10, 1, 2, 3)),
                IpAddr::V6(Ipv6Addr::LOCALHOST),
                IpAddr::V4(Ipv4Addr::LOCALHOST)
            ]
        );
    }

    #[tokio::test]
    async fn a_taken_address_is_named_and_nothing_listens() {
        let Ok(squatter) = std::net::TcpListener::bind("[::1]:0") else {
            return; // no IPv6 on this host: nobody can take ::1 either
        };
        let port = squatter.local_addr().unwrap().port();
        let refused = bind_all(&console(&format!("127.0.0.1:{port}")))
            .await
            .unwrap_err();
        assert_eq!(
            refused,
            BindError::Taken(format!("[::1]:{port}").parse().unwrap())
        );
        assert!(refused.to_string().contains("already taken"), "{refused}");
        // 127.0.0.1 was let go again.
        std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
        assert_eq!(
            bind_all(&console("0.0.0.0:7444")).await.unwrap_err(),
            BindError::Unspecified("0.0.0.0:7444".parse().unwrap())
        );
    }
}
