//! The passkey records the signer writes and reads back: enrolled WebAuthn
//! credentials, their removal, and every assertion the signer accepted,
//! kept with what it authorized (a decision, an enrolment, a removal).
//!
//! Plain data only. Verifying a registration or an assertion is the
//! `countersign-webauthn` crate's business, done by the signer before it
//! writes; the ledger checks only what it can see in its own rows (the
//! credential is enrolled and unremoved, of the subject's principal; a
//! challenge is accepted once). Binary values are base64url text without
//! padding, exactly as received.

use time::OffsetDateTime;

/// `authorized_by` of a credential enrolled with a one-time enrolment code
/// (the first credential of a principal, or after recovery): no assertion
/// comes with it.
pub const ENROLMENT_CODE: &str = "enrolment-code";

/// `authorized_by` of a removal on the administrative recovery path (the
/// signer's operator, without an assertion).
pub const SIGNER_ADMIN: &str = "signer-admin";

/// A credential to enrol ([`crate::Ledger::enrol_passkey`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasskeyEnrolment {
    /// The credential id, base64url without padding.
    pub credential_id: String,
    /// The principal whose approvals it may sign.
    pub principal: String,
    /// The name the person gave it, for listings.
    pub name: String,
    /// The credential's public key: base64url of its COSE_Key bytes.
    pub public_key: String,
    /// The authenticator's signature counter at enrolment.
    pub sign_count: u32,
    /// The registration's attestationObject, base64url, as the browser sent it.
    pub attestation_object: String,
    /// The registration's clientDataJSON, base64url, as the browser sent it.
    pub client_data_json: String,
    /// Who enrolled it: an approver path such as `<principal>/console`, or
    /// [`SIGNER_ADMIN`].
    pub enrolled_by: String,
    /// [`ENROLMENT_CODE`], or the credential id of the enrolled credential
    /// whose assertion (purpose [`AssertionPurpose::Enrol`]) authorized it.
    pub authorized_by: String,
    /// base64url of the creation challenge the registration answered: an
    /// open enrolment challenge ([`PasskeyChallenge`]), taken in the
    /// enrolment's transaction. Not stored with the credential (its
    /// clientDataJSON carries it).
    pub challenge: String,
}

/// What a stored assertion authorized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AssertionPurpose {
    /// An approval; the subject is the proposal id.
    Decision,
    /// Enrolling another credential; the subject is its credential id.
    Enrol,
    /// Removing a credential; the subject is its credential id.
    Remove,
}

impl AssertionPurpose {
    /// The stored form: `decision`, `enrol` or `remove`.
    pub fn as_str(self) -> &'static str {
        match self {
            AssertionPurpose::Decision => "decision",
            AssertionPurpose::Enrol => "enrol",
            AssertionPurpose::Remove => "remove",
        }
    }

    /// The purpose of a stored form; `None` for anything else.
    pub fn parse(text: &str) -> Option<AssertionPurpose> {
        match text {
            "decision" => Some(AssertionPurpose::Decision),
            "enrol" => Some(AssertionPurpose::Enrol),
            "remove" => Some(AssertionPurpose::Remove),
            _ => None,
        }
    }
}

impl std::fmt::Display for AssertionPurpose {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A WebAuthn assertion the signer verified, to store with what it
/// authorized. Everything an auditor needs to verify it again with the
/// credential's public key: the challenge is rederived from
/// `challenge_random` and the subject's digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasskeyAssertionRecord {
    /// The credential that signed it (an enrolled, unremoved credential of
    /// the subject's principal).
    pub credential_id: String,
    /// What it authorized.
    pub purpose: AssertionPurpose,
    /// The proposal id (a decision) or the credential id enrolled or removed.
    pub subject: String,
    /// base64url of the 32-byte derived challenge the authenticator signed.
    /// The ledger accepts each challenge once, ever
    /// ([`crate::LedgerError::ChallengeUsed`]).
    pub challenge: String,
    /// base64url of the signer's 32 random bytes behind the challenge.
    pub challenge_random: String,
    /// A decision's delivery, `direct` or `handoff` (bound into the
    /// challenge); empty for an enrolment or removal.
    pub delivery: String,
    /// base64url of the authenticator data.
    pub authenticator_data: String,
    /// base64url of the clientDataJSON.
    pub client_data_json: String,
    /// base64url of the signature.
    pub signature: String,
    /// The signature counter the authenticator reported.
    pub sign_count: u32,
}

/// A stored assertion ([`crate::Ledger::passkey_assertions`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredPasskeyAssertion {
    /// Its row id, in the order assertions were stored.
    pub id: i64,
    /// The assertion as it was recorded.
    pub assertion: PasskeyAssertionRecord,
    /// When it was stored (whole seconds, UTC).
    pub at: OffsetDateTime,
}

/// An enrolled credential as read back ([`crate::Ledger::passkey`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasskeyRecord {
    /// The credential id, base64url without padding.
    pub credential_id: String,
    /// The principal whose approvals it may sign.
    pub principal: String,
    /// The name the person gave it.
    pub name: String,
    /// base64url of its COSE_Key bytes.
    pub public_key: String,
    /// base64url of the registration's clientDataJSON, which carries the
    /// challenge its enrolment answered (an auditor rederives from it the
    /// challenge an authorizing assertion signed).
    pub registration_client_data_json: String,
    /// The greatest signature counter recorded for it: of the enrolment and
    /// of every stored assertion. The signer compares a new assertion's
    /// counter against this (the ledger does not: a counter that does not
    /// increase is the signer's refusal to make).
    pub sign_count: u32,
    /// When it was enrolled.
    pub enrolled_at: OffsetDateTime,
    /// Who enrolled it.
    pub enrolled_by: String,
    /// [`ENROLMENT_CODE`] or the credential id that authorized it.
    pub authorized_by: String,
    /// When it was removed; `None` while it may be used.
    pub removed_at: Option<OffsetDateTime>,
}

impl PasskeyRecord {
    /// Whether it may still sign (not removed).
    pub fn is_active(&self) -> bool {
        self.removed_at.is_none()
    }
}

/// The outcome of [`crate::Ledger::remove_passkey`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PasskeyRemoval {
    /// Removed now; it will sign nothing more.
    Removed,
    /// No credential with this id was ever enrolled; nothing was written.
    Unknown,
    /// It was removed before; nothing was written.
    AlreadyRemoved,
}

/// A WebAuthn challenge the signer issued and nobody answered yet
/// ([`crate::Ledger::issue_passkey_challenge`]): kept in the ledger so that
/// any signer of it can check the answer, which the write recording it
/// takes (deletes) in its own transaction. Not evidence: the row is gone
/// once used or expired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasskeyChallenge {
    /// The id the browser sends back with its answer (hex).
    pub id: String,
    /// base64url of the 32-byte challenge an authenticator signs (an
    /// enrolment's creation challenge); the recording write names it.
    pub challenge: String,
    /// base64url of the signer's 32 random bytes it was derived from.
    pub random: String,
    /// The approver path of the certificate it was issued to.
    pub approver: String,
    /// What it may authorize.
    pub purpose: AssertionPurpose,
    /// A decision's proposal id, a removal's credential id; empty for an
    /// enrolment.
    pub subject: String,
    /// A decision's delivery (`direct`, `handoff`); empty otherwise.
    pub delivery: String,
    /// A decision's session; empty otherwise.
    pub session: String,
    /// When it stops being accepted (whole seconds, UTC).
    pub expires_at: OffsetDateTime,
}

/// The outcome of [`crate::Ledger::redeem_enrolment_code`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeRedemption {
    /// The approver's current code, not expired: spent now.
    Accepted,
    /// Not the approver's current code, or expired; whatever the approver
    /// had is spent. `leaked_from`: the approvers whose current code it was
    /// (presented through another approver's certificate, so spent too).
    Refused {
        /// Approver names (empty: the unnamed certificate) whose code was
        /// presented by the wrong approver, and so spent.
        leaked_from: Vec<String>,
    },
}
