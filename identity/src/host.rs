//! This host's name, as the processes of two-host installations name
//! themselves in the ledger (a signer's published keys, a chore's lease
//! holder): informational only, never trusted for anything.

/// This host's name (`/proc/sys/kernel/hostname`), or `host` if it has none.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".to_owned())
}
