//! Every refusal and the happy path, with assertions signed by keys that
//! `ring` generates (P-256 and Ed25519), plus garbled-input loops.
#![allow(clippy::unwrap_used)]

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _};
use sha2::{Digest, Sha256};

use super::*;

const RP_ID: &str = "localhost";
const ORIGIN: &str = "http://localhost:7444";
const CHALLENGE: [u8; 32] = [9; 32];
const UP_UV: u8 = 0x05;
const UP_UV_AT: u8 = 0x45;

fn rp() -> RelyingParty {
    RelyingParty {
        rp_id: RP_ID.to_owned(),
        origins: vec![ORIGIN.to_owned()],
    }
}

enum Key {
    P256(EcdsaKeyPair),
    Ed25519(Ed25519KeyPair),
}

/// A software authenticator holding one ring key.
struct Authenticator {
    key: Key,
    id: Vec<u8>,
}

impl Authenticator {
    fn p256() -> Self {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).unwrap();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        Authenticator {
            key: Key::P256(key),
            id: vec![0xe5; 16],
        }
    }

    fn ed25519() -> Self {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
        let key = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        Authenticator {
            key: Key::Ed25519(key),
            id: vec![0xed; 20],
        }
    }

    fn both() -> [Self; 2] {
        [Self::p256(), Self::ed25519()]
    }

    fn public_key(&self) -> CosePublicKey {
        match &self.key {
            Key::P256(key) => {
                let point = key.public_key().as_ref();
                CosePublicKey::Es256 {
                    x: point[1..33].try_into().unwrap(),
                    y: point[33..].try_into().unwrap(),
                }
            }
            Key::Ed25519(key) => {
                CosePublicKey::Ed25519(key.public_key().as_ref().try_into().unwrap())
            }
        }
    }

    fn credential(&self, sign_count: u32) -> Credential {
        Credential {
            id: self.id.clone(),
            public_key: self.public_key(),
            sign_count,
        }
    }

    fn sign(&self, message: &[u8]) -> Vec<u8> {
        match &self.key {
            Key::P256(key) => key
                .sign(&SystemRandom::new(), message)
                .unwrap()
                .as_ref()
                .to_vec(),
            Key::Ed25519(key) => key.sign(message).as_ref().to_vec(),
        }
    }

    /// An assertion over `auth_data` and `client_data`, signed as an authenticator signs.
    fn assert(&self, auth_data: Vec<u8>, client_data: Vec<u8>) -> Assertion {
        let signed = [auth_data.as_slice(), &Sha256::digest(&client_data)].concat();
        Assertion {
            credential_id: self.id.clone(),
            signature: self.sign(&signed),
            authenticator_data: auth_data,
            client_data_json: client_data,
        }
    }

    /// A good assertion with counter `count`.
    fn good(&self, count: u32) -> Assertion {
        self.assert(
            auth_data(RP_ID, UP_UV, count),
            client_data("webauthn.get", &CHALLENGE, ORIGIN),
        )
    }

    /// The attestation object of enrolling this key, with `flags`.
    fn attestation_object(&self, fmt: &str, flags: u8) -> Vec<u8> {
        let mut data = auth_data(RP_ID, flags, 0);
        if flags & 0x40 != 0 {
            data.extend_from_slice(&[0; 16]); // AAGUID
            data.extend_from_slice(&u16::try_from(self.id.len()).unwrap().to_be_bytes());
            data.extend_from_slice(&self.id);
            data.extend_from_slice(&self.public_key().to_cose());
        }
        let mut out = vec![0xa3, 0x63];
        out.extend_from_slice(b"fmt");
        out.push(0x60 + u8::try_from(fmt.len()).unwrap());
        out.extend_from_slice(fmt.as_bytes());
        out.push(0x67);
        out.extend_from_slice(b"attStmt");
        out.push(0xa0);
        out.push(0x68);
        out.extend_from_slice(b"authData");
        out.extend_from_slice(&[0x58, u8::try_from(data.len()).unwrap()]);
        out.extend_from_slice(&data);
        out
    }
}

fn auth_data(rp_id: &str, flags: u8, count: u32) -> Vec<u8> {
    let mut data = Sha256::digest(rp_id.as_bytes()).to_vec();
    data.push(flags);
    data.extend_from_slice(&count.to_be_bytes());
    data
}

fn client_data(kind: &str, challenge: &[u8], origin: &str) -> Vec<u8> {
    let challenge = URL_SAFE_NO_PAD.encode(challenge);
    format!(
        r#"{{"type":"{kind}","challenge":"{challenge}","origin":"{origin}","crossOrigin":false}}"#
    )
    .into_bytes()
}

fn verify(
    authenticator: &Authenticator,
    stored: u32,
    assertion: &Assertion,
) -> Result<Verified, WebAuthnError> {
    verify_assertion(
        &authenticator.credential(stored),
        assertion,
        &rp(),
        &CHALLENGE,
    )
}

#[test]
fn accepts_a_good_assertion_and_returns_the_new_counter() {
    for a in Authenticator::both() {
        let verified = verify(&a, 4, &a.good(5)).unwrap();
        assert_eq!(verified.new_sign_count(), 5);
        assert!(verified.user_verified());
    }
}

#[test]
fn accepts_counters_that_stay_at_zero() {
    for a in Authenticator::both() {
        assert_eq!(verify(&a, 0, &a.good(0)).unwrap().new_sign_count(), 0);
    }
}

#[test]
fn refuses_a_counter_that_does_not_increase() {
    for a in Authenticator::both() {
        for (stored, received) in [(5, 5), (5, 4), (5, 0)] {
            assert_eq!(
                verify(&a, stored, &a.good(received)),
                Err(WebAuthnError::CounterNotIncreased { stored, received })
            );
        }
    }
}

#[test]
fn refuses_an_assertion_for_another_challenge() {
    for a in Authenticator::both() {
        let other = a.assert(
            auth_data(RP_ID, UP_UV, 1),
            client_data("webauthn.get", &[8; 32], ORIGIN),
        );
        assert_eq!(verify(&a, 0, &other), Err(WebAuthnError::BadChallenge));
        let short = a.assert(
            auth_data(RP_ID, UP_UV, 1),
            client_data("webauthn.get", &[9; 31], ORIGIN),
        );
        assert_eq!(verify(&a, 0, &short), Err(WebAuthnError::BadChallenge));
        let padded = br#"{"type":"webauthn.get","challenge":"CQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQk=","origin":"http://localhost:7444"}"#;
        let padded = a.assert(auth_data(RP_ID, UP_UV, 1), padded.to_vec());
        assert_eq!(verify(&a, 0, &padded), Err(WebAuthnError::BadChallenge));
        let empty = a.assert(
            auth_data(RP_ID, UP_UV, 1),
            client_data("webauthn.get", &[], ORIGIN),
        );
        assert_eq!(
            verify_assertion(&a.credential(0), &empty, &rp(), &[]),
            Err(WebAuthnError::BadChallenge)
        );
    }
}

#[test]
fn refuses_an_assertion_from_another_origin() {
    for a in Authenticator::both() {
        let other = a.assert(
            auth_data(RP_ID, UP_UV, 1),
            client_data("webauthn.get", &CHALLENGE, "http://localhost:7445"),
        );
        assert_eq!(
            verify(&a, 0, &other),
            Err(WebAuthnError::WrongOrigin(
                "http://localhost:7445".to_owned()
            ))
        );
    }
}

#[test]
fn refuses_a_cross_origin_ceremony() {
    for a in Authenticator::both() {
        let json = format!(
            r#"{{"type":"webauthn.get","challenge":"{}","origin":"{ORIGIN}","crossOrigin":true}}"#,
            URL_SAFE_NO_PAD.encode(CHALLENGE)
        );
        let cross = a.assert(auth_data(RP_ID, UP_UV, 1), json.into_bytes());
        assert_eq!(verify(&a, 0, &cross), Err(WebAuthnError::CrossOrigin));
    }
}

#[test]
fn refuses_an_assertion_for_another_relying_party() {
    for a in Authenticator::both() {
        let other = a.assert(
            auth_data("example.com", UP_UV, 1),
            client_data("webauthn.get", &CHALLENGE, ORIGIN),
        );
        assert_eq!(verify(&a, 0, &other), Err(WebAuthnError::WrongRp));
    }
}

#[test]
fn refuses_an_assertion_without_presence_or_verification() {
    for a in Authenticator::both() {
        let cases = [
            (0x04, WebAuthnError::NoUserPresence),
            (0x01, WebAuthnError::NoUserVerification),
        ];
        for (flags, refusal) in cases {
            let assertion = a.assert(
                auth_data(RP_ID, flags, 1),
                client_data("webauthn.get", &CHALLENGE, ORIGIN),
            );
            assert_eq!(verify(&a, 0, &assertion), Err(refusal));
        }
    }
}

#[test]
fn refuses_a_registration_ceremony_as_an_assertion() {
    for a in Authenticator::both() {
        let create = a.assert(
            auth_data(RP_ID, UP_UV, 1),
            client_data("webauthn.create", &CHALLENGE, ORIGIN),
        );
        assert_eq!(
            verify(&a, 0, &create),
            Err(WebAuthnError::WrongType {
                expected: "webauthn.get"
            })
        );
    }
}

#[test]
fn refuses_a_signature_by_another_key_or_over_other_bytes() {
    let [p256, ed25519] = Authenticator::both();
    let other_p256 = Authenticator::p256();
    // Same credential id, other key.
    assert_eq!(
        verify(&p256, 0, &other_p256.good(1)),
        Err(WebAuthnError::BadSignature)
    );
    for a in [p256, ed25519] {
        let mut changed = a.good(1);
        changed.authenticator_data[33] ^= 0x10; // a flag bit the checks ignore (BS)
        assert_eq!(verify(&a, 0, &changed), Err(WebAuthnError::BadSignature));
        let mut changed = a.good(1);
        changed.client_data_json.extend_from_slice(b" ");
        assert_eq!(verify(&a, 0, &changed), Err(WebAuthnError::BadSignature));
        let mut changed = a.good(1);
        changed.signature.clear();
        assert_eq!(verify(&a, 0, &changed), Err(WebAuthnError::BadSignature));
    }
}

#[test]
fn refuses_an_assertion_from_another_credential() {
    for a in Authenticator::both() {
        let mut other = a.good(1);
        other.credential_id.push(0);
        assert_eq!(verify(&a, 0, &other), Err(WebAuthnError::WrongCredential));
    }
}

#[test]
fn refuses_client_data_that_is_not_strict_json() {
    for a in Authenticator::both() {
        let challenge = URL_SAFE_NO_PAD.encode(CHALLENGE);
        let duplicate = format!(
            r#"{{"type":"webauthn.get","challenge":"{challenge}","origin":"{ORIGIN}","origin":"http://evil"}}"#
        );
        let assertion = a.assert(auth_data(RP_ID, UP_UV, 1), duplicate.into_bytes());
        assert_eq!(
            verify(&a, 0, &assertion),
            Err(WebAuthnError::Malformed("client data is not strict JSON"))
        );
    }
}

#[test]
fn refuses_trailing_bytes_and_attested_data_in_an_assertion() {
    for a in Authenticator::both() {
        let mut data = auth_data(RP_ID, UP_UV, 1);
        data.push(0);
        let assertion = a.assert(data, client_data("webauthn.get", &CHALLENGE, ORIGIN));
        assert_eq!(
            verify(&a, 0, &assertion),
            Err(WebAuthnError::Malformed(
                "trailing bytes after authenticator data"
            ))
        );
        let assertion = a.assert(
            auth_data(RP_ID, UP_UV_AT, 1),
            client_data("webauthn.get", &CHALLENGE, ORIGIN),
        );
        assert_eq!(
            verify(&a, 0, &assertion),
            Err(WebAuthnError::Malformed(
                "assertion carries attested credential data"
            ))
        );
    }
}

#[test]
fn accepts_flagged_extensions_in_an_assertion() {
    for a in Authenticator::both() {
        let mut data = auth_data(RP_ID, UP_UV | 0x80, 1);
        data.extend_from_slice(&[0xa1, 0x63, b'f', b'o', b'o', 0xf5]); // {"foo": true}
        let assertion = a.assert(data, client_data("webauthn.get", &CHALLENGE, ORIGIN));
        assert_eq!(verify(&a, 0, &assertion).map(|v| v.new_sign_count()), Ok(1));
    }
}

fn register(
    a: &Authenticator,
    attestation_object: &[u8],
    kind: &str,
) -> Result<Credential, WebAuthnError> {
    parse_registration(
        attestation_object,
        &client_data(kind, &CHALLENGE, ORIGIN),
        &rp(),
        &CHALLENGE,
    )
    .inspect(|credential| assert_eq!(credential.id, a.id))
}

#[test]
fn enrols_a_credential_from_a_registration() {
    for a in Authenticator::both() {
        let credential = register(
            &a,
            &a.attestation_object("none", UP_UV_AT),
            "webauthn.create",
        )
        .unwrap();
        assert_eq!(credential, a.credential(0));
        verify_assertion(&credential, &a.good(1), &rp(), &CHALLENGE).unwrap();
    }
}

#[test]
fn refuses_registrations_that_do_not_qualify() {
    for a in Authenticator::both() {
        let good = a.attestation_object("none", UP_UV_AT);
        assert_eq!(
            register(
                &a,
                &a.attestation_object("packed", UP_UV_AT),
                "webauthn.create"
            ),
            Err(WebAuthnError::UnsupportedAttestation("packed".to_owned()))
        );
        assert_eq!(
            register(&a, &a.attestation_object("none", 0x41), "webauthn.create"),
            Err(WebAuthnError::NoUserVerification)
        );
        assert_eq!(
            register(&a, &a.attestation_object("none", UP_UV), "webauthn.create"),
            Err(WebAuthnError::NoCredentialData)
        );
        assert_eq!(
            register(&a, &good, "webauthn.get"),
            Err(WebAuthnError::WrongType {
                expected: "webauthn.create"
            })
        );
        let other_challenge = client_data("webauthn.create", &[1; 32], ORIGIN);
        assert_eq!(
            parse_registration(&good, &other_challenge, &rp(), &CHALLENGE),
            Err(WebAuthnError::BadChallenge)
        );
        let other_rp = RelyingParty {
            rp_id: "example.com".to_owned(),
            origins: vec![ORIGIN.to_owned()],
        };
        let client = client_data("webauthn.create", &CHALLENGE, ORIGIN);
        assert_eq!(
            parse_registration(&good, &client, &other_rp, &CHALLENGE),
            Err(WebAuthnError::WrongRp)
        );
    }
}

#[test]
fn error_codes_are_stable_snake_case() {
    let errors = [
        WebAuthnError::Malformed("x"),
        WebAuthnError::WrongType {
            expected: "webauthn.get",
        },
        WebAuthnError::BadChallenge,
        WebAuthnError::WrongOrigin(String::new()),
        WebAuthnError::CrossOrigin,
        WebAuthnError::WrongRp,
        WebAuthnError::NoUserPresence,
        WebAuthnError::NoUserVerification,
        WebAuthnError::NoCredentialData,
        WebAuthnError::UnsupportedAttestation(String::new()),
        WebAuthnError::UnsupportedKey,
        WebAuthnError::WrongCredential,
        WebAuthnError::BadSignature,
        WebAuthnError::CounterNotIncreased {
            stored: 1,
            received: 1,
        },
    ];
    let codes: std::collections::BTreeSet<_> = errors.iter().map(WebAuthnError::code).collect();
    assert_eq!(codes.len(), errors.len(), "codes are distinct");
    for code in codes {
        assert!(code.starts_with("webauthn_"));
        assert!(
            code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
            "{code}"
        );
    }
}

/// A small deterministic generator for the garbling loops (no proptest).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u8 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 56) as u8
    }
}

#[test]
fn survives_truncated_and_garbled_input() {
    for a in Authenticator::both() {
        let object = a.attestation_object("none", UP_UV_AT);
        let client = client_data("webauthn.create", &CHALLENGE, ORIGIN);
        let credential = a.credential(0);
        let assertion = a.good(1);
        for end in 0..object.len() {
            assert!(parse_registration(&object[..end], &client, &rp(), &CHALLENGE).is_err());
        }
        for end in 0..assertion.authenticator_data.len() {
            let mut cut = assertion.clone();
            cut.authenticator_data.truncate(end);
            assert!(verify_assertion(&credential, &cut, &rp(), &CHALLENGE).is_err());
        }
        for end in 0..assertion.client_data_json.len() {
            let mut cut = assertion.clone();
            cut.client_data_json.truncate(end);
            assert!(verify_assertion(&credential, &cut, &rp(), &CHALLENGE).is_err());
        }
        for at in 0..object.len() {
            for mask in [0x01, 0x80, 0xff] {
                let mut garbled = object.clone();
                garbled[at] ^= mask;
                let _ = parse_registration(&garbled, &client, &rp(), &CHALLENGE);
            }
        }
        // Every change to the signed authenticator data is refused.
        for at in 0..assertion.authenticator_data.len() {
            for mask in [0x01, 0x80, 0xff] {
                let mut garbled = assertion.clone();
                garbled.authenticator_data[at] ^= mask;
                assert!(verify_assertion(&credential, &garbled, &rp(), &CHALLENGE).is_err());
            }
        }
    }
    let client = client_data("webauthn.create", &CHALLENGE, ORIGIN);
    let mut rng = Lcg(11);
    for len in 0..300 {
        for _ in 0..20 {
            let bytes: Vec<u8> = (0..len).map(|_| rng.next()).collect();
            let _ = cbor::read_exact(&bytes);
            let _ = CosePublicKey::from_cose(&bytes);
            let _ = parse_registration(&bytes, &client, &rp(), &CHALLENGE);
            // The same bytes as a map's contents, to get past the first byte.
            let map = [&[0xa3][..], &bytes].concat();
            let _ = parse_registration(&map, &client, &rp(), &CHALLENGE);
        }
    }
}
