//! `countersign evidence export` and `evidence verify` against a real
//! installation (a signer with passkeys, the `countersign` binary, a real
//! witness, aics-witness from PyPI, cosigning the log), checked by the
//! Rust verifier and by the independent Python verifier
//! (tests/evidence/verify_evidence.py, written from docs/evidence.md with
//! pyseto and the cryptography package): a passkey-approved action's
//! bundle verifies in both; every tampered bundle tests/evidence/tamper.py
//! makes from it is refused by both, each with its own code; a committed
//! bundle verifies with and without its opening; and export refuses a
//! proposal that was not applied, and the signer a proof that is not spent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use countersign_identity::Role;
use countersign_integration_tests::bin;
use countersign_proto::v1::{
    BeginDecisionRequest, DecideRequest, Delivery, ProposeRequest, PublicKeysRequest,
    SpentProofRequest,
};
use countersign_registry::Registry;
use countersign_signer::testing::TestSigner;
use countersign_tlog::VerifierKey;
use countersign_webauthn::testing::SoftAuthenticator;
use countersign_witness::testing::AicsWitness;

mod support;

use serde_json::Value;
use support::passkeys::{enrol, named, wire};

/// Past the proofs' lifetime (`lifetime_secs = 4` below): a bundle holds
/// only an expired proof.
const PAST_EXPIRY: Duration = Duration::from_millis(4_100);

const ORIGIN: &str = "https://console.localhost:7444";
const PASSKEYS: &str =
    "[passkeys]\nrequired = true\norigins = [\"https://console.localhost:7444\"]\n";

fn countersign(home: &Path, args: &[&str]) -> Output {
    Command::new(bin("countersign"))
        .arg("--home")
        .arg(home)
        .args(args)
        .env_remove("COUNTERSIGN_HOME")
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The Python interpreter with the tests' requirements (scripts/test
/// installs them for the system's python3).
fn python(script: &str, args: &[&Path]) -> Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../evidence");
    Command::new("python3")
        .arg(root.join(script))
        .args(args)
        .output()
        .unwrap()
}

/// What a verifier said: `Ok(lines)` on success, `Err(code)` on a refusal.
fn verdict(out: &Output) -> Result<usize, String> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    match out.status.code() {
        Some(0) => Ok(stdout.lines().filter(|l| l.starts_with("ok ")).count()),
        Some(1 | 3) => {
            let line = stdout
                .lines()
                .find_map(|l| l.strip_prefix("refused: "))
                .unwrap_or_else(|| panic!("no refusal line: {}", text(out)));
            Err(line.split(':').next().unwrap().to_owned())
        }
        _ => panic!("the verifier failed: {}", text(out)),
    }
}

fn rust_verify(bundle: &Path, trust: &Path, extra: &[&str]) -> Output {
    Command::new(bin("countersign"))
        .args(["evidence", "verify"])
        .arg(bundle)
        .arg("--trust")
        .arg(trust)
        .args(extra)
        .env_remove("COUNTERSIGN_HOME")
        .output()
        .unwrap()
}

fn python_verify(bundle: &Path, trust: &Path, extra: &[&Path]) -> Output {
    let mut args = vec![bundle, Path::new("--trust"), trust];
    args.extend_from_slice(extra);
    python("verify_evidence.py", &args)
}

/// A `schedule.create` of `name` proposed in session `s1`; its id.
async fn proposed(signer: &TestSigner, name: &str) -> String {
    signer
        .client(Role::Head)
        .await
        .unwrap()
        .propose(ProposeRequest {
            operation: "schedule.create".into(),
            arguments_json: format!(r#"{{"name":"{name}","cron":"0 3 * * *"}}"#),
            session: "s1".into(),
            head: "cli".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .id
}

/// `proof` of `pid` run with `countersign exec` in session `s1`.
fn applied(signer: &TestSigner, pid: &str, proof: &str, scratch: &Path) {
    let file = scratch.join(format!("{pid}.proof"));
    std::fs::write(&file, proof).unwrap();
    let path = file.to_str().unwrap();
    let args = ["exec", pid, "--session", "s1", "--proof-file", path];
    let out = countersign(signer.home().root(), &args);
    assert!(out.status.success(), "{}", text(&out));
}

/// One passkey-approved `schedule.create` of `name` in session `s1`,
/// delivered directly: its id and proof.
async fn approved(
    signer: &TestSigner,
    key: &mut SoftAuthenticator,
    name: &str,
) -> (String, String) {
    let mut approver = signer.client(Role::Approver).await.unwrap();
    let pid = proposed(signer, name).await;
    let c = approver
        .begin_decision(BeginDecisionRequest {
            proposal_id: pid.clone(),
            delivery: Delivery::Direct.into(),
            execute_in_session: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    let a = key.assert(&c.challenge);
    let proof = approver
        .decide(DecideRequest {
            proposal_id: pid.clone(),
            approve: true,
            delivery: Delivery::Direct.into(),
            passkey: Some(wire(c.challenge_id, a)),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .proof;
    (pid, proof)
}

/// [`approved`], then applied with `countersign exec`; its id.
async fn approved_and_applied(
    signer: &TestSigner,
    key: &mut SoftAuthenticator,
    name: &str,
    scratch: &Path,
) -> String {
    let (pid, proof) = approved(signer, key, name).await;
    applied(signer, &pid, &proof, scratch);
    pid
}

/// `countersign witness serve` until the witness cosigned a checkpoint
/// of at least `size`... of every leaf sequenced now.
fn wait_for_cosigned(home: &Path) {
    let mut status = Value::Null;
    for _ in 0..300 {
        let out = countersign(home, &["--json", "witness", "status"]);
        assert!(out.status.success(), "{}", text(&out));
        status = serde_json::from_slice(&out.stdout).unwrap();
        if !status["latest_cosigned"].is_null()
            && status["latest_cosigned"] == status["latest_checkpoint"]
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the witness did not cosign the latest checkpoint: {status}");
}

/// Restarts the signer (it signs a checkpoint as it stops and as it
/// starts) and points the home's configuration at its new port.
async fn restart(signer: TestSigner) -> TestSigner {
    let old = signer.addr();
    let signer = signer.restart().await.unwrap();
    point_home_at(&signer, old);
    signer
}

/// Points `signer`'s home configuration at `signer`'s own address, in
/// place of `from` (a home copied from another signer's names that one).
fn point_home_at(signer: &TestSigner, from: std::net::SocketAddr) {
    let config = signer.home().root().join("config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let moved = text.replacen(
        &format!("addr = \"{from}\""),
        &format!("addr = \"{}\"", signer.addr()),
        1,
    );
    assert_ne!(moved, text);
    std::fs::write(&config, moved).unwrap();
}

/// `countersign evidence export ID --output BUNDLE`, which must succeed.
fn exported(home: &Path, id: &str, bundle: &Path) {
    let path = bundle.to_str().unwrap();
    let out = countersign(home, &["evidence", "export", id, "--output", path]);
    assert!(out.status.success(), "{}", text(&out));
}

/// A trust policy of the signer's log alone (`quorum none`), in `dir`.
async fn log_alone(signer: &TestSigner, dir: &Path) -> PathBuf {
    let log_key = signer
        .client(Role::Head)
        .await
        .unwrap()
        .public_keys(PublicKeysRequest {})
        .await
        .unwrap()
        .into_inner()
        .log_key;
    let path = dir.join("log-alone.txt");
    std::fs::write(&path, format!("log {log_key}\nquorum none\n")).unwrap();
    path
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_passkey_approved_actions_bundle_verifies_in_both_verifiers_and_each_tamper_is_refused() {
    let registry = Registry::default_toml().replacen(
        "preview = \"Create schedule",
        "lifetime_secs = 4\npreview = \"Create schedule",
        1,
    );
    let mut signer = TestSigner::start_configured(&registry, None, PASSKEYS)
        .await
        .unwrap();
    let home = signer.home().root().to_path_buf();
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();

    // The log's key, the witness trusting it, the policy and [tlog].
    let mut head = signer.client(Role::Head).await.unwrap();
    let log_key: VerifierKey = head
        .public_keys(PublicKeysRequest {})
        .await
        .unwrap()
        .into_inner()
        .log_key
        .parse()
        .unwrap();
    let Some(witness) = AicsWitness::start("witness.test/evidence", &log_key) else {
        return;
    };
    let policy = format!(
        "log {log_key}\nwitness w1 {} {}\nquorum w1\n",
        witness.key, witness.url
    );
    let trust = dir.join("policy.txt");
    std::fs::write(&trust, &policy).unwrap();
    std::fs::write(home.join("tlog-policy"), &policy).unwrap();
    let config = home.join("config.toml");
    let mut text_config = std::fs::read_to_string(&config).unwrap();
    text_config.push_str("\n[tlog]\npolicy = \"tlog-policy\"\npoll_ms = 100\n");
    std::fs::write(&config, text_config).unwrap();
    let _witnessing = Killed(
        Command::new(bin("countersign"))
            .arg("--home")
            .arg(&home)
            .args(["witness", "serve"])
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );

    // A passkey, enrolled with a one-time code.
    let mut key = SoftAuthenticator::new(7, "console.localhost", ORIGIN);
    let mut approver = signer.client(Role::Approver).await.unwrap();
    enrol(&signer, &mut approver, &key, None, "laptop").await;

    // Before anything is applied, nothing exports and no proof is handed over.
    let pending = proposed(&signer, "waiting").await;
    let out = countersign(&home, &["evidence", "export", &pending]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!(
            "proposal {pending} is pending: a bundle is of an applied or failed action"
        )),
        "{}",
        text(&out)
    );

    // Two actions, each applied and then in a cosigned checkpoint.
    let first = approved_and_applied(&signer, &mut key, "first", dir).await;
    signer = restart(signer).await;
    wait_for_cosigned(&home);
    tokio::time::sleep(PAST_EXPIRY).await;
    let older = dir.join("first.json");
    exported(&home, &first, &older);

    let second = approved_and_applied(&signer, &mut key, "second", dir).await;
    let mut head = signer.client(Role::Head).await.unwrap();
    // The proof of an approval not yet consumed is handed to no one.
    let (unspent, _) = approved(&signer, &mut key, "unspent").await;
    for id in [&unspent, &pending] {
        let refused = head
            .spent_proof(SpentProofRequest {
                proposal_id: id.to_string(),
            })
            .await
            .unwrap_err();
        assert_eq!(
            refused.metadata().get("countersign-reason").unwrap(),
            "proof_not_spent"
        );
    }

    signer = restart(signer).await;
    wait_for_cosigned(&home);
    tokio::time::sleep(PAST_EXPIRY).await;
    let bundle = dir.join("second.json");
    exported(&home, &second, &bundle);
    let keys = dir.join("keys.json");
    let out = countersign(&home, &["keys", "export", "--out", keys.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let written: Value = serde_json::from_slice(&std::fs::read(&bundle).unwrap()).unwrap();
    assert_eq!(written["format"], "countersign-evidence/v1");
    assert_eq!(
        written["decision"]["assertions"].as_array().unwrap().len(),
        1
    );
    assert!(written["proof"].as_str().unwrap().starts_with("v4.public."));

    // Both verifiers accept it, with the key set pinned or not.
    let out = rust_verify(&bundle, &trust, &[]);
    assert_eq!(verdict(&out), Ok(19), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("not pinned: pass --keys"), "{stdout}");
    assert!(stdout.contains("cosigned by w1"), "{stdout}");
    let out = rust_verify(&bundle, &trust, &["--keys", keys.to_str().unwrap()]);
    assert_eq!(verdict(&out), Ok(19), "{}", text(&out));
    let out = python_verify(&bundle, &trust, &[]);
    assert_eq!(verdict(&out), Ok(19), "{}", text(&out));
    let out = python_verify(&bundle, &trust, &[Path::new("--keys"), &keys]);
    assert_eq!(verdict(&out), Ok(19), "{}", text(&out));
    // The older bundle too.
    assert_eq!(verdict(&rust_verify(&older, &trust, &[])), Ok(19));
    assert_eq!(verdict(&python_verify(&older, &trust, &[])), Ok(19));

    // Every tamper, refused by both for its own reason.
    let tampered = dir.join("tampered");
    let out = python(
        "tamper.py",
        &[
            &bundle,
            &tampered,
            Path::new("--older"),
            &older,
            Path::new("--other"),
            &older,
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let expected: BTreeMap<String, String> =
        serde_json::from_slice(&std::fs::read(tampered.join("expected.json")).unwrap()).unwrap();
    eprintln!("tampered bundles: {expected:?}");
    // Every claim a tamper can reach without a signing key is attacked.
    for code in [
        "format",
        "checkpoint",
        "checkpoint_signature",
        "witness_quorum",
        "event_hash",
        "not_in_checkpoint",
        "inclusion",
        "missing_event",
        "proposal",
        "arguments",
        "contract",
        "assertion_event",
        "credential",
        "assertion_challenge",
        "assertion_signature",
        "proof_hash",
        "proof_signature",
        "consumption",
    ] {
        assert!(
            expected.values().any(|c| c == code),
            "no tamper refused as {code}: {expected:?}"
        );
    }
    for (file, code) in &expected {
        let path: PathBuf = tampered.join(file);
        let rust = verdict(&rust_verify(&path, &trust, &[]));
        let py = verdict(&python_verify(&path, &trust, &[]));
        assert_eq!(rust, Err(code.clone()), "Rust on {file}");
        assert_eq!(py, Err(code.clone()), "Python on {file}");
    }

    // With its arguments committed: no arguments, no proof; the opening
    // reveals them, and a wrong one is refused.
    let committed = dir.join("committed.json");
    let salt = dir.join("salt.json");
    let out = countersign(
        &home,
        &[
            "evidence",
            "export",
            &second,
            "--output",
            committed.to_str().unwrap(),
            "--commit-arguments",
            salt.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let written: Value = serde_json::from_slice(&std::fs::read(&committed).unwrap()).unwrap();
    assert!(written["proof"].is_null());
    assert!(written["proposal"].get("arguments").is_none());
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(
        std::fs::metadata(&salt).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let reveal = ["--reveal", salt.to_str().unwrap()];
    let out = rust_verify(&committed, &trust, &[]);
    assert_eq!(verdict(&out), Ok(19), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("committed, not revealed"));
    let out = rust_verify(&committed, &trust, &reveal);
    assert_eq!(verdict(&out), Ok(19), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains(r#""name":"second""#));
    let out = python_verify(&committed, &trust, &[Path::new("--reveal"), &salt]);
    assert_eq!(verdict(&out), Ok(19), "{}", text(&out));
    let mut opening: Value = serde_json::from_slice(&std::fs::read(&salt).unwrap()).unwrap();
    opening["arguments"] = r#"{"cron":"0 3 * * *","name":"other"}"#.into();
    let wrong = dir.join("wrong-salt.json");
    std::fs::write(&wrong, opening.to_string()).unwrap();
    let wrong_reveal = ["--reveal", wrong.to_str().unwrap()];
    assert_eq!(
        verdict(&rust_verify(&committed, &trust, &wrong_reveal)),
        Err("arguments".into())
    );
    assert_eq!(
        verdict(&python_verify(
            &committed,
            &trust,
            &[Path::new("--reveal"), &wrong]
        )),
        Err("arguments".into())
    );

    // An existing file is never replaced, and then nothing is written.
    let unwritten = dir.join("unwritten-salt.json");
    let out = countersign(
        &home,
        &[
            "evidence",
            "export",
            &second,
            "--output",
            bundle.to_str().unwrap(),
            "--commit-arguments",
            unwritten.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "countersign: {} exists: an evidence export never replaces a file\n",
            bundle.display()
        )
    );
    assert!(!unwritten.exists());
    drop(witness);
    signer.stop().await.unwrap();
}

/// Without passkeys and without witnesses (a development installation):
/// export refuses until a signed checkpoint covers the action, then its
/// bundle verifies under a policy of the log alone (`quorum none`), says
/// the approval is the log's word only, and is refused under a policy that
/// wants a witness.
#[tokio::test(flavor = "multi_thread")]
async fn without_passkeys_or_witnesses_a_bundle_is_the_logs_word_and_says_so() {
    let registry = Registry::default_toml().replacen(
        "preview = \"Create schedule",
        "lifetime_secs = 4\npreview = \"Create schedule",
        1,
    );
    let signer = TestSigner::start_with_registry(&registry).await.unwrap();
    let home = signer.home().root().to_path_buf();
    let dir = tempfile::tempdir().unwrap();
    let mut head = signer.client(Role::Head).await.unwrap();
    let log_key = head
        .public_keys(PublicKeysRequest {})
        .await
        .unwrap()
        .into_inner()
        .log_key;
    let pid = proposed(&signer, "plain").await;
    let proof = signer
        .client(Role::Approver)
        .await
        .unwrap()
        .decide(DecideRequest {
            proposal_id: pid.clone(),
            approve: true,
            delivery: Delivery::Direct.into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .proof;
    applied(&signer, &pid, &proof, dir.path());
    tokio::time::sleep(PAST_EXPIRY).await;

    // No checkpoint yet: the signer signs none of an empty log at start.
    let out = countersign(&home, &["evidence", "export", &pid]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        said,
        "countersign: refused: the log has no signed checkpoint yet: the signer signs one every minute\n"
    );

    // A proposal this installation does not hold (another principal's on
    // a shared ledger reads the same): refused, nothing written.
    let unknown = "prop_00000000000000000000000000000000";
    let out = countersign(&home, &["evidence", "export", unknown]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("countersign: refused: no proposal {unknown} of this principal\n")
    );

    let signer = restart(signer).await;
    let bundle = dir.path().join("plain.json");
    exported(&home, &pid, &bundle);
    let alone = log_alone(&signer, dir.path()).await;
    for out in [
        rust_verify(&bundle, &alone, &[]),
        python_verify(&bundle, &alone, &[]),
    ] {
        assert_eq!(verdict(&out), Ok(19), "{}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("without a passkey") || stdout.contains("log's word only"),
            "{stdout}"
        );
    }
    // A policy that wants a witness refuses it.
    let witness = VerifierKey::new(
        countersign_tlog::KeyName::new("w.example").unwrap(),
        countersign_tlog::SignatureType::CosignatureV1,
        ed25519_dalek::SigningKey::from_bytes(&[7; 32]).verifying_key(),
    );
    let wanting = dir.path().join("wanting.txt");
    std::fs::write(
        &wanting,
        format!("log {log_key}\nwitness w1 {witness}\nquorum w1\n"),
    )
    .unwrap();
    assert_eq!(
        verdict(&rust_verify(&bundle, &wanting, &[])),
        Err("witness_quorum".into())
    );
    assert_eq!(
        verdict(&python_verify(&bundle, &wanting, &[])),
        Err("witness_quorum".into())
    );
    signer.stop().await.unwrap();
}

/// A quorum's bundle: two named approvers each approve with a passkey of
/// their own, for the proposing session; the bundle carries every
/// approver's assertion (the last one's also as the approval's own), and
/// both verifiers accept it.
#[tokio::test(flavor = "multi_thread")]
async fn a_quorums_bundle_carries_every_approvers_assertion_and_verifies_in_both() {
    let registry = Registry::default_toml().replacen(
        "[[operation]]\nname = \"schedule.create\"",
        "[[operation]]\nname = \"schedule.create\"\nlifetime_secs = 4\n\
         quorum = { required = 2, approvers = [\"alice\", \"bob\"] }",
        1,
    );
    let signer = TestSigner::start_configured(&registry, None, PASSKEYS)
        .await
        .unwrap();
    let home = signer.home().root().to_path_buf();
    let dir = tempfile::tempdir().unwrap();
    let pid = proposed(&signer, "quorum").await;
    for (seed, name) in [(4, "alice"), (5, "bob")] {
        let mut client = named(&signer, name).await;
        let mut key = SoftAuthenticator::new(seed, "console.localhost", ORIGIN);
        enrol(&signer, &mut client, &key, Some(name), name).await;
        let c = client
            .begin_decision(BeginDecisionRequest {
                proposal_id: pid.clone(),
                delivery: Delivery::Handoff.into(),
                execute_in_session: String::new(),
            })
            .await
            .unwrap()
            .into_inner();
        client
            .decide(DecideRequest {
                proposal_id: pid.clone(),
                approve: true,
                delivery: Delivery::Handoff.into(),
                passkey: Some(wire(c.challenge_id, key.assert(&c.challenge))),
                ..Default::default()
            })
            .await
            .unwrap();
    }
    let out = countersign(&home, &["exec", &pid, "--handoff", "--session", "s1"]);
    assert!(out.status.success(), "{}", text(&out));
    let signer = restart(signer).await;
    tokio::time::sleep(PAST_EXPIRY).await;
    let bundle = dir.path().join("quorum.json");
    exported(&home, &pid, &bundle);
    let written: Value = serde_json::from_slice(&std::fs::read(&bundle).unwrap()).unwrap();
    let approvers: Vec<&Value> = written["decision"]["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["approver"])
        .collect();
    let principal = signer.principal();
    assert_eq!(
        approvers,
        [
            &Value::Null,
            &Value::from(format!("{principal}/alice")),
            &Value::from(format!("{principal}/bob")),
        ]
    );
    let alone = log_alone(&signer, dir.path()).await;
    for out in [
        rust_verify(&bundle, &alone, &[]),
        python_verify(&bundle, &alone, &[]),
    ] {
        assert_eq!(verdict(&out), Ok(19), "{}", text(&out));
    }
    let stdout = String::from_utf8_lossy(&rust_verify(&bundle, &alone, &[]).stdout).into_owned();
    assert!(
        stdout.contains(&format!(
            "approved (human:quorum:{principal}/alice,{principal}/bob) with 3 passkey assertion(s)"
        )),
        "{stdout}"
    );
    signer.stop().await.unwrap();
}

/// Two signers of one PostgreSQL ledger, each with its own key: a handoff
/// approval A issued and held when it stopped is signed again by B, applied
/// with B's proof, and exported through B. Both verifiers accept the
/// bundle through its `proof_resigned` event, and refuse it as
/// `proof_hash` without that event.
#[tokio::test(flavor = "multi_thread")]
async fn a_handoff_signed_again_by_the_other_signer_has_a_bundle_both_verifiers_accept() {
    let registry = Registry::default_toml().replacen(
        "preview = \"Create schedule",
        "lifetime_secs = 4\npreview = \"Create schedule",
        1,
    );
    let db = countersign_ledger::testing::TempPgDatabase::create()
        .await
        .unwrap();
    let mut a = TestSigner::start_with(&registry, Some(db.url()))
        .await
        .unwrap();
    let b = a.on_another_host().await.unwrap();
    point_home_at(&b, a.addr());
    let dir = tempfile::tempdir().unwrap();
    let pid = proposed(&a, "resigned").await;
    let decided = a
        .client(Role::Approver)
        .await
        .unwrap()
        .decide(DecideRequest {
            proposal_id: pid.clone(),
            approve: true,
            delivery: Delivery::Handoff.into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    a.halt().await.unwrap();
    let claimed = b
        .client(Role::Head)
        .await
        .unwrap()
        .claim_handoff(countersign_proto::v1::ClaimHandoffRequest {
            proposal_id: pid.clone(),
            session: "s1".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_ne!(claimed.proof_sha256, decided.proof_sha256);
    applied(&b, &pid, &claimed.proof, dir.path());
    tokio::time::sleep(PAST_EXPIRY).await;
    let b = restart(b).await;

    let home = b.home().root().to_path_buf();
    let bundle = dir.path().join("resigned.json");
    exported(&home, &pid, &bundle);
    let alone = log_alone(&b, dir.path()).await;
    for out in [
        rust_verify(&bundle, &alone, &[]),
        python_verify(&bundle, &alone, &[]),
    ] {
        assert!(verdict(&out).is_ok(), "{}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("signed again by key"), "{stdout}");
    }
    // Without the event that records it, the proof is not the approved one.
    let mut value: Value = serde_json::from_slice(&std::fs::read(&bundle).unwrap()).unwrap();
    let events = value["events"].as_array_mut().unwrap();
    let before = events.len();
    events.retain(|e| e["kind"] != "proof_resigned");
    assert_eq!(events.len(), before - 1);
    let without = dir.path().join("without.json");
    std::fs::write(&without, serde_json::to_vec(&value).unwrap()).unwrap();
    assert_eq!(
        verdict(&rust_verify(&without, &alone, &[])),
        Err("proof_hash".into())
    );
    assert_eq!(
        verdict(&python_verify(&without, &alone, &[])),
        Err("proof_hash".into())
    );
    b.stop().await.unwrap();
}
