//! `countersign policy validate|test|schema`: runs `countersign-signer
//! policy ...` with the same arguments, its output and exit code passed
//! through. The Cedar engine is linked into the signer's binary only, so
//! this binary stays small and still offers the command where people look
//! for it. This module builds the signer's command line; it must not read
//! the policy, the table or the registry itself.

use std::ffi::OsString;
use std::path::PathBuf;

use tokio::process::Command;

use super::signer_binary::signer_binary;
use crate::args::PolicyArgs;
use crate::error::CliError;

/// Run the signer's `policy` command, stdout and stderr inherited; its
/// exit code is this command's.
pub(crate) async fn policy(
    home: Option<PathBuf>,
    args: PolicyArgs,
    json: bool,
) -> Result<(), CliError> {
    if json {
        return Err(CliError::Error(
            "`policy` prints text only: --json is not supported".into(),
        ));
    }
    let program = signer_binary(true).map_err(|e| {
        CliError::Error(format!(
            "policy commands need the countersign-signer binary: {e}"
        ))
    })?;
    let status = Command::new(&program)
        .args(signer_arguments(home, &args))
        .status()
        .await
        .map_err(|e| CliError::Error(format!("cannot run {}: {e}", program.display())))?;
    match status.code() {
        Some(0) => Ok(()),
        Some(code) => Err(CliError::Answered(u8::try_from(code).unwrap_or(u8::MAX))),
        None => Err(CliError::Error(format!(
            "{} ended without an exit code ({status})",
            program.display()
        ))),
    }
}

/// `policy [--home DIR] ...`: the signer's command line for `args`,
/// declared for both binaries in `countersign_surface::policy_command`.
fn signer_arguments(home: Option<PathBuf>, args: &PolicyArgs) -> Vec<OsString> {
    let mut out: Vec<OsString> = vec!["policy".into()];
    if let Some(home) = home {
        out.extend(["--home".into(), home.into()]);
    }
    out.extend(args.to_args());
    out
}
