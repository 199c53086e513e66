//! `countersign evidence export` and `countersign evidence verify`
//! (docs/evidence.md).
//!
//! Owns: gathering one applied or failed action's bundle from the ledger
//! (its events, assertions, consumption, each event's inclusion proof in
//! one checkpoint) and the signer (the spent proof, the key set); reading a
//! bundle, a trust policy, a key set and an opening for the verifier, and
//! rendering its verdict. The format and the checks are
//! `countersign_evidence`'s. Must not: put a live proof in a bundle (the
//! signer hands over only a spent, expired one), print a proof, or write
//! over an existing file.

use std::collections::BTreeSet;
use std::path::Path;

use countersign_evidence::{
    AssertionPart, Bundle, ConsumptionPart, DecisionPart, EventPart, FORMAT, Opening, ProposalPart,
    RelyingPartyPart, Trust, commit,
};
use countersign_ledger::{
    DispositionStatus, EventRecord, Ledger, ProposalRecord, ProposalStatus, StoredPasskeyAssertion,
};
use countersign_proto::v1::SpentProofRequest;
use countersign_tlog::{Note, Policy, TlogProof};
use countersign_verifier::{KeySet, ProposalId, timestamp};
use serde_json::json;

use super::read_input;
use super::verify::published_key_set;
use crate::Io;
use crate::args::{EvidenceExportArgs, EvidenceVerifyArgs};
use crate::context::Context;
use crate::error::{CliError, exit};
use crate::output::{write_json, write_new, write_text};

/// The largest bundle, policy, key set or salt file read.
const MAX_INPUT: u64 = 8 * 1024 * 1024;

/// `countersign evidence export ID [--output FILE] [--commit-arguments
/// SALT_FILE]`.
pub(crate) async fn export(
    ctx: &Context,
    id: &ProposalId,
    args: EvidenceExportArgs,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    // Nothing is written over, and nothing is written at all if either
    // file exists.
    for path in [&args.output, &args.commit_arguments].into_iter().flatten() {
        if path.exists() {
            return Err(CliError::Error(format!(
                "{} exists: an evidence export never replaces a file",
                path.display()
            )));
        }
    }
    let ledger = ctx.ledger().await?;
    let record = ledger
        .proposal(id.as_str())
        .await
        .map_err(CliError::error)?
        .filter(|r| r.proposal.principal.as_str() == ctx.principal)
        .ok_or_else(|| {
            CliError::Refused(format!("no proposal {} of this principal", id.as_str()))
        })?;
    if !matches!(
        record.status,
        ProposalStatus::Applied | ProposalStatus::Failed
    ) {
        return Err(CliError::Refused(format!(
            "proposal {} is {}: a bundle is of an applied or failed action",
            id.as_str(),
            record.status
        )));
    }
    let consumption = consumption(&ledger, id).await?;
    let p = &record.proposal;
    let events = ledger
        .evidence_events(p.principal.as_str(), id.as_str())
        .await
        .map_err(CliError::error)?;
    let mut chosen: Vec<&EventRecord> = events
        .iter()
        .filter(|e| e.proposal_id.as_deref() == Some(id.as_str()))
        .collect();
    let decision = decision(ctx, &ledger, &record, &chosen).await?;
    // Each credential's enrolment fixes its key.
    let credentials: BTreeSet<&str> = decision
        .assertions
        .iter()
        .map(|a| a.credential_id.as_str())
        .collect();
    chosen.extend(events.iter().filter(|e| {
        e.kind == "passkey_enrolled"
            && e.details
                .get("credential_id")
                .and_then(|c| c.as_str())
                .is_some_and(|c| credentials.contains(c))
    }));
    let event_parts = included(ctx, &ledger, &chosen).await?;

    let (arguments, commitment, proof, opening) = match &args.commit_arguments {
        None => {
            let proof = spent_proof(ctx, id).await?;
            (Some(p.arguments_json.clone()), None, Some(proof), None)
        }
        Some(salt_file) => {
            let mut salt = [0_u8; 32];
            getrandom::fill(&mut salt).map_err(|e| CliError::Error(e.to_string()))?;
            let opening = Opening {
                arguments: p.arguments_json.clone(),
                salt: hex::encode(salt),
            };
            let commitment = commit(&salt, &p.arguments_json);
            (None, Some(commitment), None, Some((salt_file, opening)))
        }
    };
    let keys = published_key_set(ctx).await?;
    let keys =
        serde_json::from_str(&keys.to_json().map_err(CliError::error)?).map_err(CliError::error)?;
    let registry = ctx.registry()?;
    let contract = registry
        .get(&p.operation)
        .filter(|op| op.contract_revision() == p.contract_revision)
        .map(|op| op.contract().to_owned());
    let registry_bytes = std::fs::read(&ctx.config.registry).map_err(|e| {
        CliError::Error(format!(
            "cannot read {}: {e}",
            ctx.config.registry.display()
        ))
    })?;
    let bundle = Bundle {
        format: FORMAT.to_owned(),
        exported_at: now()?,
        proposal: ProposalPart {
            id: p.id.to_string(),
            principal: p.principal.to_string(),
            session: p.session.to_string(),
            operation: p.operation.clone(),
            arguments_sha256: p.arguments_sha256.clone(),
            contract_revision: p.contract_revision.clone(),
            policy_revision: p.policy_revision.clone(),
            created_at: timestamp::format(p.created_at).map_err(CliError::error)?,
            arguments,
            arguments_commitment: commitment,
        },
        contract,
        registry_sha256: countersign_verifier::canonical::sha256_hex(&registry_bytes),
        decision,
        proof,
        keys,
        consumption,
        events: event_parts,
    };
    let mut text = serde_json::to_string_pretty(&bundle).map_err(CliError::error)?;
    text.push('\n');
    // The opening last but one, once everything else is in hand.
    if let Some((salt_file, opening)) = opening {
        let salt_text = serde_json::to_string(&opening).map_err(CliError::error)?;
        countersign_identity::files::write_private_new(salt_file, salt_text.as_bytes())
            .map_err(|e| CliError::Error(format!("cannot write {}: {e}", salt_file.display())))?;
    }
    match &args.output {
        None => write_text(io.out, &text),
        Some(path) => {
            write_new(path, text.as_bytes())?;
            write_text(
                io.err,
                &format!(
                    "wrote the evidence of {} ({} events) to {}\n",
                    id.as_str(),
                    bundle.events.len(),
                    path.display()
                ),
            )
        }
    }
}

fn now() -> Result<String, CliError> {
    timestamp::format_whole_seconds(time::OffsetDateTime::now_utc()).map_err(CliError::error)
}

/// The consumption and its recorded result.
async fn consumption(ledger: &Ledger, id: &ProposalId) -> Result<ConsumptionPart, CliError> {
    let d = ledger
        .disposition(id.as_str())
        .await
        .map_err(CliError::error)?
        .ok_or_else(|| CliError::Refused(format!("proposal {} was not consumed", id.as_str())))?;
    let status = match d.status {
        DispositionStatus::Applied => "applied",
        DispositionStatus::Failed => "failed",
        DispositionStatus::Uncertain => {
            return Err(CliError::Refused(format!(
                "proposal {} is uncertain: reconcile it first",
                id.as_str()
            )));
        }
    };
    Ok(ConsumptionPart {
        nonce: d.nonce,
        status: status.to_owned(),
        error: d.error,
        result: countersign_verifier::canonical::to_canonical(&d.result)
            .map_err(CliError::error)?,
    })
}

/// Who decided, from the `approved` event, with every stored assertion.
async fn decision(
    ctx: &Context,
    ledger: &Ledger,
    record: &ProposalRecord,
    mine: &[&EventRecord],
) -> Result<DecisionPart, CliError> {
    let id = record.proposal.id.as_str();
    let provenance = mine
        .iter()
        .find(|e| e.kind == "approved")
        .and_then(|e| e.details.get("provenance"))
        .and_then(|p| p.as_str())
        .ok_or_else(|| CliError::Error(format!("the approved event of {id} names no provenance")))?
        .to_owned();
    let mut assertions = Vec::new();
    if let Some(stored) = ledger
        .passkey_assertion_for(id)
        .await
        .map_err(CliError::error)?
    {
        assertions.push(assertion(ledger, None, &stored).await?);
    }
    for quorum in ledger
        .quorum_passkey_assertions()
        .await
        .map_err(CliError::error)?
    {
        if quorum.stored.assertion.subject == id {
            assertions
                .push(assertion(ledger, Some(quorum.approver.clone()), &quorum.stored).await?);
        }
    }
    let relying_party = ctx.config.passkeys.as_ref().map(|p| RelyingPartyPart {
        id: p.rp_id.clone(),
        origins: p.origins.clone(),
    });
    Ok(DecisionPart {
        provenance,
        relying_party,
        assertions,
    })
}

async fn assertion(
    ledger: &Ledger,
    approver: Option<String>,
    stored: &StoredPasskeyAssertion,
) -> Result<AssertionPart, CliError> {
    let a = &stored.assertion;
    let credential = ledger
        .passkey(&a.credential_id)
        .await
        .map_err(CliError::error)?
        .ok_or_else(|| {
            CliError::Error(format!("credential {} was never enrolled", a.credential_id))
        })?;
    Ok(AssertionPart {
        approver,
        credential_id: a.credential_id.clone(),
        public_key: credential.public_key,
        challenge_random: a.challenge_random.clone(),
        delivery: a.delivery.clone(),
        authenticator_data: a.authenticator_data.clone(),
        client_data_json: a.client_data_json.clone(),
        signature: a.signature.clone(),
    })
}

/// `events`, each with its tlog-proof in one checkpoint: the latest
/// cosigned one, or with no `[tlog]` policy configured, the latest signed
/// one. Refused until that checkpoint covers every event.
async fn included(
    ctx: &Context,
    ledger: &Ledger,
    events: &[&EventRecord],
) -> Result<Vec<EventPart>, CliError> {
    let cosigned = ledger
        .latest_cosigned_checkpoint()
        .await
        .map_err(CliError::error)?;
    let (size, note) = match (cosigned, &ctx.config.tlog) {
        (Some((size, note)), _) => (size, note),
        (None, Some(_)) => {
            return Err(CliError::Refused(
                "no checkpoint is cosigned yet: wait for the witnesses (countersign witness status)"
                    .into(),
            ));
        }
        (None, None) => {
            let latest = ledger
                .latest_log_checkpoint()
                .await
                .map_err(CliError::error)?
                .ok_or_else(|| {
                    CliError::Refused(
                        "the log has no signed checkpoint yet: the signer signs one every minute"
                            .into(),
                    )
                })?;
            (latest.size, latest.note)
        }
    };
    let note = Note::parse(note.as_bytes()).map_err(CliError::error)?;
    let mut parts = Vec::with_capacity(events.len());
    for e in events {
        let leaf = ledger
            .leaf_of_event(&e.chain, e.seq)
            .await
            .map_err(CliError::error)?
            .filter(|leaf| *leaf < size);
        let Some(leaf) = leaf else {
            return Err(CliError::Refused(format!(
                "the {} event of {} is not yet in the latest {} checkpoint (size {size}); the signer signs one every minute{}",
                e.kind,
                e.proposal_id.as_deref().unwrap_or("its credential"),
                if ctx.config.tlog.is_some() {
                    "cosigned"
                } else {
                    "signed"
                },
                if ctx.config.tlog.is_some() {
                    ", and the witnesses cosign it after"
                } else {
                    ""
                }
            )));
        };
        let proof = ledger
            .inclusion_proof(leaf, size)
            .await
            .map_err(CliError::error)?;
        let tlog_proof = TlogProof::new(None, leaf, proof, note.clone()).to_string();
        parts.push(EventPart {
            chain: e.chain.clone(),
            seq: e.seq,
            at: e.at.clone(),
            kind: e.kind.clone(),
            proposal_id: e.proposal_id.clone(),
            actor: e.actor.clone(),
            details: e.details.clone(),
            prev_hash: e.prev_hash.clone(),
            hash: e.hash.clone(),
            tlog_proof,
        });
    }
    Ok(parts)
}

/// The spent proof, from the signer.
async fn spent_proof(ctx: &Context, id: &ProposalId) -> Result<String, CliError> {
    let mut head = ctx.head().await?;
    let answer = head
        .spent_proof(SpentProofRequest {
            proposal_id: id.as_str().to_owned(),
        })
        .await?
        .into_inner();
    Ok(answer.proof)
}

/// `countersign evidence verify FILE --trust POLICY [--keys FILE]
/// [--reveal SALT_FILE]`: offline.
pub(crate) fn verify(
    args: EvidenceVerifyArgs,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let bundle = read_input(&args.file, MAX_INPUT, io)?;
    let policy = read_input(&args.trust, MAX_INPUT, io)?;
    let policy = Policy::parse(&policy)
        .map_err(|e| CliError::Error(format!("{}: {e}", args.trust.display())))?;
    let keys = match &args.keys {
        None => None,
        Some(path) => Some(
            KeySet::parse(&read_input(path, MAX_INPUT, io)?)
                .map_err(|e| CliError::Error(format!("{}: {e}", path.display())))?,
        ),
    };
    let opening = match &args.reveal {
        None => None,
        Some(path) => Some(read_opening(path, io)?),
    };
    let trust = Trust {
        policy: &policy,
        keys: keys.as_ref(),
    };
    match countersign_evidence::verify(&bundle, &trust, opening.as_ref()) {
        Ok(verified) => {
            if json {
                let claims: Vec<_> = verified
                    .claims
                    .iter()
                    .map(|(check, found)| json!({ "check": check.code(), "found": found }))
                    .collect();
                write_json(io.out, &json!({ "verified": true, "claims": claims }))
            } else {
                let mut text = String::new();
                for (check, found) in &verified.claims {
                    text.push_str(&format!("ok {}: {found}\n", check.code()));
                }
                write_text(io.out, &text)
            }
        }
        Err(refused) => {
            if json {
                write_json(
                    io.out,
                    &json!({
                        "verified": false,
                        "check": refused.check.code(),
                        "message": refused.message,
                    }),
                )?;
            } else {
                write_text(io.out, &format!("refused: {refused}\n"))?;
            }
            Err(CliError::Answered(exit::REFUSED))
        }
    }
}

fn read_opening(path: &Path, io: &mut Io<'_>) -> Result<Opening, CliError> {
    let bytes = read_input(path, MAX_INPUT, io)?;
    serde_json::from_slice(&bytes).map_err(|e| {
        CliError::Error(format!(
            "{}: not a salt file ({{\"arguments\", \"salt\"}}): {e}",
            path.display()
        ))
    })
}
