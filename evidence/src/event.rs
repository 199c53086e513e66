//! A ledger event's hash and its leaf in the transparency log: the one
//! definition the ledger writes with and every verifier checks against.
//!
//! `hash = hex(SHA-256(prev_hash || C))`, `C` the canonical JSON (RFC 8785)
//! of `{id: seq, at, kind, proposal_id, actor, details}` plus `chain` unless
//! the chain is the global one (`""`), so rows written before there were
//! several chains verify unchanged. The leaf is the text
//! `countersign-event/v1\n<chain>\n<seq>\n<hash>`.

use countersign_tlog::{Hash, leaf_hash};
use countersign_verifier::canonical::{self, CanonicalError};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The first line of version 1 of the leaf data.
pub const LEAF_VERSION: &str = "countersign-event/v1";

/// The fields of an event that its hash commits to.
#[derive(Debug, Clone, Copy)]
pub struct EventBody<'a> {
    /// The chain's name (`""`: the global chain).
    pub chain: &'a str,
    /// The event's position in its chain, from 1.
    pub seq: i64,
    /// When it happened.
    pub at: &'a str,
    /// Its kind.
    pub kind: &'a str,
    /// The proposal concerned, if any.
    pub proposal_id: Option<&'a str>,
    /// Who acted.
    pub actor: &'a str,
    /// Kind-specific details.
    pub details: &'a Value,
}

/// The hash of an event given its predecessor's hash in its chain.
pub fn event_hash(prev_hash: &str, e: &EventBody<'_>) -> Result<String, CanonicalError> {
    let mut body = json!({
        "id": e.seq,
        "at": e.at,
        "kind": e.kind,
        "proposal_id": e.proposal_id,
        "actor": e.actor,
        "details": e.details,
    });
    if !e.chain.is_empty() {
        body["chain"] = json!(e.chain);
    }
    let text = canonical::to_canonical(&body)?;
    let mut h = Sha256::new();
    h.update(prev_hash.as_bytes());
    h.update(text.as_bytes());
    Ok(hex::encode(h.finalize()))
}

/// The leaf data of the event at position `seq` of `chain` whose chain
/// hash is `hash`.
pub fn leaf_data(chain: &str, seq: i64, hash: &str) -> String {
    format!("{LEAF_VERSION}\n{chain}\n{seq}\n{hash}")
}

/// The RFC 6962 leaf hash of an event.
pub fn event_leaf_hash(chain: &str, seq: i64, hash: &str) -> Hash {
    leaf_hash(leaf_data(chain, seq, hash).as_bytes())
}
