//! Full proof verification on arbitrary text: never panics, never accepts
//! (nobody here can sign for the fixed ring key without its private key).
#![no_main]

use countersign_verifier::{Expectations, KeyRing, Proof, verify};
use ed25519_dalek::VerifyingKey;
use libfuzzer_sys::fuzz_target;

/// The public key of the official PASETO v4.public test vectors.
const PUBLIC_KEY: [u8; 32] = [
    0x1e, 0xb9, 0xdb, 0xbb, 0xbc, 0x04, 0x7c, 0x03, 0xfd, 0x70, 0x60, 0x4e, 0x00, 0x71, 0xf0, 0x98,
    0x7e, 0x16, 0xb2, 0x8b, 0x75, 0x72, 0x25, 0xc1, 0x1f, 0x00, 0x41, 0x5d, 0x0e, 0x20, 0xb1, 0xa2,
];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(proof) = Proof::from_text(text.to_owned()) else {
        return;
    };
    let key = VerifyingKey::from_bytes(&PUBLIC_KEY).expect("valid point");
    let ring = KeyRing::from_keys([key]);
    let expect = Expectations {
        audience: "a",
        principal: "p",
        session: "s",
        proposal_id: "x",
        operation: "o",
        arguments_sha256: "h",
        contract_revision: "c",
        policy_revision: "r",
        now: time::OffsetDateTime::UNIX_EPOCH,
        max_lifetime: time::Duration::seconds(1800),
    };
    assert!(verify(&proof, &ring, &expect).is_err());
});
