//! Who recorded an intent: the process, named so that another process on
//! the same machine can tell whether it is still alive. An intent's lease
//! (its effect's timeout plus a margin) keeps reconcile and a person's
//! resolution away while its head may still be running the effect; when
//! the owner is known to be gone (same boot, same PID namespace, and no
//! process with that PID and start time), nothing can still be running it,
//! so the lease no longer holds anyone back.
//!
//! Must not: declare an owner dead on anything but positive evidence. Any
//! doubt (another machine, another boot or PID namespace, `/proc`
//! unreadable, an owner written before owners were kept) leaves the lease
//! in force.

use std::sync::OnceLock;

/// This process as an owner: `v1 <boot id> <pid namespace> <pid> <start
/// time>`, or `""` if `/proc` does not say.
pub(crate) fn current() -> &'static str {
    static CURRENT: OnceLock<String> = OnceLock::new();
    CURRENT.get_or_init(|| {
        let pid = std::process::id();
        match (machine(), start_time(pid)) {
            (Some((boot, namespace)), Some(start)) => {
                format!("v1 {boot} {namespace} {pid} {start}")
            }
            _ => String::new(),
        }
    })
}

/// Whether `owner` is known to have exited: recorded on this machine in
/// this boot and PID namespace, and no process now has its PID and start
/// time.
pub(crate) fn known_dead(owner: &str) -> bool {
    let mut parts = owner.split(' ');
    let (Some("v1"), Some(boot), Some(namespace), Some(pid), Some(start), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return false;
    };
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    let Some((my_boot, my_namespace)) = machine() else {
        return false;
    };
    if boot != my_boot || namespace != my_namespace {
        return false;
    }
    match start_time(pid) {
        // No such process: gone.
        None => !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        // Another process reuses the PID: the owner is gone.
        Some(now) => now != start,
    }
}

/// This boot's id and this process's PID namespace.
fn machine() -> Option<(String, String)> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let namespace = std::fs::read_link("/proc/self/ns/pid").ok()?;
    let namespace = namespace.to_str()?.to_string();
    let boot = boot.trim();
    (!boot.is_empty() && !boot.contains(' ') && !namespace.contains(' '))
        .then(|| (boot.to_string(), namespace))
}

/// Field 22 of `/proc/<pid>/stat` (start time in clock ticks since boot).
fn start_time(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold anything;
    // the fields after its closing parenthesis start at field 3.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_finished_child_is_known_dead() {
        let me = current();
        assert!(me.starts_with("v1 "), "{me:?}");
        assert!(!known_dead(me));
        let mut child = std::process::Command::new("true")
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        let pid = child.id();
        let start = start_time(pid);
        let _ = child.wait();
        if let (Some((boot, namespace)), Some(start)) = (machine(), start) {
            assert!(known_dead(&format!("v1 {boot} {namespace} {pid} {start}")));
        }
    }

    #[test]
    fn doubt_is_never_death() {
        for owner in [
            "",
            "v0 a b 1 2",
            "v1 otherboot pid:[1] 1 2",
            "v1 a b notapid 2",
        ] {
            assert!(!known_dead(owner), "{owner:?}");
        }
    }
}
