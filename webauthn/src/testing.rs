//! A software authenticator for tests (cargo feature `testing`): an
//! Ed25519 passkey that registers and asserts exactly as a browser and an
//! authenticator would together (clientDataJSON, authenticator data, the
//! `none` attestation), with switches for what an attacker would vary (the
//! UV flag, the origin, the counter). Deterministic from a seed.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{Ed25519KeyPair, KeyPair as _};
use sha2::{Digest, Sha256};

use crate::{Assertion, CosePublicKey};

/// A passkey held in memory.
#[derive(Debug, Clone)]
pub struct SoftAuthenticator {
    seed: [u8; 32],
    credential_id: Vec<u8>,
    /// The RP ID its authenticator data names.
    pub rp_id: String,
    /// The origin its clientDataJSON names.
    pub origin: String,
    /// The signature counter; each assertion adds one first.
    pub counter: u32,
    /// Whether it sets the UV flag.
    pub user_verified: bool,
}

impl SoftAuthenticator {
    /// A passkey for `rp_id` used from `origin`, its key and credential id
    /// derived from `seed`.
    pub fn new(seed: u8, rp_id: &str, origin: &str) -> SoftAuthenticator {
        let credential_id =
            Sha256::digest([b"soft-authenticator", &[seed][..]].concat())[..16].to_vec();
        SoftAuthenticator {
            seed: [seed; 32],
            credential_id,
            rp_id: rp_id.to_owned(),
            origin: origin.to_owned(),
            counter: 0,
            user_verified: true,
        }
    }

    /// Its credential id.
    pub fn credential_id(&self) -> &[u8] {
        &self.credential_id
    }

    /// The passkey's Ed25519 key pair (ring; rebuilt from the seed).
    fn key_pair(&self) -> Ed25519KeyPair {
        match Ed25519KeyPair::from_seed_unchecked(&self.seed) {
            Ok(pair) => pair,
            // A 32-byte seed is always a valid Ed25519 seed.
            Err(_) => unreachable!("a 32-byte seed"),
        }
    }

    fn client_data(&self, kind: &str, challenge: &[u8]) -> Vec<u8> {
        format!(
            r#"{{"type":"{kind}","challenge":"{}","origin":"{}","crossOrigin":false}}"#,
            URL_SAFE_NO_PAD.encode(challenge),
            self.origin
        )
        .into_bytes()
    }

    fn authenticator_data(&self, attested: bool) -> Vec<u8> {
        let mut data = Sha256::digest(self.rp_id.as_bytes()).to_vec();
        let mut flags = 0x01;
        if self.user_verified {
            flags |= 0x04;
        }
        if attested {
            flags |= 0x40;
        }
        data.push(flags);
        data.extend_from_slice(&self.counter.to_be_bytes());
        if attested {
            data.extend_from_slice(&[0; 16]);
            let len = u16::try_from(self.credential_id.len()).unwrap_or(u16::MAX);
            data.extend_from_slice(&len.to_be_bytes());
            data.extend_from_slice(&self.credential_id);
            let mut x = [0u8; 32];
            x.copy_from_slice(self.key_pair().public_key().as_ref());
            let public = CosePublicKey::Ed25519(x);
            data.extend_from_slice(&public.to_cose());
        }
        data
    }

    /// `navigator.credentials.create` for `challenge`: the attestation
    /// object (format `none`) and clientDataJSON.
    pub fn register(&self, challenge: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let auth_data = self.authenticator_data(true);
        let mut object = vec![0xa3, 0x63];
        object.extend_from_slice(b"fmt");
        object.push(0x64);
        object.extend_from_slice(b"none");
        object.push(0x67);
        object.extend_from_slice(b"attStmt");
        object.push(0xa0);
        object.push(0x68);
        object.extend_from_slice(b"authData");
        // CBOR byte string head, in its shortest form.
        match u8::try_from(auth_data.len()) {
            Ok(len) if len < 24 => object.push(0x40 | len),
            Ok(len) => object.extend_from_slice(&[0x58, len]),
            Err(_) => {
                let len = u16::try_from(auth_data.len()).unwrap_or(u16::MAX);
                object.push(0x59);
                object.extend_from_slice(&len.to_be_bytes());
            }
        }
        object.extend_from_slice(&auth_data);
        (object, self.client_data("webauthn.create", challenge))
    }

    /// `navigator.credentials.get` for `challenge`: the counter goes up by
    /// one, then the assertion is made.
    pub fn assert(&mut self, challenge: &[u8]) -> Assertion {
        self.counter += 1;
        let authenticator_data = self.authenticator_data(false);
        let client_data_json = self.client_data("webauthn.get", challenge);
        let signed = [
            authenticator_data.as_slice(),
            &Sha256::digest(&client_data_json),
        ]
        .concat();
        Assertion {
            credential_id: self.credential_id.clone(),
            authenticator_data,
            client_data_json,
            signature: self.key_pair().sign(&signed).as_ref().to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::{RelyingParty, parse_registration, verify_assertion};

    #[test]
    fn its_registration_and_assertions_pass_the_checks() {
        let rp = RelyingParty {
            rp_id: "localhost".into(),
            origins: vec!["http://localhost:7444".into()],
        };
        let mut soft = SoftAuthenticator::new(7, "localhost", "http://localhost:7444");
        let (object, client_data) = soft.register(&[1; 32]);
        let credential = parse_registration(&object, &client_data, &rp, &[1; 32]).unwrap();
        assert_eq!(credential.id, soft.credential_id());
        let verified =
            verify_assertion(&credential, &soft.assert(&[2; 32]), &rp, &[2; 32]).unwrap();
        assert_eq!(verified.new_sign_count(), 1);
        soft.user_verified = false;
        assert_eq!(
            verify_assertion(&credential, &soft.assert(&[2; 32]), &rp, &[2; 32]).unwrap_err(),
            crate::WebAuthnError::NoUserVerification
        );
    }
}
