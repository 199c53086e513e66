//! The event hash chain: how a row's hash is computed and how a sequence of
//! rows is checked. Backend-independent; storage lives in the backends.
//!
//! `hash = sha256(prev_hash || canonical JSON of {id, at, kind, proposal_id,
//! actor, details})`, hex. The first row's `prev_hash` is [`GENESIS_HASH`].
//! The backends also keep a one-row chain head (count and last hash),
//! advanced in the same transaction as every insert, so a truncated tail is
//! detected. What is NOT detected: an attacker with raw write access who
//! rewrites the chain from some row onward, or truncates it, AND rewrites the
//! head to match. Only a copy of the head kept elsewhere (an anchor, e.g. the
//! output of `countersign audit` saved off the machine) catches that.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::types::EventRecord;

/// The `prev_hash` of the first event.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The hash of an event row given its predecessor's hash.
pub(crate) fn event_hash(
    prev_hash: &str,
    id: i64,
    at: &str,
    kind: &str,
    proposal_id: Option<&str>,
    actor: &str,
    details: &Value,
) -> Result<String, String> {
    let body = json!({
        "id": id,
        "at": at,
        "kind": kind,
        "proposal_id": proposal_id,
        "actor": actor,
        "details": details,
    });
    let text = countersign_verifier::canonical::to_canonical(&body).map_err(|e| e.to_string())?;
    let mut h = Sha256::new();
    h.update(prev_hash.as_bytes());
    h.update(text.as_bytes());
    Ok(hex::encode(h.finalize()))
}

/// The result of checking the whole event log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainReport {
    /// How many event rows were read.
    pub events: u64,
    /// The hash of the last row read (the genesis hash when empty).
    pub head_hash: String,
    /// The first problem found, if any.
    pub first_break: Option<ChainBreak>,
}

impl ChainReport {
    /// True when every row checks out and the chain head matches.
    pub fn is_intact(&self) -> bool {
        self.first_break.is_none()
    }
}

/// The first inconsistency found in the event log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainBreak {
    /// The row's content does not hash to its stored hash: it was edited.
    #[error("event {id} was edited (its hash does not match its content)")]
    Edited {
        /// The edited row.
        id: i64,
    },
    /// Rows are missing: ids jump from `after` to `next` (deleted rows).
    #[error("event {missing} is missing (ids jump from {after} to {next})")]
    Missing {
        /// The first missing id.
        missing: i64,
        /// The last id present before the gap (0 if the gap starts the log).
        after: i64,
        /// The next id present.
        next: i64,
    },
    /// The row's `prev_hash` is not its predecessor's hash (a row before it
    /// was deleted and the ids renumbered, or rows were replaced).
    #[error("event {id} does not link to the event before it")]
    BrokenLink {
        /// The row whose link is broken.
        id: i64,
    },
    /// The log ends before the recorded chain head: its tail was deleted.
    #[error("the log ends at event {found} but the chain head records {recorded} events")]
    Truncated {
        /// Events the head records.
        recorded: u64,
        /// Events found.
        found: u64,
    },
    /// The log has the recorded length but its last hash differs from the head.
    #[error("the chain head does not match event {id}")]
    HeadMismatch {
        /// The last row.
        id: i64,
    },
    /// The chain is intact, but the fact tables and the events disagree: a
    /// row without its event, an event without its row, or a state value
    /// its applied effects do not produce (see `crate::facts`).
    #[error("the ledger and its event log disagree: {detail}")]
    Disagrees {
        /// The first disagreement found.
        detail: String,
    },
    /// A row cannot be read back as an event.
    #[error("event {id} is unreadable: {reason}")]
    Unreadable {
        /// The row.
        id: i64,
        /// What is wrong with it.
        reason: String,
    },
}

/// A stored event row as read back, before interpretation.
pub(crate) struct RawEvent {
    pub(crate) id: i64,
    pub(crate) at: String,
    pub(crate) kind: String,
    pub(crate) proposal_id: Option<String>,
    pub(crate) actor: String,
    pub(crate) details: String,
    pub(crate) prev_hash: String,
    pub(crate) hash: String,
}

impl RawEvent {
    /// Decode the details; `Err` names the problem.
    pub(crate) fn into_record(self) -> Result<EventRecord, String> {
        let details: Value =
            serde_json::from_str(&self.details).map_err(|e| format!("details: {e}"))?;
        Ok(EventRecord {
            id: self.id,
            at: self.at,
            kind: self.kind,
            proposal_id: self.proposal_id,
            actor: self.actor,
            details,
            prev_hash: self.prev_hash,
            hash: self.hash,
        })
    }
}

/// Incremental checker fed rows in id order.
pub(crate) struct ChainChecker {
    last_id: i64,
    last_hash: String,
    count: u64,
    first_break: Option<ChainBreak>,
}

impl ChainChecker {
    pub(crate) fn new() -> Self {
        ChainChecker {
            last_id: 0,
            last_hash: GENESIS_HASH.to_string(),
            count: 0,
            first_break: None,
        }
    }

    /// Whether a break was already found (further rows need not be read).
    pub(crate) fn broken(&self) -> bool {
        self.first_break.is_some()
    }

    /// Check the next row.
    pub(crate) fn push(&mut self, row: RawEvent) {
        if self.first_break.is_some() {
            return;
        }
        let id = row.id;
        self.first_break = self.check(row).err();
        self.count += 1;
        self.last_id = id;
    }

    fn check(&mut self, row: RawEvent) -> Result<(), ChainBreak> {
        let id = row.id;
        if id != self.last_id + 1 {
            return Err(ChainBreak::Missing {
                missing: self.last_id + 1,
                after: self.last_id,
                next: id,
            });
        }
        if row.prev_hash != self.last_hash {
            return Err(ChainBreak::BrokenLink { id });
        }
        let stored_hash = row.hash.clone();
        let stored_details = row.details.clone();
        let record = row
            .into_record()
            .map_err(|reason| ChainBreak::Unreadable { id, reason })?;
        let canonical =
            countersign_verifier::canonical::to_canonical(&record.details).map_err(|e| {
                ChainBreak::Unreadable {
                    id,
                    reason: e.to_string(),
                }
            })?;
        if canonical != stored_details {
            return Err(ChainBreak::Edited { id });
        }
        let computed = event_hash(
            &record.prev_hash,
            id,
            &record.at,
            &record.kind,
            record.proposal_id.as_deref(),
            &record.actor,
            &record.details,
        )
        .map_err(|reason| ChainBreak::Unreadable { id, reason })?;
        if computed != stored_hash {
            return Err(ChainBreak::Edited { id });
        }
        self.last_hash = stored_hash;
        Ok(())
    }

    /// Finish against the stored chain head (`count`, `hash`).
    pub(crate) fn finish(self, head_count: u64, head_hash: &str) -> ChainReport {
        let first_break = self.first_break.or_else(|| {
            if self.count < head_count {
                Some(ChainBreak::Truncated {
                    recorded: head_count,
                    found: self.count,
                })
            } else if self.count > head_count || self.last_hash != head_hash {
                Some(ChainBreak::HeadMismatch { id: self.last_id })
            } else {
                None
            }
        });
        ChainReport {
            events: self.count,
            head_hash: self.last_hash,
            first_break,
        }
    }
}
