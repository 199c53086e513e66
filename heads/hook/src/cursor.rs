//! Cursor's `beforeShellExecution` and `beforeMCPExecution` hooks.
//!
//! Source: Cursor's hooks documentation, <https://cursor.com/docs/hooks>.
//! It could not be read where this was written; the shapes below are as
//! two independent references transcribe it, and they agree:
//! <https://cupcake.eqtylab.io/reference/harnesses/cursor> and
//! CorridorSecurity/hookshot `docs/reference-cursor.md`.
//!
//! - Input, every event: `conversation_id`, `generation_id`,
//!   `hook_event_name`, `workspace_roots` (an array of paths); optional
//!   `model`, `cursor_version`, `user_email`, `transcript_path`.
//!   `beforeShellExecution` adds `command` and `cwd`; `beforeMCPExecution`
//!   adds `tool_name`, `tool_input` and the server's `url` or `command`.
//!   The references disagree on `tool_input`: an object in one, a JSON text
//!   of one in the other; both are accepted (a text is parsed strictly and
//!   must hold an object).
//! - Output, stdout with exit 0:
//!   `{"permission":"allow"|"deny"|"ask","user_message":"…","agent_message":"…"}`
//!   (`user_message` shown to the user, `agent_message` to the agent). Exit
//!   2 blocks; a hook that fails otherwise is allowed through unless it is
//!   configured `failClosed`.
//! - Known limitation: Cursor 3.21.16 was reported to run a command without
//!   a prompt when a `beforeShellExecution` hook answers `ask` in its
//!   Auto-review mode (deny was enforced in every mode; Cursor forum topic
//!   173694). An ask is rendered as Cursor documents it; a head that needs
//!   a guarantee answers allow or deny.
//!
//! Rendering: every decision is the JSON form, both messages carrying the
//! reason. Every permission event of Cursor takes the same shape, so an
//! unknown event gets the JSON deny as well.
//!
//! Derived fields: Cursor has no session id but the conversation's, no
//! tool call id, and no tool name or input for a shell command: such a call
//! is named `Shell` (Cursor's own name for its terminal tool) with
//! `{"command": …}` as its input. A call without `cwd` runs in the first of
//! `workspace_roots`. Classes: `beforeShellExecution` is
//! [`ToolClass::Shell`], `beforeMCPExecution` is [`ToolClass::Mcp`].

use serde_json::{Map, Value, json};

use countersign_verifier::canonical;

use crate::agent::{Agent, HookEvent};
use crate::answer::{Answer, Decision, Rendered};
use crate::call::{ToolCall, ToolClass};
use crate::error::{ParseError, ParseErrorKind};
use crate::input::{Fields, Object};

/// The name a Cursor shell call is given (Cursor's name for its terminal
/// tool in its generic tool hooks).
pub const SHELL_TOOL_NAME: &str = "Shell";

/// Parses a Cursor hook input.
pub(crate) fn parse(object: Object) -> Result<ToolCall, ParseError> {
    let (mut fields, event) = Fields::with_event(object, Agent::Cursor)?;
    let session_id = fields.string("conversation_id")?;
    let (tool_name, tool_input, class) = match event {
        HookEvent::BeforeMcpExecution => {
            let tool_name = fields.string("tool_name")?;
            let tool_input = mcp_tool_input(&mut fields)?;
            (tool_name, tool_input, ToolClass::Mcp)
        }
        _ => {
            let command = fields.string("command")?;
            let mut tool_input = Map::new();
            tool_input.insert("command".into(), Value::from(command));
            (SHELL_TOOL_NAME.to_string(), tool_input, ToolClass::Shell)
        }
    };
    let cwd = match fields.optional_string("cwd")? {
        Some(cwd) => cwd,
        None => fields
            .first_of_strings("workspace_roots")?
            .ok_or_else(|| fields.error(ParseErrorKind::Missing("cwd")))?,
    };
    Ok(ToolCall {
        agent: Agent::Cursor,
        event,
        session_id,
        tool_use_id: None,
        tool_name,
        tool_input,
        cwd,
        class,
        edit: None,
    })
}

/// An MCP call's `tool_input`: an object, or a JSON text of one.
fn mcp_tool_input(fields: &mut Fields) -> Result<Object, ParseError> {
    const EXPECTED: &str = "a JSON object or the JSON text of one";
    match fields.take("tool_input") {
        None | Some(Value::Null) => Err(fields.error(ParseErrorKind::Missing("tool_input"))),
        Some(Value::Object(object)) => Ok(object),
        Some(Value::String(text)) => {
            match canonical::parse(text.as_bytes(), crate::MAX_INPUT_BYTES) {
                Ok(Value::Object(object)) => Ok(object),
                Ok(_) => Err(fields.wrong_type("tool_input", EXPECTED)),
                Err(error) => Err(fields.error(ParseErrorKind::ToolInputNotJson(error))),
            }
        }
        Some(_) => Err(fields.wrong_type("tool_input", EXPECTED)),
    }
}

/// Renders an answer to a Cursor hook.
pub(crate) fn render(event: Option<HookEvent>, answer: &Answer) -> Rendered {
    let answer = match event {
        Some(_) => answer.clone(),
        None => answer.for_unknown_event(),
    };
    let permission = match answer.decision {
        Decision::Allow => "allow",
        Decision::Deny => "deny",
        Decision::Ask => "ask",
    };
    let reason = answer.written_reason();
    Rendered::json(&json!({
        "agent_message": reason,
        "permission": permission,
        "user_message": reason,
    }))
}
