//! Proof issuance: claims in, signed PASETO v4.public proof out.
//!
//! Owns: the one way a proof is made: canonical claims payload, footer
//! `{"kid":"k4.pid.…"}`, PAE with an empty implicit assertion, Ed25519,
//! assembly. Must not: decide whether a proof may be issued (that is the
//! service's job), choose lifetimes, or log the resulting token.

use countersign_verifier::canonical::{self, CanonicalError};
use countersign_verifier::{Claims, Proof, ProofFormatError, paseto};
use serde_json::{Map, Value};

use crate::key::{KeyError, ProofKey, ProofSigner};

/// Why a proof could not be produced from the given claims.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IssueError {
    /// The claims have no canonical encoding (e.g. a fractional-second timestamp or an unsafe integer).
    #[error("claims cannot be encoded canonically: {0}")]
    Canonical(#[from] CanonicalError),
    /// The assembled token is not a valid proof text (e.g. over the size bound).
    #[error("assembled proof refused: {0}")]
    Proof(#[from] ProofFormatError),
    /// The key could not sign (a device key may fail; a file key does not).
    #[error("signing failed: {0}")]
    Sign(#[from] KeyError),
}

/// The canonical footer naming `key`: `{"kid":"k4.pid.…"}`.
pub fn footer(key: &ProofKey) -> Result<String, CanonicalError> {
    footer_naming(key.key_id())
}

fn footer_naming(key_id: &str) -> Result<String, CanonicalError> {
    let mut m = Map::new();
    m.insert("kid".to_owned(), Value::String(key_id.to_owned()));
    canonical::to_canonical(&Value::Object(m))
}

/// Signs `claims` with `key` and returns the proof.
pub fn sign_claims(key: &ProofKey, claims: &Claims) -> Result<Proof, IssueError> {
    sign_claims_with(key, claims)
}

/// Signs `claims` with whichever [`ProofSigner`] is active.
pub(crate) fn sign_claims_with(
    key: &dyn ProofSigner,
    claims: &Claims,
) -> Result<Proof, IssueError> {
    let payload = claims.to_canonical_json()?;
    let footer = footer_naming(key.key_id())?;
    let token = sign_v4_public(key, payload.as_bytes(), footer.as_bytes())?;
    Ok(Proof::from_text(token)?)
}

/// PASETO v4.public over arbitrary bytes (empty implicit assertion). Crate-private:
/// everything outside this module goes through [`sign_claims`].
fn sign_v4_public(
    key: &dyn ProofSigner,
    payload: &[u8],
    footer: &[u8],
) -> Result<String, KeyError> {
    let signature = key.sign(&paseto::signing_input(payload, footer))?;
    Ok(paseto::assemble(payload, &signature, footer))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The signing side of the official PASETO v4.public vectors: the same
    /// secret key reproduces every non-failing token byte for byte.
    #[test]
    fn reproduces_every_official_v4_public_vector() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/vectors/paseto-v4-public.json"
        );
        let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let cases = doc["tests"].as_array().unwrap();
        assert!(!cases.is_empty());
        for case in cases
            .iter()
            .filter(|c| c["expect-fail"] == Value::Bool(false))
        {
            let s = |k: &str| case[k].as_str().unwrap().to_owned();
            let secret = hex::decode(s("secret-key")).unwrap();
            let key = ProofKey::from_seed(&secret[..32].try_into().unwrap());
            assert_eq!(hex::encode(key.verifying_key().as_bytes()), s("public-key"));
            let (payload, footer, implicit) = (s("payload"), s("footer"), s("implicit-assertion"));
            let token = if implicit.is_empty() {
                sign_v4_public(&key, payload.as_bytes(), footer.as_bytes()).unwrap()
            } else {
                let pae = paseto::pae(&[
                    paseto::HEADER.as_bytes(),
                    payload.as_bytes(),
                    footer.as_bytes(),
                    implicit.as_bytes(),
                ]);
                paseto::assemble(payload.as_bytes(), &key.sign(&pae), footer.as_bytes())
            };
            assert_eq!(token, s("token"), "{}", s("name"));
        }
    }
}
