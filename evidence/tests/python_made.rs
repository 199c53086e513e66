//! The Rust verifier against bundles nobody here made with Rust: those the
//! independent Python implementation (tests/evidence/synthetic.py, written
//! from docs/evidence.md) wrote into tests/vectors/evidence, a quorum's
//! two EdDSA approvers and a committed bundle included; then, fresh, every
//! tampered bundle tests/evidence/tamper.py makes of new ones, each refused
//! with the code the Python verifier gives it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use countersign_evidence::{Opening, Refused, Trust, Verified, verify};
use countersign_tlog::Policy;
use countersign_verifier::KeySet;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap()
}

fn check(
    dir: &Path,
    bundle: &str,
    pinned: bool,
    opening: Option<&Opening>,
) -> Result<Verified, Refused> {
    let policy = Policy::parse(&read(dir, "policy.txt")).unwrap();
    let keys = KeySet::parse(&read(dir, "keys.json")).unwrap();
    let trust = Trust {
        policy: &policy,
        keys: pinned.then_some(&keys),
    };
    verify(&read(dir, bundle), &trust, opening)
}

#[test]
fn every_committed_python_made_bundle_verifies() {
    let dir = root().join("tests/vectors/evidence");
    for bundle in ["bundle.json", "older.json", "other.json", "quorum.json"] {
        for pinned in [false, true] {
            let verified = check(&dir, bundle, pinned, None)
                .unwrap_or_else(|e| panic!("{bundle} (pinned {pinned}): {e}"));
            assert_eq!(verified.claims.len(), 19, "{bundle}");
        }
    }
    let quorum = check(&dir, "quorum.json", true, None).unwrap();
    assert!(
        quorum
            .claims
            .iter()
            .any(|(_, found)| found.contains("with 1 passkey assertion(s)")),
        "{quorum:?}"
    );
    let opening: Opening = serde_json::from_slice(&read(&dir, "salt.json")).unwrap();
    let revealed = check(&dir, "committed.json", true, Some(&opening)).unwrap();
    assert!(
        revealed
            .claims
            .iter()
            .any(|(_, found)| found.starts_with("arguments (revealed)"))
    );
    check(&dir, "committed.json", true, None).unwrap();
}

/// `python3 SCRIPT ARGS`, which must succeed.
fn python(script: &str, args: &[&Path]) {
    let out = Command::new("python3")
        .arg(root().join("tests/evidence").join(script))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn fresh_python_made_bundles_and_their_tampers_get_the_python_verifiers_verdicts() {
    // The Python verifier's own tests first: it must be right before it
    // judges the Rust one.
    python("test_verifier.py", &[]);
    let made = tempfile::tempdir().unwrap();
    python("synthetic.py", &[made.path()]);
    for bundle in ["bundle.json", "quorum.json"] {
        let tampered = made.path().join(format!("tampered-{bundle}"));
        python(
            "tamper.py",
            &[
                &made.path().join(bundle),
                &tampered,
                Path::new("--older"),
                &made.path().join("older.json"),
                Path::new("--other"),
                &made.path().join("other.json"),
            ],
        );
        let expected: BTreeMap<String, String> =
            serde_json::from_slice(&read(&tampered, "expected.json")).unwrap();
        assert!(expected.len() >= 15, "{expected:?}");
        std::fs::copy(made.path().join("policy.txt"), tampered.join("policy.txt")).unwrap();
        std::fs::copy(made.path().join("keys.json"), tampered.join("keys.json")).unwrap();
        for (file, code) in &expected {
            let refused = check(&tampered, file, false, None)
                .map(|_| "verified".to_owned())
                .unwrap_or_else(|e| e.check.code().to_owned());
            assert_eq!(&refused, code, "{bundle}: {file}");
        }
    }
}
