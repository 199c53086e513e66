//! The bodies of the fuzz targets under `fuzz/` (run with cargo-fuzz), as
//! plain functions, so that the committed seed corpora are replayed by this
//! crate's unit tests on every CI run without a fuzzing toolchain. Each
//! panics when the property it states does not hold; none may panic on
//! any other input.

use ed25519_dalek::VerifyingKey;

use crate::canonical::{
    canonical_sha256_hex, is_canonical_text, parse, parse_canonical, parse_canonical_member,
    sha256_hex, to_canonical,
};
use crate::{Claims, Expectations, KeyRing, Proof, verify};

/// The input limit `canonical_parse` fuzzes with.
const LIMIT: usize = 128 * 1024;

/// The public key of the official PASETO v4.public test vectors.
const PUBLIC_KEY: [u8; 32] = [
    0x1e, 0xb9, 0xdb, 0xbb, 0xbc, 0x04, 0x7c, 0x03, 0xfd, 0x70, 0x60, 0x4e, 0x00, 0x71, 0xf0, 0x98,
    0x7e, 0x16, 0xb2, 0x8b, 0x75, 0x72, 0x25, 0xc1, 0x1f, 0x00, 0x41, 0x5d, 0x0e, 0x20, 0xb1, 0xa2,
];

/// Strict canonical JSON parser: whatever it accepts the RFC 8785 writer
/// can write, re-parses to the same value, and is a fixed point; the input
/// is canonical by [`is_canonical_text`] exactly when it equals that text,
/// and [`canonical_sha256_hex`] is the text's hash; [`parse_canonical`]
/// accepts exactly the inputs that are that text, with the same value.
#[allow(clippy::unwrap_used)] // a broken property must panic: that is the finding
pub fn canonical_parse(data: &[u8]) {
    let only_canonical = parse_canonical(data, LIMIT);
    let Ok(value) = parse(data, LIMIT) else {
        assert!(
            only_canonical.is_err(),
            "parse_canonical must refuse what parse refuses"
        );
        return;
    };
    let text = to_canonical(&value).unwrap();
    match only_canonical {
        Ok(read) => {
            assert_eq!(text.as_bytes(), data, "parse_canonical accepted other text");
            assert_eq!(read, value, "parse_canonical must read the same value");
            // Each top-level member's bytes are its value's canonical text
            // (the first eight: each look is a parse of the whole input).
            if let serde_json::Value::Object(members) = &value {
                for (key, member) in members.iter().take(8) {
                    let (_, bytes) = parse_canonical_member(data, LIMIT, key).unwrap();
                    let expected = to_canonical(member).unwrap();
                    assert_eq!(bytes, Some(expected.as_bytes()), "member {key:?}");
                }
            }
        }
        Err(_) => assert_ne!(
            text.as_bytes(),
            data,
            "parse_canonical refused canonical text"
        ),
    }
    assert_eq!(
        parse_canonical(text.as_bytes(), LIMIT).unwrap(),
        value,
        "parse_canonical must accept the canonical text"
    );
    // Comparing and hashing as the text is written agree with writing it.
    assert_eq!(
        is_canonical_text(&value, data).unwrap(),
        text.as_bytes() == data,
        "is_canonical_text must agree with to_canonical"
    );
    assert!(is_canonical_text(&value, text.as_bytes()).unwrap());
    assert_eq!(
        canonical_sha256_hex(&value).unwrap(),
        sha256_hex(text.as_bytes())
    );
    let again = parse(text.as_bytes(), LIMIT).unwrap();
    assert_eq!(again, value, "canonical text must round-trip");
    assert_eq!(
        to_canonical(&again).unwrap(),
        text,
        "canonical form must be a fixed point"
    );
}

/// Claims payload reader: accepted payloads are exactly their canonical
/// re-encoding.
#[allow(clippy::unwrap_used)] // a broken property must panic: that is the finding
pub fn claims(data: &[u8]) {
    if let Ok(claims) = Claims::from_canonical_json(data) {
        let text = claims.to_canonical_json().unwrap();
        assert_eq!(text.as_bytes(), data);
    }
}

/// Full proof verification on arbitrary text: never accepts (nobody can
/// sign for the fixed ring key without its private key).
#[allow(clippy::unwrap_used)] // a constant, valid point
pub fn verify_text(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(proof) = Proof::from_text(text.to_owned()) else {
        return;
    };
    let key = VerifyingKey::from_bytes(&PUBLIC_KEY).unwrap();
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
}

/// Every file of the committed seed corpus `fuzz/seeds/<target>/`.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/seeds")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no seeds in {}", dir.display());
    files.iter().map(|f| std::fs::read(f).unwrap()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_committed_seed_passes_its_target() {
        for seed in seeds("canonical_parse") {
            canonical_parse(&seed);
        }
        for seed in seeds("claims") {
            claims(&seed);
        }
        for seed in seeds("verify") {
            verify_text(&seed);
        }
    }
}
