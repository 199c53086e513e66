//! Passkey approvals in a real browser (Debian's Chromium, headless, with
//! CDP virtual authenticators), driven by `tests/e2e/console_passkeys.py`
//! against the real binaries with the official MCP Python SDK as the
//! agent: the first passkey enrolled with the administrator's one-time
//! code, approvals with user verification that the MCP head executes once,
//! and every forgery the script lists refused with nothing applied.

#[test]
fn a_person_approves_with_a_passkey_and_nothing_else_approves() {
    countersign_integration_tests::run_e2e_script("console_passkeys.py");
}
