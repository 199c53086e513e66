//! Tampered proofs, for refusal tests on every head: a forged signature, a
//! proof signed by an unknown key, arguments altered after signing.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_verifier::paseto::{assemble, signing_input};
use ed25519_dalek::{Signer as _, SigningKey};
use serde_json::Value;

/// Payload, signature and footer of a v4.public token.
pub fn split(token: &str) -> (Vec<u8>, [u8; 64], Vec<u8>) {
    let rest = token.trim().strip_prefix("v4.public.").unwrap();
    let (body, footer) = rest.split_once('.').unwrap();
    let body = URL_SAFE_NO_PAD.decode(body).unwrap();
    let (payload, sig) = body.split_at(body.len() - 64);
    (
        payload.to_vec(),
        sig.try_into().unwrap(),
        URL_SAFE_NO_PAD.decode(footer).unwrap(),
    )
}

/// A key the signer never had.
pub fn attacker_key() -> SigningKey {
    SigningKey::from_bytes(&[7u8; 32])
}

/// `proof` re-signed by the attacker under the signer's key id.
pub fn forged(proof: &str) -> String {
    let (payload, _, footer) = split(proof);
    let sig = attacker_key()
        .sign(&signing_input(&payload, &footer))
        .to_bytes();
    assemble(&payload, &sig, &footer)
}

/// `proof` signed by the attacker under the attacker's own key id.
pub fn signed_by_unknown_key(proof: &str) -> String {
    signed_by(proof, &attacker_key())
}

/// `proof` signed by `key` under `key`'s own id (a key the signer never had).
pub fn signed_by(proof: &str, key: &SigningKey) -> String {
    let (payload, _, _) = split(proof);
    let footer = format!(
        r#"{{"kid":"{}"}}"#,
        countersign_verifier::key_id(&key.verifying_key())
    );
    let sig = key
        .sign(&signing_input(&payload, footer.as_bytes()))
        .to_bytes();
    assemble(&payload, &sig, footer.as_bytes())
}

/// `proof` with `args.cron` changed and the original signature kept.
pub fn with_altered_arguments(proof: &str) -> String {
    let (payload, sig, footer) = split(proof);
    let mut claims: Value = serde_json::from_slice(&payload).unwrap();
    claims["args"]["cron"] = Value::String("* * * * *".into());
    let altered = countersign_verifier::canonical::to_canonical(&claims).unwrap();
    assemble(altered.as_bytes(), &sig, &footer)
}
