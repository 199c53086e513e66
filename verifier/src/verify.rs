//! Proof verification: from a raw [`Proof`] to a [`VerifiedProof`].
//!
//! Owns: the order of checks and the only constructor of `VerifiedProof`.
//! Must not: return claims that were not authenticated, tolerate skew on
//! expiry, or let any other module build a `VerifiedProof`.
//!
//! Check order (the first failing check decides the refusal):
//!
//! 1. Token shape: header exactly `v4.public.` (other version → `WrongVersion`,
//!    `v4.<other>.` → `WrongPurpose`), segments, strict base64url (`Malformed`).
//! 2. Footer: exactly the canonical JSON `{"kid":"k4.pid.…"}` (`Malformed`).
//! 3. Key: the kid must be in the [`KeyRing`] (`UnknownKeyId`).
//! 4. Signature: Ed25519 `verify_strict` over PAE(header, payload, footer, "")
//!    (`BadSignature`). Nothing below reads unauthenticated bytes.
//! 5. Payload: byte-identical to its canonical re-encoding (`NonCanonicalClaims`).
//! 6. Claims: exactly the known fields, typed; `iss`, hashes, nonce,
//!    provenance/grant, `iat <= nbf < exp` (`Malformed`); `args_sha256` is the
//!    hash of `args` (`ArgumentsMismatch`).
//! 7. Binding to the expectations, in order: audience, principal, session,
//!    proposal, operation, arguments hash, contract revision, policy revision.
//! 8. Time: `exp - iat > max_lifetime + 60 s` → `LifetimeTooLong`;
//!    `now >= exp` → `Expired` (strict, no skew); `now < nbf` → `NotYetValid`.

use ed25519_dalek::VerifyingKey;
use serde_json::Value;
use subtle::ConstantTimeEq;
use time::{Duration, OffsetDateTime};

use crate::canonical;
use crate::claims::Claims;
use crate::keys::{KeyRing, PID_PREFIX};
use crate::paseto::{PasetoError, UnverifiedToken};
use crate::proof::{ConsumeKey, Proof, is_token_byte};
use crate::refusal::Refusal;

pub use crate::lifetimes::{DEFAULT_MAX_LIFETIME, LIFETIME_SKEW};
/// Largest footer read, in bytes.
const MAX_FOOTER_BYTES: usize = 512;

/// What the verifying head knows independently of the proof.
#[derive(Debug, Clone, Copy)]
pub struct Expectations<'a> {
    /// This installation's audience.
    pub audience: &'a str,
    /// The principal the head acts for.
    pub principal: &'a str,
    /// The session asking to execute.
    pub session: &'a str,
    /// The proposal being executed.
    pub proposal_id: &'a str,
    /// The operation being executed.
    pub operation: &'a str,
    /// SHA-256 hex of the approved canonical arguments.
    pub arguments_sha256: &'a str,
    /// The operation's current contract revision.
    pub contract_revision: &'a str,
    /// The current policy revision.
    pub policy_revision: &'a str,
    /// The verifier's current time.
    pub now: OffsetDateTime,
    /// This verifier's lifetime ceiling (see [`DEFAULT_MAX_LIFETIME`]).
    pub max_lifetime: Duration,
}

/// A proof that passed every check. Only [`verify`] constructs one.
#[derive(Debug)]
pub struct VerifiedProof {
    claims: Claims,
    proof_sha256: String,
    consume_key: ConsumeKey,
    key_id: String,
}

impl VerifiedProof {
    /// The authenticated claims.
    pub fn claims(&self) -> &Claims {
        &self.claims
    }

    /// SHA-256 hex of the proof text (never the text itself).
    pub fn proof_sha256(&self) -> &str {
        &self.proof_sha256
    }

    /// The proof's consume key, which the ledger checks against the
    /// issuance's digest (see [`Proof::consume_key`]).
    pub fn consume_key(&self) -> &ConsumeKey {
        &self.consume_key
    }

    /// Id of the key that signed it.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }
}

/// Verifies `proof` against `keys` and `expect`. See the module doc for the check order.
pub fn verify(
    proof: &Proof,
    keys: &KeyRing,
    expect: &Expectations<'_>,
) -> Result<VerifiedProof, Refusal> {
    let (claims, kid) = authenticate(proof, keys)?;
    check_binding(&claims, expect)?;
    check_time(&claims, expect.now, expect.max_lifetime)?;
    Ok(VerifiedProof {
        claims,
        proof_sha256: proof.sha256_hex(),
        consume_key: proof.consume_key(),
        key_id: kid,
    })
}

/// Steps 1 to 6 of the module doc: the authenticated, well-formed claims
/// and the id of the key that signed them. No binding and no time is
/// checked: an evidence bundle's verifier reads a proof that expired long
/// ago this way; a gate never does.
pub fn authenticate(proof: &Proof, keys: &KeyRing) -> Result<(Claims, String), Refusal> {
    let token = UnverifiedToken::parse(proof.expose_secret()).map_err(refusal_from)?;
    let kid = footer_kid(token.footer())?;
    let key: &VerifyingKey = keys.get(&kid).ok_or(Refusal::UnknownKeyId)?;
    let payload = token.verify(key, b"").map_err(refusal_from)?;
    let claims = Claims::from_canonical_json(&payload)?;
    Ok((claims, kid))
}

/// The id of the key `proof`'s footer names, unauthenticated: which key
/// signed it if the signature holds, which only [`authenticate`] checks.
/// For the record a signer keeps of a proof it signed itself; `None` for a
/// text that is not a token with a well-formed footer.
pub fn footer_key_id(proof: &Proof) -> Option<String> {
    let token = UnverifiedToken::parse(proof.expose_secret()).ok()?;
    footer_kid(token.footer()).ok()
}

fn refusal_from(e: PasetoError) -> Refusal {
    match e {
        PasetoError::WrongVersion => Refusal::WrongVersion,
        PasetoError::WrongPurpose => Refusal::WrongPurpose,
        PasetoError::BadSignature => Refusal::BadSignature,
        // A footer is never required of the PASETO layer here (the key id
        // is checked against the key ring), so a mismatch is malformed.
        PasetoError::Malformed | PasetoError::FooterMismatch => Refusal::Malformed,
    }
}

/// The kid of a footer that is exactly `{"kid":"k4.pid.…"}` in canonical form.
fn footer_kid(footer: &[u8]) -> Result<String, Refusal> {
    // The footer every signer writes, read as it stands: a key id of token
    // characters needs no escape, so these bytes are the canonical text of
    // `{"kid": <it>}`, and the parse below would read exactly that.
    if footer.len() <= MAX_FOOTER_BYTES
        && let Some(kid) = footer
            .strip_prefix(br#"{"kid":""#)
            .and_then(|rest| rest.strip_suffix(br#""}"#))
        && kid.starts_with(PID_PREFIX.as_bytes())
        && kid.iter().all(|b| is_token_byte(*b))
        && let Ok(kid) = std::str::from_utf8(kid)
    {
        return Ok(kid.to_owned());
    }
    footer_kid_parsed(footer)
}

/// [`footer_kid`] of any other footer, through the canonical parser.
fn footer_kid_parsed(footer: &[u8]) -> Result<String, Refusal> {
    let value =
        canonical::parse_canonical(footer, MAX_FOOTER_BYTES).map_err(|_| Refusal::Malformed)?;
    let Value::Object(mut map) = value else {
        return Err(Refusal::Malformed);
    };
    match (map.remove("kid"), map.is_empty()) {
        (Some(Value::String(kid)), true) if kid.starts_with(PID_PREFIX) => Ok(kid),
        _ => Err(Refusal::Malformed),
    }
}

/// Constant-time string equality, for every comparison with an expectation.
///
/// The lengths are compared first, in the open, as `subtle`'s slice
/// comparison does (they are not secret: each expectation's length is
/// fixed by its kind). The bytes are then folded into one difference with
/// no branch on their values, and only that one byte goes through
/// `subtle`'s optimization barrier: one barrier per comparison, not one
/// per byte, which was most of what the eight bindings cost.
pub(crate) fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let difference = a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y));
    bool::from(difference.ct_eq(&0))
}

fn check_binding(c: &Claims, e: &Expectations<'_>) -> Result<(), Refusal> {
    let checks = [
        (same(&c.aud, e.audience), Refusal::WrongAudience),
        (same(&c.sub, e.principal), Refusal::WrongPrincipal),
        (same(&c.sid, e.session), Refusal::WrongSession),
        (same(&c.pid, e.proposal_id), Refusal::ProposalMismatch),
        (same(&c.op, e.operation), Refusal::OperationMismatch),
        (
            same(&c.args_sha256, e.arguments_sha256),
            Refusal::ArgumentsMismatch,
        ),
        (
            same(&c.crev, e.contract_revision),
            Refusal::ContractRevisionMismatch,
        ),
        (
            same(&c.prev, e.policy_revision),
            Refusal::PolicyRevisionMismatch,
        ),
    ];
    match checks.into_iter().find(|(ok, _)| !ok) {
        Some((_, refusal)) => Err(refusal),
        None => Ok(()),
    }
}

/// Step 8 of the module doc, shared with [`crate::offline`].
pub(crate) fn check_time(
    c: &Claims,
    now: OffsetDateTime,
    max_lifetime: Duration,
) -> Result<(), Refusal> {
    if c.exp - c.iat > max_lifetime.saturating_add(LIFETIME_SKEW) {
        return Err(Refusal::LifetimeTooLong);
    }
    if now >= c.exp {
        return Err(Refusal::Expired);
    }
    if now < c.nbf {
        return Err(Refusal::NotYetValid);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{footer_kid, footer_kid_parsed, same};

    #[test]
    fn a_footer_read_as_it_stands_is_read_as_the_parser_reads_it() {
        let kid = format!("{}{}", crate::keys::PID_PREFIX, "AbC-_0".repeat(7));
        let long = format!("{}{}", crate::keys::PID_PREFIX, "A".repeat(600));
        let footers = [
            format!(r#"{{"kid":"{kid}"}}"#),
            format!(r#"{{"kid":"{long}"}}"#),
            r#"{"kid":"k4.pid.A"}"#.to_string(),
            r#"{"kid":"k4.pid.\u0041"}"#.to_string(),
            r#"{"kid":"k4.pid.a\"b"}"#.to_string(),
            "{\"kid\":\"k4.pid.\u{e9}\"}".to_string(),
            format!(r#"{{"kid":"k4.lid.{}"}}"#, "A".repeat(43)),
            format!(r#"{{"kid": "{kid}"}}"#),
            format!(r#"{{"kid":"{kid}","x":1}}"#),
            format!(r#"{{"kid":"{kid}"}} "#),
            r#"{"kid":"k4.pid."}"#.to_string(),
            String::new(),
        ];
        for footer in &footers {
            assert_eq!(
                footer_kid(footer.as_bytes()),
                footer_kid_parsed(footer.as_bytes()),
                "{footer}"
            );
        }
        assert_eq!(footer_kid(footers[0].as_bytes()), Ok(kid));
        assert_eq!(
            footer_kid(footers[1].as_bytes()),
            Err(crate::Refusal::Malformed),
            "longer than a footer is read"
        );
    }

    #[test]
    fn same_is_byte_equality_of_the_whole_text() {
        let hash = "a".repeat(64);
        assert!(same(&hash, &hash.clone()));
        assert!(same("", ""));
        for at in [0, 31, 63] {
            let mut other = hash.clone().into_bytes();
            other[at] = b'b';
            let other = String::from_utf8(other).unwrap_or_default();
            assert!(!same(&hash, &other), "a byte changed at {at}");
            assert!(!same(&other, &hash), "a byte changed at {at}");
        }
        assert!(!same(&hash, &hash[..63]), "a prefix is not the text");
        assert!(!same(&hash[..63], &hash), "nor is the text its prefix");
        assert!(!same("", "a"));
        // Two bytes each, the second differing in its lowest bit only.
        assert!(!same("é", "è"));
    }
}
