//! Reconcile's re-send of an uncertain webhook whose operation is
//! replay-safe, under the contract a person approved (`reconcile.rs`
//! decides that much before it comes here), and the report's sentence for
//! what it came to.
//!
//! The ledger keeps no proof, and a receiver verifies the proof itself, so
//! the signer signs the issued claims again (`ReissueForReconcile`: the
//! same `jti`, a fresh lifetime). The gate verifies that proof as it
//! verifies any, against the intent as recorded, checks it names the
//! intent's nonce, and POSTs exactly what the execution sent: the intent's
//! canonical arguments, the nonce as `Idempotency-Key`, the proposal id.
//! One request per reconcile pass, never a retry loop. The answer completes
//! the recorded intent (applied for an accepted status, failed for any
//! other); no answer leaves it uncertain, whether or not this request left
//! (the first one may have been received).
//!
//! Must not: consume the re-issued proof (the intent's nonce already is
//! consumed; the ledger completes the recorded intent, never a new one),
//! store or log it.

use countersign_ledger::{EffectOutcome, Intent, LedgerError};
use countersign_proto::v1::ReissueForReconcileRequest;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_verifier::Proof;
use tonic::transport::Channel;

use super::{WebhookSpec, send_webhook};
use crate::effect::Replay;
use crate::execute::{Gate, GateError};
use crate::reconcile::Replayed;
use crate::signer_client::SignerCallError;

/// What a re-send came to.
#[derive(Debug)]
enum Resent {
    /// The receiver answered and the intent is completed with the answer.
    Completed(EffectOutcome),
    /// Nothing is known yet: the signer refused or could not re-issue the
    /// proof, the proof did not verify, or no answer came. The sentence
    /// says which; the intent stays open.
    StillUncertain(String),
    /// The receiver answered, and meanwhile a person resolved the intent:
    /// their resolution stands.
    ResolvedMeanwhile(EffectOutcome),
}

/// Re-send the webhook of `intent` once, as the module doc describes, and
/// say what came of it.
pub(super) async fn resend(replay: Replay<'_>, spec: &WebhookSpec) -> Result<Replayed, GateError> {
    let Replay { gate, head, intent } = replay;
    let nonce = intent.nonce();
    Ok(match resend_once(gate, head, spec, intent).await? {
        Resent::Completed(EffectOutcome::Applied { .. }) => Replayed::new(
            "replayed",
            format!(
                "replay-safe webhook: re-sent with a re-issued proof and the same Idempotency-Key {nonce}, and the receiver accepted it"
            ),
        ),
        Resent::Completed(EffectOutcome::Failed { error, .. }) => Replayed::new(
            "replay_failed",
            format!(
                "replay-safe webhook: re-sent with a re-issued proof and the same Idempotency-Key {nonce}, and {error}; recorded as failed"
            ),
        ),
        Resent::ResolvedMeanwhile(outcome) => Replayed::new(
            "resolved_meanwhile",
            format!(
                "replay-safe webhook: re-sent with the same Idempotency-Key {nonce}, and the receiver {}, but a person resolved it meanwhile; their resolution stands",
                match outcome {
                    EffectOutcome::Applied { .. } => "accepted it",
                    EffectOutcome::Failed { .. } => "refused it",
                }
            ),
        ),
        Resent::StillUncertain(why) => Replayed::new(
            "still_uncertain",
            format!(
                "replay-safe webhook: {why}; run `countersign reconcile` again later, or ask the receiver whether it handled Idempotency-Key {nonce} and run `countersign reconcile --resolve {} --applied` or `--not-applied`",
                intent.proposal_id()
            ),
        ),
    })
}

/// The one request of a re-send, and the completion its answer makes.
async fn resend_once(
    gate: &Gate,
    head: &mut SignerClient<Channel>,
    spec: &WebhookSpec,
    intent: &Intent,
) -> Result<Resent, GateError> {
    let reissued = head
        .reissue_for_reconcile(ReissueForReconcileRequest {
            proposal_id: intent.proposal_id().to_string(),
        })
        .await;
    let mut response = match reissued {
        Ok(response) => response.into_inner(),
        Err(status) => {
            return Ok(Resent::StillUncertain(
                match SignerCallError::from_status(&status) {
                    SignerCallError::Refused(refusal) => format!(
                        "the signer refused to re-issue its proof ({}): {}",
                        refusal.code, refusal.message
                    ),
                    fault => format!("the signer could not re-issue its proof: {fault}"),
                },
            ));
        }
    };
    let proof = Proof::from_text(std::mem::take(&mut response.proof))
        .map_err(|e| GateError::Signer(format!("the signer re-issued an unusable proof: {e}")))?;
    let verified = match gate.verify_reissued(&proof, intent).await {
        Ok(verified) => verified,
        Err(refusal) => {
            return Ok(Resent::StillUncertain(format!(
                "the re-issued proof does not verify ({}): {refusal}; nothing was sent",
                refusal.code()
            )));
        }
    };
    if verified.claims().jti != intent.nonce() {
        return Ok(Resent::StillUncertain(
            "the re-issued proof names another nonce than the one consumed; nothing was sent"
                .into(),
        ));
    }
    let sent = send_webhook(
        spec,
        intent.arguments_json(),
        intent.nonce(),
        &proof,
        intent.proposal_id(),
    )
    .await;
    drop(proof);
    let outcome = match sent {
        Ok(answer) => spec.outcome(&answer)?,
        // The first request may have been received whether or not this
        // one left: still unknown.
        Err(e) => {
            return Ok(Resent::StillUncertain(format!(
                "re-sent with Idempotency-Key {} and no answer came ({e}); not re-sent again in this run",
                intent.nonce()
            )));
        }
    };
    match gate.ledger().complete(intent, &outcome).await {
        Ok(_) => Ok(Resent::Completed(outcome)),
        Err(LedgerError::AlreadyCompleted(_)) => Ok(Resent::ResolvedMeanwhile(outcome)),
        Err(e) => Err(e.into()),
    }
}
