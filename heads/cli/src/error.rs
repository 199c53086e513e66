//! How a command ends: the one place that maps outcomes to exit codes and to
//! the one-line message a person sees. Secrets never reach these messages.

use std::fmt;

use countersign_gate::signer_client::SignerCallError;

/// Exit codes, documented in the README.
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// An error: bad input file, configuration, unreachable signer, internal fault.
    pub const ERROR: u8 = 1;
    /// A usage error (clap's own code).
    pub const USAGE: u8 = 2;
    /// Refused: nothing was applied or approved.
    pub const REFUSED: u8 = 3;
    /// The effect ran and failed, or its outcome is uncertain.
    pub const NOT_APPLIED: u8 = 4;
}

/// A command that did not succeed.
#[derive(Debug, PartialEq)]
#[non_exhaustive]
pub enum CliError {
    /// A refusal: the message says what was refused; nothing was applied.
    Refused(String),
    /// The effect ran and failed, or its outcome is uncertain.
    NotApplied(String),
    /// Anything else.
    Error(String),
}

impl CliError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Refused(_) => exit::REFUSED,
            CliError::NotApplied(_) => exit::NOT_APPLIED,
            CliError::Error(_) => exit::ERROR,
        }
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
