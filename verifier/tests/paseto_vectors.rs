//! The official PASETO v4.public test vectors (paseto-standard/test-vectors),
//! checked through the low-level `paseto::verify_v4_public`.
#![allow(clippy::unwrap_used)]

use countersign_verifier::paseto::{PasetoError, verify_v4_public};
use ed25519_dalek::VerifyingKey;
use serde_json::Value;

/// The official v4.public cases plus the official 4-F failure cases.
fn vectors() -> Vec<Value> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/vectors/");
    let mut cases = Vec::new();
    for file in ["paseto-v4-public.json", "paseto-v4-fail.json"] {
        let text = std::fs::read(format!("{dir}{file}")).unwrap();
        let doc: Value = serde_json::from_slice(&text).unwrap();
        cases.extend(doc["tests"].as_array().unwrap().iter().cloned());
    }
    cases
}

fn field<'a>(case: &'a Value, name: &str) -> &'a str {
    case[name]
        .as_str()
        .unwrap_or_else(|| panic!("{name} missing"))
}

fn public_key(case: &Value) -> VerifyingKey {
    let bytes: [u8; 32] = hex::decode(field(case, "public-key"))
        .unwrap()
        .try_into()
        .unwrap();
    VerifyingKey::from_bytes(&bytes).unwrap()
}

#[test]
fn every_official_v4_public_vector_gives_its_expected_result() {
    let cases = vectors();
    let failing = cases
        .iter()
        .filter(|c| c["expect-fail"] == Value::Bool(true))
        .count();
    assert!(
        cases.len() > failing && failing > 0,
        "{} cases, {failing} failing",
        cases.len()
    );
    for case in &cases {
        let name = field(case, "name");
        let token = field(case, "token");
        let key = public_key(case);
        let implicit = field(case, "implicit-assertion").as_bytes();
        let result = verify_v4_public(
            token,
            &key,
            Some(field(case, "footer").as_bytes()),
            implicit,
        );
        if case["expect-fail"].as_bool().unwrap() {
            assert!(result.is_err(), "{name} must fail");
            // Also with any footer accepted.
            assert!(
                verify_v4_public(token, &key, None, implicit).is_err(),
                "{name}"
            );
        } else {
            let payload = result.unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(payload, field(case, "payload").as_bytes(), "{name}");
        }
    }
}

#[test]
fn official_vectors_fail_when_any_input_changes() {
    for case in vectors()
        .iter()
        .filter(|c| !c["expect-fail"].as_bool().unwrap())
    {
        let name = field(case, "name");
        let (token, key) = (field(case, "token"), public_key(case));
        let footer = field(case, "footer").as_bytes();
        let implicit = field(case, "implicit-assertion").as_bytes();
        let mut other_implicit = implicit.to_vec();
        other_implicit.push(b'!');
        assert_eq!(
            verify_v4_public(token, &key, Some(footer), &other_implicit),
            Err(PasetoError::BadSignature),
            "{name}: implicit assertion"
        );
        assert_eq!(
            verify_v4_public(token, &key, Some(b"{}"), implicit),
            Err(PasetoError::FooterMismatch),
            "{name}: footer"
        );
        let local = token.replacen("v4.public.", "v4.local.", 1);
        assert_eq!(
            verify_v4_public(&local, &key, None, implicit),
            Err(PasetoError::WrongPurpose),
            "{name}"
        );
        let v3 = token.replacen("v4.", "v3.", 1);
        assert_eq!(
            verify_v4_public(&v3, &key, None, implicit),
            Err(PasetoError::WrongVersion),
            "{name}"
        );
        // Flip one payload character (position 12 is inside the base64url body).
        let mut bytes = token.as_bytes().to_vec();
        bytes[12] = if bytes[12] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(bytes).unwrap();
        assert_eq!(
            verify_v4_public(&tampered, &key, None, implicit),
            Err(PasetoError::BadSignature),
            "{name}: tampered"
        );
    }
}
