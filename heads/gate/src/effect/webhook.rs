//! The `webhook` effect: one HTTP/1.1 POST of the canonical arguments (the
//! exact bytes approved) to the URL fixed by the registry, carrying the
//! proof in `Countersign-Proof` (so the receiver verifies the approval
//! itself), the nonce as `Idempotency-Key` and the proposal id as
//! `Countersign-Proposal`, between the intent and the completion
//! transactions. Its result is the receiver's answer; it applied if the
//! status is one the registry accepts. A request that was never sent is a
//! definite failure (the proof is spent, as for a program that cannot
//! start); one that may have been received leaves the intent open,
//! uncertain, never sent again by this execution. Reconcile re-sends a
//! replay-safe one with a proof the signer re-issues (`resend.rs`).
//!
//! The connection is `countersign-outbound`'s: TCP_NODELAY, TLS against
//! the registry's trust roots only, and whether any byte of the request can
//! have left, which decides failed against uncertain. It follows no
//! redirect and keeps at most [`MAX_BODY_BYTES`] of the response. This
//! module must not log or trace a header: the proof is one.

mod resend;

use std::path::PathBuf;
use std::time::Duration;

use countersign_ledger::{EffectOutcome, Intent};
use countersign_outbound::Bytes;
use countersign_outbound::header::{CONTENT_TYPE, HeaderMap, HeaderValue, USER_AGENT};
use countersign_outbound::{Target, post};
use countersign_registry::WebhookUrl;
use countersign_registry::effect::{EffectKind, Webhook, intent_lease_for};
use countersign_verifier::Proof;
use serde::Serialize;

use super::{Apply, Approved, Ran, Replay, Running};
use crate::execute::{Gate, GateError};
use crate::outcome::Outcome;
use crate::reconcile::Replayed;

pub use countersign_outbound::{MAX_BODY_BYTES, PostError as WebhookError};

/// Header carrying the proof.
pub const PROOF_HEADER: &str = "countersign-proof";
/// Header carrying the nonce, the receiver's idempotency key.
pub const IDEMPOTENCY_HEADER: &str = "idempotency-key";
/// Header carrying the proposal id.
pub const PROPOSAL_HEADER: &str = "countersign-proposal";

/// Where and how to send: taken from the registry's webhook definition,
/// never from a proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookSpec {
    /// The parsed URL.
    pub url: WebhookUrl,
    /// The whole exchange, connect to end of response, is bounded by this.
    pub timeout: Duration,
    /// Statuses that mean applied.
    pub accept_status: Vec<u16>,
    /// PEM bundle of the CAs trusted for an https receiver.
    pub trust_roots: Option<PathBuf>,
}

impl WebhookSpec {
    /// Where and how to send for the registry's `webhook` definition, or
    /// the kind's name if its URL does not parse. The registry refused
    /// every such URL at load, so this refusal (made before anything is
    /// consumed, so it burns nothing) only guards a registry built some
    /// other way.
    pub(super) fn from_definition(webhook: &Webhook) -> Result<WebhookSpec, &'static str> {
        Ok(WebhookSpec {
            url: WebhookUrl::parse(&webhook.url).map_err(|_| webhook.name())?,
            timeout: Duration::from_secs(webhook.timeout_secs),
            accept_status: webhook.accept_status.clone(),
            trust_roots: webhook.trust_roots.clone(),
        })
    }

    /// The completion a receiver's answer makes: applied for a status of
    /// `accept_status`, failed for any other; the answer is the result.
    fn outcome(&self, answer: &WebhookOutcome) -> Result<EffectOutcome, GateError> {
        let result = serde_json::to_value(answer).map_err(|e| GateError::Effect(e.to_string()))?;
        Ok(if self.accept_status.contains(&answer.status) {
            EffectOutcome::Applied { result }
        } else {
            EffectOutcome::Failed {
                error: format!(
                    "the receiver answered status {}, not one of {:?}",
                    answer.status, self.accept_status
                ),
                result,
            }
        })
    }

    /// Send the webhook of `intent` (its arguments, recorded from the
    /// verified claims, and its nonce as idempotency key) with `proof`, the
    /// proof presented for it.
    async fn run(&self, intent: &Intent, proof: &Proof) -> Result<Ran, GateError> {
        let sent = send_webhook(
            self,
            intent.arguments_json(),
            intent.nonce(),
            proof,
            intent.proposal_id(),
        )
        .await;
        match sent {
            Ok(answer) => Ok(Ran::Completed(self.outcome(&answer)?)),
            Err(e) if e.maybe_sent() => Ok(Ran::MaybeApplied(e.to_string())),
            Err(e) => Ok(Ran::Completed(EffectOutcome::Failed {
                error: format!("the webhook was not sent: {e}"),
                result: serde_json::Value::Null,
            })),
        }
    }
}

impl Apply for WebhookSpec {
    fn execute<'a>(&'a self, gate: &'a Gate, approved: Approved<'a>) -> Running<'a, Outcome> {
        let proof = approved.proof;
        Box::pin(gate.two_phase(
            approved,
            intent_lease_for(self.timeout),
            async move |intent: &Intent| self.run(intent, proof).await,
        ))
    }

    /// Re-sent once with a proof the signer re-issues (`resend.rs`).
    fn replay<'a>(&'a self, replay: Replay<'a>) -> Running<'a, Replayed> {
        Box::pin(resend::resend(replay, self))
    }
}

/// The receiver's answer. Serialized as the ledger's result of the effect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WebhookOutcome {
    /// The HTTP status of the response.
    pub status: u16,
    /// The response body (lossy UTF-8, at most [`MAX_BODY_BYTES`] bytes read).
    pub body: String,
    /// True when the body was longer than the bound (the rest was discarded).
    pub body_truncated: bool,
    /// False when the body could not be read to its end within the timeout
    /// (the status was received, so the outcome is still known).
    pub body_complete: bool,
    /// Wall time from connect to the end of the response, in milliseconds.
    pub duration_ms: u64,
}

/// POSTs `canonical_args` to `spec.url` as described in the module doc.
/// Any status is an `Ok` outcome: the receiver answered. `Err` means no
/// answer; [`WebhookError::maybe_sent`] tells whether it may have acted.
pub async fn send_webhook(
    spec: &WebhookSpec,
    canonical_args: &str,
    idempotency_key: &str,
    proof: &Proof,
    proposal_id: &str,
) -> Result<WebhookOutcome, WebhookError> {
    let headers = build_headers(idempotency_key, proof, proposal_id)?;
    let target = Target {
        url: &spec.url,
        trust_roots: spec.trust_roots.as_deref(),
        timeout: spec.timeout,
    };
    let body = Bytes::copy_from_slice(canonical_args.as_bytes());
    let answer = post(target, headers, body).await?;
    Ok(WebhookOutcome {
        status: answer.status,
        body: String::from_utf8_lossy(&answer.body).into_owned(),
        body_truncated: answer.body_truncated,
        body_complete: answer.body_complete,
        duration_ms: answer.duration_ms,
    })
}

fn build_headers(
    idempotency_key: &str,
    proof: &Proof,
    proposal_id: &str,
) -> Result<HeaderMap, WebhookError> {
    let key_ok = !idempotency_key.is_empty()
        && idempotency_key.len() <= 256
        && idempotency_key.bytes().all(|b| b.is_ascii_graphic());
    if !key_ok {
        return Err(WebhookError::InvalidHeader);
    }
    let header =
        |value: &str| HeaderValue::from_str(value).map_err(|_| WebhookError::InvalidHeader);
    let mut proof_value = header(proof.expose_secret())?;
    proof_value.set_sensitive(true);
    let mut headers = HeaderMap::new();
    headers.insert(
        USER_AGENT,
        HeaderValue::from_static("countersign-webhook/1"),
    );
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(PROOF_HEADER, proof_value);
    headers.insert(IDEMPOTENCY_HEADER, header(idempotency_key)?);
    headers.insert(PROPOSAL_HEADER, header(proposal_id)?);
    Ok(headers)
}
