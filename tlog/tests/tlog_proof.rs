//! C2SP tlog-proofs: built from a real tree and a cosigned checkpoint, round
//! tripped through the text format, verified, and refused for each fault.
//! The spec's own example (c2sp.org/tlog-proof, github.com/C2SP/C2SP commit
//! 5ba5ee830903e91240fc6f9f3a7a9293d49e69c9) elides its signatures, so it is
//! parsed up to them, then re-signed with a local key.
#![allow(clippy::unwrap_used)]

// The private keys live in the signer crate (no other crate names a
// signing key); its file is compiled into these tests as it is.
#[path = "../../signer/src/note_keys.rs"]
#[allow(dead_code, unreachable_pub)]
mod note_keys;

use countersign_tlog::{
    Checkpoint, CheckpointError, Hash, KeyName, NoteError, ProofError, TlogProof, TlogProofError,
    inclusion_proof, leaf_hash, root, sign_note,
};
use note_keys::{Cosigner, Ed25519Signer};

const ORIGIN: &str = "log.countersign.example/test";

const SPEC_EXAMPLE: &str = "c2sp.org/tlog-proof@v1
extra YWdlLXYxLjIuMS1kYXJ3aW4tYXJtNjQudGFyLmd6kYXJ3aW4tYXJ
index 73894
gSKyXoYZUgZ6jduWYrkDOARinOMGJveXjgMkBTcdPlQ=
B95lDa8R83lS8n0eG+o0buTxRKQTYFi//1U8anccXmA=
EKNzoDWG8LGC0Yp9o+sv3qllpMP9uHQ9B20KNL+Q1zs=
RoopEkOdqkYqMB4MJXrbt/hMjOxsVn0IrWjpz1ZMMes=
AHCioX9nLjsrse6YhjRRmk1WUEirVOLLRoOQ6vfO5vk=

example.com/fancylog
109482
sFodV/vSp5O8n9a8QpW6PRY97tfOSW5bsc2Xl/EQi08=

\u{2014} example.com/fancylog hI2DJw[...]1roloI=
\u{2014} witness1.example mJirIklj[...]qY9v2B/5bg==
\u{2014} witness2.example TnKKVHLX[...]xwYwrSjgow==
\u{2014} witness3.example S4X82uH5[...]3oEcROGLFQ==
";

struct Fixture {
    log: Ed25519Signer,
    witness: Cosigner,
    leaves: Vec<Hash>,
    text: String,
}

/// A log of 11 entries, its checkpoint signed and cosigned, and the
/// tlog-proof text for entry 7.
fn fixture() -> Fixture {
    let log = Ed25519Signer::from_seed(KeyName::new(ORIGIN).unwrap(), &[1; 32]);
    let witness = Cosigner::from_seed(KeyName::new("witness.example/w").unwrap(), &[2; 32]);
    let leaves: Vec<Hash> = (0u8..11).map(|i| leaf_hash(&[b'e', i])).collect();
    let checkpoint = Checkpoint::new(ORIGIN, 11, root(&leaves)).unwrap();
    let mut note = sign_note(&checkpoint.to_string(), &[&log]).unwrap();
    note.push_signature(witness.cosign(&checkpoint, 1_700_000_000).unwrap())
        .unwrap();
    let proof = TlogProof::new(
        Some(b"context".to_vec()),
        7,
        inclusion_proof(&leaves, 7).unwrap(),
        note,
    );
    Fixture {
        log,
        witness,
        leaves,
        text: proof.to_string(),
    }
}

fn verify(f: &Fixture, text: &str, leaf: &Hash) -> Result<(), TlogProofError> {
    TlogProof::parse(text.as_bytes())?
        .verify(
            leaf,
            ORIGIN,
            &f.log.verifier_key(),
            &[f.witness.verifier_key()],
        )
        .map(|_| ())
}

#[test]
fn a_proof_round_trips_and_verifies() {
    let f = fixture();
    assert!(
        f.text
            .starts_with("c2sp.org/tlog-proof@v1\nextra Y29udGV4dA==\nindex 7\n")
    );
    let parsed = TlogProof::parse(f.text.as_bytes()).unwrap();
    assert_eq!(parsed.to_string(), f.text);
    assert_eq!(parsed.extra(), Some(&b"context"[..]));
    assert_eq!(parsed.index(), 7);
    assert_eq!(parsed.inclusion_proof().len(), 4);

    let verified = parsed
        .verify(
            &f.leaves[7],
            ORIGIN,
            &f.log.verifier_key(),
            &[f.witness.verifier_key()],
        )
        .unwrap();
    assert_eq!(verified.index(), 7);
    assert_eq!(verified.leaf_hash(), &f.leaves[7]);
    assert_eq!(verified.checkpoint().checkpoint().size(), 11);
    let cosignature = verified
        .checkpoint()
        .cosigned_by(&f.witness.verifier_key())
        .unwrap();
    assert_eq!(cosignature.timestamp(), Some(1_700_000_000));

    let without_extra = f.text.replace("extra Y29udGV4dA==\n", "");
    let parsed = TlogProof::parse(without_extra.as_bytes()).unwrap();
    assert_eq!(parsed.extra(), None);
    assert_eq!(parsed.to_string(), without_extra);
}

#[test]
fn refuses_a_proof_for_another_leaf_or_index() {
    let f = fixture();
    assert_eq!(
        verify(&f, &f.text, &f.leaves[6]),
        Err(TlogProofError::Inclusion(ProofError::RootMismatch))
    );
    assert_eq!(
        verify(&f, &f.text.replace("index 7\n", "index 6\n"), &f.leaves[6]),
        Err(TlogProofError::Inclusion(ProofError::RootMismatch))
    );
    assert_eq!(
        verify(&f, &f.text.replace("index 7\n", "index 11\n"), &f.leaves[7]),
        Err(TlogProofError::Inclusion(ProofError::IndexOutOfRange {
            index: 11,
            size: 11
        }))
    );
    let lines: Vec<&str> = f.text.split_inclusive('\n').collect();
    let shorter = f.text.replacen(lines[4], "", 1);
    assert_eq!(
        verify(&f, &shorter, &f.leaves[7]),
        Err(TlogProofError::Inclusion(ProofError::ProofTooShort))
    );
}

#[test]
fn refuses_a_proof_whose_checkpoint_is_not_the_logs() {
    let f = fixture();
    let parsed = TlogProof::parse(f.text.as_bytes()).unwrap();
    assert_eq!(
        parsed
            .verify(
                &f.leaves[7],
                "log.countersign.example/other",
                &f.log.verifier_key(),
                &[]
            )
            .map(|_| ()),
        Err(TlogProofError::Checkpoint(
            CheckpointError::OriginMismatch {
                expected: "log.countersign.example/other".to_owned(),
                got: ORIGIN.to_owned(),
            }
        ))
    );
    let impostor = Ed25519Signer::from_seed(KeyName::new(ORIGIN).unwrap(), &[3; 32]);
    assert_eq!(
        parsed
            .verify(&f.leaves[7], ORIGIN, &impostor.verifier_key(), &[])
            .map(|_| ()),
        Err(TlogProofError::Checkpoint(CheckpointError::NotSignedByLog))
    );
    // A checkpoint whose size was changed no longer carries the signature.
    let resized = f
        .text
        .replace(&format!("{ORIGIN}\n11\n"), &format!("{ORIGIN}\n12\n"));
    assert!(matches!(
        verify(&f, &resized, &f.leaves[7]),
        Err(TlogProofError::Checkpoint(CheckpointError::Note(
            NoteError::InvalidSignature { .. }
        )))
    ));
}

#[test]
fn refuses_each_malformed_proof_for_its_reason() {
    let f = fixture();
    let lines: Vec<&str> = f.text.split_inclusive('\n').collect();
    let hash_line = lines[3];
    let many_hashes = hash_line.repeat(65);
    let cases: Vec<(String, TlogProofError)> = vec![
        (f.text.replacen("@v1", "@v2", 1), TlogProofError::BadHeader),
        (
            f.text.replacen("c2sp", "C2SP", 1),
            TlogProofError::BadHeader,
        ),
        (
            "c2sp.org/tlog-proof@v1".to_owned(),
            TlogProofError::BadHeader,
        ),
        (
            "c2sp.org/tlog-proof@v1\n".to_owned(),
            TlogProofError::MalformedIndex,
        ),
        (
            f.text.replace("extra Y29udGV4dA==", "extra Y29udGV4dA"),
            TlogProofError::MalformedExtra,
        ),
        (
            f.text.replace("index 7", "index 07"),
            TlogProofError::MalformedIndex,
        ),
        (
            f.text.replace("index 7", "index  7"),
            TlogProofError::MalformedIndex,
        ),
        (
            f.text.replace("index 7", "Index 7"),
            TlogProofError::MalformedIndex,
        ),
        (
            f.text.replacen(hash_line, "not a hash\n", 1),
            TlogProofError::MalformedProofHash { line: 1 },
        ),
        (
            f.text.replacen(lines[4], &lines[4][1..], 1),
            TlogProofError::MalformedProofHash { line: 2 },
        ),
        (
            f.text.replacen(hash_line, &many_hashes, 1),
            TlogProofError::TooManyProofHashes,
        ),
        (lines[..5].concat(), TlogProofError::MissingCheckpoint),
        (
            [&lines[..7].concat(), "\n"].concat(),
            TlogProofError::Checkpoint(CheckpointError::Note(NoteError::NoSignatureBlock)),
        ),
    ];
    for (text, expected) in cases {
        let got = TlogProof::parse(text.as_bytes()).map(|_| ());
        assert_eq!(got, Err(expected), "{text:?}");
    }
    assert_eq!(TlogProof::parse(b"\xff"), Err(TlogProofError::NotUtf8));
}

#[test]
fn the_spec_example_parses_up_to_its_elided_signatures() {
    assert_eq!(
        TlogProof::parse(SPEC_EXAMPLE.as_bytes()),
        Err(TlogProofError::Checkpoint(CheckpointError::Note(
            NoteError::MalformedSignatureLine { line: 1 }
        )))
    );
    // With the signature lines made real, every field reads as the spec says.
    let log = Ed25519Signer::from_seed(KeyName::new("example.com/fancylog").unwrap(), &[4; 32]);
    let (head, _) = SPEC_EXAMPLE.split_once("\n\n").unwrap();
    let body = "example.com/fancylog\n109482\nsFodV/vSp5O8n9a8QpW6PRY97tfOSW5bsc2Xl/EQi08=\n";
    let note = sign_note(body, &[&log]).unwrap();
    let text = format!("{head}\n\n{note}");
    let parsed = TlogProof::parse(text.as_bytes()).unwrap();
    assert_eq!(parsed.to_string(), text);
    assert_eq!(parsed.extra().map(<[u8]>::len), Some(39));
    assert!(
        parsed
            .extra()
            .unwrap()
            .starts_with(b"age-v1.2.1-darwin-arm64.tar.gz")
    );
    assert_eq!(parsed.index(), 73894);
    assert_eq!(parsed.inclusion_proof().len(), 5);
    assert_eq!(
        parsed.inclusion_proof()[0].to_base64(),
        "gSKyXoYZUgZ6jduWYrkDOARinOMGJveXjgMkBTcdPlQ="
    );
    // Five hashes cannot prove an entry of a tree of 109482 (it takes 17).
    assert_eq!(
        parsed
            .verify(
                &Hash([0; 32]),
                "example.com/fancylog",
                &log.verifier_key(),
                &[]
            )
            .map(|_| ()),
        Err(TlogProofError::Inclusion(ProofError::ProofTooShort))
    );
}
