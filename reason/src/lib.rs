//! The one catalogue of refusal reasons: every code a countersign process
//! sends when it refuses, declared once with its gRPC status, the layer
//! that decides it, and its documentation.
//!
//! Owns: [`Reason`] (one variant per code, so a new reason is one entry
//! here and a renderer that matches on it does not compile until it says
//! what to show), [`Code`] (a code as a head received it: one it knows, or
//! one it does not), and the generated list of reasons
//! ([`markdown`], committed as `docs/reasons.md` and checked by a test).
//!
//! Must not: depend on anything; every layer (verifier, ledger, WebAuthn,
//! signer, gate, heads) maps its own errors to a [`Reason`]. A duplicated
//! code fails the build (a `const` check below); an entry without
//! documentation does not match the macro.
#![forbid(unsafe_code)]

use std::fmt;

/// The gRPC status class of a reason (the signer sends it as the status
/// code; other layers use it to choose their transport's status).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// The request is malformed.
    InvalidArgument,
    /// The caller is not authenticated.
    Unauthenticated,
    /// The caller may not do this.
    PermissionDenied,
    /// What the request names does not exist.
    NotFound,
    /// The system is not in the state the request needs.
    FailedPrecondition,
    /// The service cannot be reached now.
    Unavailable,
    /// A fault, not a refusal.
    Internal,
}

impl Status {
    /// The gRPC status name, as `grpc-status` codes are documented.
    pub const fn name(self) -> &'static str {
        match self {
            Status::InvalidArgument => "INVALID_ARGUMENT",
            Status::Unauthenticated => "UNAUTHENTICATED",
            Status::PermissionDenied => "PERMISSION_DENIED",
            Status::NotFound => "NOT_FOUND",
            Status::FailedPrecondition => "FAILED_PRECONDITION",
            Status::Unavailable => "UNAVAILABLE",
            Status::Internal => "INTERNAL",
        }
    }
}

/// The layer that decides a reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Layer {
    /// The signer (sent in the gRPC metadata entry `countersign-reason`).
    Signer,
    /// A verifier checking a proof, or the ledger consuming it.
    Proof,
    /// A passkey registration or assertion check.
    Passkey,
    /// A head's gate, before or without consuming a proof.
    Gate,
    /// The HTTP heads (API, MCP over HTTP), before any operation.
    Http,
    /// The CLI, for what no decider answered.
    Cli,
}

impl Layer {
    /// Every layer, in the order the documentation lists them.
    pub const ALL: &'static [Layer] = &[
        Layer::Signer,
        Layer::Proof,
        Layer::Passkey,
        Layer::Gate,
        Layer::Http,
        Layer::Cli,
    ];

    /// The heading of this layer's reasons in the documentation.
    pub const fn title(self) -> &'static str {
        match self {
            Layer::Signer => "The signer's refusals",
            Layer::Proof => "A proof refused by a verifier, or by the ledger at consumption",
            Layer::Passkey => "A passkey registration or assertion refused",
            Layer::Gate => "A head's gate, before or without consumption",
            Layer::Http => "The HTTP heads, before any operation",
            Layer::Cli => "The CLI's own codes, when no decider answered",
        }
    }
}

macro_rules! catalogue {
    ($( $(#[doc = $doc:literal])+ $name:ident = $code:literal, $status:ident, $layer:ident; )*) => {
        /// A refusal reason: one variant per stable snake_case code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Reason {
            $( $(#[doc = $doc])+ $name, )*
        }

        impl Reason {
            /// Every reason, in catalogue order.
            pub const ALL: &'static [Reason] = &[$(Reason::$name),*];

            /// The stable snake_case code, as every wire and log carries it.
            pub const fn code(self) -> &'static str {
                match self { $(Reason::$name => $code),* }
            }

            /// The gRPC status class.
            pub const fn status(self) -> Status {
                match self { $(Reason::$name => Status::$status),* }
            }

            /// The layer that decides it.
            pub const fn layer(self) -> Layer {
                match self { $(Reason::$name => Layer::$layer),* }
            }

            /// What it means, as documented (one paragraph).
            pub const fn documentation(self) -> &'static str {
                match self { $(Reason::$name => concat!($($doc, "\n"),+)),* }
            }
        }

        const CODES: &[&str] = &[$($code),*];
    };
}

catalogue! {
    // The signer's refusals (gRPC status metadata `countersign-reason`).
    /// The connection carried no client certificate.
    NoClientCertificate = "no_client_certificate", Unauthenticated, Signer;
    /// The client certificate names no countersign identity.
    UnknownIdentity = "unknown_identity", Unauthenticated, Signer;
    /// The caller's role may not call this RPC.
    RoleNotAllowed = "role_not_allowed", PermissionDenied, Signer;
    /// The call acts for a named approver (a console's certificate), and
    /// the caller's approver certificate names none.
    UnnamedApprover = "unnamed_approver", PermissionDenied, Signer;
    /// The proposal belongs to another principal.
    NotYourProposal = "not_your_proposal", PermissionDenied, Signer;
    /// No operation of that name is registered.
    UnknownOperation = "unknown_operation", InvalidArgument, Signer;
    /// A request field is malformed.
    InvalidField = "invalid_field", InvalidArgument, Signer;
    /// The arguments do not satisfy the operation's schema.
    InvalidArguments = "invalid_arguments", InvalidArgument, Signer;
    /// A proposal's idempotency key was used before, in the same session,
    /// for another operation or other arguments: nothing was proposed.
    IdempotencyKeyReused = "idempotency_key_reused", InvalidArgument, Signer;
    /// No proposal with this id.
    UnknownProposal = "unknown_proposal", NotFound, Signer;
    /// The proposal was already decided.
    NotPending = "not_pending", FailedPrecondition, Signer;
    /// An approval asked for a delivery the proposal's effect kind does
    /// not offer (run at the approver's interface for a hook or gateway
    /// call, which only the proposing session runs; another session for a
    /// hook call): nothing was recorded; approve it for the proposing
    /// session.
    DeliveryNotOffered = "delivery_not_offered", FailedPrecondition, Signer;
    /// The operation's contract changed since the proposal.
    ContractChanged = "contract_changed", FailedPrecondition, Signer;
    /// The signing policy changed since the proposal.
    PolicyChanged = "policy_changed", FailedPrecondition, Signer;
    /// The operator's Cedar policy forbids approving the proposal now (the
    /// set it was proposed under, at the time of the decision): nothing
    /// was approved; a denial is still recorded.
    ForbiddenByPolicy = "forbidden_by_policy", FailedPrecondition, Signer;
    /// The operator's binding Cedar policy set cannot be read, parsed or
    /// validated against the registry: nothing was proposed until it is
    /// fixed.
    PolicyUnavailable = "policy_unavailable", FailedPrecondition, Signer;
    /// An argument has a value the operator's Cedar policy cannot see
    /// exactly (a number with no exact Cedar type, an integer out of
    /// range): it is refused rather than approximated, nothing proposed.
    NotRepresentable = "not_representable", InvalidArgument, Signer;
    /// The state a proposal's premise read changed since the proposal (at
    /// a decision), or since the approval (at consumption): nothing was
    /// approved or applied; propose again to be shown the state as it is.
    PremiseChanged = "premise_changed", FailedPrecondition, Signer;
    /// The operation's premise command failed (did not start, exited
    /// non-zero, timed out or printed too much): nothing was proposed,
    /// approved or applied, as the premise cannot be established.
    PremiseUnavailable = "premise_unavailable", FailedPrecondition, Signer;
    /// No approval waits to be handed over for this proposal.
    NoLiveHandoff = "no_live_handoff", NotFound, Signer;
    /// The waiting approval is bound to another session.
    HandoffSessionMismatch = "handoff_session_mismatch", PermissionDenied, Signer;
    /// The approval waiting for this proposal is held by a head executing
    /// it now (retry for its recorded result).
    HandoffInUse = "handoff_in_use", FailedPrecondition, Signer;
    /// A release of a handoff that no head holds.
    HandoffNotClaimed = "handoff_not_claimed", FailedPrecondition, Signer;
    /// An approval recorded for a handoff that the signer cannot hand over
    /// after a restart: no key it holds reproduces the issued proof, and
    /// it may not sign it again (the issuing key was retired in the
    /// ledger, the ledger is SQLite, or another signer signed it again
    /// already). Nothing can be claimed; revoke it and propose again.
    HandoffUnrecoverable = "handoff_unrecoverable", FailedPrecondition, Signer;
    /// The proposal has no execution awaiting a person's resolution.
    NotUncertain = "not_uncertain", FailedPrecondition, Signer;
    /// The execution's head may still be running the effect.
    StillRunning = "still_running", FailedPrecondition, Signer;
    /// A re-issue for reconcile of a proposal whose operation (as the
    /// registry says now) is not a `webhook` effect.
    NotAWebhook = "not_a_webhook", FailedPrecondition, Signer;
    /// A re-issue for reconcile of a proposal whose operation is not
    /// declared `replay_safe`.
    NotReplaySafe = "not_replay_safe", FailedPrecondition, Signer;
    /// A re-issue for reconcile after its window closed: the original
    /// proof's expiry plus the operation's execution lease plus one proof
    /// lifetime. Nothing was signed; a person resolves the execution.
    ReissueWindowClosed = "reissue_window_closed", FailedPrecondition, Signer;
    /// The proof asked for an evidence bundle is not yet both consumed and
    /// expired: until it is, nobody but its head gets it.
    ProofNotSpent = "proof_not_spent", FailedPrecondition, Signer;
    /// A re-issue for reconcile of a proposal whose proof was re-issued as
    /// often as the signer allows. Nothing was signed.
    ReissueLimitReached = "reissue_limit_reached", FailedPrecondition, Signer;
    /// A re-issue for reconcile on a SQLite ledger, whose rows the file's
    /// owner can write and so prove nothing the signer recorded. Nothing
    /// was signed; a person resolves the execution.
    ReissueUnavailableOnSqlite = "reissue_unavailable_on_sqlite", FailedPrecondition, Signer;
    /// A fault on the signer's side (not a refusal).
    Internal = "internal", Internal, Signer;
    /// Approving needs a passkey assertion (the installation's or the
    /// operation's policy), or a proof of an operation that requires one
    /// carries none.
    PasskeyRequired = "passkey_required", FailedPrecondition, Signer;
    /// The installation has no `[passkeys]` section.
    PasskeysNotConfigured = "passkeys_not_configured", FailedPrecondition, Signer;
    /// The principal has no active passkey.
    NoPasskeyEnrolled = "no_passkey_enrolled", FailedPrecondition, Signer;
    /// A passkey challenge unknown, expired, already answered or another principal's.
    ChallengeUnknown = "challenge_unknown", FailedPrecondition, Signer;
    /// A passkey challenge issued for another decision or change.
    ChallengeMismatch = "challenge_mismatch", FailedPrecondition, Signer;
    /// An assertion naming no active passkey of the caller's principal.
    UnknownPasskey = "unknown_passkey", PermissionDenied, Signer;
    /// A registration of a passkey already enrolled.
    PasskeyAlreadyEnrolled = "passkey_already_enrolled", FailedPrecondition, Signer;
    /// Every passkey enrolment needs the enrolling approver's enrolment code.
    EnrolmentCodeRequired = "enrolment_code_required", FailedPrecondition, Signer;
    /// The enrolment code is wrong, expired, spent or another approver's.
    EnrolmentCodeRefused = "enrolment_code_refused", PermissionDenied, Signer;
    /// A removal needs an assertion of one of the approver's own passkeys.
    AuthorizationRequired = "authorization_required", FailedPrecondition, Signer;
    /// An approver's last active passkey is removed only by the administrator.
    LastPasskey = "last_passkey", FailedPrecondition, Signer;
    /// The proposal's operation requires a quorum, and the caller's
    /// approver certificate is not one of its named approvers (an unnamed
    /// approver certificate is never one).
    NotAQuorumApprover = "not_a_quorum_approver", PermissionDenied, Signer;
    /// This approver already decided this quorum proposal: nobody approves twice.
    AlreadyApproved = "already_approved", FailedPrecondition, Signer;
    /// The passkey assertion (or the passkey to remove) is one another
    /// approver enrolled: every passkey check needs the approver's own.
    NotYourPasskey = "not_your_passkey", PermissionDenied, Signer;
    /// Auto-approval rules are off in the signer's configuration (`[rules]`).
    RulesDisabled = "rules_disabled", FailedPrecondition, Signer;
    /// A rule definition that is not a rule, or one a rule may not cover.
    InvalidRule = "invalid_rule", InvalidArgument, Signer;
    /// No rule with this id for the caller's principal.
    UnknownRule = "unknown_rule", NotFound, Signer;
    /// The rule is revoked (nothing more can change it).
    RuleNotLive = "rule_not_live", FailedPrecondition, Signer;
    /// The rule changed since the version the person looked at.
    RuleChanged = "rule_changed", FailedPrecondition, Signer;
    /// The definition is not the one the person confirmed.
    RuleDefinitionChanged = "rule_definition_changed", FailedPrecondition, Signer;
    /// A watch (`WatchProposal`, `WatchPending`) refused because the
    /// principal already has as many open in the caller's role (head,
    /// approver) as the signer allows one role; open it again once another
    /// has ended.
    TooManyWatchers = "too_many_watchers", Unavailable, Signer;
    /// A watch ended because the signer is shutting down; open it again
    /// (on the restarted signer).
    SignerStopping = "signer_stopping", Unavailable, Signer;
    // A proof refused by a verifier or at consumption by the ledger.
    /// Not a well-formed token, footer or claims object.
    Malformed = "malformed", InvalidArgument, Proof;
    /// Not PASETO version 4.
    WrongVersion = "wrong_version", InvalidArgument, Proof;
    /// PASETO v4 but not the `public` purpose.
    WrongPurpose = "wrong_purpose", InvalidArgument, Proof;
    /// The proof's footer names a key this verifier does not trust.
    UnknownKeyId = "unknown_key_id", PermissionDenied, Proof;
    /// The proof's signature does not verify.
    BadSignature = "bad_signature", PermissionDenied, Proof;
    /// The signed payload is not the canonical JSON encoding of the claims.
    NonCanonicalClaims = "non_canonical_claims", InvalidArgument, Proof;
    /// The proof was issued for another audience.
    WrongAudience = "wrong_audience", PermissionDenied, Proof;
    /// The proof was issued to another principal.
    WrongPrincipal = "wrong_principal", PermissionDenied, Proof;
    /// The proof was issued for another session.
    WrongSession = "wrong_session", PermissionDenied, Proof;
    /// The proof was issued for another proposal, or its claims do not match the
    /// recorded proposal or issuance (principal, session, operation, arguments
    /// or revisions).
    ProposalMismatch = "proposal_mismatch", PermissionDenied, Proof;
    /// The proof was issued for another operation.
    OperationMismatch = "operation_mismatch", PermissionDenied, Proof;
    /// The arguments differ from the approved ones (or from their own hash).
    ArgumentsMismatch = "arguments_mismatch", PermissionDenied, Proof;
    /// The proof was issued under another contract revision of the operation.
    ContractRevisionMismatch = "contract_revision_mismatch", FailedPrecondition, Proof;
    /// The proof was issued under another policy revision.
    PolicyRevisionMismatch = "policy_revision_mismatch", FailedPrecondition, Proof;
    /// The proof's lifetime exceeds this verifier's ceiling.
    LifetimeTooLong = "lifetime_too_long", PermissionDenied, Proof;
    /// The proof has expired (by the verifier's clock, or by the database's
    /// before it could be consumed). The signer sends it too, refusing to
    /// decide a proposal no one decided within its decision window.
    Expired = "expired", FailedPrecondition, Proof;
    /// The proof is not valid yet.
    NotYetValid = "not_yet_valid", FailedPrecondition, Proof;
    /// The ledger holds no issuance with exactly this proof hash and nonce.
    NotIssued = "not_issued", PermissionDenied, Proof;
    /// The proof was revoked before it was used.
    Revoked = "revoked", FailedPrecondition, Proof;
    /// The proof was issued under a rule that is no longer live at the version
    /// it names: revoked, or revised since.
    RuleRevoked = "rule_revoked", FailedPrecondition, Proof;
    /// The proof was issued under a rule that has expired since.
    RuleExpired = "rule_expired", FailedPrecondition, Proof;
    // A passkey registration or assertion refused.
    /// The WebAuthn bytes are not what WebAuthn defines (CBOR, JSON, lengths, base64url).
    WebauthnMalformed = "webauthn_malformed", PermissionDenied, Passkey;
    /// clientDataJSON `type` is not the ceremony's (`webauthn.create` / `webauthn.get`).
    WebauthnWrongType = "webauthn_wrong_type", PermissionDenied, Passkey;
    /// clientDataJSON `challenge` is not the one the signer issued.
    WebauthnBadChallenge = "webauthn_bad_challenge", PermissionDenied, Passkey;
    /// clientDataJSON `origin` is not one of the relying party's origins.
    WebauthnWrongOrigin = "webauthn_wrong_origin", PermissionDenied, Passkey;
    /// clientDataJSON says the ceremony ran in a cross-origin frame.
    WebauthnCrossOrigin = "webauthn_cross_origin", PermissionDenied, Passkey;
    /// The authenticator data's RP ID hash is not SHA-256 of the RP ID.
    WebauthnWrongRp = "webauthn_wrong_rp", PermissionDenied, Passkey;
    /// The authenticator did not test user presence.
    WebauthnNoUserPresence = "webauthn_no_user_presence", PermissionDenied, Passkey;
    /// The authenticator did not verify the user (no PIN or biometric).
    WebauthnNoUserVerification = "webauthn_no_user_verification", PermissionDenied, Passkey;
    /// A registration without attested credential data.
    WebauthnNoCredentialData = "webauthn_no_credential_data", PermissionDenied, Passkey;
    /// An attestation format other than `none`.
    WebauthnUnsupportedAttestation = "webauthn_unsupported_attestation", PermissionDenied, Passkey;
    /// A public key other than ES256/P-256 or EdDSA/Ed25519.
    WebauthnUnsupportedKey = "webauthn_unsupported_key", PermissionDenied, Passkey;
    /// The assertion names another credential than the enrolled one.
    WebauthnWrongCredential = "webauthn_wrong_credential", PermissionDenied, Passkey;
    /// The assertion's signature does not verify with the credential's public key.
    WebauthnBadSignature = "webauthn_bad_signature", PermissionDenied, Passkey;
    /// The signature counter did not increase: a replay or a cloned authenticator.
    WebauthnCounterNotIncreased = "webauthn_counter_not_increased", PermissionDenied, Passkey;
    // A head's gate, before or without consumption.
    /// The operation's effect is of a kind this head does not run; decided
    /// before consumption, so the proof is not spent.
    UnsupportedEffect = "unsupported_effect", FailedPrecondition, Gate;
    /// The upstream MCP server no longer lists the tool as it was pinned
    /// and approved (its description or input schema changed, or it is
    /// gone); decided before consumption, and nothing is called.
    ToolChanged = "tool_changed", FailedPrecondition, Gate;
    /// The upstream MCP server cannot be reached now; decided before
    /// consumption, so the approval stays usable.
    UpstreamUnavailable = "upstream_unavailable", Unavailable, Gate;
    /// Another execution of this proposal holds its lease now; retry for its
    /// recorded result.
    InProgress = "in_progress", FailedPrecondition, Gate;
    /// A metric label only: the signer refused with a code the gate does not
    /// count by name.
    SignerRefused = "signer_refused", FailedPrecondition, Gate;
    /// The proposal has no recorded execution yet (`get_result`).
    NotExecuted = "not_executed", FailedPrecondition, Gate;
    /// An agent operation (`agent.shell`, ...) proposed through the data
    /// operations: only a coding agent's hook proposes one.
    HookOperation = "hook_operation", InvalidArgument, Gate;
    // The HTTP heads (API, MCP over HTTP), before any operation.
    /// The HTTP request is malformed (its body, path or query).
    BadRequest = "bad_request", InvalidArgument, Http;
    /// No bearer credential, or one that is unknown, expired or revoked.
    Unauthorized = "unauthorized", Unauthenticated, Http;
    /// The request's Host, Origin or fetch metadata is not the server's own.
    Forbidden = "forbidden", PermissionDenied, Http;
    /// No such route.
    NotFound = "not_found", NotFound, Http;
    /// The route does not take this method.
    MethodNotAllowed = "method_not_allowed", InvalidArgument, Http;
    /// The request body is larger than the server accepts.
    PayloadTooLarge = "payload_too_large", InvalidArgument, Http;
    /// The request body is not `application/json`.
    UnsupportedMediaType = "unsupported_media_type", InvalidArgument, Http;
    /// The signer cannot be reached; try again later.
    Unavailable = "unavailable", Unavailable, Http;
    /// The request took longer than the limit.
    Timeout = "timeout", Unavailable, Http;
    // The CLI's own codes for what no decider answered.
    /// The command line is not one the CLI accepts (exit code 2).
    Usage = "usage", InvalidArgument, Cli;
    /// A command refused before any decider answered (the CLI's own checks);
    /// nothing was applied or approved (exit code 3).
    Refused = "refused", FailedPrecondition, Cli;
    /// The effect ran and failed, or its outcome is uncertain (exit code 4).
    NotApplied = "not_applied", FailedPrecondition, Cli;
    /// A CLI error: an input file that cannot be read, configuration, an
    /// unreachable signer, an internal fault (exit code 1).
    Error = "error", Internal, Cli;
}

/// Whether two strings are equal, in a `const` context.
const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether every code is unique and snake_case (1 to 64 bytes of `a-z`
/// and `_`), checked when the crate is built.
const fn well_formed(codes: &[&str]) -> bool {
    let mut i = 0;
    while i < codes.len() {
        let code = codes[i].as_bytes();
        if code.is_empty() || code.len() > 64 {
            return false;
        }
        let mut k = 0;
        while k < code.len() {
            if !(code[k].is_ascii_lowercase() || code[k] == b'_') {
                return false;
            }
            k += 1;
        }
        let mut j = i + 1;
        while j < codes.len() {
            if same(codes[i], codes[j]) {
                return false;
            }
            j += 1;
        }
        i += 1;
    }
    true
}

const _: () = assert!(
    well_formed(CODES),
    "a reason code is duplicated or not snake_case"
);

impl Reason {
    /// The reason with `code`, if the catalogue has it.
    pub fn from_code(code: &str) -> Option<Reason> {
        Reason::ALL.iter().copied().find(|r| r.code() == code)
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// A reason code as a head received it from another process: one this
/// build's catalogue knows, or one it does not (a newer peer's). Renderers
/// show both; only a known one is matched on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Code {
    /// A code of this catalogue.
    Known(Reason),
    /// A well-formed code this build does not know.
    Unknown(String),
}

impl Code {
    /// The code `text`: known when the catalogue has it.
    pub fn parse(text: &str) -> Code {
        Reason::from_code(text).map_or_else(|| Code::Unknown(text.to_owned()), Code::Known)
    }

    /// The code's text.
    pub fn as_str(&self) -> &str {
        match self {
            Code::Known(reason) => reason.code(),
            Code::Unknown(text) => text,
        }
    }

    /// The reason, when this build knows it.
    pub fn reason(&self) -> Option<Reason> {
        match self {
            Code::Known(reason) => Some(*reason),
            Code::Unknown(_) => None,
        }
    }
}

impl From<Reason> for Code {
    fn from(reason: Reason) -> Self {
        Code::Known(reason)
    }
}

impl PartialEq<Reason> for Code {
    fn eq(&self, other: &Reason) -> bool {
        *self == Code::Known(*other)
    }
}

impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The list of reasons as Markdown, grouped by layer: the book's
/// *Refusal reasons* chapter (`docs/reasons.md`), generated from the
/// catalogue and checked by a test so the two cannot drift.
pub fn markdown() -> String {
    let mut out = String::from(
        "<!-- Generated from reason/src/lib.rs by `COUNTERSIGN_REGENERATE=1 cargo test -p countersign-reason`; do not edit. -->\n\n# Refusal reasons\n\nEvery refusal carries one stable snake_case code, the same on every head (CLI `--json`, API, MCP, console). A code, once published, keeps its meaning.\n",
    );
    for layer in Layer::ALL {
        out.push_str(&format!(
            "\n## {}\n\n| code | gRPC status | meaning |\n|---|---|---|\n",
            layer.title()
        ));
        for reason in Reason::ALL.iter().filter(|r| r.layer() == *layer) {
            let meaning = reason
                .documentation()
                .lines()
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(" ")
                .replace('|', "\\|");
            out.push_str(&format!(
                "| `{}` | {} | {} |\n",
                reason.code(),
                reason.status().name(),
                meaning.trim()
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_code_round_trips_and_is_documented() {
        for reason in Reason::ALL {
            assert_eq!(Reason::from_code(reason.code()), Some(*reason));
            assert_eq!(Code::parse(reason.code()), Code::Known(*reason));
            assert!(reason.documentation().trim().len() > 10, "{reason}");
        }
        assert_eq!(
            Code::parse("from_a_newer_peer"),
            Code::Unknown("from_a_newer_peer".into())
        );
    }

    #[test]
    fn the_const_check_refuses_a_duplicate_and_a_bad_code() {
        assert!(well_formed(&["a_b", "c"]));
        assert!(!well_formed(&["a_b", "c", "a_b"]));
        assert!(!well_formed(&["Not_snake"]));
        assert!(!well_formed(&[""]));
    }

    /// `docs/reasons.md` is generated from the catalogue;
    /// `COUNTERSIGN_REGENERATE=1` rewrites it.
    #[test]
    fn the_committed_list_of_reasons_matches_the_catalogue() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/reasons.md");
        let generated = markdown();
        if std::env::var_os("COUNTERSIGN_REGENERATE").is_some() {
            std::fs::write(&path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "docs/reasons.md is stale: run `COUNTERSIGN_REGENERATE=1 cargo test -p countersign-reason` and commit the result"
        );
    }
}
