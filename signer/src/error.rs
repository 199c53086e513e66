//! The signer's error types: [`RpcError`], why one RPC was refused or
//! failed, and [`StartError`], why the signer could not start.
//!
//! This module only names failures. Turning an [`RpcError`] into a gRPC
//! status is `status.rs`'s job alone; nothing here may hold a proof or key.

use countersign_identity::{IdentityError, Role};
use countersign_ledger::LedgerError;
use countersign_proto::reason::Reason;
use countersign_registry::ArgumentsError;

use crate::key::KeyError;
use crate::keystore::KeyStoreError;

/// Why an RPC did not succeed. Refusals carry what the caller needs to fix
/// its request; `Internal` carries a detail that only goes to the log.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum RpcError {
    /// The connection carried no client certificate.
    #[error("client certificate required")]
    NoClientCertificate,
    /// The client certificate names no valid countersign identity.
    #[error("client certificate names no countersign identity: {0}")]
    PeerIdentity(IdentityError),
    /// The caller's role may not call this RPC.
    #[error("role {role} may not call {rpc}")]
    RoleNotAllowed {
        /// The caller's role.
        role: Role,
        /// The RPC name.
        rpc: &'static str,
    },
    /// The RPC acts for a named approver (a console's certificate), and
    /// the caller's approver certificate names none.
    #[error("{0} needs a named approver certificate (a console's); this one names no approver")]
    UnnamedApprover(&'static str),
    /// The proposal belongs to another principal.
    #[error("proposal belongs to another principal")]
    NotYourProposal,
    /// No operation of that name is registered.
    #[error("unknown operation {0:?}")]
    UnknownOperation(String),
    /// A request field is malformed.
    #[error("invalid {field}: {reason}")]
    InvalidField {
        /// The field name as in the proto.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The arguments do not satisfy the operation's schema.
    #[error("invalid arguments: {0}")]
    InvalidArguments(ArgumentsError),
    /// The idempotency key names a proposal of another operation or other
    /// arguments.
    #[error(
        "the idempotency key {key:?} was used for proposal {id} of another operation or other arguments; nothing was proposed"
    )]
    IdempotencyKeyReused {
        /// The key.
        key: String,
        /// The proposal it names.
        id: String,
    },
    /// No proposal with this id.
    #[error("unknown proposal {0}")]
    UnknownProposal(String),
    /// The proposal was already decided.
    #[error("proposal {id} is {status}, not pending")]
    NotPending {
        /// The proposal id.
        id: String,
        /// Its current status (or "decided" after a lost race).
        status: String,
    },
    /// No one decided the proposal within its decision window.
    #[error("proposal {id} expired at {closed_at}: no one decided it within its decision window")]
    ProposalExpired {
        /// The proposal id.
        id: String,
        /// When its window closed (RFC 3339).
        closed_at: String,
    },
    /// The approval asked for a delivery the operation's effect kind does
    /// not offer: nothing was recorded.
    #[error("{id} has a {kind} effect: {what}; nothing was approved")]
    DeliveryNotOffered {
        /// The proposal id.
        id: String,
        /// The effect kind.
        kind: &'static str,
        /// Who runs it and what to ask for instead.
        what: &'static str,
    },
    /// The operation changed since the proposal; approving it would bind a stale contract.
    #[error("operation {0:?} changed or was removed since it was proposed; propose again")]
    ContractChanged(String),
    /// The policy changed since the proposal.
    #[error("the signing policy changed since the proposal; propose again")]
    PolicyChanged,
    /// The Cedar policy set the proposal was made under forbids approving
    /// it now (its forbids, at the decision's time).
    #[error("the operator's policy forbids approving {id} now ({policies}); nothing was approved")]
    ForbiddenByPolicy {
        /// The proposal id.
        id: String,
        /// The forbidding policies' ids, comma-separated.
        policies: String,
    },
    /// The binding Cedar policy set cannot be used.
    #[error("the operator's policy cannot be used ({0}); nothing was proposed until it is fixed")]
    PolicyUnavailable(String),
    /// An argument the Cedar policy would see is not exactly representable.
    #[error("{0}; nothing was proposed")]
    NotRepresentable(String),
    /// The state the proposal's premise read changed since the proposal:
    /// the person would approve under a fact that no longer holds.
    #[error("{0} changed since it was proposed; propose again to see it as it is")]
    PremiseChanged(String),
    /// The operation's premise command failed: the premise cannot be
    /// established, so nothing can be shown or approved under it.
    #[error("{0}")]
    PremiseUnavailable(String),
    /// No proof waits for this proposal (never, already claimed, expired or revoked).
    #[error("no live handoff")]
    NoLiveHandoff,
    /// The waiting proof is bound to another session.
    #[error("the handoff is bound to another session")]
    HandoffSessionMismatch,
    /// The waiting approval was claimed by a head that is executing it.
    #[error("the approval of {0} is held by a head executing it now")]
    HandoffInUse(String),
    /// A release of a handoff that no head holds.
    #[error("the handoff is not claimed")]
    HandoffNotClaimed,
    /// An approval recorded for a handoff that a restarted signer cannot
    /// re-derive: no key it holds reproduces the issued proof.
    #[error(
        "the approval of {0} was kept for a handoff but cannot be handed over after the signer restarted: no key the signer holds reproduces it (was its key retired?); revoke it and propose again"
    )]
    HandoffUnrecoverable(String),
    /// The proposal has no execution awaiting a person's resolution.
    #[error("proposal {0} is not uncertain; there is nothing to resolve")]
    NotUncertain(String),
    /// The execution's head may still be running the effect.
    #[error(
        "proposal {id} may still be running (its execution's lease ends at {until}); resolve it after that"
    )]
    StillRunning {
        /// The proposal id.
        id: String,
        /// When the lease ends.
        until: String,
    },
    /// A re-issue for reconcile of a proposal whose operation, as the
    /// registry says now, is not a `webhook` effect.
    #[error("operation {0:?} is not a webhook: only a webhook's proof is re-issued for reconcile")]
    NotAWebhook(String),
    /// A re-issue for reconcile of a proposal whose operation is not
    /// declared `replay_safe`.
    #[error(
        "operation {0:?} is not replay-safe: its proof is never re-issued, a person resolves it"
    )]
    NotReplaySafe(String),
    /// A re-issue for reconcile after its window closed (the original
    /// proof's expiry, plus the operation's execution lease, plus one
    /// lifetime): a proof is never kept alive past that.
    #[error(
        "the re-issue window of proposal {id} closed at {closed_at} (its proof's expiry, plus the execution lease, plus one proof lifetime); a person resolves it"
    )]
    ReissueWindowClosed {
        /// The proposal id.
        id: String,
        /// When the window closed (RFC 3339).
        closed_at: String,
    },
    /// A spent proof asked for before it is both consumed and expired.
    #[error(
        "the proof of proposal {id} is not spent yet ({why}): it is handed to an evidence bundle only once consumed and expired"
    )]
    ProofNotSpent {
        /// The proposal id.
        id: String,
        /// What is missing: a consumption, or the expiry (when it comes).
        why: String,
    },
    /// A re-issue for reconcile of a proposal re-issued the most times allowed.
    #[error(
        "the proof of proposal {id} was re-issued {count} times already, the most allowed; a person resolves it"
    )]
    ReissueLimitReached {
        /// The proposal id.
        id: String,
        /// The re-issues recorded.
        count: u32,
    },
    /// A re-issue for reconcile on a SQLite ledger: its file is writable by
    /// its owner, so an issuance row there proves nothing the signer did.
    #[error(
        "the ledger is SQLite: its owner can write any row, so an issuance row proves nothing and no proof is re-issued from it; a person resolves the execution (PostgreSQL, where heads cannot write issuances, allows re-issue)"
    )]
    ReissueUnavailableOnSqlite,
    /// Approving this proposal needs a passkey assertion (`passkey_required`).
    #[error("approving this proposal needs a passkey: approve it in the console")]
    PasskeyRequired,
    /// The installation has no `[passkeys]` section.
    #[error("passkeys are not configured for this installation ([passkeys] in config.toml)")]
    PasskeysNotConfigured,
    /// The principal has no active passkey to make an assertion with.
    #[error("no passkey is enrolled; enrol one in the console first")]
    NoPasskeyEnrolled,
    /// The challenge is unknown, expired, already answered, or another principal's.
    #[error("the passkey challenge is unknown, expired or already used; start again")]
    ChallengeUnknown,
    /// The challenge was issued for something else than this request.
    #[error("the passkey challenge was issued for another decision or change")]
    ChallengeMismatch,
    /// The assertion or registration failed a WebAuthn check.
    #[error("passkey refused: {0}")]
    PasskeyRefused(countersign_webauthn::WebAuthnError),
    /// The assertion or request names no active passkey of the caller's principal.
    #[error("no active passkey of this principal has that credential id")]
    UnknownPasskey,
    /// The registration's credential is already enrolled.
    #[error("that passkey is already enrolled")]
    PasskeyAlreadyEnrolled,
    /// Every enrolment needs the enrolment code the signer's administrator
    /// drew for the enrolling approver.
    #[error(
        "enrolling a passkey needs a one-time code the signer's administrator draws for you (`countersign-signer passkeys enrolment-code --approver NAME`)"
    )]
    EnrolmentCodeRequired,
    /// The enrolment code is wrong, expired, already spent (one attempt) or
    /// drawn for another approver.
    #[error(
        "enrolment code refused (wrong, expired, spent or drawn for another approver: ask the administrator for a new one for you)"
    )]
    EnrolmentCodeRefused,
    /// A removal needs an assertion of one of the caller's own passkeys.
    #[error("this change needs an assertion of one of your enrolled passkeys")]
    AuthorizationRequired,
    /// An approver's last active passkey is removed only by the administrator.
    #[error("your last passkey can only be removed by the signer's administrator")]
    LastPasskey,
    /// The proposal's operation requires a quorum and the caller's approver
    /// certificate is not one of its named approvers.
    #[error(
        "{0} is not an approver of this proposal's quorum: only the named approvers its operation lists may decide it"
    )]
    NotAQuorumApprover(String),
    /// This approver already decided this quorum proposal.
    #[error("{0} already decided this proposal: nobody approves twice")]
    AlreadyApproved(String),
    /// The assertion's passkey (or the passkey to remove) was enrolled by
    /// another approver certificate: a passkey is only its approver's.
    #[error("that passkey belongs to another approver: use your own passkey")]
    NotYourPasskey,
    /// Auto-approval rules are off (`[rules] enabled = false`, the default).
    /// The signer reads the setting when it starts, so the refusal says
    /// that turning rules on takes a restart.
    #[error(
        "auto-approval rules are off in this installation: set [rules] enabled = true in the signer's config.toml and restart the signer (it reads the setting only when it starts)"
    )]
    RulesDisabled,
    /// The rule definition was refused; nothing was created or changed.
    #[error("{0}")]
    InvalidRule(countersign_registry::rule::RuleError),
    /// No rule with this id for the caller's principal.
    #[error("unknown rule {0}")]
    UnknownRule(String),
    /// The rule is revoked: nothing can change it any more.
    #[error("rule {0} is revoked")]
    RuleNotLive(String),
    /// The rule changed since the version the person looked at.
    #[error("rule {0} changed since; look at it again")]
    RuleChanged(String),
    /// The definition is not the one the person confirmed.
    #[error("the rule definition is not the one confirmed; nothing was created or changed")]
    RuleDefinitionChanged,
    /// The principal already has as many watches open in the caller's role
    /// (`head`, `approver`) as the signer allows one role.
    #[error(
        "this principal's {0} certificates already have {1} watches open, the most the signer allows one role; try again once one has ended"
    )]
    TooManyWatchers(&'static str, usize),
    /// A watch ended because the signer is shutting down.
    #[error("the signer is shutting down; watch again")]
    SignerStopping,
    /// A fault on the signer's side; the detail is logged, never sent.
    #[error("internal error: {0}")]
    Internal(String),
}

impl RpcError {
    /// The catalogue's reason every head renders for this error.
    pub(crate) fn reason(&self) -> Reason {
        match self {
            RpcError::NoClientCertificate => Reason::NoClientCertificate,
            RpcError::PeerIdentity(_) => Reason::UnknownIdentity,
            RpcError::RoleNotAllowed { .. } => Reason::RoleNotAllowed,
            RpcError::UnnamedApprover(_) => Reason::UnnamedApprover,
            RpcError::NotYourProposal => Reason::NotYourProposal,
            RpcError::UnknownOperation(_) => Reason::UnknownOperation,
            RpcError::InvalidField { .. } => Reason::InvalidField,
            RpcError::InvalidArguments(_) => Reason::InvalidArguments,
            RpcError::IdempotencyKeyReused { .. } => Reason::IdempotencyKeyReused,
            RpcError::UnknownProposal(_) => Reason::UnknownProposal,
            RpcError::NotPending { .. } => Reason::NotPending,
            RpcError::ProposalExpired { .. } => Reason::Expired,
            RpcError::DeliveryNotOffered { .. } => Reason::DeliveryNotOffered,
            RpcError::ContractChanged(_) => Reason::ContractChanged,
            RpcError::PolicyChanged => Reason::PolicyChanged,
            RpcError::ForbiddenByPolicy { .. } => Reason::ForbiddenByPolicy,
            RpcError::PolicyUnavailable(_) => Reason::PolicyUnavailable,
            RpcError::NotRepresentable(_) => Reason::NotRepresentable,
            RpcError::PremiseChanged(_) => Reason::PremiseChanged,
            RpcError::PremiseUnavailable(_) => Reason::PremiseUnavailable,
            RpcError::NoLiveHandoff => Reason::NoLiveHandoff,
            RpcError::HandoffSessionMismatch => Reason::HandoffSessionMismatch,
            RpcError::HandoffInUse(_) => Reason::HandoffInUse,
            RpcError::HandoffNotClaimed => Reason::HandoffNotClaimed,
            RpcError::HandoffUnrecoverable(_) => Reason::HandoffUnrecoverable,
            RpcError::NotUncertain(_) => Reason::NotUncertain,
            RpcError::StillRunning { .. } => Reason::StillRunning,
            RpcError::NotAWebhook(_) => Reason::NotAWebhook,
            RpcError::NotReplaySafe(_) => Reason::NotReplaySafe,
            RpcError::ReissueWindowClosed { .. } => Reason::ReissueWindowClosed,
            RpcError::ProofNotSpent { .. } => Reason::ProofNotSpent,
            RpcError::ReissueLimitReached { .. } => Reason::ReissueLimitReached,
            RpcError::ReissueUnavailableOnSqlite => Reason::ReissueUnavailableOnSqlite,
            RpcError::PasskeyRequired => Reason::PasskeyRequired,
            RpcError::PasskeysNotConfigured => Reason::PasskeysNotConfigured,
            RpcError::NoPasskeyEnrolled => Reason::NoPasskeyEnrolled,
            RpcError::ChallengeUnknown => Reason::ChallengeUnknown,
            RpcError::ChallengeMismatch => Reason::ChallengeMismatch,
            RpcError::PasskeyRefused(e) => e.reason(),
            RpcError::UnknownPasskey => Reason::UnknownPasskey,
            RpcError::PasskeyAlreadyEnrolled => Reason::PasskeyAlreadyEnrolled,
            RpcError::EnrolmentCodeRequired => Reason::EnrolmentCodeRequired,
            RpcError::EnrolmentCodeRefused => Reason::EnrolmentCodeRefused,
            RpcError::AuthorizationRequired => Reason::AuthorizationRequired,
            RpcError::LastPasskey => Reason::LastPasskey,
            RpcError::NotAQuorumApprover(_) => Reason::NotAQuorumApprover,
            RpcError::AlreadyApproved(_) => Reason::AlreadyApproved,
            RpcError::NotYourPasskey => Reason::NotYourPasskey,
            RpcError::RulesDisabled => Reason::RulesDisabled,
            RpcError::InvalidRule(_) => Reason::InvalidRule,
            RpcError::UnknownRule(_) => Reason::UnknownRule,
            RpcError::RuleNotLive(_) => Reason::RuleNotLive,
            RpcError::RuleChanged(_) => Reason::RuleChanged,
            RpcError::RuleDefinitionChanged => Reason::RuleDefinitionChanged,
            RpcError::TooManyWatchers(..) => Reason::TooManyWatchers,
            RpcError::SignerStopping => Reason::SignerStopping,
            RpcError::Internal(_) => Reason::Internal,
        }
    }
}

impl From<LedgerError> for RpcError {
    fn from(e: LedgerError) -> Self {
        match e {
            LedgerError::UnknownProposal(id) => RpcError::UnknownProposal(id),
            LedgerError::NotPending(id) => RpcError::NotPending {
                id,
                status: "decided".into(),
            },
            LedgerError::WindowClosed(id, closed_at) => RpcError::ProposalExpired {
                id,
                closed_at: crate::convert::format_time(closed_at)
                    .unwrap_or_else(|_| closed_at.to_string()),
            },
            LedgerError::AlreadyApproved(_, approver) => RpcError::AlreadyApproved(approver),
            LedgerError::UnknownRule(id) => RpcError::UnknownRule(id),
            LedgerError::RuleNotLive(id) => RpcError::RuleNotLive(id),
            LedgerError::RuleChanged(id) => RpcError::RuleChanged(id),
            other => RpcError::Internal(format!("ledger: {other}")),
        }
    }
}

impl From<countersign_ledger::PremiseCommandError> for RpcError {
    fn from(e: countersign_ledger::PremiseCommandError) -> Self {
        RpcError::PremiseUnavailable(e.to_string())
    }
}

/// Why the signer could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The home directory, configuration or PKI was refused.
    #[error(transparent)]
    Identity(#[from] IdentityError),
    /// The signing key could not be created or loaded.
    #[error("signing key: {0}")]
    Key(#[from] KeyError),
    /// The key set (its index or a key it names) could not be read or changed.
    #[error("signing keys: {0}")]
    Keys(#[from] KeyStoreError),
    /// The transparency log's key could not be created or loaded.
    #[error("log key: {0}")]
    LogKey(#[from] crate::log_key::LogKeyError),
    /// The ledger could not be opened.
    #[error("ledger: {0}")]
    Ledger(#[from] LedgerError),
    /// The registry could not be loaded.
    #[error("registry: {0}")]
    Registry(String),
    /// The configured policy is invalid.
    #[error("policy: {0}")]
    Policy(String),
    /// An administrative passkey command failed.
    #[error("passkeys: {0}")]
    Passkeys(String),
    /// Binding or serving failed.
    #[error("transport: {0}")]
    Transport(String),
}
