//! C2SP signed notes against published vectors:
//! - the example of c2sp.org/signed-note ("Verifier keys", "Example"), from
//!   github.com/C2SP/C2SP `signed-note.md` at commit
//!   5ba5ee830903e91240fc6f9f3a7a9293d49e69c9;
//! - the PeterNeumann and EnochRoot keys and notes of golang.org/x/mod
//!   `sumdb/note/note_test.go`, github.com/golang/mod at commit
//!   fe2ec04f7c3c3aa6fad97631aafcff6e49e2d1db (TestNewVerifier,
//!   TestNewSigner, TestSign, TestOpen).
#![allow(clippy::unwrap_used)]

// The private keys live in the signer crate (no other crate names a
// signing key); its file is compiled into these tests as it is.
#[path = "../../signer/src/note_keys.rs"]
#[allow(dead_code, unreachable_pub)]
mod note_keys;

use countersign_tlog::{
    KeyError, KeyId, KeyName, MAX_SIGNATURES, Note, NoteError, NoteSigner, SignatureType,
    TrustedKeys, VerifierKey, sign_note,
};
use note_keys::Ed25519Signer;

const SPEC_VKEY: &str = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k";
const SPEC_NOTE: &str = "This is an example message.\n\n\u{2014} example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n";

const PETER_VKEY: &str = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
const PETER_SKEY: &str =
    "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";
const ENOCH_VKEY: &str = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop";
const TEXT: &str = "If you think cryptography is the answer to your problem,\n\
                    then you don't know what your problem is.\n";
const PETER_SIG: &str = "\u{2014} PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";
const ENOCH_SIG: &str = "\u{2014} EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n";

fn key(vkey: &str) -> VerifierKey {
    vkey.parse().unwrap()
}

fn trusted(vkeys: &[&str]) -> TrustedKeys {
    TrustedKeys::new(vkeys.iter().map(|k| key(k))).unwrap()
}

fn note(parts: &[&str]) -> Vec<u8> {
    parts.concat().into_bytes()
}

fn peter() -> KeyName {
    KeyName::new("PeterNeumann").unwrap()
}

#[test]
fn the_spec_example_note_verifies_under_the_spec_example_key() {
    let vkey = key(SPEC_VKEY);
    assert_eq!(vkey.name().as_str(), "example.com/foo");
    assert_eq!(vkey.id(), KeyId([0x53, 0x0d, 0x90, 0x3a]));
    assert_eq!(vkey.signature_type(), SignatureType::Ed25519);
    assert_eq!(vkey.to_string(), SPEC_VKEY);

    let parsed = Note::parse(SPEC_NOTE.as_bytes()).unwrap();
    assert_eq!(parsed.to_string(), SPEC_NOTE);
    let verified = parsed.verify(&trusted(&[SPEC_VKEY])).unwrap();
    assert_eq!(verified.text(), "This is an example message.\n");
    assert!(verified.signed_by(&vkey).is_some());
}

#[test]
fn the_go_keys_parse_and_format_back() {
    assert_eq!(key(PETER_VKEY).to_string(), PETER_VKEY);
    let signer: Ed25519Signer = PETER_SKEY.parse().unwrap();
    assert_eq!(signer.verifier_key(), key(PETER_VKEY));
    assert_eq!(signer.to_private_key_string().as_str(), PETER_SKEY);
    assert_eq!(
        format!("{signer:?}"),
        r#"Ed25519Signer { name: "PeterNeumann", key_id: "c74f20a3", .. }"#
    );
}

#[test]
fn signing_reproduces_the_go_note_byte_for_byte() {
    let signer: Ed25519Signer = PETER_SKEY.parse().unwrap();
    let signed = sign_note(TEXT, &[&signer]).unwrap();
    assert_eq!(signed.to_string(), format!("{TEXT}\n{PETER_SIG}"));
}

#[test]
fn refuses_every_mangling_of_the_go_verifier_key() {
    // TestNewVerifier: every proper substring and every byte incremented.
    let bytes = PETER_VKEY.as_bytes();
    for i in 0..=bytes.len() {
        for j in i + 1..=bytes.len() {
            if i == 0 && j == bytes.len() {
                continue;
            }
            let sub = &PETER_VKEY[i..j];
            assert!(sub.parse::<VerifierKey>().is_err(), "accepted {sub:?}");
        }
    }
    for i in 0..bytes.len() {
        let mut mangled = bytes.to_vec();
        mangled[i] += 1;
        let mangled = String::from_utf8(mangled).unwrap();
        assert!(
            mangled.parse::<VerifierKey>().is_err(),
            "accepted {mangled:?}"
        );
    }
    // Wrong key length and unknown algorithm, each with an adjusted key ID.
    // Go's lenient base64 reads the first; its last group has non-zero
    // trailing bits, which the strict decoder refuses before the length.
    assert_eq!(
        "PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY=="
            .parse::<VerifierKey>(),
        Err(KeyError::MalformedKeyEncoding)
    );
    assert_eq!(
        "PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEA=="
            .parse::<VerifierKey>(),
        Err(KeyError::WrongKeyLength(36))
    );
    assert_eq!(
        "PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW".parse::<VerifierKey>(),
        Err(KeyError::UnsupportedSignatureType(0x65))
    );
}

#[test]
fn refuses_every_mangling_of_the_go_signer_key() {
    // TestNewSigner.
    let bytes = PETER_SKEY.as_bytes();
    for i in 0..=bytes.len() {
        for j in i + 1..=bytes.len() {
            if i == 0 && j == bytes.len() {
                continue;
            }
            let sub = &PETER_SKEY[i..j];
            assert!(sub.parse::<Ed25519Signer>().is_err(), "accepted {sub:?}");
        }
    }
    for i in 0..bytes.len() {
        let mut mangled = bytes.to_vec();
        mangled[i] += 1;
        let mangled = String::from_utf8(mangled).unwrap();
        assert!(
            mangled.parse::<Ed25519Signer>().is_err(),
            "accepted {mangled:?}"
        );
    }
}

#[test]
fn key_strings_are_refused_for_the_exact_reason() {
    let cases: [(&str, KeyError); 8] = [
        ("PeterNeumann", KeyError::MissingPart),
        ("PeterNeumann+c74f20a3", KeyError::MissingPart),
        ("Peter Neumann+c74f20a3+AA==", KeyError::InvalidName),
        ("+c74f20a3+AA==", KeyError::InvalidName),
        (
            "PeterNeumann+C74F20A3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
            KeyError::MalformedKeyId,
        ),
        (
            "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW=",
            KeyError::MalformedKeyEncoding,
        ),
        (
            "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TX",
            KeyError::InvalidPublicKey,
        ),
        (
            "PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
            KeyError::KeyIdMismatch,
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(text.parse::<VerifierKey>(), Err(expected), "{text}");
    }
    assert_eq!(
        "PeterNeumann+c74f20a3+".parse::<VerifierKey>(),
        Err(KeyError::EmptyKey)
    );
    assert_eq!(
        PETER_SKEY
            .strip_prefix("PRIVATE+")
            .unwrap()
            .parse::<Ed25519Signer>()
            .map(|_| ()),
        Err(KeyError::NotASignerKey)
    );
    // A 0x04 seed is not a note signing key.
    assert_eq!(
        "PRIVATE+KEY+PeterNeumann+c74f20a3+BIEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
            .parse::<Ed25519Signer>()
            .map(|_| ()),
        Err(KeyError::UnsupportedSignatureType(0x04))
    );
}

#[test]
fn a_note_with_one_known_and_one_unknown_signature_verifies() {
    let parsed = Note::parse(&note(&[TEXT, "\n", PETER_SIG, ENOCH_SIG])).unwrap();
    let verified = parsed.verify(&trusted(&[PETER_VKEY])).unwrap();
    assert_eq!(verified.text(), TEXT);
    assert_eq!(verified.verified().len(), 1);
    assert_eq!(verified.verified()[0].name(), &peter());
    assert_eq!(verified.verified()[0].id(), KeyId([0xc7, 0x4f, 0x20, 0xa3]));
    assert_eq!(verified.verified()[0].timestamp(), None);
    assert_eq!(verified.unverified().len(), 1);
    assert_eq!(verified.unverified()[0].name().as_str(), "EnochRoot");
    assert_eq!(
        verified.unverified()[0].id(),
        KeyId([0xaf, 0x0c, 0xfe, 0x78])
    );

    let both = parsed.verify(&trusted(&[PETER_VKEY, ENOCH_VKEY])).unwrap();
    assert_eq!(both.verified().len(), 2);
    assert!(both.unverified().is_empty());
}

#[test]
fn refuses_a_note_with_no_signature_from_a_known_key() {
    let parsed = Note::parse(&note(&[TEXT, "\n", PETER_SIG, ENOCH_SIG])).unwrap();
    assert_eq!(
        parsed.verify(&trusted(&[])),
        Err(NoteError::NoKnownSignature)
    );
    assert_eq!(
        parsed.verify(&trusted(&[SPEC_VKEY])),
        Err(NoteError::NoKnownSignature)
    );
}

#[test]
fn refuses_two_trusted_keys_with_the_same_name_and_id() {
    assert_eq!(
        TrustedKeys::new([key(ENOCH_VKEY), key(PETER_VKEY), key(ENOCH_VKEY)]).map(|_| ()),
        Err(NoteError::DuplicateKey {
            name: KeyName::new("EnochRoot").unwrap(),
            id: KeyId([0xaf, 0x0c, 0xfe, 0x78]),
        })
    );
}

#[test]
fn refuses_a_note_whose_known_signature_does_not_verify() {
    let bad = format!("{}ABCD{}", &PETER_SIG[..60], &PETER_SIG[60..]);
    let parsed = Note::parse(&note(&[TEXT, "\n", &bad])).unwrap();
    assert_eq!(
        parsed.verify(&trusted(&[PETER_VKEY])),
        Err(NoteError::InvalidSignature {
            name: peter(),
            id: KeyId([0xc7, 0x4f, 0x20, 0xa3]),
        })
    );
    // A good signature from the same key does not excuse a bad one.
    let parsed = Note::parse(&note(&[TEXT, "\n", PETER_SIG, &bad])).unwrap();
    assert!(matches!(
        parsed.verify(&trusted(&[PETER_VKEY])),
        Err(NoteError::InvalidSignature { .. })
    ));
    // A signature for another text does not verify either.
    let other = format!("{TEXT}Appended.\n\n{PETER_SIG}");
    assert!(matches!(
        Note::parse(other.as_bytes())
            .unwrap()
            .verify(&trusted(&[PETER_VKEY])),
        Err(NoteError::InvalidSignature { .. })
    ));
}

#[test]
fn unknown_signatures_are_kept_and_repeated_known_ones_counted_once() {
    let enoch_abcd = format!("{}ABCD{}", &ENOCH_SIG[..60], &ENOCH_SIG[60..]);
    let parsed = Note::parse(&note(&[
        TEXT,
        "\n",
        PETER_SIG,
        PETER_SIG,
        ENOCH_SIG,
        ENOCH_SIG,
        &enoch_abcd,
    ]))
    .unwrap();
    let verified = parsed.verify(&trusted(&[PETER_VKEY])).unwrap();
    assert_eq!(verified.verified().len(), 1);
    assert_eq!(verified.unverified().len(), 3);
}

#[test]
fn a_signature_sharing_only_the_name_or_only_the_id_is_unknown() {
    // c2sp.org/signed-note: "Verifiers MUST ignore signatures from unknown
    // keys, even if they share a name or ID (but not both) with a known key."
    let renamed = PETER_SIG.replace("PeterNeumann", "CarmenSandiego");
    let parsed = Note::parse(&note(&[TEXT, "\n", PETER_SIG, &renamed])).unwrap();
    let verified = parsed.verify(&trusted(&[PETER_VKEY])).unwrap();
    assert_eq!(verified.unverified()[0].name().as_str(), "CarmenSandiego");

    let other_id = PETER_SIG.replace("x08g", "xxxx");
    let parsed = Note::parse(&note(&[TEXT, "\n", &other_id])).unwrap();
    assert_eq!(
        parsed.verify(&trusted(&[PETER_VKEY])),
        Err(NoteError::NoKnownSignature)
    );
}

#[test]
fn accepts_the_maximum_number_of_signatures_and_refuses_one_more() {
    let many = PETER_SIG.repeat(MAX_SIGNATURES);
    let parsed = Note::parse(&note(&[TEXT, "\n", &many])).unwrap();
    assert_eq!(parsed.signatures().len(), MAX_SIGNATURES);
    assert!(parsed.verify(&trusted(&[PETER_VKEY])).is_ok());

    let too_many = PETER_SIG.repeat(MAX_SIGNATURES + 1);
    assert_eq!(
        Note::parse(&note(&[TEXT, "\n", &too_many])),
        Err(NoteError::TooManySignatures)
    );
}

#[test]
fn refuses_each_malformed_note_for_its_reason() {
    let bad_name = "\u{2014} Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=";
    let cases: Vec<(Vec<u8>, NoteError)> = vec![
        (note(&[TEXT]), NoteError::NoSignatureBlock),
        (note(&[TEXT, "\n"]), NoteError::NoSignatures),
        (
            note(&[TEXT, "\n", &PETER_SIG[..PETER_SIG.len() - 1]]),
            NoteError::UnterminatedSignatureLine,
        ),
        (
            note(&["\x01", TEXT, "\n", PETER_SIG]),
            NoteError::ControlCharacter,
        ),
        (
            note(&[TEXT, "\r\n", PETER_SIG]),
            NoteError::ControlCharacter,
        ),
        (
            [b"\xff".as_slice(), &note(&[TEXT, "\n", PETER_SIG])].concat(),
            NoteError::NotUtf8,
        ),
        (
            note(&[TEXT, "\n", bad_name]),
            NoteError::UnterminatedSignatureLine,
        ),
        (
            note(&[TEXT, "\n", bad_name, "\n"]),
            NoteError::MalformedSignatureLine { line: 1 },
        ),
        (
            note(&[TEXT, "\n", PETER_SIG, "Unexpected line.\n"]),
            NoteError::MalformedSignatureLine { line: 2 },
        ),
        // A hyphen is not the em dash; a short or non-canonical signature.
        (
            note(&[TEXT, "\n", &PETER_SIG.replace('\u{2014}', "-")]),
            NoteError::MalformedSignatureLine { line: 1 },
        ),
        (
            note(&[TEXT, "\n", "\u{2014} PeterNeumann x08gow==\n"]),
            NoteError::MalformedSignatureLine { line: 1 },
        ),
        (
            note(&[TEXT, "\n", &PETER_SIG.replace("AM=", "AN=")]),
            NoteError::MalformedSignatureLine { line: 1 },
        ),
        (
            note(&[
                TEXT,
                "\n",
                &PETER_SIG.replace("PeterNeumann", "Peter+Neumann"),
            ]),
            NoteError::MalformedSignatureLine { line: 1 },
        ),
    ];
    for (bytes, expected) in cases {
        assert_eq!(
            Note::parse(&bytes),
            Err(expected),
            "{:?}",
            String::from_utf8_lossy(&bytes)
        );
    }
}

#[test]
fn signing_refuses_text_that_is_not_note_text() {
    let signer: Ed25519Signer = PETER_SKEY.parse().unwrap();
    assert_eq!(
        sign_note("abc", &[&signer]),
        Err(NoteError::TextNotNewlineTerminated)
    );
    assert_eq!(
        sign_note("", &[&signer]),
        Err(NoteError::TextNotNewlineTerminated)
    );
    assert_eq!(
        sign_note("a\tb\n", &[&signer]),
        Err(NoteError::ControlCharacter)
    );
    assert_eq!(sign_note(TEXT, &[]), Err(NoteError::NoSigner));
}

#[test]
fn notes_with_blank_lines_in_the_text_round_trip() {
    let signer: Ed25519Signer = PETER_SKEY.parse().unwrap();
    for text in ["\n", "a\n\nb\n", "a\n\n\n", "\n\n"] {
        let signed = sign_note(text, &[&signer, &signer]).unwrap().to_string();
        let parsed = Note::parse(signed.as_bytes()).unwrap();
        assert_eq!(parsed.text(), text);
        let verified = parsed.verify(&trusted(&[PETER_VKEY])).unwrap();
        assert_eq!(verified.text(), text);
    }
}

#[test]
fn key_names_follow_the_spec() {
    for bad in [
        "",
        "a b",
        "a+b",
        "a\u{a0}b",
        "a\u{2003}b",
        "a\u{1}b",
        "a\nb",
    ] {
        assert_eq!(KeyName::new(bad), Err(KeyError::InvalidName), "{bad:?}");
    }
    for good in ["example.com/log", "oid/1.3.6.1.4.1", "\u{2014}x"] {
        assert!(KeyName::new(good).is_ok(), "{good:?}");
    }
    let signer: Ed25519Signer = PETER_SKEY.parse().unwrap();
    assert_eq!(signer.key_name(), &peter());
}
