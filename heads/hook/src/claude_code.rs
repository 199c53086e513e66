//! Claude Code's `PreToolUse` and `PermissionRequest` hooks.
//!
//! Sources: the hooks reference, <https://code.claude.com/docs/en/hooks>,
//! and the hook input and output schemas compiled into Claude Code 2.1.328
//! (npm `@anthropic-ai/claude-code@2.1.328`, read from its linux-x64
//! binary), which agree with it:
//!
//! - Input, every event: `session_id`, `transcript_path`, `cwd` (strings),
//!   optional `prompt_id`, `permission_mode`, `agent_id`, `agent_type`,
//!   `effort`. `PreToolUse` adds `hook_event_name`, `tool_name`, `tool_input`
//!   (the tool's arguments, any JSON) and `tool_use_id`, with an optional
//!   `mcp_server`; `PermissionRequest` adds `hook_event_name`, `tool_name`,
//!   `tool_input` and optional `permission_suggestions` and `mcp_server`,
//!   and has no `tool_use_id`.
//! - Output of `PreToolUse`, on stdout with exit 0:
//!   `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"|"deny"|"ask","permissionDecisionReason":"…"}}`
//!   (a deny's reason is shown to Claude, an ask's in the prompt).
//! - Output of `PermissionRequest`:
//!   `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}`
//!   or `{"behavior":"deny","message":"…"}`; no output leaves the decision
//!   to Claude Code's own permission dialog.
//! - Exit 2 blocks the call (or denies the permission) whatever the event,
//!   with stderr as the reason; any other non-zero exit is a non-blocking
//!   error (unless the hook is configured with `onFailure: "block"`).
//!
//! Rendering: every decision at `PreToolUse` is its JSON form. At
//! `PermissionRequest`, an ask is no output, which shows Claude Code's own
//! dialog to its user. An unknown event is the exit-2 deny.
//!
//! Classes: `Bash` and `PowerShell` are [`ToolClass::Shell`]; `Edit`,
//! `MultiEdit`, `Write` and `NotebookEdit` are [`ToolClass::Edit`] (with a
//! diff, except for notebooks); `Read`, `Glob`, `Grep`, `LS` and
//! `NotebookRead` are [`ToolClass::Read`]; `WebFetch` and `WebSearch` are
//! [`ToolClass::Web`]; `mcp__<server>__<tool>` is [`ToolClass::Mcp`];
//! anything else (`TodoWrite`, `Task`, ...) is [`ToolClass::Other`].

use serde_json::json;

use crate::agent::{Agent, HookEvent};
use crate::answer::{Answer, Decision, Rendered};
use crate::call::{ToolCall, ToolClass};
use crate::edit::EditPlan;
use crate::error::ParseError;
use crate::input::{Fields, Object};

/// Parses a Claude Code hook input.
pub(crate) fn parse(object: Object) -> Result<ToolCall, ParseError> {
    parse_tool_use(object, Agent::ClaudeCode, classify, edit_plan)
}

/// Parses the input shape Claude Code and Codex share (`session_id`,
/// `cwd`, `tool_name`, `tool_input`, and `tool_use_id`, required at
/// `PreToolUse`), classifying the tool with `classify` and planning its
/// diff with `edit_plan`.
pub(crate) fn parse_tool_use(
    object: Object,
    agent: Agent,
    classify: fn(&str) -> ToolClass,
    edit_plan: fn(&str, &Object) -> Option<EditPlan>,
) -> Result<ToolCall, ParseError> {
    let (mut fields, event) = Fields::with_event(object, agent)?;
    let session_id = fields.string("session_id")?;
    let cwd = fields.string("cwd")?;
    let tool_name = fields.string("tool_name")?;
    let tool_use_id = match event {
        HookEvent::PreToolUse => Some(fields.string("tool_use_id")?),
        _ => fields.optional_string("tool_use_id")?,
    };
    let tool_input = fields.take_object("tool_input")?;
    let class = classify(&tool_name);
    let edit = edit_plan(&tool_name, &tool_input);
    Ok(ToolCall {
        agent,
        event,
        session_id,
        tool_use_id,
        tool_name,
        tool_input,
        cwd,
        class,
        edit,
    })
}

/// The class of a Claude Code tool.
pub fn classify(tool_name: &str) -> ToolClass {
    match tool_name {
        "Bash" | "PowerShell" => ToolClass::Shell,
        "Edit" | "MultiEdit" | "Write" | "NotebookEdit" => ToolClass::Edit,
        "Read" | "Glob" | "Grep" | "LS" | "NotebookRead" => ToolClass::Read,
        "WebFetch" | "WebSearch" => ToolClass::Web,
        name if name.starts_with("mcp__") => ToolClass::Mcp,
        name => ToolClass::Other(name.to_string()),
    }
}

/// What an edit tool's input says it will do (`None`: not previewed).
fn edit_plan(tool_name: &str, input: &Object) -> Option<EditPlan> {
    match tool_name {
        "Write" => Some(EditPlan::write(input, "file_path", "content")),
        "Edit" => Some(EditPlan::replace(input, "file_path", "replace_all")),
        "MultiEdit" => Some(EditPlan::multi(input)),
        _ => None,
    }
}

/// Renders an answer to a Claude Code hook.
pub(crate) fn render(event: Option<HookEvent>, answer: &Answer) -> Rendered {
    match event {
        Some(HookEvent::PreToolUse) => pre_tool_use(answer),
        Some(HookEvent::PermissionRequest) => permission_request(answer),
        _ => Rendered::exit_two(&answer.for_unknown_event()),
    }
}

/// `PreToolUse`: the decision as `permissionDecision`.
fn pre_tool_use(answer: &Answer) -> Rendered {
    let decision = match answer.decision {
        Decision::Allow => "allow",
        Decision::Deny => "deny",
        Decision::Ask => "ask",
    };
    Rendered::json(&json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": answer.written_reason(),
        }
    }))
}

/// `PermissionRequest` (Claude Code's and Codex's alike): allow or deny
/// the request; an ask leaves it to the agent's own dialog.
pub(crate) fn permission_request(answer: &Answer) -> Rendered {
    let decision = match answer.decision {
        Decision::Allow => json!({ "behavior": "allow" }),
        Decision::Deny => json!({ "behavior": "deny", "message": answer.written_reason() }),
        Decision::Ask => return Rendered::silent(),
    };
    Rendered::json(&json!({
        "hookSpecificOutput": {
            "decision": decision,
            "hookEventName": "PermissionRequest",
        }
    }))
}
