//! The approver's commands: `approve` (interactive terminal only), `deny`,
//! `revoke`, and `reconcile --resolve` (interactive terminal only). Approval shows the authoritative preview the signer rendered
//! from the stored arguments and asks for a fresh random challenge on the
//! controlling terminal, which a program piping into stdin cannot answer.

use std::path::Path;

use countersign_gate::signer_client::SignerCallError;
use countersign_identity::files::write_private_new;
use countersign_proto::reason::Reason;
use countersign_proto::v1::{ProposalStatus, ProposalView};
use countersign_registry::rule::RULE_CREATE;
use countersign_service::{
    Approval, ApprovalDoes, Approved, Approver, ApproverError, Delivery, Revoked,
};
use serde_json::json;

use crate::Io;
use crate::args::ProposalRef;
use crate::args::{ApproveArgs, DenyArgs, RevokeArgs};
use crate::commands::data;
use crate::context::Context;
use crate::error::CliError;
use crate::output::{proposal_text, quorum_text, refused, report_outcome, write_json, write_text};
use crate::terminal::challenge;
use countersign_registry::terminal_safe;
use countersign_surface::results;

/// `countersign approve ID [--hand-off | --proof-out FILE]`
pub(crate) async fn approve(
    ctx: &Context,
    args: ApproveArgs,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    // The gate (signer keys, ledger) is built only if the approval runs now.
    let mut client = ctx.approver_as(args.as_approver.as_ref()).await?;
    let id = args.id.resolve(&mut client).await?;
    let approver = Approver::new(client, data::service(ctx, false));
    let view = approver
        .proposal(&id)
        .await
        .map_err(|e| failed(e, json, io))?;
    let rule = view.operation == RULE_CREATE;
    let does = ApprovalDoes::of(&view);
    let delivery = if rule {
        // Approving a rule creates it; no proof goes anywhere.
        Delivery::Proof
    } else if args.hand_off {
        Delivery::Handoff {
            session: args.execute_in_session.clone(),
        }
    } else if args.proof_out.is_some() {
        Delivery::Proof
    } else {
        // What this proposal's effect kind is carried out by: here, or
        // the proposing session (a hook's or a gateway's call).
        does.default_delivery()
    };
    let approval = Approval {
        proposal_id: view.id.clone(),
        delivery,
        passkey: None,
    };
    if let (Some(path), false) = (&args.proof_out, rule) {
        check_proof_out(path)?;
    }
    // Everything the signer would refuse (no longer pending, a changed
    // contract or policy, a bad session), before the person commits.
    approver
        .check(&approval)
        .await
        .map_err(|e| failed(e, json, io))?;
    if view.passkey_required {
        return Err(passkey_required(ctx, &view, json, io));
    }
    let shown = format!(
        "\n{}\n{}\n",
        proposal_text(&view).trim_end(),
        consequence(&view, &approval.delivery, args.proof_out.as_deref())
    );
    confirm(io, &shown, if rule { &RULE_APPROVAL } else { &APPROVAL })?;
    let approved = approver
        .approve(approval)
        .await
        .map_err(|e| failed(e, json, io))?;
    let sent_to = args.execute_in_session.as_deref();
    report_approved(approved, args.proof_out.as_deref(), sent_to, json, io)
}

/// A passkey approval at a terminal: refused, pointing at the console. A
/// typed challenge proves nothing an agent at this terminal could not do;
/// the signer wants the person's passkey, which only a browser can ask for.
fn passkey_required(ctx: &Context, view: &ProposalView, json: bool, io: &mut Io<'_>) -> CliError {
    let place = match &ctx.config.console {
        Some(console) => format!(
            "approve it in the console: {}",
            console.proposal_url(&view.id)
        ),
        None => {
            "approve it in the console (`countersign console`; no [console] section is configured)"
                .to_owned()
        }
    };
    let reason = Reason::PasskeyRequired;
    let message = format!(
        "{} needs a passkey to be approved ({reason}); {place}. Nothing was approved.",
        view.id
    );
    if json && write_json(io.out, &results::refusal(reason.code(), &message)).is_err() {
        return CliError::Error("cannot write the refusal".to_owned());
    }
    CliError::Refused(message)
}

/// What approving `view` with `delivery` does, as the person reads it
/// before typing: run here, handed off to a session (and who runs it
/// there), a proof for a file, or a rule created.
fn consequence(view: &ProposalView, delivery: &Delivery, proof_out: Option<&Path>) -> String {
    if view.operation == RULE_CREATE {
        return "Approving CREATES this auto-approval rule: the signer will then approve every proposal it covers WITHOUT asking you, until it expires, runs out of uses, or you revoke it.".to_owned();
    }
    let consequence = match delivery {
        Delivery::Handoff { session } if view.status() == ProposalStatus::Approved => format!(
            "It was approved earlier for a run at an approver's interface, which cannot run it, so nothing ran. Handing it off to the proposing session {}: {}. (`countersign revoke {}` withdraws it instead.)",
            terminal_safe(session.as_deref().unwrap_or(&view.session)),
            handoff_runner(view),
            view.id
        ),
        Delivery::Handoff { session } => {
            let session = match session {
                None => format!("the proposing session {}", terminal_safe(&view.session)),
                Some(other) => format!(
                    "session {} (NOT the proposing session {})",
                    terminal_safe(other),
                    terminal_safe(&view.session)
                ),
            };
            format!(
                "Approving hands it off to {session}: {}.",
                handoff_runner(view)
            )
        }
        Delivery::Proof => format!(
            "Approving writes a single-use proof to {} (0600).",
            proof_out
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        ),
        Delivery::RunNow => "Approving executes it here, now, once.".to_owned(),
    };
    match &view.quorum {
        Some(quorum) => format!(
            "This operation needs {} approvals ({}); a proof exists only after the last one. If yours is the last: {consequence}",
            quorum.required,
            quorum.approvers.join(", ")
        ),
        None => consequence,
    }
}

/// Who runs a handed-off approval of `view` in its session.
fn handoff_runner(view: &ProposalView) -> &'static str {
    match view.effect_kind.as_str() {
        "hook" => {
            "the agent's hook waiting there lets the agent run this call, once; nothing runs here"
        }
        "mcp" => {
            "the gateway there calls the upstream tool, once, for the agent's waiting call or its `execute_approved`; nothing runs here"
        }
        _ => {
            "a head there runs it, once (the MCP head's `execute_approved`, or `countersign exec ID --handoff`)"
        }
    }
}

/// Print what an approval did; a proof issued for a file is written to
/// `proof_out` (0600, a new file); a handoff went to `sent_to` (`None`:
/// the proposing session).
fn report_approved(
    approved: Approved,
    proof_out: Option<&Path>,
    sent_to: Option<&str>,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let (document, message) = match approved {
        Approved::QuorumPending {
            proposal,
            approvals,
            required,
        } => {
            let message = format!(
                "approval recorded for {}: {approvals} of {required} required; no proof exists until the quorum is reached, and nothing was executed",
                proposal.id
            );
            let quorum = proposal.quorum.as_ref();
            if !json {
                let listed = quorum.map(quorum_text).unwrap_or_default();
                return write_text(io.out, &format!("{message}\n{listed}"));
            }
            (
                json!({"proposal_id": proposal.id, "status": "pending", "quorum": quorum.map(results::quorum), "message": message}),
                message,
            )
        }
        Approved::RuleCreated { proposal, rule_id } => {
            let message = format!(
                "approved {}: created rule {rule_id} (countersign rules list)",
                proposal.id
            );
            (
                json!({"proposal_id": proposal.id, "status": "applied", "rule_id": rule_id, "message": message}),
                message,
            )
        }
        Approved::HandedOff {
            proposal,
            expires_at,
        } => {
            let message = format!(
                "approved {}: handed off to session {}: {} (the authorization expires at {expires_at})",
                proposal.id,
                terminal_safe(sent_to.unwrap_or(&proposal.session)),
                handoff_runner(&proposal)
            );
            (
                json!({"proposal_id": proposal.id, "status": "approved", "delivery": "handoff", "expires_at": expires_at, "message": message}),
                message,
            )
        }
        Approved::ProofIssued {
            proposal,
            proof,
            proof_sha256,
            expires_at,
        } => {
            let id = &proposal.id;
            let Some(path) = proof_out else {
                return Err(CliError::Error(format!(
                    "the signer returned a proof of {id} with nowhere to put it; revoke it with `countersign revoke {id}`"
                )));
            };
            write_private_new(path, proof.expose_secret().as_bytes()).map_err(|e| {
                CliError::Error(format!(
                    "approved, but the proof could not be written to {}: {e}; revoke it with `countersign revoke {id}`",
                    path.display(),
                ))
            })?;
            let message = format!(
                "approved {id}; proof written to {} (sha256 {proof_sha256}, expires {expires_at}); execute with: countersign exec {id} --proof-file {}",
                path.display(),
                path.display()
            );
            (
                json!({"proposal_id": id, "status": "approved", "delivery": "file", "proof_sha256": proof_sha256, "expires_at": expires_at, "message": message}),
                message,
            )
        }
        Approved::Ran { proposal, outcome } => {
            return report_outcome(io.out, json, &proposal.id, &outcome);
        }
    };
    if json {
        write_json(io.out, &document)
    } else {
        write_text(io.out, &format!("{message}\n"))
    }
}

/// An approver operation that did not complete: a refusal keeps the
/// signer's reason code (in the `--json` document too, as every approver
/// interface reports it); the rest are errors.
fn failed(e: ApproverError, json: bool, io: &mut Io<'_>) -> CliError {
    match e {
        ApproverError::Signer(SignerCallError::Refused(r)) => {
            refused(io.out, json, r.code.as_str(), &r.message)
        }
        other => CliError::Error(other.to_string()),
    }
}

const RULE_APPROVAL: Confirmation = Confirmation {
    needs: "approval",
    does: "create the rule",
    done: "approved",
};

/// The words of one kind of typed-challenge confirmation.
pub(crate) struct Confirmation {
    /// What needs the terminal ("approval").
    pub(crate) needs: &'static str,
    /// What typing the code does ("approve").
    pub(crate) does: &'static str,
    /// What did not happen on a refusal ("approved").
    pub(crate) done: &'static str,
}

const APPROVAL: Confirmation = Confirmation {
    needs: "approval",
    does: "approve",
    done: "approved",
};

const RESOLUTION: Confirmation = Confirmation {
    needs: "a resolution",
    does: "record it",
    done: "recorded",
};

/// Show `shown` at the controlling terminal (never stdin) and require a
/// freshly drawn challenge typed back; anything else refuses, and nothing
/// was done.
pub(crate) fn confirm(io: &mut Io<'_>, shown: &str, words: &Confirmation) -> Result<(), CliError> {
    let mut terminal = (io.terminal)().map_err(|e| {
        CliError::Refused(format!(
            "{} needs an interactive terminal and none is available ({e}); nothing was {}",
            words.needs, words.done
        ))
    })?;
    let code = challenge().map_err(CliError::error)?;
    terminal.show(shown).map_err(CliError::error)?;
    let typed = terminal
        .ask(&format!(
            "Type {code} to {}, anything else to cancel: ",
            words.does
        ))
        .map_err(|e| {
            CliError::Refused(format!(
                "no answer from the terminal ({e}); nothing was {}",
                words.done
            ))
        })?;
    if !typed_matches(&typed, &code) {
        let _ = terminal.show(&format!("Not {}.\n", words.done));
        return Err(CliError::Refused(format!(
            "the challenge was not typed correctly; nothing was {}",
            words.done
        )));
    }
    Ok(())
}

/// Whether `typed` is the challenge `code`, as a person types it: around
/// spaces ignored, and in either case (the code is drawn from capitals and
/// digits only, so accepting lower case makes it no easier to guess).
fn typed_matches(typed: &str, code: &str) -> bool {
    typed.trim().eq_ignore_ascii_case(code)
}

/// Refuses an output path the proof could not be written to, before the
/// person commits: its directory must exist and be writable, and nothing
/// (not even a symlink) may be at the path.
fn check_proof_out(path: &Path) -> Result<(), CliError> {
    if path.symlink_metadata().is_ok() {
        return Err(CliError::Refused(format!(
            "{} already exists; the proof is only written to a new file; nothing was approved",
            path.display()
        )));
    }
    let refused = |why: String| {
        CliError::Refused(format!(
            "cannot write the proof to {}: {why}; nothing was approved",
            path.display()
        ))
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    match dir.metadata() {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(refused(format!("{} is not a directory", dir.display()))),
        Err(e) => return Err(refused(format!("{}: {e}", dir.display()))),
    }
    rustix::fs::access(
        dir,
        rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
    )
    .map_err(|e| refused(format!("{} is not writable: {e}", dir.display())))
}

/// `countersign deny ID --reason TEXT`
pub(crate) async fn deny(
    ctx: &Context,
    args: DenyArgs,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    if args.reason.trim().is_empty() {
        return Err(CliError::Refused(
            "a denial needs a non-empty --reason".to_string(),
        ));
    }
    let mut client = ctx.approver_as(args.as_approver.as_ref()).await?;
    let id = args.id.resolve(&mut client).await?;
    let approver = Approver::new(client, data::service(ctx, false));
    approver
        .deny(&id, &args.reason)
        .await
        .map_err(|e| failed(e, json, io))?;
    if json {
        write_json(
            io.out,
            &json!({"proposal_id": id.as_str(), "status": "denied"}),
        )
    } else {
        write_text(io.out, &format!("denied {id}\n"))
    }
}

/// `countersign revoke ID`
pub(crate) async fn revoke(
    ctx: &Context,
    args: RevokeArgs,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let mut client = ctx.approver().await?;
    let id = args.id.resolve(&mut client).await?;
    let approver = Approver::new(client, data::service(ctx, false));
    let revoked = approver
        .revoke(&id, &args.reason)
        .await
        .map_err(|e| failed(e, json, io))?;
    let (code, message, result) = match revoked {
        Revoked::Revoked => (
            "revoked",
            format!("revoked {id}: its proof can no longer be used"),
            Ok(()),
        ),
        Revoked::AlreadyUsed => (
            "already_used",
            format!("too late: the proof of {id} was already used"),
            Err(CliError::Refused(format!(
                "the proof of {id} was already used; nothing was revoked"
            ))),
        ),
        Revoked::NothingToRevoke => (
            "nothing_to_revoke",
            format!("{id} has no unconsumed proof to revoke"),
            Err(CliError::Refused(format!(
                "{id} has no unconsumed proof to revoke"
            ))),
        ),
    };
    if json {
        write_json(
            io.out,
            &json!({"proposal_id": id.as_str(), "outcome": code, "message": message}),
        )?;
    } else if result.is_ok() {
        write_text(io.out, &format!("{message}\n"))?;
    }
    result
}

/// `countersign reconcile --resolve ID --applied|--not-applied`: whether an
/// uncertain execution happened is a person's judgement. It is recorded
/// through the signer with the approver certificate (so the signer checks
/// the role and the principal, and records who), and only after the
/// person, at the controlling terminal, has seen the proposal and typed a
/// fresh challenge, as for an approval.
pub(crate) async fn resolve(
    ctx: &Context,
    id: &ProposalRef,
    applied: bool,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let mut client = ctx.approver().await?;
    let id = id.resolve(&mut client).await?;
    let approver = Approver::new(client, data::service(ctx, false));
    let view = approver
        .proposal(&id)
        .await
        .map_err(|e| failed(e, json, io))?;
    if view.status() != ProposalStatus::Uncertain {
        return Err(refused(
            io.out,
            json,
            Reason::NotUncertain.code(),
            &format!(
                "{} is {}; only an uncertain execution can be resolved; nothing was recorded",
                view.id,
                view.status().name()
            ),
        ));
    }
    let verdict = if applied {
        "the effect DID happen: it will read applied"
    } else {
        "the effect did NOT happen: it will read failed"
    };
    let shown = format!(
        "\n{}\nIts execution was interrupted. You are recording that {verdict}.\nCheck the world first; this cannot be changed.\n",
        proposal_text(&view).trim_end()
    );
    confirm(io, &shown, &RESOLUTION)?;
    let resolved_by = approver
        .resolve(&view.id, applied)
        .await
        .map_err(|e| failed(e, json, io))?;
    let status = if applied { "applied" } else { "not_applied" };
    if json {
        write_json(
            io.out,
            &json!({"proposal_id": view.id, "resolved": status, "resolved_by": resolved_by}),
        )
    } else {
        write_text(
            io.out,
            &format!("resolved {} as {status} (by {resolved_by})\n", view.id),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_challenge_is_matched_whatever_its_case_and_surrounding_spaces_and_nothing_else() {
        assert!(typed_matches("K7QM-3XCA", "K7QM-3XCA"));
        assert!(typed_matches(" k7qm-3xca\n", "K7QM-3XCA"));
        assert!(!typed_matches("K7QM3XCA", "K7QM-3XCA"));
        assert!(!typed_matches("K7QM-3XCB", "K7QM-3XCA"));
        assert!(!typed_matches("", "K7QM-3XCA"));
    }
}
