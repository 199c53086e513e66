//! The decoders of untrusted text are strict: for every single-byte change to
//! a valid note, checkpoint, tlog-proof or verifier key, the result is either
//! refused or parses and formats back to exactly the changed bytes. So no two
//! encodings of one value are accepted, and what a signature covers is what
//! the parsed value says.
#![allow(clippy::unwrap_used)]

// The private keys live in the signer crate (no other crate names a
// signing key); its file is compiled into these tests as it is.
#[path = "../../signer/src/note_keys.rs"]
#[allow(dead_code, unreachable_pub)]
mod note_keys;

use countersign_tlog::{
    Checkpoint, KeyName, Note, TlogProof, VerifierKey, inclusion_proof, leaf_hash, root, sign_note,
};
use note_keys::{Cosigner, Ed25519Signer};

/// Each byte replaced by a few values chosen to hit the grammar: newline,
/// space, plus, a digit, a base64 letter, padding, a control character, an
/// invalid UTF-8 byte, and the byte's neighbour.
fn mutations(valid: &str) -> impl Iterator<Item = Vec<u8>> + '_ {
    let bytes = valid.as_bytes();
    (0..bytes.len()).flat_map(move |i| {
        [
            b'\n',
            b' ',
            b'+',
            b'0',
            b'A',
            b'=',
            0x01,
            0xff,
            bytes[i].wrapping_add(1),
        ]
        .into_iter()
        .filter(move |&b| b != bytes[i])
        .map(move |b| {
            let mut mutated = bytes.to_vec();
            mutated[i] = b;
            mutated
        })
    })
}

fn fixture() -> (String, String, String, String) {
    let log = Ed25519Signer::from_seed(KeyName::new("log.example/a").unwrap(), &[5; 32]);
    let witness = Cosigner::from_seed(KeyName::new("w.example/b").unwrap(), &[6; 32]);
    let leaves: Vec<_> = (0u8..5).map(|i| leaf_hash(&[i])).collect();
    let checkpoint =
        Checkpoint::with_extensions("log.example/a", 5, root(&leaves), vec!["x".to_owned()])
            .unwrap();
    let mut note = sign_note(&checkpoint.to_string(), &[&log]).unwrap();
    note.push_signature(witness.cosign(&checkpoint, 42).unwrap())
        .unwrap();
    let proof = TlogProof::new(
        Some(vec![1, 2, 3]),
        3,
        inclusion_proof(&leaves, 3).unwrap(),
        note.clone(),
    );
    (
        checkpoint.to_string(),
        note.to_string(),
        proof.to_string(),
        witness.verifier_key().to_string(),
    )
}

fn check<T: ToString, E>(valid: &str, parse: impl Fn(&[u8]) -> Result<T, E>) -> usize {
    let mut accepted = 0;
    for mutated in mutations(valid) {
        if let Ok(value) = parse(&mutated) {
            assert_eq!(
                value.to_string().into_bytes(),
                mutated,
                "accepted a non-canonical encoding"
            );
            accepted += 1;
        }
    }
    accepted
}

#[test]
fn checkpoint_bodies_have_one_encoding() {
    let (body, ..) = fixture();
    check(&body, |b| {
        std::str::from_utf8(b).unwrap_or("").parse::<Checkpoint>()
    });
}

#[test]
fn notes_have_one_encoding() {
    let (_, note, ..) = fixture();
    check(&note, Note::parse);
}

#[test]
fn tlog_proofs_have_one_encoding() {
    let (.., proof, _) = fixture();
    check(&proof, TlogProof::parse);
}

#[test]
fn verifier_keys_have_one_encoding() {
    let (.., vkey) = fixture();
    let accepted = check(&vkey, |b| {
        std::str::from_utf8(b).unwrap_or("").parse::<VerifierKey>()
    });
    // Any change to name, key ID or key breaks the key ID check.
    assert_eq!(accepted, 0);
}
