//! C2SP checkpoints and cosignatures against published and independent
//! vectors:
//! - the checkpoint and cosigned checkpoint examples of c2sp.org/tlog-checkpoint
//!   and c2sp.org/tlog-cosignature (github.com/C2SP/C2SP, commit
//!   5ba5ee830903e91240fc6f9f3a7a9293d49e69c9; their keys are not published,
//!   so only the structure and the cosignature's timestamp are checked);
//! - `tests/vectors/c2sp/cosigned_checkpoint.json`, made from the specs alone
//!   by `generate_cosigned_checkpoint.py` with Python's `cryptography`: a log
//!   signature (0x01) and a witness cosignature (0x04) this crate must both
//!   verify and reproduce byte for byte.
#![allow(clippy::unwrap_used)]

// The private keys live in the signer crate (no other crate names a
// signing key); its file is compiled into these tests as it is.
#[path = "../../signer/src/note_keys.rs"]
#[allow(dead_code, unreachable_pub)]
mod note_keys;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use countersign_tlog::{
    Checkpoint, CheckpointError, Hash, KeyId, KeyName, Note, NoteError, NoteSignature,
    SignatureType, VerifierKey, cosignature_message, cosignature_timestamp, open_checkpoint,
    sign_note,
};
use note_keys::{Cosigner, Ed25519Signer};
use serde::Deserialize;

const SPEC_BODY: &str =
    "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n";
const SPEC_COSIGNED: &str = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n\n\u{2014} example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n\u{2014} witness.example.com/w1 jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA==\n";
const ORIGIN: &str = "example.com/behind-the-sofa";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Vector {
    #[allow(dead_code)]
    source: String,
    log_seed_hex: String,
    log_vkey: String,
    log_skey: String,
    witness_seed_hex: String,
    witness_vkey: String,
    timestamp: u64,
    cosignature_message: String,
    note: String,
}

fn vector() -> Vector {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/c2sp/cosigned_checkpoint.json"
    );
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn seed(hex_str: &str) -> [u8; 32] {
    hex::decode(hex_str).unwrap().try_into().unwrap()
}

fn witness(v: &Vector) -> Cosigner {
    Cosigner::from_seed(
        KeyName::new("witness.example/w1").unwrap(),
        &seed(&v.witness_seed_hex),
    )
}

#[test]
fn the_spec_checkpoint_body_parses_and_formats_back() {
    let checkpoint: Checkpoint = SPEC_BODY.parse().unwrap();
    assert_eq!(checkpoint.origin(), ORIGIN);
    assert_eq!(checkpoint.size(), 20852163);
    assert_eq!(
        checkpoint.root().to_base64(),
        "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I="
    );
    assert!(checkpoint.extensions().is_empty());
    assert_eq!(checkpoint.to_string(), SPEC_BODY);
}

#[test]
fn the_spec_cosignature_carries_the_spec_timestamp() {
    let note = Note::parse(SPEC_COSIGNED.as_bytes()).unwrap();
    assert_eq!(note.text(), SPEC_BODY);
    let witness = &note.signatures()[1];
    assert_eq!(witness.name().as_str(), "witness.example.com/w1");
    assert_eq!(witness.id(), KeyId([0x8d, 0x66, 0xcf, 0x3f]));
    // The timestamp of the spec's signed-message example, 1679315147.
    assert_eq!(cosignature_timestamp(witness.signature()), Some(1679315147));
    assert_eq!(note.to_string(), SPEC_COSIGNED);
}

#[test]
fn the_independent_vector_verifies() {
    let v = vector();
    let log_key: VerifierKey = v.log_vkey.parse().unwrap();
    let witness_key: VerifierKey = v.witness_vkey.parse().unwrap();
    assert_eq!(witness_key.signature_type(), SignatureType::CosignatureV1);
    assert_eq!(witness_key.to_string(), v.witness_vkey);

    let opened = open_checkpoint(
        v.note.as_bytes(),
        ORIGIN,
        &log_key,
        std::slice::from_ref(&witness_key),
    )
    .unwrap();
    assert_eq!(opened.checkpoint().to_string(), SPEC_BODY);
    let cosignature = opened.cosigned_by(&witness_key).unwrap();
    assert_eq!(cosignature.timestamp(), Some(v.timestamp));
    assert_eq!(opened.witness_signatures().count(), 1);
    assert_eq!(opened.note().signed_by(&log_key).unwrap().timestamp(), None);

    // Without the witness key the cosignature is merely unknown.
    let log_only = open_checkpoint(v.note.as_bytes(), ORIGIN, &log_key, &[]).unwrap();
    assert_eq!(log_only.witness_signatures().count(), 0);
    assert_eq!(log_only.note().unverified().len(), 1);
}

#[test]
fn signing_and_cosigning_reproduce_the_independent_vector() {
    let v = vector();
    let log: Ed25519Signer = v.log_skey.parse().unwrap();
    assert_eq!(
        log.to_private_key_string().as_str(),
        Ed25519Signer::from_seed(KeyName::new(ORIGIN).unwrap(), &seed(&v.log_seed_hex))
            .to_private_key_string()
            .as_str()
    );
    assert_eq!(log.verifier_key().to_string(), v.log_vkey);
    let cosigner = witness(&v);
    assert_eq!(cosigner.verifier_key().to_string(), v.witness_vkey);
    assert_eq!(
        format!("{cosigner:?}"),
        r#"Cosigner { name: "witness.example/w1", key_id: "7630fd70", .. }"#
    );

    let checkpoint: Checkpoint = SPEC_BODY.parse().unwrap();
    assert_eq!(
        cosignature_message(v.timestamp, SPEC_BODY).unwrap(),
        v.cosignature_message.as_bytes()
    );
    let mut note = sign_note(&checkpoint.to_string(), &[&log]).unwrap();
    note.push_signature(cosigner.cosign(&checkpoint, v.timestamp).unwrap())
        .unwrap();
    assert_eq!(note.to_string(), v.note);
}

#[test]
fn refuses_a_checkpoint_for_another_origin() {
    let v = vector();
    let log_key: VerifierKey = v.log_vkey.parse().unwrap();
    assert_eq!(
        open_checkpoint(v.note.as_bytes(), "example.com/other", &log_key, &[]),
        Err(CheckpointError::OriginMismatch {
            expected: "example.com/other".to_owned(),
            got: ORIGIN.to_owned(),
        })
    );
}

#[test]
fn refuses_a_checkpoint_the_log_did_not_sign() {
    let v = vector();
    let log_key: VerifierKey = v.log_vkey.parse().unwrap();
    let witness_key: VerifierKey = v.witness_vkey.parse().unwrap();
    // The witness's cosignature alone is not the log's signature.
    let lines: Vec<&str> = v.note.split_inclusive('\n').collect();
    assert_eq!(lines.len(), 6);
    let witness_only = format!("{SPEC_BODY}\n{}", lines[5]);
    assert_eq!(
        open_checkpoint(
            witness_only.as_bytes(),
            ORIGIN,
            &log_key,
            std::slice::from_ref(&witness_key)
        ),
        Err(CheckpointError::NotSignedByLog)
    );
    // Trusting the wrong log key: nothing known verifies.
    let other_log = Ed25519Signer::from_seed(KeyName::new(ORIGIN).unwrap(), &[7; 32]);
    assert_eq!(
        open_checkpoint(v.note.as_bytes(), ORIGIN, &other_log.verifier_key(), &[]),
        Err(CheckpointError::NotSignedByLog)
    );
    // ... even when a trusted witness did cosign.
    assert_eq!(
        open_checkpoint(
            v.note.as_bytes(),
            ORIGIN,
            &other_log.verifier_key(),
            std::slice::from_ref(&witness_key)
        ),
        Err(CheckpointError::NotSignedByLog)
    );
}

fn replace_witness_signature(v: &Vector, signature: Vec<u8>) -> String {
    let witness_key: VerifierKey = v.witness_vkey.parse().unwrap();
    let log: Ed25519Signer = v.log_skey.parse().unwrap();
    let mut note = sign_note(SPEC_BODY, &[&log]).unwrap();
    note.push_signature(NoteSignature::new(
        witness_key.name().clone(),
        witness_key.id(),
        signature,
    ))
    .unwrap();
    note.to_string()
}

#[test]
fn refuses_a_checkpoint_whose_cosignature_does_not_verify() {
    let v = vector();
    let log_key: VerifierKey = v.log_vkey.parse().unwrap();
    let witness_key: VerifierKey = v.witness_vkey.parse().unwrap();
    let original = Note::parse(v.note.as_bytes()).unwrap().signatures()[1]
        .signature()
        .to_vec();
    let invalid = Err(CheckpointError::Note(NoteError::InvalidSignature {
        name: witness_key.name().clone(),
        id: witness_key.id(),
    }));

    let mut other_time = original.clone();
    other_time[7] ^= 1;
    let mut bad_signature = original.clone();
    bad_signature[40] ^= 1;
    let mut too_late = original.clone();
    too_late[0] = 0x80;
    for signature in [other_time, bad_signature, too_late, original[..71].to_vec()] {
        let note = replace_witness_signature(&v, signature);
        assert_eq!(
            open_checkpoint(
                note.as_bytes(),
                ORIGIN,
                &log_key,
                std::slice::from_ref(&witness_key)
            ),
            invalid
        );
    }
    // A plain Ed25519 signature by the witness key over the note text is not
    // a cosignature.
    let as_plain = Ed25519Signer::from_seed(witness_key.name().clone(), &seed(&v.witness_seed_hex));
    let plain = countersign_tlog::NoteSigner::sign(&as_plain, SPEC_BODY).unwrap();
    let mut forged = original[..8].to_vec();
    forged.extend_from_slice(&plain);
    let note = replace_witness_signature(&v, forged);
    assert_eq!(
        open_checkpoint(
            note.as_bytes(),
            ORIGIN,
            &log_key,
            std::slice::from_ref(&witness_key)
        ),
        invalid
    );
}

#[test]
fn cosignatures_cover_extension_lines() {
    let v = vector();
    let log: Ed25519Signer = v.log_skey.parse().unwrap();
    let cosigner = witness(&v);
    let root = Hash::from_base64("CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=").unwrap();
    let checkpoint =
        Checkpoint::with_extensions(ORIGIN, 20852163, root, vec!["ext one".to_owned()]).unwrap();
    let body = checkpoint.to_string();
    assert_eq!(body, format!("{SPEC_BODY}ext one\n"));
    let mut note = sign_note(&body, &[&log]).unwrap();
    note.push_signature(cosigner.cosign(&checkpoint, 1).unwrap())
        .unwrap();
    let keys = [cosigner.verifier_key()];
    let opened = open_checkpoint(
        note.to_string().as_bytes(),
        ORIGIN,
        &log.verifier_key(),
        &keys,
    )
    .unwrap();
    assert_eq!(opened.checkpoint().extensions(), ["ext one".to_owned()]);
    assert_eq!(opened.cosigned_by(&keys[0]).unwrap().timestamp(), Some(1));

    // The same cosignature under a checkpoint with another extension fails.
    let other =
        Checkpoint::with_extensions(ORIGIN, 20852163, root, vec!["ext two".to_owned()]).unwrap();
    let mut forged = sign_note(&other.to_string(), &[&log]).unwrap();
    forged.push_signature(note.signatures()[1].clone()).unwrap();
    assert_eq!(
        open_checkpoint(
            forged.to_string().as_bytes(),
            ORIGIN,
            &log.verifier_key(),
            &keys
        ),
        Err(CheckpointError::Note(NoteError::InvalidSignature {
            name: keys[0].name().clone(),
            id: keys[0].id(),
        }))
    );
}

#[test]
fn cosigning_refuses_a_timestamp_beyond_two_to_the_63() {
    let v = vector();
    let checkpoint: Checkpoint = SPEC_BODY.parse().unwrap();
    assert_eq!(
        witness(&v).cosign(&checkpoint, 1 << 63),
        Err(NoteError::TimestampOutOfRange)
    );
    assert!(witness(&v).cosign(&checkpoint, (1 << 63) - 1).is_ok());
}

#[test]
fn refuses_each_malformed_checkpoint_body_for_its_reason() {
    let root = "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=";
    let noncanonical = "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2J=";
    let short = STANDARD.encode([0u8; 31]);
    let cases: Vec<(String, CheckpointError)> = vec![
        (String::new(), CheckpointError::NotNoteText),
        (format!("o\n1\n{root}"), CheckpointError::NotNoteText),
        (format!("o\n1\n{root}\r\n"), CheckpointError::NotNoteText),
        ("o\n1\n".to_owned(), CheckpointError::TooFewLines),
        (format!("\n1\n{root}\n"), CheckpointError::EmptyOrigin),
        (format!("o\n01\n{root}\n"), CheckpointError::MalformedSize),
        (format!("o\n+1\n{root}\n"), CheckpointError::MalformedSize),
        (format!("o\n-1\n{root}\n"), CheckpointError::MalformedSize),
        (format!("o\n 1\n{root}\n"), CheckpointError::MalformedSize),
        (format!("o\n\n{root}\n"), CheckpointError::MalformedSize),
        (
            format!("o\n18446744073709551616\n{root}\n"),
            CheckpointError::MalformedSize,
        ),
        (
            format!("o\n1\n{noncanonical}\n"),
            CheckpointError::MalformedRootHash,
        ),
        (
            format!("o\n1\n{}\n", root.trim_end_matches('=')),
            CheckpointError::MalformedRootHash,
        ),
        (
            format!("o\n1\n{short}\n"),
            CheckpointError::MalformedRootHash,
        ),
        (
            format!("o\n1\n{root}\n\n"),
            CheckpointError::EmptyExtensionLine,
        ),
        (
            format!("o\n1\n{root}\next\n\nmore\n"),
            CheckpointError::EmptyExtensionLine,
        ),
    ];
    for (body, expected) in cases {
        assert_eq!(body.parse::<Checkpoint>(), Err(expected), "{body:?}");
    }
    let size_max = format!("o\n18446744073709551615\n{root}\n");
    assert_eq!(size_max.parse::<Checkpoint>().unwrap().size(), u64::MAX);
    let empty_tree = Checkpoint::new("o", 0, Hash::EMPTY_ROOT).unwrap();
    assert_eq!(
        empty_tree.to_string().parse::<Checkpoint>(),
        Ok(empty_tree.clone())
    );
    assert!(empty_tree.to_string().starts_with("o\n0\n"));
}

#[test]
fn refuses_to_build_a_checkpoint_that_would_not_parse() {
    let root = Hash::EMPTY_ROOT;
    assert_eq!(
        Checkpoint::new("", 1, root),
        Err(CheckpointError::EmptyOrigin)
    );
    assert_eq!(
        Checkpoint::new("a\nb", 1, root),
        Err(CheckpointError::NotNoteText)
    );
    assert_eq!(
        Checkpoint::new("a\tb", 1, root),
        Err(CheckpointError::NotNoteText)
    );
    assert_eq!(
        Checkpoint::with_extensions("o", 1, root, vec![String::new()]),
        Err(CheckpointError::EmptyExtensionLine)
    );
    assert_eq!(
        Checkpoint::with_extensions("o", 1, root, vec!["x\ny".to_owned()]),
        Err(CheckpointError::NotNoteText)
    );
}
