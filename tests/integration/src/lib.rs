//! countersign's end-to-end tests live in `tests/`: each one runs real
//! signers (in process, over mTLS) and real heads (the CLI in process, the
//! `countersign` binary as a process, the API over TCP, MCP over stdio),
//! on both ledger backends where a ledger is involved. This library only
//! finds the binaries they run, and runs the Python scripts of `tests/e2e/`
//! against them.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The path of the workspace binary `name` (`countersign`,
/// `countersign-signer`) of the profile these tests were built with:
/// beside the `deps/` directory that holds the test executable. Build
/// them first (`cargo build --workspace --bins`, as `scripts/test` does).
///
/// # Panics
/// If the binary is not there: the message says how to build it.
pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("current_exe: {e}"));
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .unwrap_or_else(|| panic!("{} is not under target/<profile>/deps", exe.display()));
    let path = profile_dir.join(name);
    assert!(
        path.is_file(),
        "{} is not built: run `cargo build --workspace --bins` first",
        path.display()
    );
    path
}

/// Run `tests/e2e/<script>` with `python3` against the built `countersign`
/// and `countersign-signer` (`COUNTERSIGN_BIN`), outside any configured
/// home or session (`scripts/test` installs the Python tools from
/// `tests/requirements.txt`).
///
/// # Panics
/// If the binaries are not built, `python3` does not run, or the script
/// fails: the message carries its output.
pub fn run_e2e_script(script: &str) {
    let cli = bin("countersign");
    bin("countersign-signer");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let output = Command::new("python3")
        .arg(root.join("tests/e2e").join(script))
        .env("COUNTERSIGN_BIN", &cli)
        .env_remove("COUNTERSIGN_HOME")
        .env_remove("COUNTERSIGN_SESSION")
        .output()
        .unwrap_or_else(|e| panic!("python3 runs (scripts/test installs the test tools): {e}"));
    assert!(
        output.status.success(),
        "{script} failed:\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A free loopback TCP port: bound to `127.0.0.1:0`, then released.
///
/// # Panics
/// If no port can be bound.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap_or_else(|e| panic!("free port: {e}"))
        .port()
}
