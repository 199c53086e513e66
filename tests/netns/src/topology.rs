//! The hosts: one network namespace each, a veth pair into a bridge in the
//! root namespace, addresses in a /24 of 10/8 of their own. The root
//! namespace holds the bridge's address (the gateway), so the process that
//! built the topology reaches every host, and runs whatever sits between
//! them (a [`crate::DelayProxy`]).

use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// Prefix of every namespace this module creates: `csn-<pid>_<n>-<host>`.
const NS_PREFIX: &str = "csn-";
/// Prefix of the bridges: `csb<pid>_<n>`.
const BRIDGE_PREFIX: &str = "csb";

/// Why these hosts cannot be built here (not root, no `ip`), if so.
pub fn unavailable() -> Option<String> {
    let root = std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false);
    if !root {
        return Some("network namespaces need root".into());
    }
    match Command::new("ip").arg("-V").output() {
        Ok(out) if out.status.success() => None,
        _ => Some("`ip` (iproute2) is not installed".into()),
    }
}

/// One host: a network namespace with one address.
#[derive(Debug)]
pub struct Host {
    name: String,
    netns: String,
    addr: Ipv4Addr,
}

impl Host {
    /// The name the topology was given for it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The network namespace's name (for `ip netns exec`).
    pub fn netns(&self) -> &str {
        &self.netns
    }

    /// Its address on the bridge.
    pub fn addr(&self) -> Ipv4Addr {
        self.addr
    }

    /// Takes this host's link to the bridge down (`false`: the host is
    /// cut off, as a host that died or was partitioned away: what is sent
    /// to it is dropped, nothing answers) or up again.
    pub fn set_link(&self, up: bool) -> Result<(), String> {
        let state = if up { "up" } else { "down" };
        ip(&["-n", &self.netns, "link", "set", "eth0", state])
    }

    /// `program` to be run inside this host: `ip netns exec <ns> program`.
    /// Only the network is the host's; the file system, users and process
    /// ids are the machine's.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.netns]).arg(program);
        command
    }
}

/// Hosts on one bridge; removed on drop.
#[derive(Debug)]
pub struct Topology {
    bridge: String,
    gateway: Ipv4Addr,
    hosts: Vec<Host>,
}

impl Topology {
    /// Build one host per name, `.2`, `.3`, ... of a fresh /24 whose `.1`
    /// is the bridge in the root namespace.
    pub fn create(names: &[&str]) -> Result<Topology, String> {
        if let Some(why) = unavailable() {
            return Err(why);
        }
        if names.len() > 9 {
            return Err("at most 9 hosts (interface names are short)".into());
        }
        remove_leftovers();
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed) % 10;
        let tag = format!("{}_{n}", std::process::id());
        let prefix = free_prefix(std::process::id(), n)?;
        let gateway = Ipv4Addr::new(10, prefix.0, prefix.1, 1);
        let mut topology = Topology {
            bridge: format!("{BRIDGE_PREFIX}{tag}"),
            gateway,
            hosts: Vec::new(),
        };
        // From here on, drop removes whatever was created.
        ip(&["link", "add", &topology.bridge, "type", "bridge"])?;
        ip(&[
            "addr",
            "add",
            &format!("{gateway}/24"),
            "dev",
            &topology.bridge,
        ])?;
        ip(&["link", "set", &topology.bridge, "up"])?;
        for (i, name) in names.iter().enumerate() {
            let host = Host {
                name: (*name).to_string(),
                netns: format!("{NS_PREFIX}{tag}-{name}"),
                addr: Ipv4Addr::new(10, prefix.0, prefix.1, 2 + i as u8),
            };
            ip(&["netns", "add", &host.netns])?;
            topology.hosts.push(host);
            let host = &topology.hosts[i];
            let outside = format!("csv{tag}{i}");
            ip(&[
                "link",
                "add",
                &outside,
                "type",
                "veth",
                "peer",
                "name",
                "eth0",
                "netns",
                &host.netns,
            ])?;
            ip(&["link", "set", &outside, "master", &topology.bridge, "up"])?;
            let ns = host.netns.as_str();
            ip(&[
                "-n",
                ns,
                "addr",
                "add",
                &format!("{}/24", host.addr),
                "dev",
                "eth0",
            ])?;
            ip(&["-n", ns, "link", "set", "eth0", "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        Ok(topology)
    }

    /// The host named `name`.
    ///
    /// # Panics
    /// If the topology has no such host (a test's mistake).
    pub fn host(&self, name: &str) -> &Host {
        self.hosts
            .iter()
            .find(|h| h.name == name)
            .unwrap_or_else(|| panic!("no host {name:?} in this topology"))
    }

    /// The bridge's address, in the root namespace: where a proxy run by
    /// this process listens for the hosts.
    pub fn gateway(&self) -> Ipv4Addr {
        self.gateway
    }

    /// The hosts' network, `10.x.y.0/24` (for `pg_hba.conf`).
    pub fn cidr(&self) -> String {
        let [a, b, c, _] = self.gateway.octets();
        format!("{a}.{b}.{c}.0/24")
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        for host in &self.hosts {
            remove_namespace(&host.netns);
        }
        let _ = ip(&["link", "del", &self.bridge]);
    }
}

/// Run `ip args`; its stderr on failure.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Kill what still runs inside `netns`, then delete it (which deletes its
/// end of the veth pair, and with it the other end).
fn remove_namespace(netns: &str) {
    if let Ok(out) = Command::new("ip").args(["netns", "pids", netns]).output() {
        for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            let _ = Command::new("kill").args(["-KILL", pid]).output();
        }
    }
    let _ = ip(&["netns", "del", netns]);
}

/// A `(x, y)` for `10.x.y.0/24` derived from the process id and the
/// topology's number, skipping any prefix that is already routed here.
fn free_prefix(pid: u32, n: u32) -> Result<(u8, u8), String> {
    let start = (pid.wrapping_mul(10).wrapping_add(n)) & 0xffff;
    for step in 0..64u32 {
        let x = (start + step * 10) & 0xffff;
        let (a, b) = ((x >> 8) as u8, (x & 0xff) as u8);
        let routed = Command::new("ip")
            .args(["route", "show", "to", "match", &format!("10.{a}.{b}.1")])
            .output()
            .map(|out| {
                String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .any(|l| !l.starts_with("default"))
            })
            .unwrap_or(true);
        if !routed {
            return Ok((a, b));
        }
    }
    Err("no free 10.x.y.0/24 on this machine".into())
}

/// Remove the namespaces and bridges of processes that no longer exist.
fn remove_leftovers() {
    let owner_gone = |rest: &str| {
        rest.split('_')
            .next()
            .and_then(|pid| pid.parse::<u32>().ok())
            .is_some_and(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
    };
    if let Ok(out) = Command::new("ip").args(["netns", "list"]).output() {
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let name = line.split_whitespace().next().unwrap_or_default();
            if let Some(rest) = name.strip_prefix(NS_PREFIX)
                && owner_gone(rest)
            {
                remove_namespace(name);
            }
        }
    }
    if let Ok(out) = Command::new("ip")
        .args(["-o", "link", "show", "type", "bridge"])
        .output()
    {
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let name = line.split(": ").nth(1).unwrap_or_default();
            if let Some(rest) = name.strip_prefix(BRIDGE_PREFIX)
                && owner_gone(rest)
            {
                let _ = ip(&["link", "del", name]);
            }
        }
    }
}
