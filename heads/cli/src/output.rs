//! Rendering for people (text) and programs (`--json`). What is printed is
//! the same information either way; proofs are never part of it.

use std::io::Write;
use std::path::Path;

use countersign_gate::Outcome;
use countersign_proto::v1::{ProposalView, QuorumDecision, QuorumView};
use countersign_registry::terminal_safe;
use countersign_surface::results;
use serde::Serialize;

use crate::error::CliError;

/// Write `value` as one line of JSON.
pub(crate) fn write_json(out: &mut dyn Write, value: &impl Serialize) -> Result<(), CliError> {
    let text = serde_json::to_string(value).map_err(CliError::error)?;
    writeln!(out, "{text}").map_err(CliError::error)
}

/// Write text exactly as given.
pub(crate) fn write_text(out: &mut dyn Write, text: &str) -> Result<(), CliError> {
    out.write_all(text.as_bytes()).map_err(CliError::error)
}

/// A proposal as text: status line, then the authoritative preview.
pub(crate) fn proposal_text(view: &ProposalView) -> String {
    let mut text = format!(
        "{}  {}  {}  (session {}, created {})\n",
        view.id,
        view.status().name(),
        view.operation,
        view.session,
        view.created_at
    );
    text.push_str(&action_text(view));
    if !view.reason.is_empty() {
        text.push_str(&format!("reason: {}\n", terminal_safe(&view.reason)));
    }
    if let Some(policy) = results::policy_text(view) {
        text.push_str(&format!("policy: {policy}\n"));
    }
    if view.handoff_waiting {
        text.push_str("approved for one later execution by a head (handoff waiting)\n");
    }
    if let Some(left) = results::time_left_text(view, time::OffsetDateTime::now_utc()) {
        text.push_str(&format!("{left}; undecided by then, it expires\n"));
    }
    if view.passkey_required && view.status().awaits_decision() {
        text.push_str("approving needs a passkey: approve it in the console\n");
    }
    if let Some(quorum) = &view.quorum {
        text.push_str(&quorum_text(quorum));
    }
    text.push_str(&view.preview);
    if !view.preview.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// What approving `view` does, first: its risk, then each part of its
/// action on its own lines (a multi-line value, a diff or a command with
/// newlines, one line each behind `| `), every line escaped like the
/// preview, model-supplied parts marked. Empty for a view without an
/// action (its operation is no longer registered at its contract).
pub(crate) fn action_text(view: &ProposalView) -> String {
    let Some(action) = &view.action else {
        return String::new();
    };
    let risk = countersign_registry::Class::parse(&view.risk)
        .map(|c| format!("{} ({})", c.as_str(), c.meaning()))
        .unwrap_or_else(|| terminal_safe(&view.risk).into_owned());
    let mut text = format!("ACTION (risk: {risk}):\n");
    for part in &action.parts {
        let label = terminal_safe(&part.label);
        let marks = match (part.syntax.as_str(), part.model_supplied) {
            (_, true) => " (model-supplied, unverified)",
            ("shell", false) => " (shell)",
            ("diff", false) => " (unified diff)",
            _ => "",
        };
        if part.syntax == "diff" || part.text.contains('\n') {
            text.push_str(&format!("  {label}{marks}:\n"));
            // Split on `\n` only: a `\r` stays visible, escaped.
            let body = part.text.strip_suffix('\n').unwrap_or(&part.text);
            for line in body.split('\n') {
                text.push_str(&format!("    | {}\n", terminal_safe(line)));
            }
        } else {
            let value = terminal_safe(&part.text);
            text.push_str(&format!("  {label}{marks}: {value}\n"));
        }
    }
    text
}

/// One line: `view`'s action summary, escaped, at most `max` characters
/// (the rest shown as `…`); empty without an action.
pub(crate) fn action_summary(view: &ProposalView, max: usize) -> String {
    let Some(action) = &view.action else {
        return String::new();
    };
    let safe = terminal_safe(&action.summary);
    match safe.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &safe[..cut]),
        None => safe.into_owned(),
    }
}

/// A quorum and its decisions so far, one line each.
pub(crate) fn quorum_text(quorum: &QuorumView) -> String {
    let approvals = countersign_service::approver::approvals(quorum).count();
    let mut text = format!(
        "quorum: {approvals} of {} required approvals (approvers: {})\n",
        quorum.required,
        quorum.approvers.join(", ")
    );
    for d in &quorum.decisions {
        let verb = match d.decision() {
            QuorumDecision::Approve => "approved",
            QuorumDecision::Deny => "denied",
            QuorumDecision::Unspecified => "decided (unknown decision)",
        };
        text.push_str(&format!("  {verb} by {} at {}", d.approver, d.decided_at));
        if !d.reason.is_empty() {
            text.push_str(&format!(": {}", terminal_safe(&d.reason)));
        }
        text.push('\n');
    }
    text
}

/// Print an outcome and turn it into the command's result.
pub(crate) fn report_outcome(
    out: &mut dyn Write,
    json: bool,
    proposal_id: &str,
    outcome: &Outcome,
) -> Result<(), CliError> {
    let succeeded = matches!(outcome, Outcome::Applied(_) | Outcome::Recorded(_));
    if json {
        write_json(
            out,
            &countersign_service::results::outcome(proposal_id, outcome),
        )?;
    } else {
        // What happened goes to standard output; what did not, once, to
        // standard error as the command's error (below), so a person
        // does not read the same sentence twice.
        let mut text = String::new();
        if succeeded {
            text.push_str(&format!("{}\n", outcome.summary()));
        }
        if let Some(d) = outcome.disposition().filter(|d| !d.result.is_null()) {
            text.push_str(&format!(
                "result: {}\n",
                terminal_safe(&d.result.to_string())
            ));
        }
        write_text(out, &text)?;
    }
    match outcome {
        Outcome::Applied(_) => Ok(()),
        Outcome::Refused(r) => {
            let said = r.to_string();
            Err(CliError::Refused(
                if said.ends_with("nothing was applied") {
                    said
                } else {
                    format!("{said}; nothing was applied")
                },
            ))
        }
        Outcome::Recorded(_) => Err(CliError::Refused(
            "this proof was already used; nothing was run again".to_string(),
        )),
        other => Err(CliError::NotApplied(other.summary())),
    }
}

/// A refusal decided elsewhere (the signer, the service) with `reason`:
/// with `--json` its refusal document is printed now, as the API and MCP
/// return it; the command's error is returned.
pub(crate) fn refused(out: &mut dyn Write, json: bool, reason: &str, message: &str) -> CliError {
    if json && let Err(e) = write_json(out, &results::refusal(reason, message)) {
        return e;
    }
    CliError::Refused(format!("{message} ({reason})"))
}

/// Writes a new file; an existing one is refused, never replaced.
pub(crate) fn write_new(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    let fail = |e: std::io::Error| CliError::Error(format!("cannot write {}: {e}", path.display()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(fail)?;
    file.write_all(bytes).map_err(fail)?;
    file.sync_all().map_err(fail)
}
