//! The pre-tool-call hook contracts of four coding agents: Claude Code,
//! Codex, Gemini CLI and Cursor.
//!
//! An agent runs `countersign hook <agent>` before it runs a tool, writes
//! its hook JSON on stdin, and reads the answer from stdout, stderr and the
//! exit code. This crate is the pure part of that head:
//!
//! - [`parse`] turns the hook's bytes into a typed [`ToolCall`] (agent,
//!   event, session, tool, input, working directory and [`ToolClass`]),
//!   with the project's strict JSON parser, so a document two readers could
//!   disagree about is refused before anything looks at it;
//! - [`ToolCall::arguments`] is the canonical arguments object a proposal
//!   carries, with a bounded unified diff for edits ([`diff`]);
//! - [`render`] writes an [`Answer`] in the exact shape of the agent and
//!   event that asked, and [`refusal`] writes the deny for an input that
//!   could not be parsed, in the shape of the agent that was asked, even
//!   when its event is unknown.
//!
//! Each agent's contract lives in its own module ([`claude_code`],
//! [`codex`], [`gemini`], [`cursor`]), with the source of every shape in its
//! documentation.
//!
//! Must not: talk to the signer, the registry or the network, decide
//! anything, or read anything but the file an edit would change (for its
//! diff). A hook answers whether the agent's own runtime may run one call;
//! it is no boundary against an agent that has the capability by other
//! means.
#![forbid(unsafe_code)]

mod agent;
mod answer;
mod call;
pub mod claude_code;
pub mod codex;
pub mod cursor;
pub mod diff;
mod edit;
mod error;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
pub mod gemini;
mod input;

pub use agent::{Agent, HookEvent, UnknownAgent};
pub use answer::{Answer, Decision, MAX_REASON_CHARS, Rendered};
pub use call::{ToolCall, ToolClass};
pub use error::{ParseError, ParseErrorKind};

/// The largest hook input accepted, in bytes (1 MiB): a `Write` of a large
/// file is the biggest input an agent sends. Anything larger is refused.
pub const MAX_INPUT_BYTES: usize = 1024 * 1024;

/// Parses one hook input of `agent` (the bytes the agent wrote on stdin).
///
/// Fields the contract does not name, or that a proposal does not need,
/// are ignored; a required field that is missing or of the wrong type, an
/// event this head does not answer, and anything that is not one strict
/// JSON object of at most [`MAX_INPUT_BYTES`] are a [`ParseError`], whose
/// one-line reason [`refusal`] renders as a deny.
pub fn parse(agent: Agent, bytes: &[u8]) -> Result<ToolCall, ParseError> {
    let object = input::parse_object(bytes)?;
    match agent {
        Agent::ClaudeCode => claude_code::parse(object),
        Agent::Codex => codex::parse(object),
        Agent::Gemini => gemini::parse(object),
        Agent::Cursor => cursor::parse(object),
    }
}

/// Renders `answer` for `agent` answering `event`: what to write on stdout
/// and stderr, and the exit code.
///
/// `event` is `None` when it is not known (the input could not be parsed
/// far enough); an event that is not one of `agent`'s is treated the same
/// way. Then the answer is always a deny, in the form the agent honours for
/// every event (see each agent module), whatever `answer` says: nothing is
/// allowed on a call nobody could read.
pub fn render(agent: Agent, event: Option<HookEvent>, answer: &Answer) -> Rendered {
    let known = event.filter(|event| agent.answers(*event));
    match agent {
        Agent::ClaudeCode => claude_code::render(known, answer),
        Agent::Codex => codex::render(known, answer),
        Agent::Gemini => gemini::render(known, answer),
        Agent::Cursor => cursor::render(known, answer),
    }
}

/// The deny for an input [`parse`] refused, in the shape of `agent` (and of
/// the error's event, when it was read before the input was found wrong).
pub fn refusal(agent: Agent, error: &ParseError) -> Rendered {
    render(agent, error.event(), &error.answer(agent))
}
