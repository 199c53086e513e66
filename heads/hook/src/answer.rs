//! The answer to a hook, and what a hook process writes and exits with.
//!
//! Owns: the decision and its reason as a head hands them over, the
//! reason's clean-up (shown to the agent and its user), and the three forms
//! an answer takes on the wire (a JSON line with exit 0, nothing with exit
//! 0, a reason on stderr with exit 2).
//! Must not: pick a form for an agent (the agent modules do).

use serde_json::Value;

/// The most characters of a reason an answer carries; longer ones are cut.
pub const MAX_REASON_CHARS: usize = 2000;

/// What the hook answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The call may run (the agent's own permission rules still apply).
    Allow,
    /// The call must not run; the reason is shown to the agent.
    Deny,
    /// Let the agent ask its user in its own prompt. Not every agent can do
    /// so at every event; where it cannot, the answer is rendered as a deny
    /// (see each agent module).
    Ask,
}

impl Decision {
    /// The reason written when an answer was given none.
    fn default_reason(self) -> &'static str {
        match self {
            Decision::Allow => "countersign allowed this tool call",
            Decision::Deny => "countersign denied this tool call",
            Decision::Ask => "countersign asks you to approve this tool call",
        }
    }
}

/// A decision and the reason given with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The decision.
    pub decision: Decision,
    /// Why, for the agent and its user.
    pub reason: String,
}

impl Answer {
    /// An allow with `reason`.
    pub fn allow(reason: impl Into<String>) -> Self {
        Answer {
            decision: Decision::Allow,
            reason: reason.into(),
        }
    }

    /// A deny with `reason`.
    pub fn deny(reason: impl Into<String>) -> Self {
        Answer {
            decision: Decision::Deny,
            reason: reason.into(),
        }
    }

    /// An ask with `reason`.
    pub fn ask(reason: impl Into<String>) -> Self {
        Answer {
            decision: Decision::Ask,
            reason: reason.into(),
        }
    }

    /// The answer for an event that is not known (or not the agent's): this
    /// answer if it is a deny, else a deny saying why; nothing is allowed or
    /// deferred on a call nobody could read.
    pub(crate) fn for_unknown_event(&self) -> Answer {
        match self.decision {
            Decision::Deny => self.clone(),
            Decision::Allow | Decision::Ask => {
                Answer::deny("countersign cannot answer this hook event, so the call is denied")
            }
        }
    }

    /// The reason as it is written: control characters (terminal escapes
    /// among them) become spaces, surrounding whitespace is trimmed, at most
    /// [`MAX_REASON_CHARS`] characters are kept, and an empty reason becomes
    /// a generic one: some agents ignore a deny without a reason (Codex
    /// takes it for an invalid answer and runs the call).
    pub(crate) fn written_reason(&self) -> String {
        let cleaned: String = self
            .reason
            .chars()
            .map(|c| if c.is_control() && c != '\n' { ' ' } else { c })
            .collect();
        let trimmed = cleaned.trim();
        if trimmed.is_empty() {
            return self.decision.default_reason().to_string();
        }
        let mut kept: String = trimmed.chars().take(MAX_REASON_CHARS).collect();
        if kept.len() < trimmed.len() {
            kept.push_str(" [cut]");
        }
        kept
    }
}

/// What a hook process writes and how it exits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// Written to stdout.
    pub stdout: String,
    /// Written to stderr.
    pub stderr: String,
    /// The process's exit code.
    pub exit_code: i32,
}

impl Rendered {
    /// One line of JSON on stdout, exit 0.
    pub(crate) fn json(value: &Value) -> Self {
        Rendered {
            stdout: format!("{value}\n"),
            stderr: String::new(),
            exit_code: 0,
        }
    }

    /// Nothing at all, exit 0: "no opinion", the agent goes on as if no hook
    /// had run.
    pub(crate) fn silent() -> Self {
        Rendered {
            stdout: String::new(),
            stderr: String::new(),
            exit_code: 0,
        }
    }

    /// The blocking exit: `reason` on stderr, exit 2 (Claude Code, Codex and
    /// Gemini CLI all block on it, whatever the event).
    pub(crate) fn exit_two(answer: &Answer) -> Self {
        Rendered {
            stdout: String::new(),
            stderr: format!("{}\n", answer.written_reason()),
            exit_code: 2,
        }
    }
}
