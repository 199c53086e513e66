//! Codex's `PreToolUse` and `PermissionRequest` hooks.
//!
//! Sources: the JSON Schemas Codex publishes for its hook contract,
//! `codex-rs/hooks/schema/generated/{pre-tool-use,permission-request}.command.{input,output}.schema.json`
//! in openai/codex, as shipped in `@openai/codex` 0.169.0 (copied in
//! `tests/fixtures/codex/`, where the tests validate parsed inputs and
//! rendered outputs against them); how Codex reads an answer,
//! `codex-rs/hooks/src/engine/output_parser.rs` and
//! `codex-rs/hooks/src/events/pre_tool_use.rs` (whose messages the 0.169.0
//! binary carries); and the hooks guide,
//! <https://developers.openai.com/codex/hooks>.
//!
//! - Input: `session_id`, `turn_id`, `transcript_path` (string or null),
//!   `cwd`, `hook_event_name`, `model`, `permission_mode`, `tool_name`,
//!   `tool_input` (any JSON: `{"command": …}` for `Bash` and
//!   `apply_patch`, the raw arguments for an MCP tool), optional
//!   `agent_id` and `agent_type`; `PreToolUse` adds `tool_use_id`.
//! - `PreToolUse` output: `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"…"}}`.
//!   Codex honours only the deny (with a non-empty reason); it reports
//!   `permissionDecision` `allow` (without an input rewrite) and `ask` as
//!   unsupported, marks the hook failed and runs the call.
//! - `PermissionRequest` output:
//!   `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}`
//!   or `{"behavior":"deny","message":"…"}`; no output falls back to Codex's
//!   own approval prompt.
//! - Exit 0 with nothing on stdout is no opinion. Exit 2 with a reason on
//!   stderr blocks (`PreToolUse`) or denies (`PermissionRequest`). Any other
//!   exit, and JSON Codex cannot read, fail open: the hook is marked failed
//!   and the call goes on.
//!
//! Rendering: at `PreToolUse` an allow is no output (Codex's own sandbox
//! and approval policy still apply), a deny is the JSON deny, and an ask,
//! which Codex cannot do there, is rendered as a deny (fail closed) whose
//! reason says so. At `PermissionRequest` an ask is no output, which shows
//! Codex's own approval prompt. An unknown event is the exit-2 deny.
//!
//! Classes: `Bash` is [`ToolClass::Shell`]; `apply_patch` is
//! [`ToolClass::Edit`], whose diff is the patch itself (its input is the
//! patch); `mcp__<server>__<tool>` is [`ToolClass::Mcp`]; anything else is
//! [`ToolClass::Other`].

use serde_json::json;

use crate::agent::{Agent, HookEvent};
use crate::answer::{Answer, Decision, Rendered};
use crate::call::{ToolCall, ToolClass};
use crate::edit::EditPlan;
use crate::error::ParseError;
use crate::input::Object;

/// Parses a Codex hook input (the shape Claude Code's has).
pub(crate) fn parse(object: Object) -> Result<ToolCall, ParseError> {
    crate::claude_code::parse_tool_use(object, Agent::Codex, classify, edit_plan)
}

/// `apply_patch`'s diff is the patch its input carries.
fn edit_plan(tool_name: &str, input: &Object) -> Option<EditPlan> {
    (tool_name == "apply_patch").then(|| EditPlan::patch(input))
}

/// The class of a Codex tool.
pub fn classify(tool_name: &str) -> ToolClass {
    match tool_name {
        "Bash" => ToolClass::Shell,
        "apply_patch" => ToolClass::Edit,
        name if name.starts_with("mcp__") => ToolClass::Mcp,
        name => ToolClass::Other(name.to_string()),
    }
}

/// Renders an answer to a Codex hook.
pub(crate) fn render(event: Option<HookEvent>, answer: &Answer) -> Rendered {
    match event {
        Some(HookEvent::PreToolUse) => pre_tool_use(answer),
        // The same answer as Claude Code's; an ask leaves it to Codex's
        // own approval prompt.
        Some(HookEvent::PermissionRequest) => crate::claude_code::permission_request(answer),
        _ => Rendered::exit_two(&answer.for_unknown_event()),
    }
}

/// `PreToolUse`: only a deny is an answer Codex honours.
fn pre_tool_use(answer: &Answer) -> Rendered {
    let reason = match answer.decision {
        Decision::Allow => return Rendered::silent(),
        Decision::Deny => answer.written_reason(),
        Decision::Ask => format!(
            "{} (Codex cannot ask before a tool call, so countersign denies it)",
            answer.written_reason()
        ),
    };
    Rendered::json(&json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }))
}
