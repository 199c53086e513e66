//! The approval console in a real browser (Debian's Chromium, headless,
//! through chromedriver and Selenium; `scripts/test` installs them), driven
//! by `tests/e2e/console_browser.py` against the real binaries, with the
//! official MCP Python SDK as the agent. See the script for the flow.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

#[test]
fn a_person_supervises_an_mcp_agent_from_the_browser_alone() {
    let cli = countersign_integration_tests::bin("countersign");
    countersign_integration_tests::bin("countersign-signer");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut command = Command::new("python3");
    command
        .arg(root.join("tests/e2e/console_browser.py"))
        .env("COUNTERSIGN_BIN", &cli)
        .env_remove("COUNTERSIGN_HOME")
        .env_remove("COUNTERSIGN_SESSION");
    if let Some(dir) = std::env::var_os("COUNTERSIGN_SCREENSHOTS") {
        command.env("COUNTERSIGN_SCREENSHOTS", dir);
    }
    let output = command
        .output()
        .expect("python3 runs (scripts/test installs the test tools)");
    assert!(
        output.status.success(),
        "console_browser.py failed:\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
