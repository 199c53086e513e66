//! countersign's durable ledger: proposals, decisions, issuances,
//! revocations, consumed nonces, intents and completions, the state store of
//! the builtin effects, and the hash-chained, append-only event log.
//!
//! Status is derived on read, never stored. The ledger stores no proof, only
//! its SHA-256, and never logs argument values. Backend-independent logic
//! (status, chain hashing, schedule transitions) lives at the crate root;
//! SQL lives only in a backend module (`sqlite` now; PostgreSQL later, with
//! its own `migrations/postgres/`).
#![forbid(unsafe_code)]

mod chain;
mod error;
mod ledger;
mod schedule;
mod sqlite;
mod status;
mod timefmt;
mod types;

pub use chain::{ChainBreak, ChainReport, GENESIS_HASH};
pub use error::{EffectFailure, LedgerError, LedgerRefusal};
pub use ledger::Ledger;
pub use schedule::{BUILTIN_EFFECTS, NAMESPACE as SCHEDULES_NAMESPACE};
pub use types::{
    ConsumeStart, Disposition, DispositionStatus, EffectOutcome, EventRecord, Intent,
    IssuanceRecord, NewProposal, ProposalRecord, ProposalStatus, RevokeOutcome,
};
