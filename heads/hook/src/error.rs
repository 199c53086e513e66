//! Why a hook input was refused.
//!
//! Owns: the one-line reasons [`crate::refusal`] renders as a deny.
//! Must not: echo an unbounded piece of the input (a reason is shown to the
//! agent and its user).

use countersign_verifier::canonical::CanonicalError;

use crate::agent::{Agent, HookEvent};
use crate::answer::Answer;

/// The most characters of an input's own text (an unknown event name) a
/// reason repeats.
const MAX_ECHO_CHARS: usize = 64;

/// A hook input that is not a call this head can put to a person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}")]
pub struct ParseError {
    event: Option<HookEvent>,
    kind: ParseErrorKind,
}

/// What was wrong with a hook input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    /// More than [`crate::MAX_INPUT_BYTES`] bytes.
    #[error("input larger than {limit} bytes")]
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// Not one strict JSON value (see `countersign_verifier::canonical`).
    #[error("input is not strict JSON: {0}")]
    NotJson(CanonicalError),
    /// JSON, but not an object.
    #[error("input is not a JSON object")]
    NotAnObject,
    /// A field the contract requires is absent (or `null`).
    #[error("missing field {0}")]
    Missing(&'static str),
    /// A field is present with the wrong JSON type.
    #[error("field {field} is not {expected}")]
    WrongType {
        /// The field's name.
        field: &'static str,
        /// What it should be ("a string", "a JSON object", ...).
        expected: &'static str,
    },
    /// A `tool_input` sent as a JSON text (Cursor) that is not strict JSON.
    #[error("field tool_input is not strict JSON text: {0}")]
    ToolInputNotJson(CanonicalError),
    /// A `hook_event_name` this head does not answer for the agent (the
    /// name, cut to a few dozen characters).
    #[error("hook_event_name {name:?} is not an event countersign answers for {agent}")]
    UnsupportedEvent {
        /// The agent that was asked.
        agent: Agent,
        /// The event name the input gave.
        name: String,
    },
}

impl ParseError {
    /// An error found before the event was known.
    pub(crate) fn early(kind: ParseErrorKind) -> Self {
        ParseError { event: None, kind }
    }

    /// An error found once the input's event was read (`None` if it was not).
    pub(crate) fn during(event: Option<HookEvent>, kind: ParseErrorKind) -> Self {
        ParseError { event, kind }
    }

    /// An unsupported event name, cut to a few dozen characters.
    pub(crate) fn unsupported_event(agent: Agent, name: &str) -> Self {
        let name = name.chars().take(MAX_ECHO_CHARS).collect();
        Self::early(ParseErrorKind::UnsupportedEvent { agent, name })
    }

    /// The input's event, when it was read before the input was found wrong
    /// (so that the refusal can take that event's exact shape).
    pub fn event(&self) -> Option<HookEvent> {
        self.event
    }

    /// What was wrong.
    pub fn kind(&self) -> &ParseErrorKind {
        &self.kind
    }

    /// The deny this refusal is answered with.
    pub fn answer(&self, agent: Agent) -> Answer {
        Answer::deny(format!(
            "countersign refused this {agent} hook input: {}",
            self.kind
        ))
    }
}
