//! countersign's end-to-end tests live in `tests/`: each one runs real
//! signers (in process, over mTLS) and real heads (the CLI in process, the
//! `countersign` binary as a process, the API over TCP, MCP over stdio),
//! on both ledger backends where a ledger is involved. This library only
//! finds the binaries they run.
#![forbid(unsafe_code)]

use std::path::PathBuf;

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
