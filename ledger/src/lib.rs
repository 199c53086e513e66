//! countersign's durable ledger: proposals, decisions, issuances,
//! revocations, quorum decisions, consumed nonces, intents and completions, the state store of
//! the builtin effects, the signer's passkeys with every assertion it
//! accepted, auto-approval rules with their uses, the hash-chained,
//! append-only event log, and the transparency log's Merkle tree over
//! every event with its signed checkpoints (`tlog`) and the witnesses'
//! cosignatures of them (`witness`), and the consoles' Web Push devices
//! (`push_devices`). On PostgreSQL it also carries the
//! announcements of changed proposals between the signers of one database
//! (`LISTEN`/`NOTIFY`, ids only: [`Ledger::publish_changes`],
//! [`Ledger::change_listener`]).
//!
//! Status is derived on read, never stored. The ledger stores no proof, only
//! its SHA-256, and never logs argument values. Backend-independent logic
//! (status, chain hashing, schedule transitions) lives at the crate root.
//!
//! Backends: `sqlite` and `postgres`, each owning its connection setup,
//! write discipline and migrations (`migrations/<backend>/`). The queries
//! themselves are written once, in `src/sql/`, in the SQL both dialects
//! share (`$N` parameters), and each backend module compiles those files
//! against its own types (`Db`, `Conn`, `DbRow`) and its own `locking!`
//! macro (`FOR UPDATE OF <alias>` on PostgreSQL, nothing on SQLite), by
//! `#[path]`. One text, two type-checked instantiations: a query can not
//! drift between backends, and the shared test suite runs on both.
#![forbid(unsafe_code)]
// Intended: each backend compiles the shared `src/sql/` files against its
// own types (see above); clippy sees the same file loaded twice.
#![allow(clippy::duplicate_mod)]

/// `(version, description, sql)` of each migration of `migrations/<backend>/`,
/// in order: one list for both backends. Append only; never edit one.
/// (Version 6 was never released.)
macro_rules! migrations {
    ($backend:literal) => {
        migrations!(@ $backend;
            1, "ledger", "0001_ledger.sql";
            2, "review fixes", "0002_review_fixes.sql";
            3, "passkeys", "0003_passkeys.sql";
            4, "rules", "0004_rules.sql";
            5, "quorum", "0005_quorum.sql";
            7, "premises", "0007_premises.sql";
            8, "chains", "0008_chains.sql";
            9, "notification outbox", "0009_notification_outbox.sql";
            10, "decision windows", "0010_decision_windows.sql";
            11, "escalations", "0011_escalations.sql";
            12, "transparency log", "0012_tlog.sql";
            13, "witnesses", "0013_witnesses.sql";
            14, "signer state", "0014_signer_state.sql";
            15, "two signers", "0015_two_signers.sql";
            16, "policy sets", "0016_policy_sets.sql";
            17, "push devices", "0017_push_devices.sql";
            18, "resigned proofs", "0018_resigned_proofs.sql";
            19, "rules by proposal", "0019_rules_by_proposal.sql";
        )
    };
    (@ $backend:literal; $($version:literal, $description:literal, $file:literal;)*) => {
        &[$((
            $version,
            $description,
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/", $backend, "/", $file)),
        )),*]
    };
}

mod chain;
mod error;
mod facts;
pub mod fault;
pub mod leases;
mod ledger;
mod outbox;
mod owner;
mod passkeys;
mod postgres;
mod premise_command;
mod push_devices;
mod quorum;
mod rules;
mod schedule;
mod sqlite;
mod status;
#[cfg(feature = "testing")]
pub mod testing;
mod timefmt;
pub mod tlog;
mod types;
pub mod witness;

pub use chain::{
    ChainBreak, ChainHead, ChainHeads, ChainReport, GENESIS_HASH, GLOBAL_CHAIN, heads_digest,
    heads_value,
};
pub use countersign_process::premise::PremiseRunner;
pub use error::{EffectFailure, LedgerError, LedgerRefusal};
pub use leases::Lease;
pub use ledger::{
    CHANGE_LISTENER_APPLICATION, ChangeListener, Ledger, ProposalChange, SignerInstance, SignerKey,
    SoleSigner,
};
pub use outbox::OutboxNotification;
pub use passkeys::{
    AssertionPurpose, CodeRedemption, ENROLMENT_CODE, PasskeyAssertionRecord, PasskeyChallenge,
    PasskeyEnrolment, PasskeyRecord, PasskeyRemoval, SIGNER_ADMIN, StoredPasskeyAssertion,
};
pub use premise_command::{PREMISE_TIMEOUT, PremiseCommandError, run_premise_command};
pub use push_devices::{ApproverDevice, PushDevice};

pub use countersign_verifier::BuiltinEffect;
/// How long past an effect's own timeout its intent stays leased. Until
/// the lease ends, reconcile skips the intent and a person's resolution is
/// refused, so neither overtakes a running execution; unless the process
/// that recorded it is known to have exited (same machine, boot and PID
/// namespace, and that process is gone).
pub use countersign_verifier::lifetimes::INTENT_LEASE_MARGIN;
pub use quorum::{
    QuorumApproval, QuorumDecision, QuorumOutcome, QuorumVerdict, StoredQuorumAssertion,
};
pub use rules::{RuleChange, RuleRecord, RuleStatus};
pub use schedule::NAMESPACE as SCHEDULES_NAMESPACE;
pub use tlog::{StoredCheckpoint, TreeBreak, TreeHead, TreeReport, verify_checkpoint_signature};
pub use types::{
    CommittedBatch, ConsumeStart, Consumed, Disposition, DispositionStatus, EffectOutcome,
    EventRecord, Intent, Interrupted, IssuanceRecord, KeyEvent, PolicyQuorum, PolicyVerdict,
    ProofReissue, Proposal, ProposalPolicy, ProposalRecord, ProposalStatus, ResignedProof,
    RevokeOutcome, SchemaStatus,
};
pub use witness::{CosignatureRefusal, StoredCosignature, WitnessState, check_cosignature};
