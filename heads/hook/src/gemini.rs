//! Gemini CLI's `BeforeTool` hook.
//!
//! Sources: the hooks reference, `docs/hooks/reference.md` in
//! google-gemini/gemini-cli (<https://geminicli.com/docs/hooks/reference>),
//! and its implementation, `packages/core/src/hooks/types.ts`,
//! `hookRunner.ts` and `scheduler/hook-utils.ts` (read at commit
//! 5411f113cafae26161b4969b0237b8e1e024e2c2, and checked against the bundle
//! of npm `@google/gemini-cli@0.61.0`):
//!
//! - Input: `session_id`, `transcript_path`, `cwd`, `hook_event_name`
//!   (`"BeforeTool"`), `timestamp`, `tool_name`, `tool_input` (an object),
//!   and for MCP tools `mcp_context` (`server_name`, `tool_name`, and the
//!   server's `command`, `args`, `cwd`, `url`, `tcp`); optional
//!   `original_request_name`. No tool call id.
//! - Output, stdout with exit 0: `{"decision":"allow"|"deny"|"ask","reason":"…"}`
//!   (`block` is an alias of `deny`; `reason` is sent to the model as the
//!   tool's error; `systemMessage` is shown to the user). `ask` is not in
//!   the reference's table but is in the `HookDecision` type, and the
//!   scheduler turns it into Gemini CLI's own confirmation prompt, with the
//!   `systemMessage` shown in it. An allow does not bypass Gemini CLI's own
//!   policy, which may still ask its user.
//! - Exit 2 blocks the call with stderr as the reason; any other non-zero
//!   exit is a warning and the call goes on (plain text on stdout with exit
//!   0 or 1 is even read as an allow).
//!
//! Rendering: every decision is its JSON form (an ask also as
//! `systemMessage`); an unknown event is the exit-2 deny.
//!
//! Classes: `run_shell_command` is [`ToolClass::Shell`]; `write_file` and
//! `replace` are [`ToolClass::Edit`] (with a diff; `replace`'s
//! `allow_multiple` is `replace_all`); `read_file`, `read_many_files`,
//! `glob`, `grep_search` and `list_directory` are [`ToolClass::Read`];
//! `web_fetch` and `google_web_search` are [`ToolClass::Web`]; a tool with
//! an `mcp_context`, or named `mcp_…` (how Gemini CLI names MCP tools), is
//! [`ToolClass::Mcp`]; anything else is [`ToolClass::Other`].

use serde_json::json;

use crate::agent::{Agent, HookEvent};
use crate::answer::{Answer, Decision, Rendered};
use crate::call::{ToolCall, ToolClass};
use crate::edit::EditPlan;
use crate::error::ParseError;
use crate::input::{Fields, Object};

/// Parses a Gemini CLI hook input.
pub(crate) fn parse(object: Object) -> Result<ToolCall, ParseError> {
    let (mut fields, event) = Fields::with_event(object, Agent::Gemini)?;
    let session_id = fields.string("session_id")?;
    let cwd = fields.string("cwd")?;
    let tool_name = fields.string("tool_name")?;
    let is_mcp = fields.optional_object("mcp_context")?.is_some();
    let tool_input = fields.take_object("tool_input")?;
    let class = if is_mcp {
        ToolClass::Mcp
    } else {
        classify(&tool_name)
    };
    let edit = edit_plan(&tool_name, &tool_input);
    Ok(ToolCall {
        agent: Agent::Gemini,
        event,
        session_id,
        tool_use_id: None,
        tool_name,
        tool_input,
        cwd,
        class,
        edit,
    })
}

/// The class of a Gemini CLI tool, by its name alone (an input with an
/// `mcp_context` is an MCP call whatever its name).
pub fn classify(tool_name: &str) -> ToolClass {
    match tool_name {
        "run_shell_command" => ToolClass::Shell,
        "write_file" | "replace" => ToolClass::Edit,
        "read_file" | "read_many_files" | "glob" | "grep_search" | "list_directory" => {
            ToolClass::Read
        }
        "web_fetch" | "google_web_search" => ToolClass::Web,
        name if name.starts_with("mcp_") => ToolClass::Mcp,
        name => ToolClass::Other(name.to_string()),
    }
}

/// What an edit tool's input says it will do.
fn edit_plan(tool_name: &str, input: &Object) -> Option<EditPlan> {
    match tool_name {
        "write_file" => Some(EditPlan::write(input, "file_path", "content")),
        "replace" => Some(EditPlan::replace(input, "file_path", "allow_multiple")),
        _ => None,
    }
}

/// Renders an answer to a Gemini CLI hook.
pub(crate) fn render(event: Option<HookEvent>, answer: &Answer) -> Rendered {
    match event {
        Some(HookEvent::BeforeTool) => before_tool(answer),
        _ => Rendered::exit_two(&answer.for_unknown_event()),
    }
}

/// `BeforeTool`: the decision and its reason.
fn before_tool(answer: &Answer) -> Rendered {
    let reason = answer.written_reason();
    Rendered::json(&match answer.decision {
        Decision::Allow => json!({ "decision": "allow", "reason": reason }),
        Decision::Deny => json!({ "decision": "deny", "reason": reason }),
        Decision::Ask => json!({ "decision": "ask", "reason": reason, "systemMessage": reason }),
    })
}
