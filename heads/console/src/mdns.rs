//! `[console] mdns`: the console answers for its `.local` names itself,
//! over multicast DNS (RFC 6762), so a phone on the same network reaches
//! it with no DNS set up.
//!
//! Each `.local` name is a host name answered with the console's address
//! (`addr`) and nothing else, and an `_https._tcp` service instance
//! (`countersign console on <label>`) names it with the console's port,
//! for browsers of services. Multicast is sent
//! and answered on the one interface that carries `addr`, never on
//! loopback or another network the computer is on. What is advertised is
//! what anyone on that network could learn by connecting: a name, an
//! address and a port; the console still serves only HTTPS, with its
//! certificate for that name, to paired browsers.
//!
//! Must not: advertise on any other interface, or any address but `addr`.

use std::net::IpAddr;
use std::time::Duration;

use countersign_identity::ConsoleConfig;
use mdns_sd::{DaemonEvent, IfKind, ServiceDaemon, ServiceInfo};

/// The DNS-SD service type the console registers under.
const SERVICE_TYPE: &str = "_https._tcp.local.";
/// How long dropping an advertisement waits for its goodbye to be sent.
const GOODBYE_WAIT: Duration = Duration::from_secs(1);

/// The console's names, answered for over multicast DNS until dropped
/// (which says goodbye: the names' records are withdrawn from caches).
pub struct Advertisement {
    daemon: ServiceDaemon,
    services: Vec<String>,
    names: Vec<String>,
    addr: IpAddr,
}

impl std::fmt::Debug for Advertisement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Advertisement")
            .field("names", &self.names)
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Advertisement {
    /// The names answered for.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The one address they are answered with.
    pub fn addr(&self) -> IpAddr {
        self.addr
    }
}

/// Answer for `console`'s `.local` names with its address and port (the
/// port it listens on: after binding port 0 it is known), if `mdns` is on;
/// `None` otherwise.
pub fn advertise(console: &ConsoleConfig) -> Result<Option<Advertisement>, String> {
    let names: Vec<String> = console
        .mdns_names()
        .into_iter()
        .map(str::to_owned)
        .collect();
    if names.is_empty() {
        return Ok(None);
    }
    console.check_mdns()?;
    let addr = console.addr.ip();
    let fail = |e: mdns_sd::Error| format!("cannot advertise the console over mDNS: {e}");
    let daemon = ServiceDaemon::new().map_err(fail)?;
    // Selections apply in order: nothing, then the interface of `addr`.
    daemon.disable_interface(IfKind::All).map_err(fail)?;
    daemon.enable_interface(IfKind::Addr(addr)).map_err(fail)?;
    let events = daemon.monitor().map_err(fail)?;
    let mut services = Vec::new();
    for name in &names {
        let info = ServiceInfo::new(
            SERVICE_TYPE,
            // An instance name without dots, which some browsers of
            // services take for label separators.
            &format!("countersign console on {}", name.trim_end_matches(".local")),
            &format!("{name}."),
            addr,
            console.addr.port(),
            &[("path", "/")][..],
        )
        .map_err(fail)?;
        services.push(info.get_fullname().to_owned());
        daemon.register(info).map_err(fail)?;
    }
    std::thread::Builder::new()
        .name("console-mdns-events".into())
        .spawn(move || {
            while let Ok(event) = events.recv() {
                report(&event);
            }
        })
        .map_err(|e| format!("cannot advertise the console over mDNS: {e}"))?;
    tracing::info!(names = %names.join(", "), %addr, port = console.addr.port(), "console advertised over mDNS");
    Ok(Some(Advertisement {
        daemon,
        services,
        names,
        addr,
    }))
}

/// What a person running the console should hear of: another device
/// answering for the name (the responder then answers under another one,
/// which the console's certificate does not name) and errors.
fn report(event: &DaemonEvent) {
    match event {
        DaemonEvent::NameChange(change) => tracing::warn!(
            name = %change.original.trim_end_matches('.'),
            "another device on the network answers for the console's mDNS name, so this console is not advertised under it; a phone may reach that device instead: choose another name in [console] names"
        ),
        DaemonEvent::Error(e) => tracing::warn!(error = %e, "mDNS advertisement"),
        _ => {}
    }
}

impl Drop for Advertisement {
    fn drop(&mut self) {
        for service in &self.services {
            if let Ok(done) = self.daemon.unregister(service) {
                let _ = done.recv_timeout(GOODBYE_WAIT);
            }
        }
        if let Ok(done) = self.daemon.shutdown() {
            let _ = done.recv_timeout(GOODBYE_WAIT);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn console(addr: &str, mdns: bool) -> ConsoleConfig {
        ConsoleConfig {
            addr: addr.parse().unwrap(),
            names: vec!["laptop.local".into()],
            own_cert: None,
            mdns,
        }
    }

    #[test]
    fn nothing_is_advertised_without_mdns_or_on_loopback() {
        assert!(
            advertise(&console("10.1.2.3:7444", false))
                .unwrap()
                .is_none()
        );
        assert_eq!(
            advertise(&console("127.0.0.1:7444", true)).unwrap_err(),
            "console.mdns advertises the console on a network, and console.addr 127.0.0.1:7444 is loopback; set it to this computer's address on the phone's network (for example 192.168.1.20:7444)"
        );
    }
}
