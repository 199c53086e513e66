//! An execution still running is never overtaken: while a real `countersign
//! exec` process runs a slow, replay-safe `command`, `reconcile` leaves it
//! alone (it would otherwise start it a second time) and a person's
//! `--resolve --not-applied` is refused (it would otherwise record
//! `failed` for an effect that then succeeds). The intent's lease (the
//! effect's timeout plus a margin) and its owner (the exec process) say so;
//! the head's own completion is what is recorded. On both backends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;

use countersign::CliError;
use countersign_registry::Registry;
use support::{Backend, Harness, Person, command_operation};

/// The default registry plus `note.slow`: replay-safe, sleeps 3 s, then
/// appends its idempotency key to `log`.
fn registry(log: &Path) -> String {
    let script = format!(
        "sleep 3; echo \"$COUNTERSIGN_IDEMPOTENCY_KEY\" >> {}",
        log.display()
    );
    format!(
        "{}{}",
        Registry::default_toml(),
        command_operation("note.slow", true, &script, 20)
    )
}

async fn a_running_execution_is_not_overtaken(backend: Backend) {
    let scratch = tempfile::tempdir().unwrap();
    let log = scratch.path().join("effects.log");
    let h = Harness::start_on(backend, &registry(&log)).await;
    let id = h.propose("note.slow", r#"{"text":"hi"}"#).await;
    let proof = h.approve_to_file(&id).await;
    let exec = tokio::process::Command::new(countersign_integration_tests::bin("countersign"))
        .args(["--home", &h.home(), "--json", "exec", &id, "--proof-file"])
        .arg(&proof)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait for its intent (the effect then runs for 3 s).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while h.ledger().interrupted().await.unwrap().is_empty() {
        assert!(std::time::Instant::now() < deadline, "no intent recorded");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }

    let run = h.cli(&["--json", "reconcile"]).await;
    let entry = &run.json()["entries"][0];
    assert_eq!(entry["action"], "running", "{entry}");
    assert_eq!(
        run.result,
        Err(CliError::NotApplied(
            "1 execution(s) remain uncertain".into()
        ))
    );
    let resolve = ["reconcile", "--resolve", &id, "--not-applied"];
    let refused = h.cli_with(&resolve, "", Person::TypesTheChallenge).await;
    match &refused.result {
        Err(CliError::Refused(message)) => assert!(
            message.starts_with(&format!(
                "proposal {id} may still be running (its execution's lease ends at "
            )),
            "{message}"
        ),
        other => panic!("expected a refusal, got {other:?}"),
    }

    let status = exec.wait_with_output().await.unwrap().status;
    assert!(status.success(), "{status:?}");
    let runs = std::fs::read_to_string(&log).unwrap();
    assert_eq!(runs.lines().count(), 1, "the effect ran once: {runs}");
    assert_eq!(
        h.cli(&["--json", "result", &id]).await.json()["status"],
        "applied"
    );
    assert!(h.ledger().verify_chain().await.unwrap().is_intact());
}

mod a_running_execution_is_not_overtaken {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        super::a_running_execution_is_not_overtaken(super::Backend::Sqlite).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        super::a_running_execution_is_not_overtaken(super::Backend::Postgres).await
    }
}
