//! The approval console in a real browser (Debian's Chromium, headless,
//! through chromedriver and Selenium; `scripts/test` installs them), driven
//! by `tests/e2e/console_browser.py` against the real binaries, with the
//! official MCP Python SDK as the agent. See the script for the flow; with
//! `COUNTERSIGN_SCREENSHOTS=DIR` it also writes the book's screenshots
//! (`docs/console-*.png`).

#[test]
fn a_person_supervises_an_mcp_agent_from_the_browser_alone() {
    countersign_integration_tests::run_e2e_script("console_browser.py");
}
