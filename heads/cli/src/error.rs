//! How a command ends: the one place that maps outcomes to exit codes and to
//! the one-line message a person sees. Secrets never reach these messages.

use std::fmt;

use countersign_gate::signer_client::SignerCallError;
use countersign_proto::reason::Reason;

/// Exit codes, documented in the CLI reference (docs/cli.md).
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// An error: an input file that cannot be read, configuration,
    /// unreachable signer, internal fault.
    pub const ERROR: u8 = 1;
    /// A usage error (clap's own code).
    pub const USAGE: u8 = 2;
    /// Refused: nothing was applied or approved. This includes input whose
    /// content is refused before anything is contacted (an arguments file
    /// that is not one strict JSON object, a proof file that is not a token,
    /// either over its size limit).
    pub const REFUSED: u8 = 3;
    /// The effect ran and failed, or its outcome is uncertain.
    pub const NOT_APPLIED: u8 = 4;
}

/// A command that did not succeed.
#[derive(Debug, PartialEq)]
pub enum CliError {
    /// A refusal: the message says what was refused; nothing was applied.
    Refused(String),
    /// The effect ran and failed, or its outcome is uncertain.
    NotApplied(String),
    /// Anything else.
    Error(String),
    /// The command wrote its whole answer itself (a hook's, in its agent's
    /// shape) and ends with this exit code, adding nothing to stderr.
    Answered(u8),
}

impl CliError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Refused(_) => exit::REFUSED,
            CliError::NotApplied(_) => exit::NOT_APPLIED,
            CliError::Error(_) => exit::ERROR,
            CliError::Answered(code) => *code,
        }
    }

    /// The stable reason code `--json` prints for this error when the
    /// command printed no document of its own.
    pub fn reason(&self) -> &'static str {
        match self {
            CliError::Refused(_) => Reason::Refused,
            CliError::NotApplied(_) => Reason::NotApplied,
            CliError::Error(_) | CliError::Answered(_) => Reason::Error,
        }
        .code()
    }

    /// The one JSON document `--json` prints for this error: the API's
    /// refusal shape, `{"ok": false, "applied": false, "reason", "message"}`
    /// (without `applied` when the outcome of an effect is not known).
    pub fn to_json(&self) -> serde_json::Value {
        let message = match self {
            CliError::Refused(m) | CliError::NotApplied(m) | CliError::Error(m) => m.clone(),
            CliError::Answered(code) => format!("answered with exit code {code}"),
        };
        let mut doc = countersign_surface::results::refusal(self.reason(), &message);
        if let (CliError::NotApplied(_), Some(doc)) = (self, doc.as_object_mut()) {
            doc.remove("applied");
        }
        doc
    }

    /// A general error from anything displayable.
    pub fn error(e: impl fmt::Display) -> Self {
        CliError::Error(e.to_string())
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Refused(m) => write!(f, "refused: {m}"),
            CliError::NotApplied(m) | CliError::Error(m) => f.write_str(m),
            CliError::Answered(code) => write!(f, "answered with exit code {code}"),
        }
    }
}

impl From<tonic::Status> for CliError {
    /// The signer's answer: a refusal keeps the signer's reason code; the
    /// rest are errors.
    fn from(status: tonic::Status) -> Self {
        match SignerCallError::from_status(&status) {
            SignerCallError::Refused(refusal) => {
                CliError::Refused(format!("{} ({})", refusal.message, refusal.code))
            }
            fault => CliError::Error(fault.to_string()),
        }
    }
}
