//! PASETO v4.public: pre-authentication encoding, strict token parsing, and
//! Ed25519 (`verify_strict`) verification; plus the two pure helpers the
//! signer uses to build a token (`signing_input`, `assemble`).
//!
//! Owns: the wire format `v4.public.<b64url(m || sig)>[.<b64url(f)>]`.
//! Must not: sign anything (no private key type here), accept any other version
//! or purpose, accept padded or non-canonical base64url, or return payload
//! bytes before the signature over them has been checked.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signature, VerifyingKey};
use subtle::ConstantTimeEq;

/// The only header countersign accepts.
pub const HEADER: &str = "v4.public.";
/// Ed25519 signature length in bytes.
const SIG_LEN: usize = 64;

/// Why a token was refused by the low-level PASETO layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PasetoError {
    /// The token is not PASETO version 4.
    #[error("not a PASETO v4 token")]
    WrongVersion,
    /// A v4 token whose purpose is not `public` (e.g. `v4.local.`).
    #[error("PASETO v4 token of the wrong purpose")]
    WrongPurpose,
    /// Wrong number of segments, bad base64url, or a body too short to hold a signature.
    #[error("malformed PASETO token")]
    Malformed,
    /// The footer differs from the one the caller required.
    #[error("unexpected PASETO footer")]
    FooterMismatch,
    /// The Ed25519 signature does not verify (strictly) over the PAE.
    #[error("bad PASETO signature")]
    BadSignature,
}

/// PASETO pre-authentication encoding: `LE64(n) || (LE64(len) || piece)*`.
pub fn pae(pieces: &[&[u8]]) -> Vec<u8> {
    let total: usize = pieces.iter().map(|p| 8 + p.len()).sum();
    let mut out = Vec::with_capacity(8 + total);
    out.extend_from_slice(&le64(pieces.len()));
    for piece in pieces {
        out.extend_from_slice(&le64(piece.len()));
        out.extend_from_slice(piece);
    }
    out
}

/// Little-endian u64 with the top bit cleared, as PAE specifies.
fn le64(n: usize) -> [u8; 8] {
    ((n as u64) & (u64::MAX >> 1)).to_le_bytes()
}

/// The bytes Ed25519 signs for a v4.public token with an empty implicit assertion.
pub fn signing_input(payload: &[u8], footer: &[u8]) -> Vec<u8> {
    pae(&[HEADER.as_bytes(), payload, footer, b""])
}

/// Builds the token text from a payload, its signature and a footer (empty footer: no segment).
pub fn assemble(payload: &[u8], signature: &[u8; 64], footer: &[u8]) -> String {
    let mut body = Vec::with_capacity(payload.len() + SIG_LEN);
    body.extend_from_slice(payload);
    body.extend_from_slice(signature);
    let mut token = String::from(HEADER);
    token.push_str(&URL_SAFE_NO_PAD.encode(&body));
    if !footer.is_empty() {
        token.push('.');
        token.push_str(&URL_SAFE_NO_PAD.encode(footer));
    }
    token
}

/// A structurally valid v4.public token whose signature has NOT been checked.
///
/// Only the footer is readable before verification (it names the key).
pub struct UnverifiedToken {
    payload: Vec<u8>,
    signature: Signature,
    footer: Vec<u8>,
}

impl std::fmt::Debug for UnverifiedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UnverifiedToken(<redacted>)")
    }
}

impl UnverifiedToken {
    /// Splits and decodes a token, refusing other versions and purposes and non-canonical base64url.
    pub fn parse(token: &str) -> Result<Self, PasetoError> {
        let Some(rest) = token.strip_prefix(HEADER) else {
            return Err(classify_header(token));
        };
        let (body, footer) = match rest.split_once('.') {
            None => (rest, None),
            Some((body, footer)) => (body, Some(footer)),
        };
        let mut body = decode(body)?;
        let footer = match footer {
            // An empty footer is encoded by omitting the segment, never as a trailing dot.
            Some("") => return Err(PasetoError::Malformed),
            Some(f) => decode(f)?,
            None => Vec::new(),
        };
        let Some(payload_len) = body.len().checked_sub(SIG_LEN) else {
            return Err(PasetoError::Malformed);
        };
        let sig: [u8; SIG_LEN] = body[payload_len..]
            .try_into()
            .map_err(|_| PasetoError::Malformed)?;
        // The body without its signature is the payload, kept in place.
        body.truncate(payload_len);
        Ok(Self {
            payload: body,
            signature: Signature::from_bytes(&sig),
            footer,
        })
    }

    /// The (unauthenticated until [`Self::verify`] succeeds) footer bytes.
    pub fn footer(&self) -> &[u8] {
        &self.footer
    }

    /// Checks the signature with `verify_strict` and returns the authenticated payload.
    pub fn verify(self, key: &VerifyingKey, implicit: &[u8]) -> Result<Vec<u8>, PasetoError> {
        let m2 = pae(&[HEADER.as_bytes(), &self.payload, &self.footer, implicit]);
        key.verify_strict(&m2, &self.signature)
            .map_err(|_| PasetoError::BadSignature)?;
        Ok(self.payload)
    }
}

/// Low-level v4.public verification, as in the PASETO test vectors.
///
/// `expected_footer`: `Some(f)` requires exactly `f` (compared in constant
/// time), `None` accepts any footer. `implicit` is the implicit assertion
/// (countersign proofs always use an empty one).
pub fn verify_v4_public(
    token: &str,
    key: &VerifyingKey,
    expected_footer: Option<&[u8]>,
    implicit: &[u8],
) -> Result<Vec<u8>, PasetoError> {
    let parsed = UnverifiedToken::parse(token)?;
    if let Some(expected) = expected_footer
        && !bool::from(parsed.footer().ct_eq(expected))
    {
        return Err(PasetoError::FooterMismatch);
    }
    parsed.verify(key, implicit)
}

/// Which refusal a token with the wrong header gets: a `version.purpose.` prefix
/// names another version or purpose; anything else is malformed.
fn classify_header(token: &str) -> PasetoError {
    let mut parts = token.splitn(3, '.');
    match (parts.next(), parts.next(), parts.next()) {
        (Some("v4"), Some(_), Some(_)) => PasetoError::WrongPurpose,
        (Some(version), Some(_), Some(_)) if is_version_tag(version) => PasetoError::WrongVersion,
        _ => PasetoError::Malformed,
    }
}

/// `v` followed by 1..=3 ASCII digits (`v1`, `v2`, `v3`, ... but not `v4`, handled above).
fn is_version_tag(s: &str) -> bool {
    s.strip_prefix('v')
        .is_some_and(|d| (1..=3).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_digit()))
}

fn decode(segment: &str) -> Result<Vec<u8>, PasetoError> {
    b64url_decode(segment).ok_or(PasetoError::Malformed)
}

/// Strict base64url-no-pad encoding, shared with key ids and PASERK strings.
pub(crate) fn b64url(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Strict base64url without padding: refuses `=`, `+`, `/` and non-zero trailing bits.
pub(crate) fn b64url_decode(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(text).ok()
}
