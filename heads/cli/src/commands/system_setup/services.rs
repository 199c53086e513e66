//! The units of the hardened installation: enabled and started through
//! systemd when it runs (PID 1), else said plainly not to be, with the
//! commands that start the same programs as their users. Never claims a
//! service runs that it did not see run.

use std::path::Path;
use std::process::Command;

/// The units `setup` enables and starts, in order: the premise service
/// before the signer, the console after it.
pub(super) const STARTED: [&str; 3] = [
    "countersign-premise.service",
    "countersign-signer.service",
    "countersign-console.service",
];

/// The units left off until they are configured (notifications' channels,
/// the gateway's upstreams).
pub(super) const LEFT_OFF: [&str; 2] =
    ["countersign-notify.service", "countersign-gateway.service"];

/// What became of the units.
pub(super) enum Units {
    /// systemd runs: these were enabled or started now (empty: all already were).
    Systemd { changed: Vec<String> },
    /// systemd does not run: nothing was started.
    NoSystemd { why: String },
}

/// Whether systemd is the service manager (its own test: the directory it
/// creates at boot).
fn systemd_runs() -> bool {
    Path::new("/run/systemd/system").is_dir()
}

fn systemctl(args: &[&str]) -> Result<std::process::Output, String> {
    Command::new("systemctl")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run systemctl: {e}"))
}

/// Enables and starts [`STARTED`] if systemd runs; otherwise says why not.
pub(super) fn start() -> Result<Units, String> {
    if !systemd_runs() {
        let pid1 = std::fs::read_to_string("/proc/1/comm").unwrap_or_default();
        return Ok(Units::NoSystemd {
            why: format!(
                "systemd is not running on this host (PID 1 is {}), so no unit was enabled or started",
                pid1.trim()
            ),
        });
    }
    let installed = |unit: &str| {
        [
            "/etc/systemd/system",
            "/lib/systemd/system",
            "/usr/lib/systemd/system",
        ]
        .iter()
        .any(|dir| Path::new(dir).join(unit).is_file())
    };
    if let Some(missing) = STARTED.iter().find(|unit| !installed(unit)) {
        return Err(format!(
            "{missing} is not installed (the package installs the units; a source installation \
             copies them from deploy/systemd, docs/hardened-installation.md); the homes are made, \
             nothing was started"
        ));
    }
    let mut changed = Vec::new();
    systemctl(&["daemon-reload"])?;
    for unit in STARTED {
        let enabled = systemctl(&["is-enabled", "--quiet", unit])?
            .status
            .success();
        let active = systemctl(&["is-active", "--quiet", unit])?.status.success();
        if enabled && active {
            continue;
        }
        let out = systemctl(&["enable", "--now", unit])?;
        if !out.status.success() {
            return Err(format!(
                "systemctl enable --now {unit}: {} (see `journalctl -u {unit}`)",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        if !systemctl(&["is-active", "--quiet", unit])?.status.success() {
            return Err(format!(
                "{unit} did not stay active (see `systemctl status {unit}` and `journalctl -u {unit}`)"
            ));
        }
        changed.push(format!("{unit}: enabled and started"));
    }
    Ok(Units::Systemd { changed })
}

/// The commands that run what the units run, as their users, for a host
/// without systemd (none of the units' sandboxing applies then).
pub(super) fn by_hand(bin: &Path) -> String {
    let bin = bin.display();
    format!(
        "  install -d -m 0755 -o countersign-premise -g countersign-premise /run/countersign-premise\n\
         \x20 setpriv --reuid=countersign-premise --regid=countersign-premise --init-groups -- \
         {bin}/countersign-premise serve --socket /run/countersign-premise/premise.sock --client-user countersign &\n\
         \x20 setpriv --reuid=countersign --regid=countersign --init-groups -- \
         {bin}/countersign-signer serve --home /var/lib/countersign/home &\n\
         \x20 setpriv --reuid=countersign --regid=countersign --init-groups -- \
         {bin}/countersign --home /var/lib/countersign/home console &\n"
    )
}
