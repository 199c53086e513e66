//! End to end with the real `countersign` and `countersign-signer` binaries
//! and a real pseudo-terminal, driven by Python scripts under `tests/e2e/`
//! (pexpect drives the terminal; `scripts/test` installs the Python tools
//! from `tests/requirements.txt` and builds both binaries first):
//!
//! - `walkthrough.py`: the README's walk-through.
//! - `mcp_flow.py`: the MCP head driven by the official MCP Python SDK, with
//!   a person approving at the terminal, and no proof in any tool result,
//!   error or TRACE log.
//! - `mcp_http_flow.py`: the same head over streamable HTTP
//!   (`countersign mcp --listen`) with API bearer credentials, driven by the
//!   SDK's streamable HTTP client: missing, invalid and revoked credentials
//!   (401 naming the RFC 9728 metadata), foreign Host, Origin and
//!   Sec-Fetch-Site (403) and a duplicate-key body refused with nothing
//!   proposed; propose, approve at a terminal, execute once; a second
//!   credential is a second session; SIGTERM stops it cleanly.
//! - `gateway_flow.py`: the MCP gateway in front of real MCP servers
//!   (server-filesystem and server-everything from npm, a server on the
//!   Python SDK the test steers): pinning, allowed calls forwarded, gated
//!   calls run once after a person's approval with the upstream's result,
//!   refusals before any upstream, a changed tool, an upstream killed
//!   mid-call.
//! - `gateway_policy.py`: the operator's Cedar policy on the gateway's
//!   gated calls (server-filesystem from npm): a write it forbids is
//!   recorded denied, naming the policy, and never runs nor can be
//!   approved; another waits for a person and runs once approved; the
//!   audit trail names the gateway as the head.
//! - `gateway_pin_display.py`: a pinned tool whose title and `readOnlyHint`
//!   the upstream changes is refused (`tool_changed`) and the agent is
//!   shown the pinned values, until a person pins the change; then its
//!   calls need a person's approval again.
//! - `claude_code_hook.py`: the real Claude Code binary against a mock of
//!   the Messages API, with `countersign init claude-code`'s hook: a Bash
//!   call denied at the terminal never runs, approved it runs once, with no
//!   decision it never runs (a prompt-injected "approved" included), a
//!   rule covers `git status` but not `git status; touch x`, and a Write
//!   shows its diff in the console's card and runs once approved there
//!   (Chromium).
//! - `claude_code_review.py`: the real Claude Code again, for the fourth
//!   review's findings: its `http` hook without `onFailure: "block"` gets a
//!   200 deny for a 1.1 MiB Write, which never runs and is not proposed;
//!   three approved `python3 -c` lines are never grouped by `rules
//!   suggest`, and the exact rule made from one lets only that line run.
//! - `decision_matrix.py`: every effect kind (built-in, command, webhook, a
//!   coding agent's call, a gated MCP call) against every approver
//!   interface (the terminal, the console in Chromium, a trusted UI in
//!   Python over gRPC): each offers only what can succeed and says what
//!   approving does before the person commits, the decision does exactly
//!   that, what is not offered is refused before anything is recorded, and
//!   every card leads with the action on a phone (axe-core clean).
//! - `codex_hook.py`: the real Codex binary against a mock of the Responses
//!   API, with `countersign init codex`'s hook trusted as Codex's `/hooks`
//!   does: a shell call denied at the terminal never runs, approved it runs
//!   once, an `apply_patch` is an `agent.edit` showing its patch, and with
//!   no decision within the wait the call never runs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use countersign_integration_tests::run_e2e_script as run_script;

#[test]
fn readme_walkthrough_with_real_binaries_and_terminal() {
    run_script("walkthrough.py");
}

#[test]
fn an_mcp_client_proposes_and_executes_only_what_a_person_approved_and_never_sees_a_proof() {
    run_script("mcp_flow.py");
}

#[test]
fn a_remote_mcp_client_needs_a_live_credential_and_executes_only_its_own_approval() {
    run_script("mcp_http_flow.py");
}

#[test]
fn the_gateway_calls_an_upstream_tool_once_after_a_person_approved_the_exact_call() {
    run_script("gateway_flow.py");
}

#[test]
fn the_operators_policy_denies_a_gated_call_before_anyone_is_asked() {
    run_script("gateway_policy.py");
}

#[test]
fn a_tool_whose_title_or_annotations_changed_is_refused_until_a_person_pins_them() {
    run_script("gateway_pin_display.py");
}

#[test]
fn claude_code_runs_a_tool_call_only_once_a_person_or_a_rule_allowed_it() {
    run_script("claude_code_hook.py");
}

#[test]
fn claude_code_gets_no_oversized_call_past_the_http_hook_and_no_widened_rule() {
    run_script("claude_code_review.py");
}

#[test]
fn codex_runs_a_shell_call_only_once_a_person_allowed_it() {
    run_script("codex_hook.py");
}

#[test]
fn every_approver_interface_offers_only_what_each_effect_kind_can_carry_out() {
    run_script("decision_matrix.py");
}
