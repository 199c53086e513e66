//! The public [`Ledger`] handle: parses the URL, picks the backend and
//! forwards each call. Holds no SQL; each backend owns its own.

use std::path::Path;

use serde_json::Value;

use crate::chain::ChainReport;
use crate::error::{EffectFailure, LedgerError};
use crate::outbox::OutboxNotification;
use crate::passkeys::{
    PasskeyAssertionRecord, PasskeyEnrolment, PasskeyRecord, PasskeyRemoval, StoredPasskeyAssertion,
};
use crate::premise_command::CommandNow;
use crate::push_devices::{ApproverDevice, PushDevice};
use crate::quorum::{QuorumApproval, QuorumDecision, QuorumOutcome, StoredQuorumAssertion};
use crate::rules::{RuleChange, RuleRecord};
use crate::types::{
    ConsumeStart, Consumed, Disposition, EffectOutcome, EventRecord, Intent, Interrupted,
    IssuanceRecord, KeyEvent, ProofReissue, Proposal, ProposalRecord, ResignedProof, RevokeOutcome,
    SchemaStatus,
};
use crate::{PremiseRunner, postgres, sqlite};
use countersign_verifier::VerifiedProof;

/// The durable ledger. One per process; cheap to clone (clones share the
/// connections).
#[derive(Clone)]
pub struct Ledger {
    backend: Backend,
    /// How a consumption runs a premise command (none by default: a
    /// command premise is then `PremiseUnavailable`).
    premise_runner: std::sync::Arc<PremiseRunner>,
}

#[derive(Clone)]
enum Backend {
    Sqlite(sqlite::Store),
    Postgres(postgres::Store),
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.backend {
            Backend::Sqlite(_) => f.write_str("Ledger(sqlite)"),
            Backend::Postgres(_) => f.write_str("Ledger(postgres)"),
        }
    }
}

/// Forward a call to the backend.
macro_rules! dispatch {
    ($self:ident, $b:ident => $call:expr) => {
        match &$self.backend {
            Backend::Sqlite($b) => $call,
            Backend::Postgres($b) => $call,
        }
    };
}

impl Ledger {
    /// Open the ledger at `url` and bring its schema up to date:
    /// `sqlite://<absolute path>` (the file is created with mode 0600 if
    /// missing; WAL, foreign keys, `synchronous = FULL`, a 5 s busy
    /// timeout), or `postgres://...` / `postgresql://...` (a server shared
    /// by many heads on many hosts).
    pub async fn open(url: &str) -> Result<Ledger, LedgerError> {
        Ledger::open_with(url, sqlite::Reads::Pool).await
    }

    /// [`Ledger::open`] for a process that runs one command and exits (a
    /// CLI command): on SQLite, one connection, the writer, which the
    /// command's reads go through too, instead of the read pool a serving
    /// process keeps; each connection parses the whole schema when it
    /// opens, and a one-shot command would pay for that twice. The schema
    /// is checked and brought up to date, and every write takes the write
    /// lock, exactly as [`Ledger::open`] does. On PostgreSQL the same as
    /// [`Ledger::open`].
    pub async fn open_for_one_command(url: &str) -> Result<Ledger, LedgerError> {
        Ledger::open_with(url, sqlite::Reads::Writer).await
    }

    async fn open_with(url: &str, reads: sqlite::Reads) -> Result<Ledger, LedgerError> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let backend = Backend::Postgres(postgres::Store::open(url).await?);
            return Ok(Ledger::of(backend));
        }
        let Some(path) = url.strip_prefix("sqlite://") else {
            return Err(LedgerError::UnsupportedUrl);
        };
        let path = Path::new(path);
        if path.as_os_str().is_empty() || !path.is_absolute() {
            return Err(LedgerError::UnsupportedUrl);
        }
        let backend = Backend::Sqlite(sqlite::Store::open(path, reads).await?);
        Ok(Ledger::of(backend))
    }

    fn of(backend: Backend) -> Ledger {
        Ledger {
            backend,
            premise_runner: std::sync::Arc::new(PremiseRunner::Unconfigured),
        }
    }

    /// This ledger, running the premise commands of consumptions as
    /// `runner` says (never in this process: see [`PremiseRunner`]).
    /// Without one, a proof with a command premise is refused
    /// (`PremiseUnavailable`).
    pub fn with_premise_runner(mut self, runner: PremiseRunner) -> Ledger {
        self.premise_runner = std::sync::Arc::new(runner);
        self
    }

    /// How this ledger's consumptions run premise commands.
    pub fn premise_runner(&self) -> &PremiseRunner {
        &self.premise_runner
    }

    /// The command premise of `proof` as it is now, established before a
    /// consumption queues for the write transaction (`None` for a proof
    /// without one). A premise command reads the world outside the
    /// ledger, which no ledger lock protects, so running it under the
    /// locks would only stall every writer (a group commit shares one
    /// transaction) for up to [`crate::PREMISE_TIMEOUT`].
    async fn command_premise_now(&self, proof: &VerifiedProof) -> Option<CommandNow> {
        let Some(countersign_verifier::Premise::Command(shown)) = &proof.claims().premise else {
            return None;
        };
        let Ok(args) = countersign_verifier::canonical::to_canonical(&proof.claims().args) else {
            // Not run; the checks refuse the proof (ProposalMismatch).
            return Some(CommandNow::Unavailable);
        };
        Some(
            match crate::run_premise_command(&self.premise_runner, &shown.argv, &args).await {
                Ok(printed) => CommandNow::Printed(printed),
                Err(e) => {
                    tracing::warn!(error = %e, "premise command failed at consumption");
                    CommandNow::Unavailable
                }
            },
        )
    }

    /// The schema of the ledger at `url` against this build's migrations,
    /// read without creating, migrating or writing anything (unlike
    /// [`Ledger::open`], which brings the schema up to date). For
    /// `countersign doctor`: a SQLite file that does not exist, a database
    /// that cannot be reached and one newer than this build are errors.
    pub async fn schema_status(url: &str) -> Result<SchemaStatus, LedgerError> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return postgres::Store::schema_status(url).await;
        }
        let Some(path) = url.strip_prefix("sqlite://") else {
            return Err(LedgerError::UnsupportedUrl);
        };
        let path = Path::new(path);
        if path.as_os_str().is_empty() || !path.is_absolute() {
            return Err(LedgerError::UnsupportedUrl);
        }
        sqlite::Store::schema_status(path).await
    }

    /// True on SQLite: one file that its owner (every head of a development
    /// installation) can write, so its rows prove nothing about what the
    /// signer recorded. On PostgreSQL the heads' role cannot write
    /// issuances.
    pub fn is_sqlite(&self) -> bool {
        matches!(self.backend, Backend::Sqlite(_))
    }

    /// Record a new proposal (and its `proposed` event), and return its
    /// record as committed: pending, which is what [`Ledger::proposal`]
    /// reads until something else is recorded for it.
    /// `DuplicateProposal` if the id exists.
    pub async fn insert_proposal(&self, p: &Proposal) -> Result<ProposalRecord, LedgerError> {
        dispatch!(self, b => b.insert_proposal(p, &[]).await)
    }

    /// [`Ledger::insert_proposal`], with `announce` (its notification, and
    /// its escalation if its operation has one) recorded in the
    /// notification outbox in the same transaction: the proposal and its
    /// notifications are all committed or none is, so a crash never
    /// leaves a waiting proposal that nobody is told of.
    pub async fn insert_announced_proposal(
        &self,
        p: &Proposal,
        announce: &[OutboxNotification],
    ) -> Result<ProposalRecord, LedgerError> {
        dispatch!(self, b => b.insert_proposal(p, announce).await)
    }

    /// Record a new proposal with a rule's approval of it, in one write
    /// transaction: [`Ledger::insert_proposal`] and
    /// [`Ledger::record_rule_approval`] (a handoff) together, so a
    /// proposal a rule covers costs one commit. Both commit or neither
    /// does: on a refusal of the rule (`RuleExhausted`, `RuleRateLimited`,
    /// `RuleNotLive`, `UnknownRule`) or `DuplicateProposal`, nothing is
    /// written, and the caller may record the proposal alone.
    pub async fn insert_rule_approved_proposal(
        &self,
        p: &Proposal,
        issuance: &IssuanceRecord,
    ) -> Result<ProposalRecord, LedgerError> {
        if countersign_verifier::Grant::from_provenance(&issuance.provenance).is_none() {
            return Err(LedgerError::IssuanceMismatch(issuance.proposal_id.clone()));
        }
        dispatch!(self, b => b.insert_rule_approved_proposal(p, issuance).await)
    }

    /// Records a proposal its operator's policy forbids, with its denial
    /// (`reason`, naming the policies), in one write transaction: it is
    /// on the record and never waits for anybody. `DuplicateProposal` if
    /// the id exists (nothing written).
    pub async fn insert_denied_proposal(
        &self,
        p: &Proposal,
        reason: &str,
    ) -> Result<ProposalRecord, LedgerError> {
        dispatch!(self, b => b.insert_denied_proposal(p, reason).await)
    }

    /// Stores a Cedar policy set's text under its digest (the SHA-256 hex
    /// of the text), which it returns; a set stored before is left as is.
    pub async fn record_policy_set(&self, text: &str) -> Result<String, LedgerError> {
        dispatch!(self, b => b.record_policy_set(text).await)
    }

    /// The text of the policy set stored under `digest`, if any.
    pub async fn policy_set(&self, digest: &str) -> Result<Option<String>, LedgerError> {
        dispatch!(self, b => b.policy_set(digest).await)
    }

    /// Records `keep` and forgets the devices of the sessions `remove`
    /// names, all of `principal`'s approver `approver`, in one write
    /// transaction (the principal's devices past their session's end go
    /// with it): how many were recorded and forgotten.
    pub async fn set_push_devices(
        &self,
        principal: &str,
        approver: &str,
        keep: &[PushDevice],
        remove: &[String],
    ) -> Result<(u32, u32), LedgerError> {
        dispatch!(self, b => b.set_push_devices(principal, approver, keep, remove).await)
    }

    /// `principal`'s Web Push devices whose session has not ended, ordered
    /// by approver and session.
    pub async fn push_devices(&self, principal: &str) -> Result<Vec<ApproverDevice>, LedgerError> {
        dispatch!(self, b => b.push_devices(principal).await)
    }

    /// Records a notification for the notify process to take (the
    /// notification outbox). Nothing else reads it.
    pub async fn record_notification(&self, n: &OutboxNotification) -> Result<(), LedgerError> {
        dispatch!(self, b => b.record_notification(n).await)
    }

    /// At most `limit` of `principal`'s notifications not yet
    /// acknowledged, oldest first.
    pub async fn notifications(
        &self,
        principal: &str,
        limit: u32,
    ) -> Result<Vec<OutboxNotification>, LedgerError> {
        dispatch!(self, b => b.notifications(principal, limit).await)
    }

    /// Removes those of `ids` that belong to `principal` from the outbox
    /// (the notify process holds them durably now); returns how many were
    /// there. Unknown ids and other principals' are ignored.
    pub async fn acknowledge_notifications(
        &self,
        principal: &str,
        ids: &[String],
    ) -> Result<u64, LedgerError> {
        dispatch!(self, b => b.acknowledge_notifications(principal, ids).await)
    }

    /// One proposal with its status derived now.
    pub async fn proposal(&self, id: &str) -> Result<Option<ProposalRecord>, LedgerError> {
        dispatch!(self, b => b.proposal(id).await)
    }

    /// The principal's undecided proposals, oldest first.
    pub async fn pending(&self, principal: &str) -> Result<Vec<ProposalRecord>, LedgerError> {
        dispatch!(self, b => b.pending(principal).await)
    }

    /// Record a denial. `NotPending` if already decided; `UnknownProposal`
    /// if absent or owned by another principal.
    pub async fn record_denial(
        &self,
        proposal_id: &str,
        principal: &str,
        reason: &str,
    ) -> Result<(), LedgerError> {
        dispatch!(self, b => b.record_denial(proposal_id, principal, reason).await)
    }

    /// Record the proposer's withdrawal of an undecided proposal. Errors as
    /// for [`Ledger::record_denial`].
    pub async fn record_withdrawal(
        &self,
        proposal_id: &str,
        principal: &str,
        reason: &str,
    ) -> Result<(), LedgerError> {
        dispatch!(self, b => b.record_withdrawal(proposal_id, principal, reason).await)
    }

    /// The principal's proposals, newest first, at most `limit`.
    pub async fn proposals_of(
        &self,
        principal: &str,
        limit: u32,
    ) -> Result<Vec<ProposalRecord>, LedgerError> {
        dispatch!(self, b => b.proposals_of(principal, limit).await)
    }

    /// Record the approve decision, the issuance and its event atomically.
    /// `NotPending` if already decided; `IssuanceMismatch` if the issuance's
    /// operation, arguments hash or revisions differ from the proposal's.
    pub async fn record_approval(&self, issuance: &IssuanceRecord) -> Result<(), LedgerError> {
        dispatch!(self, b => b.record_approval(issuance, None, false).await)
    }

    /// [`Ledger::record_approval`] (or, with `passkey`,
    /// [`Ledger::record_passkey_approval`]) of a proof kept for a head to
    /// claim: the `approved` event records `"delivery": "handoff"`, which
    /// lets a restarted signer hand the approval over
    /// ([`Ledger::approved_for_handoff`]). An assertion made for a direct
    /// delivery is `AssertionMismatch`.
    pub async fn record_handoff_approval(
        &self,
        issuance: &IssuanceRecord,
        passkey: Option<&PasskeyAssertionRecord>,
    ) -> Result<(), LedgerError> {
        dispatch!(self, b => b.record_approval(issuance, passkey, true).await)
    }

    /// Record one approver's approval of a proposal whose operation requires
    /// a quorum, in one write transaction under the proposal's lock: the
    /// quorum decision row and its `quorum_approved` event, and, when it is
    /// the `required`-th approval, the approve decision, the issuance (and
    /// passkey assertion) and the `approved` event, as
    /// [`Ledger::record_approval`] writes them. Refused with nothing
    /// written: `UnknownProposal`, `NotPending` (decided, denied or issued
    /// meanwhile), `AlreadyApproved` (this approver decided it before),
    /// `QuorumMoved` (the approvals recorded are not `prior`: read them
    /// again), with `passkey` an assertion that is not a decision about
    /// this proposal by an active passkey of the principal that this
    /// approver enrolled (`AssertionMismatch`, `UnusablePasskey`) or a
    /// reused challenge (`ChallengeUsed`), `IssuanceMismatch` (an issuance with an approval that is not
    /// the `required`-th, none with the one that is, or one that does not
    /// match the proposal), and the passkey refusals of
    /// [`Ledger::record_passkey_approval`].
    pub async fn record_quorum_approval(
        &self,
        approval: &QuorumApproval<'_>,
    ) -> Result<QuorumOutcome, LedgerError> {
        dispatch!(self, b => b.record_quorum_approval(approval).await)
    }

    /// Record a quorum approver's denial, which ends the proposal: the
    /// quorum decision row, the deny decision and a `denied` event naming
    /// the approver, in one write transaction under the proposal's lock.
    /// `AlreadyApproved` if this approver approved it before (a person does
    /// not take back an approval by denying; any other approver can deny);
    /// otherwise errors as for [`Ledger::record_denial`].
    pub async fn record_quorum_denial(
        &self,
        proposal_id: &str,
        principal: &str,
        approver: &str,
        required: u32,
        reason: &str,
    ) -> Result<(), LedgerError> {
        dispatch!(self, b => b.record_quorum_denial(proposal_id, principal, approver, required, reason).await)
    }

    /// Every quorum approver's stored passkey assertion (for `audit
    /// --verify`, which verifies each again against its credential's public
    /// key and checks that the approver enrolled that credential).
    pub async fn quorum_passkey_assertions(
        &self,
    ) -> Result<Vec<StoredQuorumAssertion>, LedgerError> {
        dispatch!(self, b => b.quorum_passkey_assertions().await)
    }

    /// A proposal's quorum decisions, in the order recorded (empty for a
    /// proposal without a quorum, or none yet).
    pub async fn quorum_decisions(
        &self,
        proposal_id: &str,
    ) -> Result<Vec<QuorumDecision>, LedgerError> {
        dispatch!(self, b => b.quorum_decisions(proposal_id).await)
    }

    /// [`Ledger::record_handoff_approval`] of a proof issued under a rule,
    /// whose provenance `rule:<id>@<version>` names it: in the same
    /// transaction, after the chain head's lock, the rule must exist for the
    /// issuance's principal (`UnknownRule`), be live at exactly that version
    /// (`RuleNotLive`: revised, revoked or expired), and have uses left in
    /// total (`RuleExhausted`) and in the last hour (`RuleRateLimited`);
    /// then the use is recorded with the decision and the issuance, and the
    /// `approved` event names the rule and version. So concurrent approvals
    /// under one rule never exceed its budget. On any error nothing is
    /// written and the proposal stays pending.
    pub async fn record_rule_approval(&self, issuance: &IssuanceRecord) -> Result<(), LedgerError> {
        if countersign_verifier::Grant::from_provenance(&issuance.provenance).is_none() {
            return Err(LedgerError::IssuanceMismatch(issuance.proposal_id.clone()));
        }
        dispatch!(self, b => b.record_approval(issuance, None, true).await)
    }

    /// Create a rule: version 1 of `change`, and its `rule_created` event,
    /// in one write transaction. `DuplicateRule` if the id exists.
    pub async fn create_rule(&self, change: &RuleChange) -> Result<RuleRecord, LedgerError> {
        dispatch!(self, b => b.create_rule(change).await)
    }

    /// A person's approval of a pending `rule.create` proposal, which
    /// creates the rule it proposes, in one write transaction: the
    /// proposal must be `change.principal`'s (`UnknownProposal`), pending
    /// (`NotPending`), of `rule.create`, and its canonical arguments exactly
    /// `change.definition` (`IssuanceMismatch`). Records the `approve`
    /// decision (no proof is issued: the proposal reads `applied` from
    /// then on) with an `approved` event naming the rule, and version 1 of
    /// the rule with its `rule_created` event naming the proposal.
    pub async fn create_rule_from_proposal(
        &self,
        change: &RuleChange,
        proposal_id: &str,
    ) -> Result<RuleRecord, LedgerError> {
        dispatch!(self, b => b.create_rule_from_proposal(change, proposal_id).await)
    }

    /// Revise a rule: the next version, with `change`'s definition and
    /// limits, and its `rule_revised` event. The rule must belong to
    /// `change.principal` (`UnknownRule`), be active (`RuleNotLive` once
    /// revoked) and still be at `expected_version` (`RuleChanged`: someone
    /// changed it since the person looked). Proofs issued under an earlier
    /// version are refused at consumption from then on (`rule_revoked`).
    pub async fn revise_rule(
        &self,
        change: &RuleChange,
        expected_version: u64,
    ) -> Result<RuleRecord, LedgerError> {
        dispatch!(self, b => b.revise_rule(change, expected_version).await)
    }

    /// Revoke a rule: the next version, revoked, with `reason` and its
    /// `rule_revoked` event. It approves nothing more, and every unconsumed
    /// proof issued under it is refused at consumption (`rule_revoked`).
    /// `UnknownRule` if it is not `principal`'s; `RuleNotLive` if already
    /// revoked.
    pub async fn revoke_rule(
        &self,
        id: &str,
        principal: &str,
        by: &str,
        reason: &str,
    ) -> Result<RuleRecord, LedgerError> {
        dispatch!(self, b => b.revoke_rule(id, principal, by, reason).await)
    }

    /// The principal's rules (each at its latest version, with its uses
    /// and the last hour's), oldest first.
    pub async fn rules(&self, principal: &str) -> Result<Vec<RuleRecord>, LedgerError> {
        dispatch!(self, b => b.rules(principal).await)
    }

    /// One rule at its latest version, with its uses.
    pub async fn rule(&self, id: &str) -> Result<Option<RuleRecord>, LedgerError> {
        dispatch!(self, b => b.rule(id).await)
    }

    /// Hand off the unconsumed, unrevoked proof with SHA-256
    /// `proof_sha256` that a direct approval of `proposal_id` issued, to
    /// a head of the proposing session: its `handed_off` event, by
    /// `approver`, in one write transaction under the proposal's lock.
    /// From then on [`Ledger::approved_for_handoff`] is true for it.
    /// `UnknownProposal` if it is not `principal`'s; `NotPending` if no
    /// such proof waits (none issued, another one, revoked or consumed).
    pub async fn record_hand_off(
        &self,
        proposal_id: &str,
        principal: &str,
        proof_sha256: &str,
        approver: &str,
    ) -> Result<(), LedgerError> {
        dispatch!(self, b => b.record_hand_off(proposal_id, principal, proof_sha256, approver).await)
    }

    /// Whether the approval that issued the proof with SHA-256
    /// `proof_sha256` for `proposal_id` was recorded for a handoff
    /// ([`Ledger::record_handoff_approval`]) or handed off since
    /// ([`Ledger::record_hand_off`]). `false` for a direct approval, for
    /// one recorded before the ledger kept the delivery, and for a proof
    /// hash no approval of the proposal issued.
    pub async fn approved_for_handoff(
        &self,
        proposal_id: &str,
        proof_sha256: &str,
    ) -> Result<bool, LedgerError> {
        dispatch!(self, b => b.approved_for_handoff(proposal_id, proof_sha256).await)
    }

    /// [`Ledger::record_approval`] with the passkey assertion that
    /// authorized it, stored in the same transaction (all or nothing); the
    /// `approved` event names its credential (`"passkey"`). The assertion
    /// must be a decision about this proposal (`direct` or `handoff`
    /// delivery), else `AssertionMismatch`, by an enrolled, unremoved
    /// credential of the issuance's principal, else `UnusablePasskey`; a
    /// challenge accepted before is `ChallengeUsed`. Errors otherwise as
    /// for `record_approval`; on any error nothing is written. An assertion
    /// made for a `handoff` delivery records the approval for a handoff,
    /// as [`Ledger::record_handoff_approval`] does.
    pub async fn record_passkey_approval(
        &self,
        issuance: &IssuanceRecord,
        assertion: &PasskeyAssertionRecord,
    ) -> Result<(), LedgerError> {
        let handoff = assertion.delivery == "handoff";
        dispatch!(self, b => b.record_approval(issuance, Some(assertion), handoff).await)
    }

    /// Enrol a credential in one transaction: its row (stamped now), the
    /// authorizing assertion if any, and the `passkey_enrolled` event (by
    /// `enrolled_by`). Without an assertion `authorized_by` must be
    /// [`crate::ENROLMENT_CODE`]; with one, its credential, and the
    /// assertion an enrolment of this credential id by an enrolled,
    /// unremoved credential of the same principal (`AssertionMismatch`,
    /// `UnusablePasskey`). `DuplicatePasskey` if the credential id is
    /// enrolled already (removed or not); `ChallengeUsed` for a challenge
    /// accepted before. On any error nothing is written.
    pub async fn enrol_passkey(
        &self,
        enrolment: &PasskeyEnrolment,
        authorization: Option<&PasskeyAssertionRecord>,
    ) -> Result<(), LedgerError> {
        dispatch!(self, b => b.enrol_passkey(enrolment, authorization).await)
    }

    /// Remove a credential in one transaction: the removal row, its
    /// assertion if any, and the `passkey_removed` event (by `removed_by`).
    /// Without an assertion `authorized_by` must be [`crate::SIGNER_ADMIN`];
    /// with one, its credential, and the assertion a removal of
    /// `credential_id` by an enrolled, unremoved credential of the same
    /// principal (the credential itself may sign its own removal). An
    /// unknown or already removed credential is an outcome, with nothing
    /// written; errors as for [`Ledger::enrol_passkey`].
    pub async fn remove_passkey(
        &self,
        credential_id: &str,
        removed_by: &str,
        authorized_by: &str,
        assertion: Option<&PasskeyAssertionRecord>,
    ) -> Result<PasskeyRemoval, LedgerError> {
        dispatch!(self, b => b.remove_passkey(credential_id, removed_by, authorized_by, assertion).await)
    }

    /// The principal's credentials, removed ones included (with their
    /// `removed_at`), oldest first.
    pub async fn passkeys(&self, principal: &str) -> Result<Vec<PasskeyRecord>, LedgerError> {
        dispatch!(self, b => b.passkeys(principal).await)
    }

    /// One credential, removed or not.
    pub async fn passkey(&self, credential_id: &str) -> Result<Option<PasskeyRecord>, LedgerError> {
        dispatch!(self, b => b.passkey(credential_id).await)
    }

    /// Every stored assertion, in the order stored (for `audit --verify`,
    /// which verifies each again against its credential's public key).
    pub async fn passkey_assertions(&self) -> Result<Vec<StoredPasskeyAssertion>, LedgerError> {
        dispatch!(self, b => b.passkey_assertions().await)
    }

    /// The assertion that authorized a proposal's approval, if one did.
    pub async fn passkey_assertion_for(
        &self,
        proposal_id: &str,
    ) -> Result<Option<StoredPasskeyAssertion>, LedgerError> {
        dispatch!(self, b => b.passkey_assertion_for(proposal_id).await)
    }

    /// Record a change of the signer's key set (`key_rotated` or
    /// `key_retired`, details: the key id) in the event log.
    pub async fn record_key_event(
        &self,
        event: KeyEvent,
        key_id: &str,
        actor: &str,
    ) -> Result<(), LedgerError> {
        dispatch!(self, b => b.record_key_event(event, key_id, actor).await)
    }

    /// Revoke a proposal's unconsumed proof.
    pub async fn revoke(
        &self,
        proposal_id: &str,
        principal: &str,
        reason: &str,
    ) -> Result<RevokeOutcome, LedgerError> {
        dispatch!(self, b => b.revoke(proposal_id, principal, reason).await)
    }

    /// Consume a verified proof once and apply its builtin `effect` (one of
    /// [`crate::BuiltinEffect`]s, over the state store), all in ONE write
    /// transaction: lock the proposal, run the checks of
    /// [`Ledger::begin_consume`], burn the nonce, write the intent and its
    /// event, apply the effect, write the completion and its event, commit.
    /// `Completed` with the disposition: `applied`, or `failed` when the
    /// transition is refused (the proof is consumed and the state store is
    /// unchanged). `Replay` with the recorded disposition if the nonce was
    /// already consumed; refusals as for `begin_consume`, and
    /// `ProposalMismatch` if `effect` is not the operation the proof names
    /// (a builtin backs only the operation of its own name). On any error
    /// nothing is written: the nonce is not burned, nothing is applied, and
    /// the same proof can be presented again. It is never left uncertain.
    /// Every check runs inside the write transaction, so a replay queues
    /// for the write lock like any writer; a caller that wants replays
    /// answered at once reads [`Ledger::proposal`] first (its status says
    /// whether the proof was consumed, which is final), as the gate does.
    /// (Should the connection fail during the commit itself, the caller
    /// cannot know whether it committed, but the ledger holds all of it or
    /// none of it: presenting the proof again applies it once or returns
    /// the recorded disposition.)
    pub async fn consume_builtin(
        &self,
        proof: &VerifiedProof,
        effect: &str,
    ) -> Result<Consumed, LedgerError> {
        let now = self.command_premise_now(proof).await;
        dispatch!(self, b => b.consume_builtin(proof, effect, now).await)
    }

    /// Consume a verified proof whose effect is the record of its own
    /// completion, and nothing else: a coding agent's hook, whose "allow"
    /// is the effect, answered only once this committed. The nonce, the
    /// intent and an applied completion carrying `result` are written in
    /// ONE transaction (shared with concurrent writes like
    /// [`Ledger::consume_builtin`]'s), so no intent is ever left open by
    /// it. `Replay` with the recorded disposition if the nonce was already
    /// consumed; refusals as for [`Ledger::begin_consume`]. On any error
    /// nothing is written and the proof can be presented again.
    pub async fn consume_recorded(
        &self,
        proof: &VerifiedProof,
        result: &serde_json::Value,
    ) -> Result<Consumed, LedgerError> {
        let now = self.command_premise_now(proof).await;
        dispatch!(self, b => b.consume_recorded(proof, result, now).await)
    }

    /// Make `observer` hear, after each group commit, how many
    /// consumptions ([`Ledger::consume_builtin`], [`Ledger::begin_consume`])
    /// and approvals ([`Ledger::record_approval`] and its forms) shared its
    /// transaction (refused ones included). Concurrent consumptions and
    /// approvals of this ledger (and its clones) share one transaction and
    /// one commit, each in its own savepoint, and each caller is answered
    /// once that commit is durable. Replaces any earlier observer.
    pub fn observe_batches(
        &self,
        observer: std::sync::Arc<dyn Fn(crate::CommittedBatch) + Send + Sync>,
    ) {
        dispatch!(self, b => b.observe_batches(observer))
    }

    /// First transaction of the two-phase flow, for effects outside the
    /// ledger (`command`): consume a verified proof once, in ONE write
    /// transaction: the proposal
    /// must exist (`UnknownProposal`) and match the claims (principal,
    /// operation, arguments hash, revisions; the session must be the
    /// issuance's) (`ProposalMismatch`); an issuance with exactly this proof
    /// hash and nonce must exist (`NotIssued`) and not be revoked
    /// (`Revoked`). An already consumed nonce gives `Replay` with the
    /// recorded disposition; a proof whose expiry has passed by the
    /// database's clock, read after the locks, is refused (`Expired`);
    /// otherwise the nonce, the intent and the
    /// `intent` event are written and `Fresh` is returned. On any error
    /// nothing is written. The caller then runs the effect and records how
    /// it ended with [`Ledger::complete`]; until then the proposal reads
    /// `uncertain`. Replays queue for the write lock, as in
    /// [`Ledger::consume_builtin`]. `lease`: how long the caller may still
    /// be running the effect (its timeout plus a margin, see
    /// [`crate::INTENT_LEASE_MARGIN`]); until then neither reconcile nor a
    /// person's resolution touches the intent.
    pub async fn begin_consume(
        &self,
        proof: &VerifiedProof,
        lease: time::Duration,
    ) -> Result<ConsumeStart, LedgerError> {
        let now = self.command_premise_now(proof).await;
        dispatch!(self, b => b.begin_consume(proof, lease, now).await)
    }

    /// Apply the builtin effect named like the intent's operation
    /// (`schedule.create`, ...) to the state store, in one write
    /// transaction, using the operation, principal and arguments recorded
    /// with the intent (never a caller's copy, and never another effect
    /// than the one approved): `intent` must be exactly the recorded one
    /// (`UnknownIntent`, `NotTheRecordedIntent`), checked inside the
    /// transaction.
    /// Idempotent on the nonce: if it was applied already, the recorded
    /// result is returned and nothing changes. A refused transition changes
    /// nothing.
    pub async fn apply_builtin(&self, intent: &Intent) -> Result<Value, EffectFailure> {
        dispatch!(self, b => b.apply_builtin(intent).await)
    }

    /// Apply the builtin effect named like the intent's operation and record
    /// the completion in ONE write transaction, for an intent recorded by
    /// [`Ledger::begin_consume`] (`reconcile` uses it): applied with its
    /// result, or failed, changing nothing, when the transition is refused.
    /// Idempotent on the nonce: an effect already applied under it is
    /// recorded as applied, not applied again. On a database error neither
    /// is recorded and the intent stays uncertain. An intent that is not
    /// exactly the recorded one is refused (`UnknownIntent`,
    /// `NotTheRecordedIntent`) before anything is written.
    pub async fn apply_builtin_and_complete(
        &self,
        intent: &Intent,
    ) -> Result<(EffectOutcome, Disposition), LedgerError> {
        dispatch!(self, b => b.apply_builtin_and_complete(intent).await)
    }

    /// Record how an intent ended (the second transaction of the two-phase
    /// flow) and its `completed` event. `intent` must be exactly the intent
    /// recorded under its nonce, checked inside the transaction
    /// (`UnknownIntent`, `NotTheRecordedIntent`); `AlreadyCompleted` if it
    /// has a completion.
    pub async fn complete(
        &self,
        intent: &Intent,
        outcome: &EffectOutcome,
    ) -> Result<Disposition, LedgerError> {
        dispatch!(self, b => b.complete(intent, outcome).await)
    }

    /// Record that this signer signed the claims of `r.proposal_id`'s
    /// issuance again under its own key `r.key_id`, for a head that claimed
    /// through it a handoff another signer issued (under
    /// `r.replaces_key_id`) and holds, or held until it was lost: the `resigned_proofs` row and a `proof_resigned` event by
    /// `actor` (details: the nonce, the new proof's SHA-256 and key, the
    /// issued proof's SHA-256 and key; never the proof), in one write
    /// transaction under the proposal's lock. From then on a consumption
    /// of the nonce may present either proof, and one consumption is all
    /// there is. `IssuanceMismatch` unless the issuance has this nonce, was
    /// signed by `r.replaces_key_id` and has another hash;
    /// `AlreadyResigned` if it was signed again before; `NotPending` if it
    /// was consumed, revoked or has expired by the database's clock.
    /// Nothing is written on a refusal.
    pub async fn record_resigned_proof(
        &self,
        r: &ResignedProof,
        actor: &str,
    ) -> Result<(), LedgerError> {
        dispatch!(self, b => b.record_resigned_proof(r, actor).await)
    }

    /// Record that the signer signed the issuance's claims again for
    /// reconcile's re-send of an uncertain webhook: one `proof_reissued`
    /// event (details: the nonce, the new proof's SHA-256 and its expiry;
    /// never the proof), in one write transaction that first checks the
    /// proposal is uncertain under this nonce (`NotUncertain` if it has no
    /// intent, another nonce's, or a completion) and that no head may still
    /// be running it (`StillRunning` while the intent's lease runs, by the
    /// database's clock), and that fewer than `max_reissues` re-issues are
    /// recorded for it (`ReissueLimitReached`). Nothing else changes: the
    /// nonce stays consumed, the issuance and the intent stay as recorded.
    pub async fn record_reissue(&self, reissue: &ProofReissue) -> Result<(), LedgerError> {
        dispatch!(self, b => b.record_reissue(reissue).await)
    }

    /// The disposition of a proposal's consumed proof (`None` if unconsumed).
    pub async fn disposition(&self, proposal_id: &str) -> Result<Option<Disposition>, LedgerError> {
        dispatch!(self, b => b.disposition(proposal_id).await)
    }

    /// Intents without completion, oldest first, each saying whether its
    /// head may still be running the effect (lease not ended).
    pub async fn interrupted(&self) -> Result<Vec<Interrupted>, LedgerError> {
        dispatch!(self, b => b.interrupted().await)
    }

    /// A person's resolution of an uncertain proposal (`applied` or not),
    /// recorded as a completion and a `resolved` event by `by`.
    /// `NotUncertain` unless it has an intent without completion;
    /// `StillRunning` while that intent's lease has not ended (by the
    /// database's clock).
    pub async fn resolve_uncertain(
        &self,
        proposal_id: &str,
        applied: bool,
        by: &str,
    ) -> Result<Disposition, LedgerError> {
        dispatch!(self, b => b.resolve_uncertain(proposal_id, applied, by).await)
    }

    /// Every `(key, value)` in `principal`'s state namespace, by key: the
    /// state store is keyed by principal, so one principal's effects never
    /// see or change another's.
    pub async fn state(
        &self,
        principal: &str,
        namespace: &str,
    ) -> Result<Vec<(String, Value)>, LedgerError> {
        dispatch!(self, b => b.state(principal, namespace).await)
    }

    /// The premise `principal`'s state store holds now for one key: its
    /// value (or none) and version. The signer reads it at proposal and
    /// again at decision; the consume transaction reads it a third time.
    pub async fn read_premise(
        &self,
        principal: &str,
        namespace: &str,
        key: &str,
    ) -> Result<countersign_verifier::StatePremise, LedgerError> {
        dispatch!(self, b => b.read_premise(principal, namespace, key).await)
    }

    /// The whole event log, in the order its rows were inserted.
    pub async fn events(&self) -> Result<Vec<EventRecord>, LedgerError> {
        dispatch!(self, b => b.events().await)
    }

    /// The events an evidence bundle of `proposal_id` draws on, in the
    /// order their rows were inserted: the proposal's own on `principal`'s
    /// chain, and every `passkey_enrolled` event of that chain (the caller
    /// keeps those of the credentials it names). Read by index, not by a
    /// walk of the whole log.
    pub async fn evidence_events(
        &self,
        principal: &str,
        proposal_id: &str,
    ) -> Result<Vec<EventRecord>, LedgerError> {
        dispatch!(self, b => b.evidence_events(principal, proposal_id).await)
    }

    /// Check every hash chain against its head and the checkpoints naming
    /// it, then the fact tables against the events; the report names the
    /// first edited, missing or unlinked row, a truncated tail, or a chain
    /// that no longer holds what a checkpoint recorded.
    pub async fn verify_chain(&self) -> Result<ChainReport, LedgerError> {
        dispatch!(self, b => b.verify_chain().await)
    }
}

mod changes;
mod chores;
mod signer_state;
mod tree;
mod witness;
pub use changes::{CHANGE_LISTENER_APPLICATION, ChangeListener, ProposalChange, SignerInstance};
pub use chores::SignerKey;
pub use signer_state::SoleSigner;
