//! The four agents and the hook events this head answers for each.
//!
//! Owns: the agents' names (as the CLI spells them and as a proposal's
//! `agent` argument carries them) and the wire name of each event.
//! Must not: know an event's fields or output shape (the agent modules do).

use std::fmt;
use std::str::FromStr;

/// A coding agent whose pre-tool-call hook countersign answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Agent {
    /// Anthropic's Claude Code (`claude`).
    ClaudeCode,
    /// OpenAI's Codex CLI (`codex`).
    Codex,
    /// Google's Gemini CLI (`gemini`).
    Gemini,
    /// Cursor's agent (editor and `cursor-agent`).
    Cursor,
}

/// Every agent, in a fixed order.
const AGENTS: [Agent; 4] = [
    Agent::ClaudeCode,
    Agent::Codex,
    Agent::Gemini,
    Agent::Cursor,
];

impl Agent {
    /// Every agent, in a fixed order.
    pub const ALL: [Agent; 4] = AGENTS;

    /// The agent's name: `claude-code`, `codex`, `gemini` or `cursor` (the
    /// `countersign hook <agent>` argument and a proposal's `agent`).
    pub fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
            Agent::Cursor => "cursor",
        }
    }

    /// The hook events this head answers for the agent.
    pub fn events(self) -> &'static [HookEvent] {
        match self {
            Agent::ClaudeCode | Agent::Codex => {
                &[HookEvent::PreToolUse, HookEvent::PermissionRequest]
            }
            Agent::Gemini => &[HookEvent::BeforeTool],
            Agent::Cursor => &[
                HookEvent::BeforeShellExecution,
                HookEvent::BeforeMcpExecution,
            ],
        }
    }

    /// Whether `event` is one of [`Agent::events`].
    pub fn answers(self, event: HookEvent) -> bool {
        self.events().contains(&event)
    }

    /// The agent's event whose `hook_event_name` is `wire`, if this head
    /// answers it.
    pub fn event_named(self, wire: &str) -> Option<HookEvent> {
        self.events()
            .iter()
            .copied()
            .find(|event| event.wire_name() == wire)
    }
}

impl fmt::Display for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not one of [`Agent::name`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown agent {0:?}: expected claude-code, codex, gemini or cursor")]
pub struct UnknownAgent(pub String);

impl FromStr for Agent {
    type Err = UnknownAgent;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Agent::ALL
            .into_iter()
            .find(|agent| agent.name() == name)
            .ok_or_else(|| UnknownAgent(name.to_string()))
    }
}

/// A hook event this head answers (the agent's `hook_event_name`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEvent {
    /// Claude Code and Codex: before a tool call runs.
    PreToolUse,
    /// Claude Code and Codex: when the agent would show its own approval prompt.
    PermissionRequest,
    /// Gemini CLI: before a tool call runs.
    BeforeTool,
    /// Cursor: before a terminal command runs.
    BeforeShellExecution,
    /// Cursor: before an MCP tool call runs.
    BeforeMcpExecution,
}

impl HookEvent {
    /// The event's `hook_event_name` as the agent writes it.
    pub fn wire_name(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PermissionRequest => "PermissionRequest",
            HookEvent::BeforeTool => "BeforeTool",
            HookEvent::BeforeShellExecution => "beforeShellExecution",
            HookEvent::BeforeMcpExecution => "beforeMCPExecution",
        }
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.wire_name())
    }
}
