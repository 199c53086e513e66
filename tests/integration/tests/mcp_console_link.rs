//! How the MCP head points a person at the web console, end to end with
//! the real binaries, driven by `tests/e2e/mcp_console_link.py` (the
//! official MCP Python SDK as the client, pexpect for the person's
//! terminal): a client that declared URL-mode elicitation is asked to open
//! `http://<console addr>/proposals/<id>` and its `accept` approves
//! nothing; an approval a person makes while it is asked runs once; a
//! client without the capability gets the link in the result only.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[test]
fn a_client_asked_to_open_the_console_approves_nothing_by_answering() {
    countersign_integration_tests::run_e2e_script("mcp_console_link.py");
}
