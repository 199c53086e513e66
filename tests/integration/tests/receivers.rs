//! Verification anywhere: a real signer issues proofs, `keys export` writes
//! the key set, and three independent checkers (the Python receiver with
//! pyseto, the TypeScript receiver with the `paseto` npm package, and
//! `countersign verify`) give the same verdict on a real proof, a tampered
//! one, an expired one, a wrong-audience expectation and a replay, and on a
//! proof carrying passkey assurance (`amr`, `pkh`), which each shows.
//!
//! Requires `python3` with pyseto (tests/requirements.txt) and `node` with
//! `npm ci --prefix tests/receivers/typescript` (scripts/test does both);
//! without them this test FAILS rather than skipping.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_registry::Registry;
use countersign_verifier::canonical::{parse, sha256_hex, to_canonical};
use countersign_verifier::paseto::{assemble, signing_input};
use countersign_verifier::{KeySet, KeyStatus, PublishedKey};
use ed25519_dalek::{Signer as _, SigningKey};
use serde_json::{Map, Value, json};
use support::{CREATE_NIGHTLY, Harness, Person};

/// The repository root (this crate is tests/integration).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// What a receiver is told to expect, besides the key set.
#[derive(Clone, Copy)]
struct Expect<'a> {
    audience: &'a str,
    operation: &'a str,
    arguments: &'a Path,
}

/// One receiver: a program and the arguments before the common ones.
struct Receiver {
    name: &'static str,
    program: &'static str,
    script: PathBuf,
    nonces: PathBuf,
}

impl Receiver {
    fn python(scratch: &Path) -> Self {
        Self {
            name: "python",
            program: "python3",
            script: repo().join("tests/receivers/python/receiver.py"),
            nonces: scratch.join("python-nonces.sqlite"),
        }
    }

    fn typescript(scratch: &Path) -> Self {
        let script = repo().join("tests/receivers/typescript/receiver.mjs");
        assert!(
            repo()
                .join("tests/receivers/typescript/node_modules/paseto")
                .exists(),
            "run `npm ci --prefix tests/receivers/typescript` first (scripts/test does)"
        );
        Self {
            name: "typescript",
            program: "node",
            script,
            nonces: scratch.join("typescript-nonces"),
        }
    }

    /// The receiver's verdict on `proof` (given on stdin): `Ok(())` or the reason.
    fn verdict(&self, keys: &Path, proof: &str, expect: &Expect<'_>) -> Result<(), String> {
        self.verdict_doc(keys, proof, expect).map(|_| ())
    }

    /// The receiver's verdict on `proof`: its JSON document when it
    /// accepts, or the reason.
    fn verdict_doc(&self, keys: &Path, proof: &str, expect: &Expect<'_>) -> Result<Value, String> {
        let mut child = Command::new(self.program)
            .arg(&self.script)
            .args(["--keys", keys.to_str().unwrap()])
            .args(["--audience", expect.audience])
            .args(["--operation", expect.operation])
            .args(["--arguments", expect.arguments.to_str().unwrap()])
            .args(["--nonces", self.nonces.to_str().unwrap()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {} ({e})", self.program));
        child
            .stdin
            .take()
            .unwrap()
            .write_all(proof.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(
            !stdout.contains(proof.trim()) && !stderr.contains(proof.trim()),
            "{} printed the proof",
            self.name
        );
        let verdict: Value = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("{}: not JSON ({e}): {stdout} {stderr}", self.name));
        match (out.status.code(), verdict["ok"].as_bool()) {
            (Some(0), Some(true)) => Ok(verdict),
            (Some(3), Some(false)) => Err(verdict["reason"].as_str().unwrap().to_string()),
            other => panic!("{}: unexpected {other:?}: {stdout} {stderr}", self.name),
        }
    }
}

/// `countersign verify`'s verdict, proof on stdin.
async fn cli_verdict(
    h: &Harness,
    keys: &Path,
    proof: &str,
    expect: &Expect<'_>,
) -> Result<(), String> {
    cli_verdict_doc(h, keys, proof, expect).await.map(|_| ())
}

/// `countersign verify`'s verdict: its JSON document (with the claims)
/// when it accepts, or the reason.
async fn cli_verdict_doc(
    h: &Harness,
    keys: &Path,
    proof: &str,
    expect: &Expect<'_>,
) -> Result<Value, String> {
    let run = h
        .cli_with(
            &[
                "--json",
                "verify",
                "--proof-file",
                "-",
                "--keys",
                keys.to_str().unwrap(),
                "--audience",
                expect.audience,
                "--operation",
                expect.operation,
            ],
            proof,
            Person::NoTerminal,
        )
        .await;
    assert!(!run.stdout.contains(proof.trim()) && !run.stderr.contains(proof.trim()));
    let doc = run.json();
    match &run.result {
        Ok(()) => {
            assert_eq!(doc["ok"], true);
            assert_eq!(doc["claims"]["op"], expect.operation, "{doc}");
            Ok(doc)
        }
        Err(e) => {
            assert_eq!(e.exit_code(), countersign::exit::REFUSED, "{e}");
            Err(doc["reason"].as_str().unwrap().to_string())
        }
    }
}

/// `proof` with one byte of its signed payload flipped, signature kept.
fn tampered(proof: &str) -> String {
    let (payload, sig, footer) = support::forge::split(proof);
    let mut payload = payload;
    payload[10] ^= 0x01;
    let mut body = payload;
    body.extend_from_slice(&sig);
    format!(
        "v4.public.{}.{}",
        URL_SAFE_NO_PAD.encode(body),
        URL_SAFE_NO_PAD.encode(footer)
    )
}

/// A key set file of `key` alone, active.
fn key_set_of(key: &SigningKey) -> String {
    let published =
        PublishedKey::from_bytes(key.verifying_key().as_bytes(), KeyStatus::Active).unwrap();
    KeySet::new(vec![published]).to_json().unwrap()
}

/// `proof`'s claims with the nonce made of `nonce_byte`, edited by `edit`,
/// written canonically and signed by `key` under its own key id: claims the
/// signer does not issue yet, signed as it would sign them.
fn resigned(
    proof: &str,
    key: &SigningKey,
    nonce_byte: u8,
    edit: impl FnOnce(&mut Map<String, Value>),
) -> String {
    let (payload, _, _) = support::forge::split(proof);
    let mut claims: Value = serde_json::from_slice(&payload).unwrap();
    let map = claims.as_object_mut().unwrap();
    map.insert(
        "jti".into(),
        json!(URL_SAFE_NO_PAD.encode([nonce_byte; 32])),
    );
    edit(map);
    let payload = to_canonical(&claims).unwrap();
    let footer = format!(
        r#"{{"kid":"{}"}}"#,
        countersign_verifier::key_id(&key.verifying_key())
    );
    let signature = key
        .sign(&signing_input(payload.as_bytes(), footer.as_bytes()))
        .to_bytes();
    assemble(payload.as_bytes(), &signature, footer.as_bytes())
}

#[tokio::test]
async fn receivers_and_countersign_verify_agree_on_real_tampered_expired_and_misdirected_proofs() {
    // schedule.delete proofs live one second: the expired case.
    let registry = Registry::default_toml().replacen(
        "preview = \"Delete schedule",
        "lifetime_secs = 1\npreview = \"Delete schedule",
        1,
    );
    assert_ne!(registry, Registry::default_toml());
    let h = Harness::start_with_registry(&registry).await;
    let scratch = h.scratch.path().to_path_buf();

    // The key set, as an operator hands it to a receiving service.
    let keys = scratch.join("keys.json");
    let export = h
        .cli(&["keys", "export", "--out", keys.to_str().unwrap()])
        .await;
    assert_eq!(export.result, Ok(()), "{}", export.stderr);
    let set: Value = serde_json::from_slice(&std::fs::read(&keys).unwrap()).unwrap();
    assert_eq!(set["version"], 1);
    assert_eq!(set["keys"][0]["status"], "active");
    assert!(
        set["keys"][0]["paserk"]
            .as_str()
            .unwrap()
            .starts_with("k4.public.")
    );
    let again = h
        .cli(&["keys", "export", "--out", keys.to_str().unwrap()])
        .await;
    assert!(
        again.result.is_err(),
        "an existing key set file is never replaced"
    );

    // The canonical arguments each receiver would receive with the request.
    let arguments = scratch.join("arguments.json");
    let canonical = to_canonical(&parse(CREATE_NIGHTLY.as_bytes(), 1 << 16).unwrap()).unwrap();
    std::fs::write(&arguments, &canonical).unwrap();
    let other_arguments = scratch.join("other-arguments.json");
    std::fs::write(&other_arguments, canonical.replace("nightly", "hourly")).unwrap();

    let audience = format!("countersign:{}", h.signer.principal());
    let id = h.propose("schedule.create", CREATE_NIGHTLY).await;
    let real = std::fs::read_to_string(h.approve_to_file(&id).await).unwrap();
    let expect = Expect {
        audience: &audience,
        operation: "schedule.create",
        arguments: &arguments,
    };

    let receivers = [Receiver::python(&scratch), Receiver::typescript(&scratch)];
    // Each case: proof, expectation, the verdict all three give.
    let forged = support::forge::forged(&real);
    let unknown = support::forge::signed_by_unknown_key(&real);
    let tampered = tampered(&real);
    let elsewhere = Expect {
        audience: "countersign:another-installation",
        ..expect
    };
    let other_op = Expect {
        operation: "schedule.delete",
        ..expect
    };
    let cases: Vec<(&str, &str, &Expect<'_>, Result<(), String>)> = vec![
        ("tampered", &tampered, &expect, Err("bad_signature".into())),
        ("forged", &forged, &expect, Err("bad_signature".into())),
        (
            "unknown key",
            &unknown,
            &expect,
            Err("unknown_key_id".into()),
        ),
        (
            "wrong audience",
            &real,
            &elsewhere,
            Err("wrong_audience".into()),
        ),
        (
            "wrong operation",
            &real,
            &other_op,
            Err("operation_mismatch".into()),
        ),
    ];
    for (name, proof, expect, verdict) in &cases {
        assert_eq!(
            &cli_verdict(&h, &keys, proof, expect).await,
            verdict,
            "verify: {name}"
        );
        for r in &receivers {
            assert_eq!(
                &r.verdict(&keys, proof, expect),
                verdict,
                "{}: {name}",
                r.name
            );
        }
    }

    // Arguments other than the approved ones: the receivers hash what they
    // received (`countersign verify` is not given arguments).
    let altered = Expect {
        arguments: &other_arguments,
        ..expect
    };
    for r in &receivers {
        assert_eq!(
            r.verdict(&keys, &real, &altered),
            Err("arguments_mismatch".into()),
            "{}",
            r.name
        );
    }

    // The real proof: accepted by all three, then a replay is refused by
    // each receiver's own nonce table (`countersign verify` consumes
    // nothing: it accepts the proof again).
    assert_eq!(cli_verdict(&h, &keys, &real, &expect).await, Ok(()));
    for r in &receivers {
        let accepted = r.verdict_doc(&keys, &real, &expect);
        assert!(
            accepted
                .as_ref()
                .is_ok_and(|doc| doc.get("passkey").is_none()),
            "{}: real {accepted:?}",
            r.name
        );
        assert_eq!(
            r.verdict(&keys, &real, &expect),
            Err("replayed".into()),
            "{}: replay",
            r.name
        );
    }
    assert_eq!(cli_verdict(&h, &keys, &real, &expect).await, Ok(()));

    // Passkey assurance (`amr`, `pkh`), which the signer does not issue
    // yet: the real claims with the pair added, signed by a key of their
    // own that a key set of its own pins. All three accept the proof and
    // show the pair; `amr` without `pkh` is malformed for all three.
    let passkey_key = SigningKey::from_bytes(&[0x5a; 32]);
    let passkey_keys = scratch.join("passkey-keys.json");
    std::fs::write(&passkey_keys, key_set_of(&passkey_key)).unwrap();
    let pkh = sha256_hex(b"receiver test credential id");
    let with_passkey = resigned(&real, &passkey_key, 0x42, |m| {
        m.insert("amr".into(), json!(["passkey-uv"]));
        m.insert("pkh".into(), json!(pkh));
    });
    let amr_only = resigned(&real, &passkey_key, 0x43, |m| {
        m.insert("amr".into(), json!(["passkey-uv"]));
    });
    let cli = cli_verdict_doc(&h, &passkey_keys, &with_passkey, &expect)
        .await
        .unwrap();
    assert_eq!(cli["claims"]["amr"], json!(["passkey-uv"]), "{cli}");
    assert_eq!(cli["claims"]["pkh"], json!(pkh), "{cli}");
    assert_eq!(
        cli_verdict(&h, &passkey_keys, &amr_only, &expect).await,
        Err("malformed".into())
    );
    for r in &receivers {
        assert_eq!(
            r.verdict(&passkey_keys, &amr_only, &expect),
            Err("malformed".into()),
            "{}: amr without pkh",
            r.name
        );
        let accepted = r
            .verdict_doc(&passkey_keys, &with_passkey, &expect)
            .unwrap_or_else(|e| panic!("{}: passkey proof refused: {e}", r.name));
        assert_eq!(
            accepted["passkey"],
            json!({"amr": ["passkey-uv"], "pkh": pkh}),
            "{}",
            r.name
        );
    }

    // Expired: a one-second proof, checked after it lapsed.
    let delete = r#"{"name":"nightly"}"#;
    let delete_arguments = scratch.join("delete-arguments.json");
    std::fs::write(&delete_arguments, delete).unwrap();
    let id = h.propose("schedule.delete", delete).await;
    let short = std::fs::read_to_string(h.approve_to_file(&id).await).unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let expect_delete = Expect {
        audience: &audience,
        operation: "schedule.delete",
        arguments: &delete_arguments,
    };
    assert_eq!(
        cli_verdict(&h, &keys, &short, &expect_delete).await,
        Err("expired".into())
    );
    for r in &receivers {
        assert_eq!(
            r.verdict(&keys, &short, &expect_delete),
            Err("expired".into()),
            "{}: expired",
            r.name
        );
    }
}
