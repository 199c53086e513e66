//! Premise commands: the operation's fixed program, run without a shell
//! with the canonical arguments on stdin, whose standard output is the
//! premise. The signer runs it at proposal and decision (through
//! [`run_premise_command`]); the consume transaction runs it once more,
//! under the proposal's lock and the chain head's, before anything is
//! written.
//!
//! This module owns what counts as a premise command's answer: exit status
//! 0 within [`PREMISE_TIMEOUT`], at most
//! [`countersign_verifier::MAX_PREMISE_OUTPUT_BYTES`] of output. Anything
//! else is a [`PremiseCommandError`], never a premise. It must not write.

use std::path::PathBuf;
use std::time::Duration;

use countersign_process::{CommandSpec, run_query};
use countersign_verifier::{CommandPremise, MAX_PREMISE_OUTPUT_BYTES};

/// How long a premise command may run before it is killed (with anything
/// it started). Short: at consumption it runs while the ledger's locks are
/// held.
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
/// `canonical_args` on stdin and returns its output as the premise.
pub async fn run_premise_command(
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
    let outcome = run_query(&spec, canonical_args)
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
