//! The ledger's errors: refusals of a proof at consumption
//! ([`LedgerRefusal`]), everything else a ledger call can fail with
//! ([`LedgerError`]), and the failure of a builtin effect ([`EffectFailure`]).
//!
//! Messages never contain a proof, a database URL (it may hold a password)
//! or argument values beyond what the caller already sent.

use countersign_reason::Reason;

/// Why the ledger refused to consume a verified proof. Nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LedgerRefusal {
    /// The proof names a proposal this ledger does not hold.
    #[error("the proof names an unknown proposal")]
    UnknownProposal,
    /// The proof's claims do not match the recorded proposal or issuance
    /// (principal, session, operation, arguments or revisions).
    #[error("the proof does not match the recorded proposal")]
    ProposalMismatch,
    /// No issuance with exactly this proof hash and nonce was recorded.
    #[error("the ledger holds no issuance for this proof")]
    NotIssued,
    /// The proof was revoked before it was used.
    #[error("the proof was revoked")]
    Revoked,
    /// The proof's expiry passed by the database's clock before it could be
    /// consumed (it was verified in time, then waited for the lock).
    #[error("the proof expired before it could be consumed")]
    Expired,
    /// The premise the person approved under (the state the signer read
    /// and bound into the proof) no longer holds: the state changed since.
    #[error("the state this approval was given under has changed since")]
    PremiseChanged,
    /// The operation's premise command failed (did not start, exited
    /// non-zero, timed out or printed too much), so the premise the person
    /// approved under cannot be established now.
    #[error(
        "the premise command failed, so the state this approval was given under cannot be confirmed"
    )]
    PremiseUnavailable,
    /// The proof was issued under a rule that is no longer live at the
    /// version it names: revoked, or revised since.
    #[error("the rule the proof was issued under was revoked or changed")]
    RuleRevoked,
    /// The proof was issued under a rule that has expired since.
    #[error("the rule the proof was issued under has expired")]
    RuleExpired,
}

impl LedgerRefusal {
    /// The stable snake_case code of [`Self::reason`] (safe for wire
    /// formats, logs and test vectors).
    pub fn code(&self) -> &'static str {
        self.reason().code()
    }

    /// This refusal's reason in the one catalogue.
    pub fn reason(&self) -> Reason {
        match self {
            LedgerRefusal::UnknownProposal => Reason::UnknownProposal,
            LedgerRefusal::ProposalMismatch => Reason::ProposalMismatch,
            LedgerRefusal::NotIssued => Reason::NotIssued,
            LedgerRefusal::Revoked => Reason::Revoked,
            LedgerRefusal::Expired => Reason::Expired,
            LedgerRefusal::PremiseChanged => Reason::PremiseChanged,
            LedgerRefusal::PremiseUnavailable => Reason::PremiseUnavailable,
            LedgerRefusal::RuleRevoked => Reason::RuleRevoked,
            LedgerRefusal::RuleExpired => Reason::RuleExpired,
        }
    }
}

/// What a ledger call can fail with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LedgerError {
    /// A proof was refused at consumption; nothing was written.
    #[error("refused: {0}")]
    Refused(LedgerRefusal),
    /// The ledger URL is not one this build supports.
    #[error("unsupported ledger url (expected sqlite://<absolute path> or postgres://...)")]
    UnsupportedUrl,
    /// No proposal with this id (for this principal).
    #[error("unknown proposal {0}")]
    UnknownProposal(String),
    /// A proposal with this id already exists.
    #[error("proposal {0} already exists")]
    DuplicateProposal(String),
    /// The proposal was already decided.
    #[error("proposal {0} is not pending")]
    NotPending(String),
    /// No one decided the proposal within its decision window: it expired
    /// at the given time, and nothing was written.
    #[error("proposal {0} expired at {1}: no one decided it within its decision window")]
    WindowClosed(String, time::OffsetDateTime),
    /// An issuance does not match the proposal it approves.
    #[error("the issuance does not match proposal {0}")]
    IssuanceMismatch(String),
    /// The approver already approved this quorum proposal; nothing was written.
    #[error("{1} already approved proposal {0}")]
    AlreadyApproved(String, String),
    /// The quorum's approvals changed between the caller's read and its
    /// write (another approver decided meanwhile); nothing was written.
    /// The caller reads them again and retries.
    #[error("the approvals of proposal {0} changed; read them again")]
    QuorumMoved(String),
    /// No intent was recorded for this nonce.
    #[error("no intent recorded for proposal {0}")]
    UnknownIntent(String),
    /// The intent presented is not the one recorded under its nonce (a
    /// stale or altered copy): nothing was written.
    #[error("the intent presented for proposal {0} is not the one recorded")]
    NotTheRecordedIntent(String),
    /// The intent already has a completion.
    #[error("proposal {0} already has a recorded completion")]
    AlreadyCompleted(String),
    /// The proposal has no intent awaiting resolution.
    #[error("proposal {0} is not uncertain")]
    NotUncertain(String),
    /// The intent's head may still be running the effect (its lease has
    /// not ended): only that head's completion can be recorded now.
    #[error(
        "proposal {0} may still be running (its execution's lease ends at {1}); resolve it after that"
    )]
    StillRunning(String, String),
    /// The proposal's proof was re-issued for reconcile as often as the
    /// signer allows (the count of its `proof_reissued` events): nothing
    /// was written.
    #[error("the proof of proposal {0} was re-issued {1} times already, the most allowed")]
    ReissueLimitReached(String, u32),
    /// The proposal's handoff was signed again already (at most once per
    /// nonce): nothing was written.
    #[error("the proof of proposal {0} was signed again already")]
    AlreadyResigned(String),
    /// This passkey challenge was accepted before: an accepted challenge is
    /// never accepted again (the signer refuses with `challenge_used`).
    /// Nothing was written.
    #[error("this passkey challenge was already used")]
    ChallengeUsed,
    /// Another signer serves this SQLite ledger (the path): SQLite is
    /// single-signer; two signers need PostgreSQL.
    #[error(
        "another countersign-signer already serves the SQLite ledger {0}: a SQLite ledger has one signer (two signers need PostgreSQL, see docs/postgresql.md)"
    )]
    AnotherSigner(String),
    /// The chore's lease was taken by another holder since this one took
    /// it (its fencing token is no longer the current one): this holder
    /// was paused or cut off past its lease. Nothing was written.
    #[error(
        "the lease of chore {chore:?} was taken over (token {token} is no longer current): nothing written"
    )]
    LeaseLost {
        /// The chore.
        chore: String,
        /// The token this holder took.
        token: i64,
    },
    /// The proof key was retired in this ledger's key set (by this signer
    /// or through another): it is never published again.
    #[error(
        "proof key {0} was retired in the ledger's key set: it is never published again (rotate to a new key)"
    )]
    KeyRetired(String),
    /// The assertion's signature counter is not greater than the greatest
    /// one recorded for its credential (read under the credential's row
    /// lock, in the transaction that would record it), and not both zero:
    /// a cloned authenticator, or another signer accepted a later
    /// assertion first. Nothing was written.
    #[error("the passkey's signature counter went from {stored} to {received}")]
    CounterNotIncreased {
        /// The greatest counter recorded.
        stored: u32,
        /// The counter of the refused assertion.
        received: u32,
    },
    /// A passkey with this credential id is already enrolled.
    #[error("passkey {0} is already enrolled")]
    DuplicatePasskey(String),
    /// The passkey that is to authorize a write is not an enrolled,
    /// unremoved credential of the principal concerned. Nothing was written.
    #[error("passkey {0} is not an enrolled credential of this principal")]
    UnusablePasskey(String),
    /// The passkey assertion (or the `authorized_by` beside it) does not
    /// fit the write it comes with: another purpose, subject or credential.
    /// Nothing was written.
    #[error("the passkey assertion does not authorize this {0}")]
    AssertionMismatch(String),
    /// A rule with this id already exists.
    #[error("rule {0} already exists")]
    DuplicateRule(String),
    /// No rule with this id (for this principal).
    #[error("unknown rule {0}")]
    UnknownRule(String),
    /// The rule is not live at the version asked for: revoked, revised
    /// since, or (for an approval) expired. Nothing was written.
    #[error("rule {0} is not live at that version")]
    RuleNotLive(String),
    /// The rule was changed since the version a revision started from.
    #[error("rule {0} was changed since; start again from its current version")]
    RuleChanged(String),
    /// The rule has issued as many proofs as it allows. Nothing was written.
    #[error("rule {0} has no uses left")]
    RuleExhausted(String),
    /// The rule has issued as many proofs in the last hour as it allows.
    /// Nothing was written.
    #[error("rule {0} has no uses left this hour")]
    RuleRateLimited(String),
    /// A proof or checkpoint asked for a tree size the log has not reached
    /// (or, for a checkpoint, one that does not grow the log).
    #[error("the log has {size} leaves: nothing can be proven or signed at size {asked}")]
    BeyondTree {
        /// The size asked for.
        asked: u64,
        /// The tree's size.
        size: u64,
    },
    /// A proof's arguments do not describe one (an index beyond the size,
    /// an old size of zero or above the new one).
    #[error("no such proof: {0}")]
    Proof(#[from] countersign_tlog::TreeError),
    /// Another checkpoint was stored since the one the new checkpoint was
    /// checked against: it is not stored (sign again from the latest).
    #[error("the latest checkpoint is of size {latest:?}, not {expected:?}: sign again from it")]
    CheckpointSuperseded {
        /// The size the caller checked against (`None`: no checkpoint).
        expected: Option<u64>,
        /// The latest stored size.
        latest: Option<u64>,
    },
    /// No checkpoint of this size is stored.
    #[error("no checkpoint of size {0} is stored")]
    NoSuchCheckpoint(u64),
    /// A witness's cosignature was not stored: it is not a cosignature by
    /// that witness key over the stored checkpoint of that size.
    #[error("the cosignature of size {size} by {witness} is refused: {reason}")]
    CosignatureRefused {
        /// The checkpoint size it claims to cosign.
        size: u64,
        /// The witness's verifier key.
        witness: String,
        /// Why it was refused.
        reason: crate::witness::CosignatureRefusal,
    },
    /// A value read from the database is not what the schema promises.
    #[error("ledger data is corrupt: {0}")]
    Corrupt(String),
    /// Applying the schema failed.
    #[error("ledger migration failed: {0}")]
    Migration(String),
    /// The database failed (I/O, lock timeout, constraint).
    #[error("ledger database error: {0}")]
    Database(String),
    /// The PostgreSQL ledger URL would send a password over TCP to a server
    /// nobody verified: refused before anything is connected.
    #[error(
        "the ledger URL sends a password over TCP without sslmode=verify-full: the driver \
answers a cleartext or MD5 password request from whoever holds the port (any local user, \
while PostgreSQL restarts), and sslmode prefer or require does not authenticate the server; \
connect over the server's Unix socket (host=/run/postgresql) or use sslmode=verify-full"
    )]
    PasswordWithoutVerifiedTls,
}

impl From<sqlx::Error> for LedgerError {
    fn from(e: sqlx::Error) -> Self {
        LedgerError::Database(match e {
            sqlx::Error::PoolTimedOut => {
                "the database is unavailable (no connection within the timeout)".into()
            }
            e => e.to_string(),
        })
    }
}

impl From<LedgerRefusal> for LedgerError {
    fn from(r: LedgerRefusal) -> Self {
        LedgerError::Refused(r)
    }
}

/// Why a builtin effect did not apply. In every case the state store was
/// left unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EffectFailure {
    /// No builtin effect has this name.
    #[error("no builtin effect named {0:?}")]
    UnknownEffect(String),
    /// The arguments do not fit the effect.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The transition is not allowed from the current state.
    #[error("{0}")]
    Transition(String),
    /// The intent is not recorded in this ledger.
    #[error("no intent recorded for this nonce")]
    UnknownIntent,
    /// The intent presented is not the one recorded under its nonce (a
    /// stale or altered copy): nothing was applied.
    #[error("the intent presented is not the one recorded")]
    NotTheRecordedIntent,
    /// The intent was already completed without this effect being applied.
    #[error("the intent was already completed")]
    AlreadyCompleted,
    /// The database failed; the transaction was rolled back.
    #[error("ledger database error: {0}")]
    Database(String),
}

impl From<sqlx::Error> for EffectFailure {
    fn from(e: sqlx::Error) -> Self {
        EffectFailure::Database(e.to_string())
    }
}

impl From<LedgerError> for EffectFailure {
    fn from(e: LedgerError) -> Self {
        EffectFailure::Database(e.to_string())
    }
}
