//! `countersign policy validate|test|schema`: runs `countersign-signer
//! policy ...` with the same arguments, its output and exit code passed
//! through. The Cedar engine is linked into the signer's binary only, so
//! this binary stays small and still offers the command where people look
//! for it. This module builds the signer's command line; it must not read
//! the policy, the table or the registry itself.
//!
//! `countersign policy diff` runs here: it reads the log-only verdicts
//! the signer recorded in the audit trail, and needs no Cedar.

use std::ffi::OsString;
use std::path::PathBuf;

use tokio::process::Command;

use countersign_ledger::EventRecord;
use serde_json::{Value, json};

use super::signer_binary::signer_binary;
use crate::Io;
use crate::args::{PolicyArgs, PolicyCommand};
use crate::context::Context;
use crate::error::CliError;
use crate::output::{write_json, write_text};

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

/// `policy diff`: the proposals whose `proposed` event records a log-only
/// verdict (the signer records one only where it differs from the
/// binding verdict), newest first, at most `--limit`.
pub(crate) async fn diff(
    ctx: &Context,
    args: &PolicyArgs,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let PolicyCommand::Diff { limit } = args.command else {
        return Err(CliError::Error("not `policy diff`".into()));
    };
    let ledger = ctx.ledger().await?;
    let events = ledger.events().await.map_err(CliError::error)?;
    let differences: Vec<Difference<'_>> = events
        .iter()
        .rev()
        .filter(|e| e.kind == "proposed")
        .filter_map(Difference::of)
        .take(usize::try_from(limit).unwrap_or(usize::MAX))
        .collect();
    if json {
        let rows: Vec<Value> = differences.iter().map(Difference::to_json).collect();
        return write_json(io.out, &json!({ "differences": rows }));
    }
    let mut text = String::new();
    for d in &differences {
        text.push_str(&d.line());
        text.push('\n');
    }
    text.push_str(&match differences.len() {
        0 => "no proposal on which the log-only policy set would have decided otherwise\n".into(),
        1 => "1 proposal on which the log-only policy set would have decided otherwise\n".into(),
        n => {
            format!("{n} proposals on which the log-only policy set would have decided otherwise\n")
        }
    });
    write_text(io.out, &text)
}

/// One recorded difference, as read from a `proposed` event.
struct Difference<'e> {
    at: &'e str,
    proposal: &'e str,
    operation: &'e str,
    head: &'e str,
    binding: Option<&'e Value>,
    shadow: &'e Value,
}

impl<'e> Difference<'e> {
    fn of(event: &'e EventRecord) -> Option<Self> {
        let policy = event.details.get("policy")?;
        Some(Difference {
            at: &event.at,
            proposal: event.proposal_id.as_deref().unwrap_or("-"),
            operation: event.details.get("operation")?.as_str()?,
            head: policy.get("head").and_then(Value::as_str).unwrap_or("-"),
            binding: policy.get("binding"),
            shadow: policy.get("shadow")?,
        })
    }

    fn line(&self) -> String {
        format!(
            "{}  {}  {} (via {})  binding: {}  log-only: {}",
            self.at,
            self.proposal,
            self.operation,
            self.head,
            self.binding
                .map_or_else(|| "person (no binding set)".to_owned(), verdict),
            verdict(self.shadow),
        )
    }

    fn to_json(&self) -> Value {
        json!({
            "at": self.at,
            "proposal_id": self.proposal,
            "operation": self.operation,
            "head": self.head,
            "binding": self.binding,
            "shadow": self.shadow,
        })
    }
}

/// `verdict [policy, ...]`, with `N of a, b` for a quorum.
fn verdict(v: &Value) -> String {
    let kind = v.get("verdict").and_then(Value::as_str).unwrap_or("?");
    let policies: Vec<&str> = v
        .get("policies")
        .and_then(Value::as_array)
        .map(|p| p.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut text = format!("{kind} [{}]", policies.join(", "));
    if let Some(q) = v.get("quorum") {
        let approvers: Vec<&str> = q
            .get("approvers")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let required = q.get("required").and_then(Value::as_u64).unwrap_or(0);
        text.push_str(&format!(" ({required} of {})", approvers.join(", ")));
    }
    text
}
