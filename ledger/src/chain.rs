//! The event hash chains: how a row's hash is computed and how the rows
//! of the log are checked. Backend-independent; storage lives in the
//! backends.
//!
//! Every principal has its own chain (its proposals, decisions,
//! issuances, consumptions, rules and passkeys); events of no principal
//! (key rotations, checkpoints) extend the global chain, named `""`.
//! `hash = sha256(prev_hash || canonical JSON of {id, at, kind,
//! proposal_id, actor, details} + {chain})`, hex, where `id` is the row's
//! position in its chain (from 1) and `chain` is the chain's name, left
//! out on the global chain (so rows written before there were several
//! chains, which became the global chain's, verify unchanged). The first
//! row's `prev_hash` is [`GENESIS_HASH`].
//!
//! The backends keep one head per chain (count and last hash), advanced in
//! the same transaction as every insert, so a truncated tail is detected.
//! A `checkpoint` event on the global chain names the head of every chain
//! that moved since the one before, so a chain cut below a checkpoint (its
//! head rewritten to match) or removed whole is detected too. What is NOT
//! detected: an attacker with raw write access who rewrites a chain and
//! its head AND the global chain from the checkpoint that names it onward.
//! Only a copy of the heads kept elsewhere (an anchor: the head digest that
//! `countersign audit --verify` prints, saved off the machine) catches that.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::types::EventRecord;

/// The `prev_hash` of the first event of every chain.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The name of the global chain: events of no principal, and checkpoints.
pub const GLOBAL_CHAIN: &str = "";

/// The event kind of a checkpoint.
pub(crate) const CHECKPOINT: &str = "checkpoint";

/// How a chain is named in messages.
pub(crate) fn chain_label(chain: &str) -> String {
    if chain == GLOBAL_CHAIN {
        "the global chain".to_owned()
    } else {
        format!("the chain of {chain:?}")
    }
}

/// The fields of an event row that its hash commits to.
pub(crate) struct EventBody<'a> {
    pub(crate) chain: &'a str,
    pub(crate) seq: i64,
    pub(crate) at: &'a str,
    pub(crate) kind: &'a str,
    pub(crate) proposal_id: Option<&'a str>,
    pub(crate) actor: &'a str,
    pub(crate) details: &'a Value,
}

/// The hash a stored event, at position `seq` of its chain, should carry.
pub(crate) fn recorded_event_hash(record: &EventRecord, seq: i64) -> Result<String, String> {
    event_hash(
        &record.prev_hash,
        &EventBody {
            chain: &record.chain,
            seq,
            at: &record.at,
            kind: &record.kind,
            proposal_id: record.proposal_id.as_deref(),
            actor: &record.actor,
            details: &record.details,
        },
    )
}

/// The hash of an event row given its predecessor's hash in its chain
/// (the one definition, `countersign_evidence::event`, that evidence
/// bundles are verified with).
pub(crate) fn event_hash(prev_hash: &str, e: &EventBody<'_>) -> Result<String, String> {
    countersign_evidence::event::event_hash(
        prev_hash,
        &countersign_evidence::event::EventBody {
            chain: e.chain,
            seq: e.seq,
            at: e.at,
            kind: e.kind,
            proposal_id: e.proposal_id,
            actor: e.actor,
            details: e.details,
        },
    )
    .map_err(|e| e.to_string())
}

/// One chain's head: how many events it holds and the last one's hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainHead {
    /// Events in the chain.
    pub count: u64,
    /// The last event's hash ([`GENESIS_HASH`] when empty).
    pub hash: String,
}

/// Every chain's head, by chain name.
pub type ChainHeads = BTreeMap<String, ChainHead>;

/// The digest of a set of chain heads: SHA-256 of the canonical JSON
/// `{chain: {"count": n, "hash": h}}`, hex; [`GENESIS_HASH`] when there is
/// no chain. Saved off the machine, it is an anchor for the whole log.
pub fn heads_digest(heads: &ChainHeads) -> String {
    if heads.is_empty() {
        return GENESIS_HASH.to_owned();
    }
    let text =
        countersign_verifier::canonical::to_canonical(&heads_value(heads)).unwrap_or_default();
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// `heads` as JSON: `{chain: {"count": n, "hash": h}}`.
pub fn heads_value(heads: &ChainHeads) -> Value {
    let named: serde_json::Map<String, Value> = heads
        .iter()
        .map(|(chain, head)| {
            let head = json!({ "count": head.count, "hash": head.hash });
            (chain.clone(), head)
        })
        .collect();
    Value::Object(named)
}

/// The details of a checkpoint naming `heads`.
pub(crate) fn checkpoint_details(heads: &ChainHeads) -> Value {
    json!({ "heads": heads_value(heads) })
}

/// The heads a checkpoint's details name, if they are well formed.
pub(crate) fn checkpoint_heads(details: &Value) -> Option<ChainHeads> {
    let named = details.get("heads")?.as_object()?;
    let mut heads = ChainHeads::new();
    for (chain, head) in named {
        let count = head.get("count")?.as_u64()?;
        let hash = head.get("hash")?.as_str()?.to_owned();
        heads.insert(chain.clone(), ChainHead { count, hash });
    }
    Some(heads)
}

/// The result of checking the whole event log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainReport {
    /// How many event rows were read, in every chain.
    pub events: u64,
    /// How many chains hold them.
    pub chains: u64,
    /// How many checkpoints the global chain holds.
    pub checkpoints: u64,
    /// Every chain's head as read: an anchor to keep off the machine (each
    /// can be checked later against the row at its position).
    pub heads: ChainHeads,
    /// The digest of [`Self::heads`] ([`heads_digest`]; the genesis hash
    /// when the log is empty).
    pub head_hash: String,
    /// The first problem found, if any.
    pub first_break: Option<ChainBreak>,
}

impl ChainReport {
    /// True when every row checks out and every chain head matches.
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
    /// Rows are missing: positions in a chain jump from `after` to `next`.
    #[error("event {missing} of {} is missing (positions jump from {after} to {next})", chain_label(.chain))]
    Missing {
        /// The chain.
        chain: String,
        /// The first missing position.
        missing: i64,
        /// The last position present before the gap (0 if the gap starts
        /// the chain).
        after: i64,
        /// The next position present.
        next: i64,
    },
    /// The row's `prev_hash` is not its predecessor's hash (a row before it
    /// was deleted and the positions renumbered, or rows were replaced).
    #[error("event {id} does not link to the event before it")]
    BrokenLink {
        /// The row whose link is broken.
        id: i64,
    },
    /// A chain ends before its recorded head: its tail was deleted.
    #[error("{} ends at event {found} but its head records {recorded} events", chain_label(.chain))]
    Truncated {
        /// The chain.
        chain: String,
        /// Events the head records.
        recorded: u64,
        /// Events found.
        found: u64,
    },
    /// A chain has the recorded length but its last hash differs from its
    /// head, or holds more events than its head records.
    #[error("the head of {} does not match its last event", chain_label(.chain))]
    HeadMismatch {
        /// The chain.
        chain: String,
    },
    /// A checkpoint names a chain position that the chain no longer holds
    /// with that hash: the chain was cut below it, rewritten or removed.
    #[error("{} does not hold event {recorded} as a checkpoint recorded it", chain_label(.chain))]
    Checkpoint {
        /// The chain.
        chain: String,
        /// The position the latest checkpoint naming the chain recorded.
        recorded: u64,
    },
    /// The chains are intact, but the fact tables and the events disagree:
    /// a row without its event, an event without its row, or a state value
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
    pub(crate) chain: String,
    pub(crate) seq: i64,
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
            chain: self.chain,
            seq: self.seq,
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

/// The position of one chain being walked.
struct Walk {
    chain: String,
    last_seq: i64,
    last_hash: String,
}

/// Incremental checker fed every row ordered by chain, then position: the
/// global chain first (its name sorts first), so every checkpoint is read
/// before the chains it names.
pub(crate) struct ChainChecker {
    heads: ChainHeads,
    /// Per chain, the latest position and hash a checkpoint recorded.
    checkpointed: ChainHeads,
    walk: Option<Walk>,
    /// Chains finished so far.
    seen: BTreeMap<String, u64>,
    count: u64,
    checkpoints: u64,
    first_break: Option<ChainBreak>,
}

impl ChainChecker {
    /// A checker against the stored chain heads.
    pub(crate) fn new(heads: ChainHeads) -> Self {
        ChainChecker {
            heads,
            checkpointed: ChainHeads::new(),
            walk: None,
            seen: BTreeMap::new(),
            count: 0,
            checkpoints: 0,
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
        if self.walk.as_ref().is_none_or(|w| w.chain != row.chain) {
            self.end_chain();
            if self.first_break.is_some() {
                return;
            }
            self.walk = Some(Walk {
                chain: row.chain.clone(),
                last_seq: 0,
                last_hash: GENESIS_HASH.to_owned(),
            });
        }
        self.count += 1;
        self.first_break = self.check(row).err();
    }

    fn check(&mut self, row: RawEvent) -> Result<(), ChainBreak> {
        let Some(walk) = self.walk.as_mut() else {
            return Ok(());
        };
        let (id, seq) = (row.id, row.seq);
        if seq != walk.last_seq + 1 {
            return Err(ChainBreak::Missing {
                chain: row.chain,
                missing: walk.last_seq + 1,
                after: walk.last_seq,
                next: seq,
            });
        }
        if row.prev_hash != walk.last_hash {
            return Err(ChainBreak::BrokenLink { id });
        }
        let stored_hash = row.hash.clone();
        let stored_details = row.details.clone();
        let record = row
            .into_record()
            .map_err(|reason| ChainBreak::Unreadable { id, reason })?;
        let canonical = countersign_verifier::canonical::is_canonical_text(
            &record.details,
            stored_details.as_bytes(),
        )
        .map_err(|e| ChainBreak::Unreadable {
            id,
            reason: e.to_string(),
        })?;
        if !canonical {
            return Err(ChainBreak::Edited { id });
        }
        let computed = recorded_event_hash(&record, seq)
            .map_err(|reason| ChainBreak::Unreadable { id, reason })?;
        if computed != stored_hash {
            return Err(ChainBreak::Edited { id });
        }
        walk.last_seq = seq;
        walk.last_hash = stored_hash;
        if let Some(claim) = self.checkpointed.get(&record.chain)
            && u64::try_from(seq).ok() == Some(claim.count)
            && claim.hash != walk.last_hash
        {
            return Err(ChainBreak::Checkpoint {
                chain: record.chain,
                recorded: claim.count,
            });
        }
        if record.chain == GLOBAL_CHAIN && record.kind == CHECKPOINT {
            let named =
                checkpoint_heads(&record.details).ok_or_else(|| ChainBreak::Unreadable {
                    id,
                    reason: "a checkpoint without its heads".to_owned(),
                })?;
            self.checkpoints += 1;
            for (chain, head) in named {
                let later = self
                    .checkpointed
                    .get(&chain)
                    .is_none_or(|known| known.count <= head.count);
                if later {
                    self.checkpointed.insert(chain, head);
                }
            }
        }
        Ok(())
    }

    /// Close the chain being walked against its stored head and the
    /// checkpoints naming it.
    fn end_chain(&mut self) {
        let Some(walk) = self.walk.take() else {
            return;
        };
        let found = u64::try_from(walk.last_seq).unwrap_or_default();
        self.seen.insert(walk.chain.clone(), found);
        self.first_break = self.against_head(&walk.chain, found, &walk.last_hash);
    }

    /// The break, if the chain found with `found` events ending at `hash`
    /// does not match its head or the checkpoints naming it.
    fn against_head(&self, chain: &str, found: u64, hash: &str) -> Option<ChainBreak> {
        let head = self.heads.get(chain);
        let (recorded, head_hash) = head.map_or((0, GENESIS_HASH), |h| (h.count, h.hash.as_str()));
        if found < recorded {
            return Some(ChainBreak::Truncated {
                chain: chain.to_owned(),
                recorded,
                found,
            });
        }
        if found > recorded || hash != head_hash {
            return Some(ChainBreak::HeadMismatch {
                chain: chain.to_owned(),
            });
        }
        match self.checkpointed.get(chain) {
            Some(claim) if claim.count > found => Some(ChainBreak::Checkpoint {
                chain: chain.to_owned(),
                recorded: claim.count,
            }),
            _ => None,
        }
    }

    /// Finish: the last chain, then every head and checkpointed chain
    /// that no row was found for.
    pub(crate) fn finish(mut self) -> ChainReport {
        if self.first_break.is_none() {
            self.end_chain();
        }
        if self.first_break.is_none() {
            let unseen: Vec<&String> = self
                .heads
                .keys()
                .chain(self.checkpointed.keys())
                .filter(|chain| !self.seen.contains_key(*chain))
                .collect();
            self.first_break = unseen
                .into_iter()
                .find_map(|chain| self.against_head(chain, 0, GENESIS_HASH));
        }
        let heads: ChainHeads = self
            .heads
            .into_iter()
            .filter(|(_, head)| head.count > 0)
            .collect();
        ChainReport {
            events: self.count,
            chains: heads.len() as u64,
            checkpoints: self.checkpoints,
            head_hash: heads_digest(&heads),
            heads,
            first_break: self.first_break,
        }
    }
}
