//! The published key set: round trip, and every refusal of a strict reader.
#![allow(clippy::unwrap_used)]

use countersign_verifier::key_id;
use countersign_verifier::keyset::{KeySet, KeySetError, KeyStatus, PublishedKey};
use ed25519_dalek::{SigningKey, VerifyingKey};
use serde_json::Value;

fn key(seed: u8) -> VerifyingKey {
    SigningKey::from_bytes(&[seed; 32]).verifying_key()
}

fn set() -> KeySet {
    KeySet::new(vec![
        PublishedKey {
            key: key(1),
            status: KeyStatus::Active,
        },
        PublishedKey {
            key: key(2),
            status: KeyStatus::Retired,
        },
        PublishedKey {
            key: key(3),
            status: KeyStatus::Verifying,
        },
    ])
}

fn with(edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut value: Value = serde_json::from_str(&set().to_json().unwrap()).unwrap();
    edit(&mut value);
    value.to_string().into_bytes()
}

#[test]
fn round_trips_and_trusts_active_and_verifying_keys_only() {
    let text = set().to_json().unwrap();
    assert!(text.starts_with(r#"{"issuer":"countersign-signer","keys":[{"id":"k4.pid."#));
    assert!(text.ends_with(r#""version":1}"#));
    let parsed = KeySet::parse(text.as_bytes()).unwrap();
    assert_eq!(parsed, set());
    let ring = parsed.active_ring();
    assert_eq!(ring.len(), 2);
    assert!(ring.get(&key_id(&key(1))).is_some());
    assert!(ring.get(&key_id(&key(2))).is_none(), "retired");
    assert!(ring.get(&key_id(&key(3))).is_some(), "verifying");
}

#[test]
fn accepts_whitespace_between_tokens() {
    let pretty = serde_json::to_string_pretty(
        &serde_json::from_str::<Value>(&set().to_json().unwrap()).unwrap(),
    )
    .unwrap();
    assert_eq!(KeySet::parse(pretty.as_bytes()).unwrap(), set());
}

#[test]
fn refuses_unknown_versions_and_issuers() {
    let v2 = with(|v| v["version"] = 2.into());
    assert_eq!(KeySet::parse(&v2), Err(KeySetError::UnknownVersion));
    let other = with(|v| v["issuer"] = "someone".into());
    assert_eq!(KeySet::parse(&other), Err(KeySetError::WrongIssuer));
}

#[test]
fn refuses_an_id_that_is_not_its_keys() {
    let swapped = with(|v| v["keys"][0]["id"] = key_id(&key(3)).into());
    assert_eq!(KeySet::parse(&swapped), Err(KeySetError::IdMismatch));
}

#[test]
fn refuses_bad_keys_statuses_and_extra_fields() {
    let bad = with(|v| v["keys"][0]["paserk"] = "k4.public.AAAA".into());
    assert_eq!(KeySet::parse(&bad), Err(KeySetError::BadKey));
    let v3 = with(|v| v["keys"][0]["paserk"] = "k3.public.AAAA".into());
    assert_eq!(KeySet::parse(&v3), Err(KeySetError::BadKey));
    let status = with(|v| v["keys"][0]["status"] = "pending".into());
    assert_eq!(
        KeySet::parse(&status),
        Err(KeySetError::Malformed("status"))
    );
    let extra = with(|v| v["keys"][0]["expires"] = "never".into());
    assert!(matches!(
        KeySet::parse(&extra),
        Err(KeySetError::Malformed(_))
    ));
    let top = with(|v| v["extra"] = 1.into());
    assert!(matches!(
        KeySet::parse(&top),
        Err(KeySetError::Malformed(_))
    ));
}

#[test]
fn refuses_duplicate_fields_duplicate_keys_and_no_active_key() {
    let text = set().to_json().unwrap();
    let dup = text.replacen(r#""version":1"#, r#""version":1,"version":1"#, 1);
    assert!(matches!(
        KeySet::parse(dup.as_bytes()),
        Err(KeySetError::Json(_))
    ));
    let twice = with(|v| {
        let first = v["keys"][0].clone();
        v["keys"].as_array_mut().unwrap().push(first);
    });
    assert_eq!(KeySet::parse(&twice), Err(KeySetError::DuplicateKey));
    let retired = with(|v| v["keys"][0]["status"] = "retired".into());
    assert_eq!(KeySet::parse(&retired), Err(KeySetError::NoActiveKey));
}
