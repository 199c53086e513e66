//! Interop with pyseto, a PASETO implementation nobody here wrote: it must
//! accept a countersign proof and return exactly the signed claims payload,
//! agree on the key id, and reject a tampered token or the wrong key.
//!
//! Requires `python3` with `pip install pyseto` (see tests/requirements.txt);
//! without them this test FAILS rather than skipping.
#![allow(clippy::unwrap_used)]

use std::io::Write as _;
use std::process::{Command, Stdio};

use countersign_signer::issue::{footer, sign_claims};
use countersign_signer::key::ProofKey;
use countersign_verifier::canonical::{sha256_hex, to_canonical};
use countersign_verifier::claims::ISSUER;
use countersign_verifier::keys::paserk_public;
use countersign_verifier::{Claims, Grant};
use ed25519_dalek::VerifyingKey;
use serde_json::{Value, json};

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/interop/verify_with_pyseto.py"
);

/// Runs the script with the token on stdin (never argv); returns its JSON answer.
fn pyseto_verify(token: &str, key: &VerifyingKey) -> Value {
    let mut child = Command::new("python3")
        .arg(SCRIPT)
        .arg(paserk_public(key))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run python3 ({e}): install Python 3 and `pip install pyseto`")
        });
    child
        .stdin
        .take()
        .unwrap()
        .write_all(token.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(
        out.status.code(),
        Some(3),
        "pyseto is missing: pip install pyseto ({stderr})"
    );
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("pyseto script gave no JSON ({e}); stderr: {stderr}; pip install pyseto?")
    });
    assert_eq!(
        answer["ok"].as_bool().unwrap(),
        out.status.success(),
        "{answer}"
    );
    answer
}

fn claims() -> Claims {
    let args =
        json!({"name": "report", "cron": "*/5 * * * *", "note": "caf\u{e9} \u{1f600} \"quoted\""});
    let now =
        time::OffsetDateTime::from_unix_timestamp(time::OffsetDateTime::now_utc().unix_timestamp())
            .unwrap();
    Claims {
        iss: ISSUER.into(),
        aud: "countersign-interop".into(),
        sub: "pr_0123456789abcdef0123456789abcdef".into(),
        sid: "interop".into(),
        pid: "prop_0123456789abcdef0123456789abcdef".into(),
        op: "schedule.create".into(),
        args_sha256: sha256_hex(to_canonical(&args).unwrap().as_bytes()),
        args,
        crev: sha256_hex(b"crev"),
        prev: sha256_hex(b"prev"),
        grant: Some(Grant {
            rule: "reports".into(),
            version: 2,
        }),
        prov: "rule:reports@2".into(),
        jti: "_-8AAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0".into(),
        iat: now,
        nbf: now,
        exp: now + time::Duration::seconds(300),
        passkey: None,
        premise: None,
    }
}

#[test]
fn pyseto_accepts_a_countersign_proof_and_returns_exactly_the_claims() {
    let key = ProofKey::generate().unwrap();
    let c = claims();
    let proof = sign_claims(&key, &c).unwrap();
    let answer = pyseto_verify(proof.expose_secret(), &key.verifying_key());
    assert_eq!(answer["ok"], true, "{answer}");
    let payload = hex::decode(answer["payload_hex"].as_str().unwrap()).unwrap();
    assert_eq!(payload, c.to_canonical_json().unwrap().into_bytes());
    assert_eq!(Claims::from_canonical_json(&payload).unwrap(), c);
    let footer_bytes = hex::decode(answer["footer_hex"].as_str().unwrap()).unwrap();
    assert_eq!(footer_bytes, footer(&key).unwrap().into_bytes());
    assert_eq!(
        answer["key_id"],
        key.key_id(),
        "PASERK k4.pid differs from pyseto's"
    );
}

#[test]
fn pyseto_rejects_a_tampered_proof_and_the_wrong_key() {
    let key = ProofKey::from_seed(&[5u8; 32]);
    let proof = sign_claims(&key, &claims()).unwrap();
    let token = proof.expose_secret();
    // Change one character of the payload part (just after the header).
    let mut bytes = token.as_bytes().to_vec();
    bytes[20] = if bytes[20] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(bytes).unwrap();
    assert_eq!(pyseto_verify(&tampered, &key.verifying_key())["ok"], false);
    let other = ProofKey::from_seed(&[6u8; 32]);
    assert_eq!(pyseto_verify(token, &other.verifying_key())["ok"], false);
    assert_eq!(pyseto_verify(token, &key.verifying_key())["ok"], true);
}
