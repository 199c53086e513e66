//! The README's walk-through, end to end, with the real `countersign` and
//! `countersign-signer` binaries and a real pseudo-terminal: see
//! `tests/e2e/walkthrough.py` (pexpect drives the terminal; `scripts/test`
//! installs it and builds both binaries first).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

#[test]
fn readme_walkthrough_with_real_binaries_and_terminal() {
    let cli = Path::new(env!("CARGO_BIN_EXE_countersign"));
    let signer = cli.with_file_name("countersign-signer");
    assert!(
        signer.is_file(),
        "{} is missing: run `cargo build --workspace --bins` first (scripts/test does)",
        signer.display()
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let output = Command::new("python3")
        .arg(root.join("tests/e2e/walkthrough.py"))
        .env("COUNTERSIGN_BIN", cli)
        .env_remove("COUNTERSIGN_HOME")
        .env_remove("COUNTERSIGN_SESSION")
        .output()
        .expect("python3 runs (scripts/test installs pexpect)");
    assert!(
        output.status.success(),
        "walkthrough failed:\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
