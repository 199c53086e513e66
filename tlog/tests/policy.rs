//! c2sp.org/tlog-policy (C2SP commit 5ba5ee830903e91240fc6f9f3a7a9293d49e69c9):
//! the spec's two-level example evaluated over every subset of cosigners,
//! each parse refusal for its own reason, and checkpoints judged against a
//! policy with real signatures.
#![allow(clippy::unwrap_used)]

#[path = "../../signer/src/note_keys.rs"]
#[allow(dead_code, unreachable_pub)]
mod note_keys;

use countersign_tlog::{
    Checkpoint, CheckpointError, Hash, KeyName, Note, Policy, PolicyCheckError, PolicyError,
    sign_note,
};
use note_keys::{Cosigner, Ed25519Signer};

const ORIGIN: &str = "example.com/log";

fn log_signer() -> Ed25519Signer {
    Ed25519Signer::from_seed(KeyName::new(ORIGIN).unwrap(), &[1; 32])
}

fn cosigner(n: u8) -> Cosigner {
    Cosigner::from_seed(
        KeyName::new(&format!("w{n}.example")).unwrap(),
        &[10 + n; 32],
    )
}

fn spec_example() -> String {
    let w = |n: u8| cosigner(n).verifier_key().to_string();
    format!(
        "# the example of c2sp.org/tlog-policy, keys filled in\n\
         log {log}\n\n\
         witness X1 {x1}\nwitness X2 {x2}\nwitness X3 {x3}\n\
         group X-witnesses 2 X1 X2 X3\n\n\
         \twitness Y1 {y1} https://y1.example/\nwitness Y2 {y2}\nwitness Y3 {y3}\n\
         group Y-witnesses any Y1 Y2 Y3\n\n\
         group X-and-Y all X-witnesses Y-witnesses\nquorum X-and-Y\n",
        log = log_signer().verifier_key(),
        x1 = w(1),
        x2 = w(2),
        x3 = w(3),
        y1 = w(4),
        y2 = w(5),
        y3 = w(6),
    )
}

#[test]
fn the_spec_example_holds_for_exactly_the_subsets_it_describes() {
    let policy = Policy::parse(spec_example().as_bytes()).unwrap();
    assert_eq!(policy.logs().len(), 1);
    assert_eq!(policy.witnesses().len(), 6);
    assert_eq!(
        policy.witnesses()[3].url.as_deref(),
        Some("https://y1.example/")
    );
    for subset in 0u32..64 {
        let cosigned: Vec<bool> = (0..6).map(|i| subset & (1 << i) != 0).collect();
        let x = cosigned[..3].iter().filter(|c| **c).count();
        let y = cosigned[3..].iter().filter(|c| **c).count();
        assert_eq!(
            policy.quorum_met(&cosigned),
            x >= 2 && y >= 1,
            "{cosigned:?}"
        );
    }
}

#[test]
fn quorum_none_needs_no_witness_and_a_single_witness_quorum_needs_it() {
    let log = log_signer().verifier_key();
    let none = Policy::parse(format!("log {log}\nquorum none\n").as_bytes()).unwrap();
    assert!(none.needs_no_cosignature());
    assert!(none.quorum_met(&[]));
    let one = Policy::parse(
        format!(
            "log {log}\nwitness W {}\nquorum W",
            cosigner(1).verifier_key()
        )
        .as_bytes(),
    )
    .unwrap();
    assert!(!one.quorum_met(&[false]));
    assert!(one.quorum_met(&[true]));
}

#[test]
fn each_malformed_policy_is_refused_for_its_reason() {
    let log = log_signer().verifier_key().to_string();
    let w1 = cosigner(1).verifier_key().to_string();
    let w2 = cosigner(2).verifier_key().to_string();
    // The same public key as w1 under another name.
    let w1_renamed = Cosigner::from_seed(KeyName::new("other").unwrap(), &[11; 32])
        .verifier_key()
        .to_string();
    let cases: Vec<(String, PolicyError)> = vec![
        (format!("log {log}\n"), PolicyError::NoQuorum),
        (
            "quorum none\nquorum none\n".into(),
            PolicyError::SecondQuorum { line: 2 },
        ),
        (
            "logs x\nquorum none".into(),
            PolicyError::UnknownKeyword {
                line: 1,
                keyword: "logs".into(),
            },
        ),
        (
            "log\nquorum none".into(),
            PolicyError::WrongArity {
                line: 1,
                keyword: "log",
                expected: "a vkey and an optional URL",
            },
        ),
        (
            format!("log {log}\rquorum none"),
            PolicyError::ControlCharacter { line: 1 },
        ),
        (
            format!("log {w1}\nquorum none"),
            PolicyError::WrongKeyType {
                line: 1,
                role: "log",
                expected: "0x01 (Ed25519)",
            },
        ),
        (
            format!("witness W {log}\nquorum none"),
            PolicyError::WrongKeyType {
                line: 1,
                role: "witness",
                expected: "0x04 (cosignature/v1)",
            },
        ),
        (
            format!("log {log}\nlog {log} https://x/\nquorum none"),
            PolicyError::DuplicateKey {
                line: 2,
                role: "log",
            },
        ),
        (
            format!("witness A {w1}\nwitness B {w1_renamed}\nquorum A"),
            PolicyError::DuplicateKey {
                line: 2,
                role: "witness",
            },
        ),
        (
            format!("witness A {w1}\nwitness A {w2}\nquorum A"),
            PolicyError::DuplicateName {
                line: 2,
                name: "A".into(),
            },
        ),
        (
            format!("witness none {w1}\nquorum none"),
            PolicyError::DuplicateName {
                line: 1,
                name: "none".into(),
            },
        ),
        (
            format!("quorum A\nwitness A {w1}"),
            PolicyError::UndefinedName {
                line: 1,
                name: "A".into(),
            },
        ),
        (
            format!("witness A {w1}\ngroup G any A B\nwitness B {w2}\nquorum G"),
            PolicyError::UndefinedName {
                line: 2,
                name: "B".into(),
            },
        ),
        (
            format!("witness A {w1}\ngroup G any A none\nquorum G"),
            PolicyError::NoneAsMember { line: 2 },
        ),
        (
            format!("witness A {w1}\ngroup G any A A\nquorum G"),
            PolicyError::RepeatedMember {
                line: 2,
                name: "A".into(),
            },
        ),
        (
            format!("witness A {w1}\nwitness B {w2}\ngroup G 3 A B\nquorum G"),
            PolicyError::BadThreshold {
                line: 3,
                members: 2,
            },
        ),
        (
            format!("witness A {w1}\ngroup G 0 A\nquorum G"),
            PolicyError::BadThreshold {
                line: 2,
                members: 1,
            },
        ),
        (
            format!("witness A {w1}\ngroup G 01 A\nquorum G"),
            PolicyError::BadThreshold {
                line: 2,
                members: 1,
            },
        ),
        (
            format!("witness A {w1}\ngroup G any\nquorum G"),
            PolicyError::WrongArity {
                line: 2,
                keyword: "group",
                expected: "a name, a threshold and members",
            },
        ),
        (
            format!("witness A {w1}\ngroup A any A\nquorum A"),
            PolicyError::DuplicateName {
                line: 2,
                name: "A".into(),
            },
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(Policy::parse(text.as_bytes()), Err(expected), "{text:?}");
    }
    assert_eq!(
        Policy::parse(b"quorum none\n# \xff\n"),
        Err(PolicyError::NotUtf8)
    );
    let bad_key = "log example.com/log+00000000+AQ==\nquorum none";
    assert!(matches!(
        Policy::parse(bad_key.as_bytes()),
        Err(PolicyError::Key { line: 1, .. })
    ));
}

fn signed_checkpoint(origin: &str, size: u64, cosigners: &[&Cosigner]) -> Note {
    let checkpoint = Checkpoint::new(origin, size, Hash([7; 32])).unwrap();
    let mut note = sign_note(&checkpoint.to_string(), &[&log_signer()]).unwrap();
    for cosigner in cosigners {
        note.push_signature(cosigner.cosign(&checkpoint, 1_700_000_000).unwrap())
            .unwrap();
    }
    note
}

#[test]
fn a_checkpoint_is_accepted_only_with_its_log_and_quorum() {
    let policy = Policy::parse(spec_example().as_bytes()).unwrap();
    let (x1, x2, y1) = (cosigner(1), cosigner(2), cosigner(4));
    let good = signed_checkpoint(ORIGIN, 5, &[&x1, &x2, &y1]);
    let verified = policy.verify_checkpoint(&good).unwrap();
    assert_eq!(verified.checkpoint().size(), 5);
    assert_eq!(verified.witness_signatures().count(), 3);

    let short = signed_checkpoint(ORIGIN, 5, &[&x1, &y1]);
    assert_eq!(
        policy.verify_checkpoint(&short),
        Err(PolicyCheckError::QuorumNotMet {
            quorum: "X-and-Y".into(),
            cosigned: vec!["X1".into(), "Y1".into()],
        })
    );

    // A cosignature from a key outside the policy counts for nothing.
    let stranger = Cosigner::from_seed(KeyName::new("stranger").unwrap(), &[99; 32]);
    let padded = signed_checkpoint(ORIGIN, 5, &[&x1, &stranger, &y1]);
    assert!(matches!(
        policy.verify_checkpoint(&padded),
        Err(PolicyCheckError::QuorumNotMet { .. })
    ));

    let elsewhere = signed_checkpoint("example.com/other-log", 5, &[&x1, &x2, &y1]);
    assert_eq!(
        policy.verify_checkpoint(&elsewhere),
        Err(PolicyCheckError::UnknownLog("example.com/other-log".into()))
    );

    // A cosignature over another checkpoint, moved onto this one.
    let other = Checkpoint::new(ORIGIN, 6, Hash([7; 32])).unwrap();
    let mut moved = signed_checkpoint(ORIGIN, 5, &[&x1, &y1]);
    moved
        .push_signature(x2.cosign(&other, 1_700_000_000).unwrap())
        .unwrap();
    assert!(matches!(
        policy.verify_checkpoint(&moved),
        Err(PolicyCheckError::Checkpoint(CheckpointError::Note(_)))
    ));
}

#[test]
fn a_log_that_rotated_its_key_is_accepted_under_either_key() {
    let old = log_signer();
    let new = Ed25519Signer::from_seed(KeyName::new(ORIGIN).unwrap(), &[2; 32]);
    let policy = Policy::parse(
        format!(
            "log {}\nlog {}\nquorum none\n",
            old.verifier_key(),
            new.verifier_key()
        )
        .as_bytes(),
    )
    .unwrap();
    assert_eq!(policy.logs_of(ORIGIN).count(), 2);
    let checkpoint = Checkpoint::new(ORIGIN, 9, Hash([7; 32])).unwrap();
    for signer in [&old, &new] {
        let note = sign_note(&checkpoint.to_string(), &[signer]).unwrap();
        assert_eq!(
            policy.verify_checkpoint(&note).unwrap().checkpoint().size(),
            9
        );
    }
    // A key of the same origin the policy does not list: refused.
    let stranger = Ed25519Signer::from_seed(KeyName::new(ORIGIN).unwrap(), &[3; 32]);
    let note = sign_note(&checkpoint.to_string(), &[&stranger]).unwrap();
    assert!(matches!(
        policy.verify_checkpoint(&note),
        Err(PolicyCheckError::Checkpoint(
            CheckpointError::NotSignedByLog
        ))
    ));
}
