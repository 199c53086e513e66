//! The claims and keys the verifier's `verify` and `verify_offline` tests
//! share (included with `#[path]`).
#![allow(dead_code)]

use countersign_verifier::canonical::{sha256_hex, to_canonical};
use countersign_verifier::claims::ISSUER;
use countersign_verifier::{Claims, Proof, key_id, paseto, timestamp};
use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};
use serde_json::json;
use time::{Duration, OffsetDateTime};

pub(crate) const CREV: &str = "c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0";
pub(crate) const PREV: &str = "d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0";

pub(crate) fn signing_key() -> SigningKey {
    SigningKey::from_bytes(&[42u8; 32])
}

pub(crate) fn t0() -> OffsetDateTime {
    timestamp::parse("2026-01-01T00:00:00Z").unwrap()
}

pub(crate) fn claims() -> Claims {
    let args = json!({"name": "nightly"});
    Claims {
        iss: ISSUER.into(),
        aud: "aud-1".into(),
        sub: "pr_0123456789abcdef0123456789abcdef".into(),
        sid: "s1".into(),
        pid: "prop_0123456789abcdef0123456789abcdef".into(),
        op: "schedule.create".into(),
        args_sha256: sha256_hex(to_canonical(&args).unwrap().as_bytes()),
        args,
        crev: CREV.into(),
        prev: PREV.into(),
        grant: None,
        prov: "human:cli".into(),
        jti: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8".into(),
        iat: t0(),
        nbf: t0(),
        exp: t0() + Duration::seconds(300),
        passkey: None,
        premise: None,
    }
}

pub(crate) fn sign_raw(key: &SigningKey, payload: &[u8], footer: &[u8]) -> Proof {
    let sig = key.sign(&paseto::signing_input(payload, footer)).to_bytes();
    Proof::from_text(paseto::assemble(payload, &sig, footer)).unwrap()
}

pub(crate) fn kid_footer(key: &VerifyingKey) -> String {
    format!(r#"{{"kid":"{}"}}"#, key_id(key))
}
