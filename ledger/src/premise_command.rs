//! Premise commands: the operation's fixed program, run without a shell
//! with the canonical arguments on stdin, whose standard output is the
//! premise. The signer runs it at proposal and decision (through
//! [`run_premise_command`]); a consumption runs it once more, just before
//! its write transaction, and compares inside it (see
//! `sql/premise.rs`). Never in the asking process: through a
//! [`PremiseRunner`] (a Landlock-restricted child, or the premise service
//! under its own user).
//!
//! This module owns what counts as a premise command's answer: exit status
//! 0 within [`PREMISE_TIMEOUT`], at most
//! [`countersign_verifier::MAX_PREMISE_OUTPUT_BYTES`] of output. Anything
//! else is a [`PremiseCommandError`], never a premise. It must not write.

use std::path::PathBuf;
use std::time::Duration;

use countersign_process::CommandSpec;
use countersign_process::premise::PremiseRunner;
use countersign_verifier::{CommandPremise, MAX_PREMISE_OUTPUT_BYTES};

/// How long a premise command may run before it is killed (with anything
/// it started). Short: a proposal, a decision and a consumption wait for
/// it (never while the ledger's locks are held).
pub const PREMISE_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a premise command gave no premise.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("premise command {program:?} failed: {reason}")]
pub struct PremiseCommandError {
    /// The program.
    pub program: String,
    /// What went wrong: not started, its exit, a timeout, too much output.
    pub reason: String,
}

/// Runs `argv` (an absolute program and its fixed arguments) with
/// `canonical_args` on stdin, as `runner` says, and returns its output as
/// the premise.
pub async fn run_premise_command(
    runner: &PremiseRunner,
    argv: &[String],
    canonical_args: &str,
) -> Result<CommandPremise, PremiseCommandError> {
    let program = argv.first().cloned().unwrap_or_default();
    let failed = |reason: String| PremiseCommandError {
        program: program.clone(),
        reason,
    };
    let spec = CommandSpec {
        program: PathBuf::from(&program),
        args: argv.get(1..).unwrap_or_default().to_vec(),
        timeout: PREMISE_TIMEOUT,
    };
    let outcome = runner
        .run(&spec, canonical_args)
        .await
        .map_err(|e| failed(e.to_string()))?;
    if outcome.timed_out {
        return Err(failed(format!(
            "it did not finish within {} s and was killed",
            PREMISE_TIMEOUT.as_secs()
        )));
    }
    if !outcome.succeeded() {
        return Err(failed(outcome.describe_failure()));
    }
    if outcome.stdout_truncated || outcome.stdout.len() > MAX_PREMISE_OUTPUT_BYTES {
        return Err(failed(format!(
            "it printed more than {MAX_PREMISE_OUTPUT_BYTES} bytes"
        )));
    }
    Ok(CommandPremise {
        argv: argv.to_vec(),
        output: outcome.stdout,
    })
}

/// A command premise as established just before a consumption's write
/// transaction, compared inside it (`sql/premise.rs`).
#[derive(Debug, Clone)]
pub(crate) enum CommandNow {
    /// What the program printed now.
    Printed(CommandPremise),
    /// It gave no premise (logged where it ran): `PremiseUnavailable`.
    Unavailable,
}
