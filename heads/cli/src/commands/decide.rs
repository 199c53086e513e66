//! The approver's commands: `approve` (interactive terminal only), `deny`,
//! `revoke`, and `reconcile --resolve` (interactive terminal only). Approval shows the authoritative preview the signer rendered
//! from the stored arguments and asks for a fresh random challenge on the
//! controlling terminal, which a program piping into stdin cannot answer.

use std::path::Path;

use countersign_identity::files::write_private_new;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{
    DecideRequest, Delivery, GetProposalRequest, Interface, ProposalView, ResolveUncertainRequest,
    RevokeOutcome, RevokeRequest,
};
use countersign_registry::rule::RULE_CREATE;
use countersign_verifier::Proof;
use serde_json::json;
use tonic::transport::Channel;

use crate::Io;
use crate::args::{ApproveArgs, DenyArgs, RevokeArgs};
use crate::context::Context;
use crate::error::CliError;
use crate::output::{proposal_text, quorum_text, report_outcome, write_json, write_text};
use crate::terminal::challenge;
use countersign_registry::terminal_safe;
use countersign_surface::results;

/// `countersign approve ID [--for-mcp | --proof-out FILE]`
pub(crate) async fn approve(
    ctx: &Context,
    args: ApproveArgs,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let mut approver = ctx.approver_as(args.as_approver.as_ref()).await?;
    let view = approver
        .get_proposal(GetProposalRequest {
            proposal_id: args.id.clone(),
        })
        .await?
        .into_inner();
    if view.status != "pending" {
        return Err(CliError::Refused(format!(
            "{} is {}; only a pending proposal can be approved",
            view.id, view.status
        )));
    }
    if view.passkey_required {
        // A typed challenge proves nothing an agent at this terminal could
        // not do; the signer wants the person's passkey, which only a
        // browser can ask for.
        let place = match &ctx.config.console {
            Some(console) => format!(
                "approve it in the console: {}",
                console.proposal_url(&view.id)
            ),
            None => "approve it in the console (`countersign console`; no [console] section is configured)".to_owned(),
        };
        return Err(CliError::Refused(format!(
            "{} needs a passkey to be approved (passkey_required); {place}. Nothing was approved.",
            view.id
        )));
    }
    if view.operation == RULE_CREATE {
        return approve_rule(&mut approver, &view, json, io).await;
    }
    if let Some(path) = &args.proof_out {
        check_proof_out(path)?;
    }
    let execute_in_session = args.execute_in_session.clone().unwrap_or_default();
    let delivery = if args.for_mcp {
        Delivery::Handoff
    } else {
        Delivery::Direct
    };
    let request = |dry_run| DecideRequest {
        proposal_id: view.id.clone(),
        approve: true,
        reason: String::new(),
        delivery: delivery.into(),
        interface: Interface::Cli.into(),
        execute_in_session: execute_in_session.clone(),
        dry_run,
        passkey: None,
    };
    // Everything the signer would refuse (no longer pending, a changed
    // contract or policy, a bad session), before the person commits.
    approver.decide(request(true)).await?;
    let consequence = if args.for_mcp {
        let session = if execute_in_session.is_empty() {
            format!("the proposing session {}", view.session)
        } else {
            format!(
                "session {} (NOT the proposing session {})",
                terminal_safe(&execute_in_session),
                view.session
            )
        };
        format!(
            "Approving authorizes ONE later execution by a head of this principal (for example the MCP head), from {session}."
        )
    } else if let Some(path) = &args.proof_out {
        format!(
            "Approving writes a single-use proof to {} (0600).",
            path.display()
        )
    } else {
        "Approving executes it now, once.".to_string()
    };
    let consequence = match &view.quorum {
        Some(quorum) => format!(
            "This operation needs {} approvals ({}); a proof exists only after the last one. If yours is the last: {consequence}",
            quorum.required,
            quorum.approvers.join(", ")
        ),
        None => consequence,
    };
    let shown = format!("\n{}\n{consequence}\n", proposal_text(&view).trim_end());
    confirm(io, &shown, &APPROVAL)?;
    let mut decided = approver.decide(request(false)).await?.into_inner();
    if decided.proof_sha256.is_empty() {
        // A quorum approval that was not the last: recorded, nothing issued.
        return quorum_pending(io, json, &view.id, decided.proposal.as_ref());
    }
    let proof_text = std::mem::take(&mut decided.proof);
    if args.for_mcp {
        let message = format!(
            "approved {} for one execution by a head of this principal; the authorization expires at {}",
            view.id, decided.expires_at
        );
        return if json {
            write_json(
                io.out,
                &json!({"proposal_id": view.id, "status": "approved", "delivery": "handoff", "expires_at": decided.expires_at, "message": message}),
            )
        } else {
            write_text(io.out, &format!("{message}\n"))
        };
    }
    let proof = Proof::from_text(proof_text)
        .map_err(|e| CliError::Error(format!("the signer returned an unusable proof: {e}")))?;
    if let Some(path) = &args.proof_out {
        write_private_new(path, proof.expose_secret().as_bytes()).map_err(|e| {
            CliError::Error(format!(
                "approved, but the proof could not be written to {}: {e}; revoke it with `countersign revoke {}`",
                path.display(),
                view.id
            ))
        })?;
        let message = format!(
            "approved {}; proof written to {} (sha256 {}, expires {}); execute with: countersign exec {} --proof-file {}",
            view.id,
            path.display(),
            decided.proof_sha256,
            decided.expires_at,
            view.id,
            path.display()
        );
        return if json {
            write_json(
                io.out,
                &json!({"proposal_id": view.id, "status": "approved", "delivery": "file", "proof_sha256": decided.proof_sha256, "expires_at": decided.expires_at, "message": message}),
            )
        } else {
            write_text(io.out, &format!("{message}\n"))
        };
    }
    let mut head = ctx.head().await?;
    let gate = ctx.gate(&mut head).await?;
    let outcome = gate
        .execute(&view.id, &view.session, &proof)
        .await
        .map_err(CliError::error)?;
    report_outcome(io.out, json, &view.id, &outcome)
}

/// Report a quorum approval that was recorded without completing the
/// quorum: who approved so far, how many more are needed; nothing issued.
fn quorum_pending(
    io: &mut Io<'_>,
    json: bool,
    id: &str,
    view: Option<&ProposalView>,
) -> Result<(), CliError> {
    let Some(quorum) = view.and_then(|v| v.quorum.as_ref()) else {
        return Err(CliError::Error(format!(
            "the signer approved {id} but issued no proof"
        )));
    };
    let approvals = quorum
        .decisions
        .iter()
        .filter(|d| d.decision == "approve")
        .count();
    let message = format!(
        "approval recorded for {id}: {approvals} of {} required; no proof exists until the quorum is reached, and nothing was executed",
        quorum.required
    );
    if json {
        write_json(
            io.out,
            &json!({"proposal_id": id, "status": "pending", "quorum": results::quorum(quorum), "message": message}),
        )
    } else {
        write_text(io.out, &format!("{message}\n{}", quorum_text(quorum)))
    }
}

/// Approving a model's `rule.create` proposal at the terminal: the
/// preview (with the rule's exact scope) and what approving does, the typed
/// challenge, then the decision, which creates the rule and issues no proof.
async fn approve_rule(
    approver: &mut SignerClient<Channel>,
    view: &ProposalView,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let request = |dry_run| DecideRequest {
        proposal_id: view.id.clone(),
        approve: true,
        delivery: Delivery::Direct.into(),
        interface: Interface::Cli.into(),
        dry_run,
        ..Default::default()
    };
    approver.decide(request(true)).await?;
    let shown = format!(
        "\n{}\nApproving CREATES this auto-approval rule: the signer will then approve every proposal it covers WITHOUT asking you, until it expires, runs out of uses, or you revoke it.\n",
        proposal_text(view).trim_end()
    );
    confirm(io, &shown, &RULE_APPROVAL)?;
    let decided = approver.decide(request(false)).await?.into_inner();
    let message = format!(
        "approved {}: created rule {} (countersign rules list)",
        view.id, decided.created_rule_id
    );
    if json {
        write_json(
            io.out,
            &json!({"proposal_id": view.id, "status": "applied", "rule_id": decided.created_rule_id, "message": message}),
        )
    } else {
        write_text(io.out, &format!("{message}\n"))
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
    if typed.trim() != code {
        let _ = terminal.show(&format!("Not {}.\n", words.done));
        return Err(CliError::Refused(format!(
            "the challenge was not typed correctly; nothing was {}",
            words.done
        )));
    }
    Ok(())
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
    let mut approver = ctx.approver_as(args.as_approver.as_ref()).await?;
    let decided = approver
        .decide(DecideRequest {
            proposal_id: args.id.clone(),
            approve: false,
            reason: args.reason,
            delivery: Delivery::Unspecified.into(),
            interface: Interface::Cli.into(),
            execute_in_session: String::new(),
            dry_run: false,
            passkey: None,
        })
        .await?
        .into_inner();
    if json {
        write_json(io.out, &json!({"proposal_id": args.id, "status": "denied"}))
    } else {
        let _ = decided;
        write_text(io.out, &format!("denied {}\n", args.id))
    }
}

/// `countersign revoke ID`
pub(crate) async fn revoke(
    ctx: &Context,
    args: RevokeArgs,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let mut approver = ctx.approver().await?;
    let response = approver
        .revoke(RevokeRequest {
            proposal_id: args.id.clone(),
            reason: args.reason,
        })
        .await?
        .into_inner();
    let (code, message, result) = match RevokeOutcome::try_from(response.outcome) {
        Ok(RevokeOutcome::Revoked) => (
            "revoked",
            format!("revoked {}: its proof can no longer be used", args.id),
            Ok(()),
        ),
        Ok(RevokeOutcome::AlreadyUsed) => (
            "already_used",
            format!("too late: the proof of {} was already used", args.id),
            Err(CliError::Refused(format!(
                "the proof of {} was already used; nothing was revoked",
                args.id
            ))),
        ),
        Ok(RevokeOutcome::NothingToRevoke) => (
            "nothing_to_revoke",
            format!("{} has no unconsumed proof to revoke", args.id),
            Err(CliError::Refused(format!(
                "{} has no unconsumed proof to revoke",
                args.id
            ))),
        ),
        _ => {
            return Err(CliError::Error(
                "the signer gave an unknown revocation outcome".to_string(),
            ));
        }
    };
    if json {
        write_json(
            io.out,
            &json!({"proposal_id": args.id, "outcome": code, "message": message}),
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
    id: &str,
    applied: bool,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let mut approver = ctx.approver().await?;
    let view = approver
        .get_proposal(GetProposalRequest {
            proposal_id: id.to_string(),
        })
        .await?
        .into_inner();
    if view.status != "uncertain" {
        return Err(CliError::Refused(format!(
            "{} is {}; only an uncertain execution can be resolved; nothing was recorded",
            view.id, view.status
        )));
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
    let resolved = approver
        .resolve_uncertain(ResolveUncertainRequest {
            proposal_id: view.id.clone(),
            applied,
        })
        .await?
        .into_inner();
    let status = if applied { "applied" } else { "not_applied" };
    if json {
        write_json(
            io.out,
            &json!({"proposal_id": view.id, "resolved": status, "resolved_by": resolved.resolved_by}),
        )
    } else {
        write_text(
            io.out,
            &format!(
                "resolved {} as {status} (by {})\n",
                view.id, resolved.resolved_by
            ),
        )
    }
}
