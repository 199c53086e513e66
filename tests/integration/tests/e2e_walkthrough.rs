//! End to end with the real `countersign` and `countersign-signer` binaries
//! and a real pseudo-terminal, driven by Python scripts under `tests/e2e/`
//! (pexpect drives the terminal; `scripts/test` installs the Python tools
//! from `tests/requirements.txt` and builds both binaries first):
//!
//! - `walkthrough.py`: the README's walk-through.
//! - `mcp_flow.py`: the MCP head driven by the official MCP Python SDK, with
//!   a person approving at the terminal, and no proof in any tool result,
//!   error or TRACE log.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

/// Run `tests/e2e/<script>` against the built binaries; fail with its output.
fn run_script(script: &str) {
    let cli = countersign_integration_tests::bin("countersign");
    countersign_integration_tests::bin("countersign-signer");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let output = Command::new("python3")
        .arg(root.join("tests/e2e").join(script))
        .env("COUNTERSIGN_BIN", &cli)
        .env_remove("COUNTERSIGN_HOME")
        .env_remove("COUNTERSIGN_SESSION")
        .output()
        .expect("python3 runs (scripts/test installs the test tools)");
    assert!(
        output.status.success(),
        "{script} failed:\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn readme_walkthrough_with_real_binaries_and_terminal() {
    run_script("walkthrough.py");
}

#[test]
fn an_mcp_client_proposes_and_executes_only_what_a_person_approved_and_never_sees_a_proof() {
    run_script("mcp_flow.py");
}
