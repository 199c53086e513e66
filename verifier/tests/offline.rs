//! `verify_offline`: the same signature, claims and time checks as `verify`,
//! and only the bindings the caller names.
#![allow(clippy::unwrap_used)]

use countersign_verifier::offline::{OfflineExpectations, verify_offline};
use countersign_verifier::verify::DEFAULT_MAX_LIFETIME;
use countersign_verifier::{Claims, KeyRing, Proof, Refusal, key_id};
use ed25519_dalek::SigningKey;
use time::{Duration, OffsetDateTime};

#[path = "support/fixture.rs"]
mod fixture;
use fixture::*;

fn sign_with(key: &SigningKey, c: &Claims) -> Proof {
    let footer = kid_footer(&key.verifying_key());
    sign_raw(
        key,
        c.to_canonical_json().unwrap().as_bytes(),
        footer.as_bytes(),
    )
}

fn ring() -> KeyRing {
    KeyRing::from_keys([signing_key().verifying_key()])
}

fn nothing_named(now: OffsetDateTime) -> OfflineExpectations<'static> {
    OfflineExpectations {
        audience: None,
        operation: None,
        arguments_sha256: None,
        now,
        max_lifetime: DEFAULT_MAX_LIFETIME,
    }
}

#[test]
fn accepts_a_valid_proof_without_bindings_and_returns_its_claims() {
    let c = claims();
    let v = verify_offline(
        &sign_with(&signing_key(), &c),
        &ring(),
        &nothing_named(t0()),
    )
    .unwrap();
    assert_eq!(v.claims(), &c);
    assert_eq!(v.key_id(), key_id(&signing_key().verifying_key()));
}

#[test]
fn accepts_matching_bindings() {
    let c = claims();
    let e = OfflineExpectations {
        audience: Some("aud-1"),
        operation: Some("schedule.create"),
        arguments_sha256: Some(&c.args_sha256),
        ..nothing_named(t0())
    };
    assert!(verify_offline(&sign_with(&signing_key(), &c), &ring(), &e).is_ok());
}

#[test]
fn refuses_each_named_binding_that_differs_in_order() {
    let proof = sign_with(&signing_key(), &claims());
    let other = "f".repeat(64);
    let wrong_audience = OfflineExpectations {
        audience: Some("aud-2"),
        operation: Some("schedule.delete"),
        ..nothing_named(t0())
    };
    assert_eq!(
        verify_offline(&proof, &ring(), &wrong_audience).unwrap_err(),
        Refusal::WrongAudience
    );
    let wrong_operation = OfflineExpectations {
        operation: Some("schedule.delete"),
        arguments_sha256: Some(&other),
        ..nothing_named(t0())
    };
    assert_eq!(
        verify_offline(&proof, &ring(), &wrong_operation).unwrap_err(),
        Refusal::OperationMismatch
    );
    let wrong_arguments = OfflineExpectations {
        arguments_sha256: Some(&other),
        ..nothing_named(t0())
    };
    assert_eq!(
        verify_offline(&proof, &ring(), &wrong_arguments).unwrap_err(),
        Refusal::ArgumentsMismatch
    );
}

#[test]
fn refuses_expired_not_yet_valid_and_overlong_proofs_as_verify_does() {
    let c = claims();
    let proof = sign_with(&signing_key(), &c);
    let at = |now| verify_offline(&proof, &ring(), &nothing_named(now)).map(|_| ());
    assert_eq!(at(c.exp - Duration::seconds(1)), Ok(()));
    assert_eq!(at(c.exp), Err(Refusal::Expired));
    assert_eq!(at(c.nbf - Duration::seconds(1)), Err(Refusal::NotYetValid));
    let mut long = claims();
    long.exp = long.iat + DEFAULT_MAX_LIFETIME + Duration::seconds(61);
    let long = sign_with(&signing_key(), &long);
    assert_eq!(
        verify_offline(&long, &ring(), &nothing_named(t0())).unwrap_err(),
        Refusal::LifetimeTooLong
    );
}

#[test]
fn refuses_unknown_keys_bad_signatures_and_binding_before_time() {
    let stranger = SigningKey::from_bytes(&[9u8; 32]);
    let unknown = sign_with(&stranger, &claims());
    assert_eq!(
        verify_offline(&unknown, &ring(), &nothing_named(t0())).unwrap_err(),
        Refusal::UnknownKeyId
    );
    let text = sign_with(&signing_key(), &claims())
        .expose_secret()
        .to_string();
    let (body, footer) = text
        .strip_prefix("v4.public.")
        .unwrap()
        .split_once('.')
        .unwrap();
    let mut bytes: Vec<u8> = body.bytes().collect();
    bytes[5] = if bytes[5] == b'A' { b'B' } else { b'A' };
    let tampered = Proof::from_text(format!(
        "v4.public.{}.{footer}",
        String::from_utf8(bytes).unwrap()
    ))
    .unwrap();
    assert_eq!(
        verify_offline(&tampered, &ring(), &nothing_named(t0())).unwrap_err(),
        Refusal::BadSignature
    );
    let late_and_elsewhere = OfflineExpectations {
        audience: Some("aud-2"),
        ..nothing_named(claims().exp)
    };
    let proof = sign_with(&signing_key(), &claims());
    assert_eq!(
        verify_offline(&proof, &ring(), &late_and_elsewhere).unwrap_err(),
        Refusal::WrongAudience
    );
}
