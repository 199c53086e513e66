//! A trusted approver UI that is not part of this workspace, written in
//! Python with grpcio only (`tests/e2e/trusted_ui.py`, stubs generated from
//! `proto/countersign/v1/*.proto` at run time): it holds a named approver
//! credential made by `countersign credential create`, approves over mTLS
//! with `DELIVERY_HANDOFF` (dry run first), and the proof's provenance names
//! the credential. A head then claims and executes the handoff once.
//!
//! The signer runs in-process on 127.0.0.1:0 over real mTLS (the harness);
//! the Python client is a separate process. `scripts/test` installs grpcio
//! and grpcio-tools from `tests/requirements.txt`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;

use countersign_identity::Role;
use serde_json::Value;
use support::{CREATE_NIGHTLY, Harness, assert_refused};

/// The TLS files a Python client presents.
struct Credential<'a> {
    ca: &'a Path,
    cert: &'a Path,
    key: &'a Path,
}

/// Run `tests/e2e/trusted_ui.py` against the harness's signer; its one JSON
/// line. A separate process, so the in-process signer keeps serving.
async fn run_python(h: &Harness, credential: &Credential<'_>, id: &str, mode: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../e2e/trusted_ui.py");
    let output = tokio::process::Command::new("python3")
        .arg(script)
        .arg("--addr")
        .arg(h.signer.addr().to_string())
        .args(["--ca".as_ref(), credential.ca.as_os_str()])
        .args(["--cert".as_ref(), credential.cert.as_os_str()])
        .args(["--key".as_ref(), credential.key.as_os_str()])
        .args(["--approve", id, "--mode", mode])
        .output()
        .await
        .expect("python3 runs (scripts/test installs grpcio from tests/requirements.txt)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "trusted_ui.py failed:\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}\nstderr:\n{stderr}"))
}

#[tokio::test]
async fn a_python_ui_with_a_named_credential_approves_a_handoff_recorded_under_its_name() {
    let h = Harness::start().await;
    let id = h
        .propose_in("schedule.create", CREATE_NIGHTLY, "agent-1")
        .await;

    let out = h.scratch.path().join("kiosk-credential");
    std::fs::create_dir(&out).unwrap();
    let mut args = vec!["--json"];
    args.extend(create_args(out.to_str().unwrap()));
    let created = h.cli(&args).await;
    assert_eq!(created.result, Ok(()), "{}", created.stderr);
    let expected = format!("human:cert:{}/kiosk", h.signer.principal());
    assert_eq!(created.json()["provenance"], expected.as_str());
    let credential = Credential {
        ca: &out.join("ca.pem"),
        cert: &out.join("approver-kiosk.pem"),
        key: &out.join("approver-kiosk.key"),
    };

    let approved = run_python(&h, &credential, &id, "approve").await;
    assert_eq!(approved["listed"], serde_json::json!([id]));
    assert_eq!(approved["status"], "PROPOSAL_STATUS_APPROVED");
    assert_eq!(approved["handoff_waiting"], true);

    let record = h.ledger().proposal(&id).await.unwrap().unwrap();
    let issuance = record.issuance.unwrap();
    assert_eq!(issuance.provenance, expected);
    assert_eq!(approved["proof_sha256"], issuance.proof_sha256.as_str());

    // A head of the principal claims the handoff and executes it, once.
    let run = h.exec_handoff(&id, "agent-1").await;
    assert_eq!(run.result, Ok(()), "{}", run.stdout);
    assert_eq!(run.json()["applied"], true);
    assert_eq!(h.schedules().await.len(), 1);
    assert_refused(&h.exec_handoff(&id, "agent-1").await, "already_used");
    assert_eq!(h.schedules().await.len(), 1);
}

#[tokio::test]
async fn a_python_ui_with_a_head_certificate_is_denied_decide_and_nothing_is_issued() {
    let h = Harness::start().await;
    let id = h.propose("schedule.create", CREATE_NIGHTLY).await;
    let home = h.signer.home();
    let credential = Credential {
        ca: &home.ca_cert_path(),
        cert: &home.client_cert_path(Role::Head),
        key: &home.client_key_path(Role::Head),
    };

    let denied = run_python(&h, &credential, &id, "expect-denied").await;
    assert_eq!(
        denied,
        serde_json::json!({"code": "PERMISSION_DENIED", "message": "role head may not call Decide"})
    );
    let record = h.ledger().proposal(&id).await.unwrap().unwrap();
    assert_eq!(record.status.as_str(), "pending");
    assert!(record.issuance.is_none());
}

/// `credential create --approver kiosk --out-dir DIR`.
fn create_args(dir: &str) -> [&str; 6] {
    [
        "credential",
        "create",
        "--approver",
        "kiosk",
        "--out-dir",
        dir,
    ]
}

#[tokio::test]
async fn credential_create_refuses_a_missing_out_dir_and_existing_files() {
    let h = Harness::start().await;
    let missing = h.scratch.path().join("missing");
    let run = h.cli(&create_args(missing.to_str().unwrap())).await;
    assert!(
        matches!(&run.result, Err(countersign::CliError::Refused(m)) if m.contains("does not exist")),
        "{:?}",
        run.result
    );
    let out = h.scratch.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let dir = out.to_str().unwrap();
    let first = h.cli(&create_args(dir)).await;
    assert_eq!(first.result, Ok(()), "{}", first.stderr);
    assert!(!first.stdout.contains("PRIVATE KEY"));
    let key = std::fs::read(out.join("approver-kiosk.key")).unwrap();
    let again = h.cli(&create_args(dir)).await;
    assert!(
        matches!(&again.result, Err(countersign::CliError::Refused(m)) if m.contains("already exists")),
        "{:?}",
        again.result
    );
    assert_eq!(std::fs::read(out.join("approver-kiosk.key")).unwrap(), key);
}
