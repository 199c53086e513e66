//! The ledger's domain records: what callers write and what they read back.
//!
//! Plain data only. These types never hold a proof (only its SHA-256) and
//! must not grow a `Debug` that prints one.

use countersign_verifier::{Premise, Principal, ProposalId, Session};
use serde_json::Value;
use time::OffsetDateTime;

/// A proposal as the signer stores it: the facts fixed when it was made.
/// Decisions, issuance and consumption are recorded beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    /// `prop_` + 32 lowercase hex.
    pub id: ProposalId,
    /// The principal the proposal belongs to.
    pub principal: Principal,
    /// The agent session that proposed it.
    pub session: Session,
    /// The operation name from the registry.
    pub operation: String,
    /// The canonical arguments, stored verbatim.
    pub arguments_json: String,
    /// SHA-256 hex of `arguments_json`.
    pub arguments_sha256: String,
    /// The operation's contract revision at proposal time.
    pub contract_revision: String,
    /// The policy revision at proposal time.
    pub policy_revision: String,
    /// The proposer's free-text note (model-supplied, unverified).
    pub note: String,
    /// The preview rendered from the stored arguments.
    pub preview: String,
    /// When the proposal was recorded (whole seconds, UTC).
    pub created_at: OffsetDateTime,
    /// The premise the signer read at proposal, for an operation that
    /// declares one: a proof of this proposal must carry exactly it.
    pub premise: Option<Premise>,
    /// When its decision window closes (whole seconds, UTC): from then on,
    /// undecided, it is `expired` and no decision of it is recorded.
    /// `None` for a proposal recorded before decision windows existed.
    pub decide_by: Option<OffsetDateTime>,
    /// What the operator's Cedar policy said of it when it was proposed;
    /// `None` without a policy set (and for proposals recorded before
    /// policy sets existed).
    pub policy: Option<ProposalPolicy>,
}

/// The operator's Cedar policy verdicts on a proposal, at proposal time:
/// the binding set's (acted on) and, where a log-only set is configured
/// and would have said otherwise, that set's. Stored as canonical JSON
/// beside the proposal and in its `proposed` event, so the chain commits
/// to which policy decided.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProposalPolicy {
    /// The head the proposal came through, as the policy saw it
    /// (`context.head`), so that a decision puts the same request to it.
    pub head: String,
    /// The binding set's verdict, or `None` with only a log-only set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binding: Option<PolicyVerdict>,
    /// The log-only set's verdict, only when its outcome differs from the
    /// binding one (or from a person deciding, without a binding set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shadow: Option<PolicyVerdict>,
}

/// One policy set's verdict on one proposal.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyVerdict {
    /// SHA-256 hex of the policy set's text (its text is in the ledger's
    /// `policy_sets` under this digest).
    pub set: String,
    /// `forbid`, `require_approval`, `permit` or `person`.
    pub verdict: String,
    /// The policies that determined it, by id, sorted.
    pub policies: Vec<String>,
    /// With `require_approval`: the approvals it needs, when it names them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quorum: Option<PolicyQuorum>,
}

/// `required` distinct approvals out of the named `approvers`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyQuorum {
    /// How many must approve.
    pub required: u32,
    /// The approver names who may, sorted.
    pub approvers: Vec<String>,
}

impl ProposalPolicy {
    /// Its canonical JSON, as stored and as the `proposed` event holds it.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// The bound fields of an issued proof. Never the proof itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuanceRecord {
    /// SHA-256 hex of the proof text.
    pub proof_sha256: String,
    /// SHA-256 hex of the proof's consume key (`Proof::consume_key`), which
    /// a consumption must present on PostgreSQL; `None` for issuances
    /// recorded before the ledger kept it.
    pub consume_digest: Option<String>,
    /// The proof's nonce (`jti`).
    pub nonce: String,
    /// `sub`.
    pub principal: String,
    /// `sid`: the session that may execute the proof.
    pub session: String,
    /// `pid`.
    pub proposal_id: String,
    /// `op`.
    pub operation: String,
    /// `args_sha256`.
    pub arguments_sha256: String,
    /// `crev`.
    pub contract_revision: String,
    /// `prev`.
    pub policy_revision: String,
    /// `prov`: `human:cert:<principal>`, `human:cert:<principal>/<name>` (a named
    /// approver credential; older: `human:cli`, `human:web`) or `rule:<id>@<version>`.
    pub provenance: String,
    /// `aud`.
    pub audience: String,
    /// `iat`.
    pub issued_at: OffsetDateTime,
    /// `exp`.
    pub expires_at: OffsetDateTime,
    /// The id of the key that signed the proof (its footer's `kid`);
    /// `None` for issuances recorded before the ledger kept it (schema
    /// version 18).
    pub key_id: Option<String>,
    /// The same claims signed again by another signer of the ledger, for a
    /// head that claimed the proof through it
    /// ([`crate::Ledger::record_resigned_proof`]); read, never written,
    /// with the issuance.
    pub resigned: Option<ResignedProof>,
}

impl IssuanceRecord {
    /// The record of issuing `claims` as `proof`: every bound field comes
    /// from the signed claims; of the proof only its SHA-256 and its
    /// consume key's digest are kept.
    pub fn from_claims(
        claims: &countersign_verifier::Claims,
        proof: &countersign_verifier::Proof,
    ) -> Self {
        IssuanceRecord {
            proof_sha256: proof.sha256_hex(),
            consume_digest: Some(proof.consume_key().digest()),
            nonce: claims.jti.clone(),
            principal: claims.sub.clone(),
            session: claims.sid.clone(),
            proposal_id: claims.pid.clone(),
            operation: claims.op.clone(),
            arguments_sha256: claims.args_sha256.clone(),
            contract_revision: claims.crev.clone(),
            policy_revision: claims.prev.clone(),
            provenance: claims.prov.clone(),
            audience: claims.aud.clone(),
            issued_at: claims.iat,
            expires_at: claims.exp,
            key_id: countersign_verifier::verify::footer_key_id(proof),
            resigned: None,
        }
    }

    /// Whether a proof with SHA-256 `proof_sha256` is this issuance's: the
    /// one issued, or the one another signer signed again for it.
    pub fn names_proof(&self, proof_sha256: &str) -> bool {
        self.proof_sha256 == proof_sha256
            || self
                .resigned
                .as_ref()
                .is_some_and(|r| r.proof_sha256 == proof_sha256)
    }
}

/// An issuance's claims signed again by another signer of the ledger under
/// its own key: a handoff approval whose proof the issuing signer holds in
/// memory (or held, when it was lost), claimed through the other, so that
/// the head still gets a proof of the person's decision. The same nonce, lifetime and binding as
/// the issuance; another signature, so another hash and consume digest.
/// Never the proof itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResignedProof {
    /// The proposal.
    pub proposal_id: String,
    /// The issuance's nonce (`jti`), which the proof carries.
    pub nonce: String,
    /// SHA-256 hex of the proof signed again.
    pub proof_sha256: String,
    /// SHA-256 hex of its consume key, which a consumption presents.
    pub consume_digest: String,
    /// The key that signed it again.
    pub key_id: String,
    /// The key that signed the issued proof (the issuance's `key_id`).
    pub replaces_key_id: String,
}

/// A proof the signer signed again for reconcile's re-send of an uncertain,
/// replay-safe webhook ([`crate::Ledger::record_reissue`]): the same claims
/// as the issuance, with a fresh lifetime. Never the proof itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProofReissue {
    /// The proposal whose execution is uncertain.
    pub proposal_id: String,
    /// The issuance's nonce (`jti`), which the re-issued proof carries and
    /// the recorded intent consumed.
    pub nonce: String,
    /// SHA-256 hex of the re-issued proof (another hash than the issuance's:
    /// its `iat`, `nbf` and `exp` differ).
    pub proof_sha256: String,
    /// `exp` of the re-issued proof.
    pub expires_at: OffsetDateTime,
    /// Who asked: the head's principal.
    pub actor: String,
    /// How many re-issues the proposal may have had before this one, at
    /// most: with that many `proof_reissued` events recorded, this one is
    /// refused (`ReissueLimitReached`) and nothing is written.
    pub max_reissues: u32,
}

/// A proposal's status, derived on every read from the recorded facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProposalStatus {
    /// No decision yet.
    Pending,
    /// A person denied it.
    Denied,
    /// The proposer withdrew it before a decision.
    Withdrawn,
    /// A proof was issued and can still be used.
    Approved,
    /// The issued proof was revoked before use.
    Revoked,
    /// The issued proof was never used and is past its expiry; or no one
    /// decided the proposal within its decision window.
    Expired,
    /// The effect applied.
    Applied,
    /// The effect failed.
    Failed,
    /// An intent was recorded and no completion: in flight, or interrupted
    /// by a crash. Never re-run silently; `reconcile` resolves it.
    Uncertain,
}

impl ProposalStatus {
    /// The stable lowercase name used on the wire and in the CLI.
    pub fn as_str(&self) -> &'static str {
        match self {
            ProposalStatus::Pending => "pending",
            ProposalStatus::Denied => "denied",
            ProposalStatus::Withdrawn => "withdrawn",
            ProposalStatus::Approved => "approved",
            ProposalStatus::Revoked => "revoked",
            ProposalStatus::Expired => "expired",
            ProposalStatus::Applied => "applied",
            ProposalStatus::Failed => "failed",
            ProposalStatus::Uncertain => "uncertain",
        }
    }

    /// Whether the proof was consumed (an intent is recorded): `applied`,
    /// `failed` or `uncertain`. Final: a consumed nonce is never unconsumed.
    pub fn is_consumed(&self) -> bool {
        matches!(
            self,
            ProposalStatus::Applied | ProposalStatus::Failed | ProposalStatus::Uncertain
        )
    }
}

impl std::fmt::Display for ProposalStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A stored proposal with its derived status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProposalRecord {
    /// The proposal as stored.
    pub proposal: Proposal,
    /// The derived status at the time of the read.
    pub status: ProposalStatus,
    /// The denial or revocation reason, or the error of a failed effect.
    pub reason: Option<String>,
    /// The issuance, once approved.
    pub issuance: Option<IssuanceRecord>,
}

/// How consumption of a verified proof started.
#[derive(Debug, Clone, PartialEq)]
pub enum ConsumeStart {
    /// The nonce was fresh and is now consumed (first transaction of the
    /// two-phase flow): run the effect, then `complete`.
    Fresh(Intent),
    /// The nonce was already consumed: this is what happened. Never apply again.
    Replay(Disposition),
}

/// How a one-transaction consumption of a builtin effect ended
/// ([`crate::Ledger::consume_builtin`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Consumed {
    /// The nonce was fresh: it is consumed, and the effect's completion
    /// (applied, or failed with nothing changed) committed with it.
    Completed(Disposition),
    /// The nonce was already consumed: this is what happened. Nothing ran.
    Replay(Disposition),
}

/// A recorded intent to apply a consumed proof's effect: the capability to
/// run the second phase of a two-phase consumption. The arguments come from
/// the verified claims.
///
/// Only the ledger builds one: from the row [`crate::Ledger::begin_consume`]
/// writes, or from a row it reads back ([`crate::Ledger::interrupted`]).
/// Its fields are private, so a caller cannot assemble one, and every path
/// that acts on it ([`crate::Ledger::complete`],
/// [`crate::Ledger::apply_builtin`],
/// [`crate::Ledger::apply_builtin_and_complete`]) checks, inside its own
/// transaction, that it is exactly the intent recorded under its nonce
/// (proposal, principal, session, operation, arguments, proof, contract),
/// and applies the effect recorded there, never the caller's copy.
///
/// ```compile_fail
/// // Outside the ledger an intent cannot be assembled.
/// let forged = countersign_ledger::Intent {
///     proposal_id: String::new(),
///     nonce: String::new(),
///     principal: String::new(),
///     session: String::new(),
///     operation: "schedule.delete".into(),
///     arguments_json: String::new(),
///     proof_sha256: String::new(),
///     contract_revision: String::new(),
///     recorded_at: time::OffsetDateTime::UNIX_EPOCH,
///     lease_until: time::OffsetDateTime::UNIX_EPOCH,
/// };
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Intent {
    pub(crate) proposal_id: String,
    pub(crate) nonce: String,
    pub(crate) principal: String,
    pub(crate) session: String,
    pub(crate) operation: String,
    pub(crate) arguments_json: String,
    pub(crate) proof_sha256: String,
    pub(crate) contract_revision: String,
    pub(crate) recorded_at: OffsetDateTime,
    pub(crate) lease_until: OffsetDateTime,
}

impl Intent {
    /// The proposal being executed.
    pub fn proposal_id(&self) -> &str {
        &self.proposal_id
    }

    /// The consumed nonce; also the idempotency key of the effect.
    pub fn nonce(&self) -> &str {
        &self.nonce
    }

    /// `sub` of the proof.
    pub fn principal(&self) -> &str {
        &self.principal
    }

    /// `sid` of the proof.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// `op` of the proof: the operation whose effect was approved.
    pub fn operation(&self) -> &str {
        &self.operation
    }

    /// Canonical JSON of the proof's `args`.
    pub fn arguments_json(&self) -> &str {
        &self.arguments_json
    }

    /// SHA-256 hex of the proof.
    pub fn proof_sha256(&self) -> &str {
        &self.proof_sha256
    }

    /// `crev` of the proof: the contract a person approved, the only one
    /// under which reconcile may replay the effect (`""` for intents
    /// recorded before the ledger kept it: never replayed).
    pub fn contract_revision(&self) -> &str {
        &self.contract_revision
    }

    /// When the intent was recorded.
    pub fn recorded_at(&self) -> OffsetDateTime {
        self.recorded_at
    }

    /// Until when the head that recorded it may still be running the
    /// effect (its timeout plus a margin): before then, neither reconcile
    /// nor a person's resolution touches the intent.
    pub fn lease_until(&self) -> OffsetDateTime {
        self.lease_until
    }

    /// Whether `recorded` (the row under this intent's nonce) binds the
    /// same effect: every field a proof fixes. The times are not compared:
    /// they say when, not what.
    pub(crate) fn binds_same_effect_as(&self, recorded: &Intent) -> bool {
        self.proposal_id == recorded.proposal_id
            && self.nonce == recorded.nonce
            && self.principal == recorded.principal
            && self.session == recorded.session
            && self.operation == recorded.operation
            && self.arguments_json == recorded.arguments_json
            && self.proof_sha256 == recorded.proof_sha256
            && self.contract_revision == recorded.contract_revision
    }
}

/// An intent without completion, as [`crate::Ledger::interrupted`] finds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Interrupted {
    /// The intent.
    pub intent: Intent,
    /// The head that recorded it may still be running the effect: its
    /// lease has not ended by the database's clock, and that process is
    /// not known to have exited.
    pub running: bool,
}

/// What running an effect came to, as reported by the head.
#[derive(Debug, Clone, PartialEq)]
pub enum EffectOutcome {
    /// The effect applied; `result` is recorded.
    Applied {
        /// The effect's result.
        result: Value,
    },
    /// The effect failed; nothing (known) was applied.
    Failed {
        /// A one-line description of the failure.
        error: String,
        /// Whatever the effect reported.
        result: Value,
    },
}

impl EffectOutcome {
    /// `(status, error, result)` as the completion records them.
    pub(crate) fn parts(&self) -> (&'static str, Option<&str>, &Value) {
        match self {
            EffectOutcome::Applied { result } => ("applied", None, result),
            EffectOutcome::Failed { error, result } => ("failed", Some(error.as_str()), result),
        }
    }
}

/// The recorded end of a consumed proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DispositionStatus {
    /// The effect applied.
    Applied,
    /// The effect failed.
    Failed,
    /// An intent without completion: it may or may not have applied.
    Uncertain,
}

impl DispositionStatus {
    /// The stable lowercase name.
    pub fn as_str(&self) -> &'static str {
        match self {
            DispositionStatus::Applied => "applied",
            DispositionStatus::Failed => "failed",
            DispositionStatus::Uncertain => "uncertain",
        }
    }
}

impl std::fmt::Display for DispositionStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The disposition of a consumed proof.
#[derive(Debug, Clone, PartialEq)]
pub struct Disposition {
    /// The proposal.
    pub proposal_id: String,
    /// The consumed nonce.
    pub nonce: String,
    /// Applied, failed or uncertain.
    pub status: DispositionStatus,
    /// The recorded result (`null` while uncertain).
    pub result: Value,
    /// The recorded error of a failed effect.
    pub error: Option<String>,
    /// When the completion was recorded (`None` while uncertain).
    pub completed_at: Option<OffsetDateTime>,
}

/// The outcome of a revocation request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RevokeOutcome {
    /// The unconsumed proof is revoked; it will be refused.
    Revoked,
    /// The proof was already consumed; revocation is too late.
    AlreadyUsed,
    /// There is no issued, unrevoked proof (pending, denied or already revoked).
    NothingToRevoke,
}

/// One row of the event log.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRecord {
    /// The row's identity, assigned by the database in insertion order
    /// (rows of one chain are numbered in their chain's order; rows of
    /// different chains may interleave in any order).
    pub id: i64,
    /// The chain it extends: its principal's, or the global chain (`""`:
    /// key rotations, checkpoints, and every event written before the
    /// ledger kept a chain per principal).
    pub chain: String,
    /// Position in its chain, from 1, without gaps.
    pub seq: i64,
    /// When it happened (`YYYY-MM-DDTHH:MM:SSZ`).
    pub at: String,
    /// `proposed`, `denied`, `withdrawn`, `approved`, `revoked`, `intent`,
    /// `effect_applied`, `completed`, `resolved`, `proof_reissued`,
    /// `key_rotated`, `key_retired`, `passkey_enrolled`, `passkey_removed`,
    /// the rule and quorum kinds, or `checkpoint`.
    pub kind: String,
    /// The proposal concerned, if any.
    pub proposal_id: Option<String>,
    /// Who acted (a principal, or the person who resolved).
    pub actor: String,
    /// Kind-specific details (no proofs, no argument values).
    pub details: Value,
    /// The previous row's hash (64 zeros for the first).
    pub prev_hash: String,
    /// `sha256(prev_hash || canonical {id: seq, at, kind, proposal_id,
    /// actor, details, chain})` (no `chain` on the global chain).
    pub hash: String,
}

/// A ledger's schema as read without migrating it ([`crate::Ledger::schema_status`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaStatus {
    /// The migrations the database records as applied (each checked
    /// against this build's text), in order.
    pub applied: Vec<i64>,
    /// The migrations this build brings a database to, in order.
    pub expected: Vec<i64>,
    /// The database server's clock, in seconds since the Unix epoch, where
    /// the server has its own (PostgreSQL); `None` for a SQLite file, whose
    /// clock is this host's.
    pub server_time_unix: Option<f64>,
}

impl SchemaStatus {
    /// Whether every migration of this build is applied.
    pub fn is_current(&self) -> bool {
        self.expected.iter().all(|v| self.applied.contains(v))
    }

    /// The highest applied version (0 for none).
    pub fn current_version(&self) -> i64 {
        self.applied.iter().copied().max().unwrap_or(0)
    }

    /// The highest version this build expects.
    pub fn expected_version(&self) -> i64 {
        self.expected.iter().copied().max().unwrap_or(0)
    }
}

/// A change of the signer's key set, recorded in the event log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyEvent {
    /// A new key became the active signing key (`key_rotated`).
    Rotated,
    /// A key stopped verifying and is never published again (`key_retired`).
    Retired,
}

impl KeyEvent {
    /// The event kind in the log.
    pub fn kind(self) -> &'static str {
        match self {
            KeyEvent::Rotated => "key_rotated",
            KeyEvent::Retired => "key_retired",
        }
    }
}

/// What one group commit carried: the writes that shared its transaction
/// (those refused inside it included), by kind. See
/// [`crate::Ledger::observe_batches`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommittedBatch {
    /// Consumptions ([`crate::Ledger::consume_builtin`],
    /// [`crate::Ledger::begin_consume`]).
    pub consumptions: usize,
    /// Approvals, i.e. issuances ([`crate::Ledger::record_approval`] and
    /// its passkey, handoff and rule forms).
    pub approvals: usize,
    /// Whether the batch took the short way: two or more consumptions,
    /// every job's checks in one statement, every job's writes in one
    /// more, and one savepoint for all. A job alone runs without a
    /// savepoint; a batch with an approval or a premise, or whose writes
    /// failed and sent it back, runs each job in a savepoint of its own.
    pub checked_at_once: bool,
}

impl CommittedBatch {
    /// Every write of the batch.
    pub fn size(self) -> usize {
        self.consumptions + self.approvals
    }
}
