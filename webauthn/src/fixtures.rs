//! Checks against real browser output: registrations and assertions that
//! Chromium's CDP virtual authenticator produced, recorded by
//! `webauthn/tests/webauthn_fixtures/record.py` (see its docstring to
//! re-record) for ES256 and EdDSA.
#![allow(clippy::unwrap_used)]

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;

use super::challenge::{DecisionChallenge, ProposalDigest, ProposalFields};
use super::*;

const ES256: &str = include_str!("../tests/webauthn_fixtures/es256.json");
const EDDSA: &str = include_str!("../tests/webauthn_fixtures/eddsa.json");

struct Fixture {
    json: Value,
}

impl Fixture {
    fn load(text: &str) -> Self {
        Fixture {
            json: serde_json::from_str(text).unwrap(),
        }
    }

    fn both() -> [Self; 2] {
        [Self::load(ES256), Self::load(EDDSA)]
    }

    fn text(&self, path: &str) -> &str {
        self.json
            .pointer(path)
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("{path}"))
    }

    fn bytes(&self, path: &str) -> Vec<u8> {
        URL_SAFE_NO_PAD.decode(self.text(path)).unwrap()
    }

    fn rp(&self) -> RelyingParty {
        RelyingParty {
            rp_id: self.text("/rp_id").to_owned(),
            origins: vec![self.text("/origin").to_owned()],
        }
    }

    fn credential(&self) -> Credential {
        parse_registration(
            &self.bytes("/registration/attestation_object"),
            &self.bytes("/registration/client_data_json"),
            &self.rp(),
            &self.bytes("/registration_challenge"),
        )
        .unwrap()
    }

    fn assertion(&self, name: &str) -> Assertion {
        Assertion {
            credential_id: self.bytes(&format!("/{name}/credential_id")),
            authenticator_data: self.bytes(&format!("/{name}/authenticator_data")),
            client_data_json: self.bytes(&format!("/{name}/client_data_json")),
            signature: self.bytes(&format!("/{name}/signature")),
        }
    }

    fn challenge(&self) -> Vec<u8> {
        self.bytes("/decision_challenge")
    }
}

#[test]
fn decision_challenge_matches_the_independent_python_derivation() {
    for f in Fixture::both() {
        let fields = ProposalFields {
            operation: f.text("/proposal/operation"),
            arguments_sha256: f.text("/proposal/arguments_sha256"),
            contract_revision: f.text("/proposal/contract_revision"),
            policy_revision: f.text("/proposal/policy_revision"),
            session: f.text("/proposal/session"),
            delivery: f.text("/proposal/delivery"),
        };
        let random: [u8; 32] = f.bytes("/decision_random").try_into().unwrap();
        let derived = DecisionChallenge::derive(random, &ProposalDigest::of(&fields));
        assert_eq!(derived.to_vec(), f.challenge());
    }
}

#[test]
fn enrols_chromium_registrations_of_both_algorithms() {
    let mut seen = Vec::new();
    for f in Fixture::both() {
        let credential = f.credential();
        assert_eq!(credential.id, f.bytes("/registration/credential_id"));
        // The key equals what the browser's getPublicKey() reported (SPKI),
        // and re-encodes to the exact COSE bytes the authenticator wrote.
        let spki = f.bytes("/registration/public_key_spki");
        match &credential.public_key {
            CosePublicKey::Es256 { x, y } => {
                assert!(spki.ends_with(&[&[0x04][..], x, y].concat()));
                seen.push("es256");
            }
            CosePublicKey::Ed25519(key) => {
                assert!(spki.ends_with(key));
                seen.push("eddsa");
            }
        }
        let cose = credential.public_key.to_cose();
        let object = f.bytes("/registration/attestation_object");
        assert!(object.windows(cose.len()).any(|w| w == cose));
    }
    assert_eq!(seen, ["es256", "eddsa"]);
}

#[test]
fn verifies_chromium_assertions_with_user_verification() {
    for f in Fixture::both() {
        let credential = f.credential();
        let verified = verify_assertion(
            &credential,
            &f.assertion("assertion"),
            &f.rp(),
            &f.challenge(),
        )
        .unwrap();
        assert!(verified.new_sign_count() > credential.sign_count);
        assert!(verified.user_verified());
    }
}

#[test]
fn refuses_a_chromium_assertion_against_another_challenge_origin_or_rp() {
    for f in Fixture::both() {
        let credential = f.credential();
        let assertion = f.assertion("assertion");
        let mut other_challenge = f.challenge();
        other_challenge[0] ^= 1;
        assert_eq!(
            verify_assertion(&credential, &assertion, &f.rp(), &other_challenge),
            Err(WebAuthnError::BadChallenge)
        );
        let other_origin = RelyingParty {
            origins: vec!["http://localhost:7444".to_owned()],
            ..f.rp()
        };
        assert_eq!(
            verify_assertion(&credential, &assertion, &other_origin, &f.challenge()),
            Err(WebAuthnError::WrongOrigin(f.text("/origin").to_owned()))
        );
        let other_rp = RelyingParty {
            rp_id: "127.0.0.1".to_owned(),
            ..f.rp()
        };
        assert_eq!(
            verify_assertion(&credential, &assertion, &other_rp, &f.challenge()),
            Err(WebAuthnError::WrongRp)
        );
        assert_eq!(
            parse_registration(
                &f.bytes("/registration/attestation_object"),
                &f.bytes("/registration/client_data_json"),
                &f.rp(),
                &f.challenge(),
            ),
            Err(WebAuthnError::BadChallenge)
        );
    }
}

#[test]
fn refuses_a_chromium_assertion_without_user_verification() {
    for f in Fixture::both() {
        let no_uv = f.assertion("assertion_without_uv");
        assert_eq!(
            verify_assertion(&f.credential(), &no_uv, &f.rp(), &f.challenge())
                .map_err(|e| e.code()),
            Err("webauthn_no_user_verification")
        );
    }
}

#[test]
fn refuses_a_replayed_chromium_assertion() {
    for f in Fixture::both() {
        let mut credential = f.credential();
        let assertion = f.assertion("assertion");
        let verified = verify_assertion(&credential, &assertion, &f.rp(), &f.challenge()).unwrap();
        credential.sign_count = verified.new_sign_count();
        let received = verified.new_sign_count();
        assert_eq!(
            verify_assertion(&credential, &assertion, &f.rp(), &f.challenge()),
            Err(WebAuthnError::CounterNotIncreased {
                stored: received,
                received
            })
        );
    }
}

#[test]
fn refuses_a_chromium_assertion_checked_with_the_other_fixture_key() {
    let [es256, eddsa] = Fixture::both();
    let mut credential = eddsa.credential();
    credential.id = es256.credential().id;
    assert_eq!(
        verify_assertion(
            &credential,
            &es256.assertion("assertion"),
            &es256.rp(),
            &es256.challenge()
        ),
        Err(WebAuthnError::BadSignature)
    );
}
