//! Tests for PAE, token parsing and the assembling helpers.
#![allow(clippy::unwrap_used)]

use ed25519_dalek::{Signer as _, SigningKey};

use base64::Engine as _;
use countersign_verifier::paseto::*;

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn key() -> SigningKey {
    SigningKey::from_bytes(&[7u8; 32])
}

fn token(payload: &[u8], footer: &[u8]) -> String {
    let sig = key().sign(&signing_input(payload, footer)).to_bytes();
    assemble(payload, &sig, footer)
}

#[test]
fn pae_matches_the_specification_examples() {
    assert_eq!(pae(&[]), b"\x00\x00\x00\x00\x00\x00\x00\x00");
    assert_eq!(
        pae(&[b""]),
        b"\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
    );
    assert_eq!(
        pae(&[b"test"]),
        b"\x01\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00test"
    );
}

#[test]
fn assembled_tokens_verify_and_round_trip() {
    let vk = key().verifying_key();
    let t = token(b"{\"a\":1}", b"{\"kid\":\"x\"}");
    assert!(t.starts_with("v4.public."));
    assert_eq!(t.matches('.').count(), 3);
    let payload = verify_v4_public(&t, &vk, Some(b"{\"kid\":\"x\"}"), b"").unwrap();
    assert_eq!(payload, b"{\"a\":1}");
    let no_footer = token(b"hi", b"");
    assert_eq!(no_footer.matches('.').count(), 2);
    assert_eq!(
        verify_v4_public(&no_footer, &vk, Some(b""), b"").unwrap(),
        b"hi"
    );
}

#[test]
fn refuses_other_versions_and_purposes() {
    let vk = key().verifying_key();
    let t = token(b"x", b"");
    let body = t.strip_prefix(HEADER).unwrap();
    for (header, err) in [
        ("v3.public.", PasetoError::WrongVersion),
        ("v2.public.", PasetoError::WrongVersion),
        ("v10.public.", PasetoError::WrongVersion),
        ("v4.local.", PasetoError::WrongPurpose),
        ("v4.secret.", PasetoError::WrongPurpose),
        ("V4.public.", PasetoError::Malformed),
        ("v4public.", PasetoError::Malformed),
        ("v4.public", PasetoError::Malformed),
        ("", PasetoError::Malformed),
    ] {
        let forged = format!("{header}{body}");
        assert_eq!(
            verify_v4_public(&forged, &vk, None, b""),
            Err(err),
            "{header}"
        );
    }
}

#[test]
fn refuses_non_canonical_base64url() {
    let vk = key().verifying_key();
    let t = token(b"x", b"");
    // 65 bytes encode to 87 chars whose last one carries 2 unused bits; set them.
    let mut bytes = t.clone().into_bytes();
    let last = bytes.len() - 1;
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let idx = alphabet.iter().position(|c| *c == bytes[last]).unwrap();
    bytes[last] = alphabet[idx | 0b0011];
    let trailing = String::from_utf8(bytes).unwrap();
    assert_ne!(trailing, t);
    assert_eq!(
        verify_v4_public(&trailing, &vk, None, b""),
        Err(PasetoError::Malformed)
    );
    assert_eq!(
        verify_v4_public(&format!("{t}=="), &vk, None, b""),
        Err(PasetoError::Malformed)
    );
    let std_alphabet = t.replace('-', "+").replace('_', "/");
    if std_alphabet != t {
        assert_eq!(
            verify_v4_public(&std_alphabet, &vk, None, b""),
            Err(PasetoError::Malformed)
        );
    }
}

#[test]
fn refuses_bad_structure() {
    let vk = key().verifying_key();
    let t = token(b"x", b"f");
    assert_eq!(
        verify_v4_public(&format!("{t}.e30"), &vk, None, b""),
        Err(PasetoError::Malformed)
    );
    let bare = token(b"x", b"");
    assert_eq!(
        verify_v4_public(&format!("{bare}."), &vk, None, b""),
        Err(PasetoError::Malformed)
    );
    // A body shorter than a signature.
    assert_eq!(
        verify_v4_public("v4.public.AAAA", &vk, None, b""),
        Err(PasetoError::Malformed)
    );
    assert_eq!(
        verify_v4_public("v4.public.", &vk, None, b""),
        Err(PasetoError::Malformed)
    );
}

#[test]
fn refuses_wrong_footer_implicit_assertion_key_and_tampering() {
    let vk = key().verifying_key();
    let t = token(b"payload", b"footer");
    assert_eq!(
        verify_v4_public(&t, &vk, Some(b"other"), b""),
        Err(PasetoError::FooterMismatch)
    );
    assert_eq!(
        verify_v4_public(&t, &vk, None, b"ia"),
        Err(PasetoError::BadSignature)
    );
    let other = SigningKey::from_bytes(&[8u8; 32]).verifying_key();
    assert_eq!(
        verify_v4_public(&t, &other, None, b""),
        Err(PasetoError::BadSignature)
    );
    // Same signature, different footer.
    let (head, _) = t.rsplit_once('.').unwrap();
    let swapped = format!("{head}.{}", b64url(b"footex"));
    assert_eq!(
        verify_v4_public(&swapped, &vk, None, b""),
        Err(PasetoError::BadSignature)
    );
}

#[test]
fn unverified_token_debug_is_redacted() {
    let t = UnverifiedToken::parse(&token(b"secret", b"")).unwrap();
    assert_eq!(format!("{t:?}"), "UnverifiedToken(<redacted>)");
}
