//! Verification without a ledger: what a receiver, or `countersign verify`,
//! can check with the published key set alone.
//!
//! Owns: [`verify_offline`], the narrower sibling of [`crate::verify()`]: the
//! same authentication, claims reading and time checks (one implementation,
//! in `verify.rs`), and only the bindings its caller names. Must not build a
//! [`crate::VerifiedProof`]: a proof checked here has not been bound to a
//! principal, session, proposal or revision, nor consumed, so nothing that
//! runs effects may accept it. Single use is the receiver's own concern.

use time::{Duration, OffsetDateTime};

use crate::claims::Claims;
use crate::keys::KeyRing;
use crate::proof::Proof;
use crate::refusal::Refusal;
use crate::verify::{authenticate, check_time, same};

/// What an offline verifier knows. Every binding is optional: `None` means
/// "not checked here", never "anything goes" for a caller that executes.
#[derive(Debug, Clone, Copy)]
pub struct OfflineExpectations<'a> {
    /// The audience the proof must name, if checked.
    pub audience: Option<&'a str>,
    /// The operation the proof must name, if checked.
    pub operation: Option<&'a str>,
    /// SHA-256 hex of the canonical arguments received, if checked.
    pub arguments_sha256: Option<&'a str>,
    /// The verifier's current time.
    pub now: OffsetDateTime,
    /// This verifier's lifetime ceiling (see [`crate::verify::DEFAULT_MAX_LIFETIME`]).
    pub max_lifetime: Duration,
}

/// A proof whose signature, claims and times checked out offline. Carries
/// the claims and key id only: it is not a [`crate::VerifiedProof`].
#[derive(Debug, Clone, PartialEq)]
pub struct OfflineVerified {
    claims: Claims,
    key_id: String,
}

impl OfflineVerified {
    /// The authenticated claims.
    pub fn claims(&self) -> &Claims {
        &self.claims
    }

    /// Id of the key that signed the proof.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }
}

/// Verifies `proof` against `keys` and the bindings `expect` names.
///
/// Check order, as in [`crate::verify()`]: token, footer, key, signature,
/// canonical claims (issuer, self-consistency, `args_sha256` against `args`),
/// then audience, operation and arguments hash when given, then lifetime
/// ceiling, expiry (strict) and not-before.
pub fn verify_offline(
    proof: &Proof,
    keys: &KeyRing,
    expect: &OfflineExpectations<'_>,
) -> Result<OfflineVerified, Refusal> {
    let (claims, key_id) = authenticate(proof, keys)?;
    let checks = [
        (expect.audience, claims.aud.as_str(), Refusal::WrongAudience),
        (
            expect.operation,
            claims.op.as_str(),
            Refusal::OperationMismatch,
        ),
        (
            expect.arguments_sha256,
            claims.args_sha256.as_str(),
            Refusal::ArgumentsMismatch,
        ),
    ];
    for (expected, actual, refusal) in checks {
        if expected.is_some_and(|e| !same(actual, e)) {
            return Err(refusal);
        }
    }
    check_time(&claims, expect.now, expect.max_lifetime)?;
    Ok(OfflineVerified { claims, key_id })
}
