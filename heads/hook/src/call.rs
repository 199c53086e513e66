//! A parsed tool call and the proposal arguments it becomes.
//!
//! Owns: the typed call every agent's input is parsed into, the class of a
//! tool and the operation each class is proposed as, and the canonical
//! arguments object (`agent`, `tool_name`, `tool_input`, `cwd`, and `diff`
//! for edits).
//! Must not: parse an agent's input (the agent modules do) or decide.

use std::path::Path;

use serde_json::{Map, Value};

use crate::agent::{Agent, HookEvent};
use crate::diff;
use crate::edit::EditPlan;
use crate::input::Object;

/// What kind of action a tool call is, which decides the operation it is
/// proposed as.
///
/// Every class goes to the signer; none is allowed here. A class only lets
/// the registry hold different rules for, say, reading files than for
/// running commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolClass {
    /// Runs a command in a shell: `agent.shell`.
    Shell,
    /// Creates or changes a file: `agent.edit` (the arguments carry a diff).
    Edit,
    /// Only reads files or lists directories: `agent.read`. Read-only tools
    /// have their own class so that an operator's registry can hold a rule
    /// for them apart from writes; they are still proposed, never allowed
    /// here.
    Read,
    /// Fetches from or searches the web: `agent.web`.
    Web,
    /// Calls a tool of an MCP server: `agent.mcp`.
    Mcp,
    /// Any other tool (the agent's name for it): `agent.other`. One
    /// operation for every tool this head does not know, so that nothing
    /// unknown is silently allowed: a registry without an `agent.other`
    /// definition refuses it (`unknown_operation`, a deny), and one with it
    /// puts it to a person like any other call.
    Other(String),
}

impl ToolClass {
    /// The operation a call of this class is proposed as.
    pub fn operation(&self) -> &'static str {
        match self {
            ToolClass::Shell => "agent.shell",
            ToolClass::Edit => "agent.edit",
            ToolClass::Read => "agent.read",
            ToolClass::Web => "agent.web",
            ToolClass::Mcp => "agent.mcp",
            ToolClass::Other(_) => "agent.other",
        }
    }
}

/// One tool call an agent's hook asks about.
///
/// Built only by [`crate::parse`]; every field is as the agent sent it,
/// except where an agent's module says it is derived (a Cursor shell call
/// has no `tool_input` of its own, for one).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub(crate) agent: Agent,
    pub(crate) event: HookEvent,
    pub(crate) session_id: String,
    pub(crate) tool_use_id: Option<String>,
    pub(crate) tool_name: String,
    pub(crate) tool_input: Object,
    pub(crate) cwd: String,
    pub(crate) class: ToolClass,
    /// What an edit will do, when the class is [`ToolClass::Edit`] and this
    /// head can preview the tool.
    pub(crate) edit: Option<EditPlan>,
}

impl ToolCall {
    /// The agent that asked.
    pub fn agent(&self) -> Agent {
        self.agent
    }

    /// The hook event that asked (the answer must take its shape).
    pub fn event(&self) -> HookEvent {
        self.event
    }

    /// The agent's session (Cursor: its conversation id).
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The agent's id for this tool call, when it gives one.
    pub fn tool_use_id(&self) -> Option<&str> {
        self.tool_use_id.as_deref()
    }

    /// The tool's name, as the agent calls it.
    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }

    /// The tool's input, exactly as received.
    pub fn tool_input(&self) -> &Map<String, Value> {
        &self.tool_input
    }

    /// The working directory the call runs in.
    pub fn cwd(&self) -> &str {
        &self.cwd
    }

    /// The call's class.
    pub fn class(&self) -> &ToolClass {
        &self.class
    }

    /// The operation the call is proposed as ([`ToolClass::operation`]).
    pub fn operation(&self) -> &'static str {
        self.class.operation()
    }

    /// For an edit, the unified diff of what it will do to the file on
    /// disk (read now, bounded by [`diff::MAX_DIFF_BYTES`]), or a sentence
    /// saying why there is none; `None` for any other class.
    pub fn diff(&self) -> Option<String> {
        if self.class != ToolClass::Edit {
            return None;
        }
        Some(match &self.edit {
            Some(plan) => diff::of_edit(plan, Path::new(&self.cwd)),
            None => format!(
                "(no diff: countersign does not preview {} edits; see tool_input)",
                self.tool_name
            ),
        })
    }

    /// The canonical arguments a proposal for this call carries:
    /// `{"agent", "tool_name", "tool_input", "cwd"}`, and for an edit
    /// `"diff"` ([`ToolCall::diff`], which reads the file now). Nothing else
    /// of the hook input is carried.
    pub fn arguments(&self) -> Value {
        let mut arguments = Map::new();
        arguments.insert("agent".into(), Value::from(self.agent.name()));
        arguments.insert("cwd".into(), Value::from(self.cwd.as_str()));
        if let Some(diff) = self.diff() {
            arguments.insert("diff".into(), Value::from(diff));
        }
        arguments.insert("tool_input".into(), Value::Object(self.tool_input.clone()));
        arguments.insert("tool_name".into(), Value::from(self.tool_name.as_str()));
        Value::Object(arguments)
    }
}
