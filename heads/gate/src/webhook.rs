//! The `webhook` effect: one HTTP/1.1 POST of the canonical arguments (the
//! exact bytes approved) to the URL fixed by the registry, carrying the
//! proof in `Countersign-Proof` (so the receiver verifies the approval
//! itself), the nonce as `Idempotency-Key` and the proposal id as
//! `Countersign-Proposal`.
//!
//! The connection is `countersign-outbound`'s: TCP_NODELAY, TLS against
//! the registry's trust roots only, and whether any byte of the request can
//! have left, which decides failed against uncertain. It follows no
//! redirect and keeps at most [`MAX_BODY_BYTES`] of the response. This
//! module must not log or trace a header: the proof is one.

use std::path::PathBuf;
use std::time::Duration;

use countersign_outbound::Bytes;
use countersign_outbound::header::{CONTENT_TYPE, HeaderMap, HeaderValue, USER_AGENT};
use countersign_outbound::{Target, post};
use countersign_registry::WebhookUrl;
use countersign_verifier::Proof;
use serde::Serialize;

pub use countersign_outbound::{MAX_BODY_BYTES, PostError as WebhookError};

/// Header carrying the proof.
pub const PROOF_HEADER: &str = "countersign-proof";
/// Header carrying the nonce, the receiver's idempotency key.
pub const IDEMPOTENCY_HEADER: &str = "idempotency-key";
/// Header carrying the proposal id.
pub const PROPOSAL_HEADER: &str = "countersign-proposal";

/// Where and how to send: taken from the registry's `Effect::Webhook`,
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
