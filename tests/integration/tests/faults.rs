//! Faults under a head, with real processes.
//!
//! An audit event of a builtin's one consume transaction fails to insert (a
//! trigger made to fail), either the first (`intent`) or the last
//! (`completed`, after the effect was written): the head reports an error,
//! the nonce is not burned, nothing is applied, and the same proof applies
//! once the fault is gone.
//!
//! The same fault under an execution through a handoff: the head releases
//! the handoff it claimed, so the person's approval survives the fault.
//!
//! The ledger database unavailable: every head fails closed with a clear
//! error, applies nothing, and once the database is back the proof is
//! consumed exactly once. PostgreSQL: a throwaway server of this test's own
//! (never the shared one) is stopped at once (`-m immediate`) and started
//! again. SQLite: the file is locked by another writer for longer than the
//! busy timeout.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Instant;

use countersign::{CliError, exit};
use countersign_ledger::testing::{TempPgDatabase, ThrowawayPgServer};
use countersign_registry::Registry;
use support::{Backend, CREATE_NIGHTLY, Harness, Person, assert_failed_closed, assert_refused};

/// `countersign --json exec` as a real process: (exit code, stdout, stderr).
async fn exec_process(h: &Harness, id: &str, proof: &std::path::Path) -> (i32, String, String) {
    let out = tokio::process::Command::new(countersign_integration_tests::bin("countersign"))
        .args(["--home", &h.home(), "--json", "exec", id, "--proof-file"])
        .arg(proof)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// After the outage: the proof applies exactly once, and the log is intact.
async fn applies_once_after(h: &Harness, id: &str, proof: &std::path::Path) {
    let (code, stdout, stderr) = exec_process(h, id, proof).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&stdout).unwrap()["applied"],
        true
    );
    assert_refused(&h.exec(id, proof, &[]).await, "already_used");
    assert_eq!(h.schedules().await.len(), 1);
    let events = h.ledger().events().await.unwrap();
    let count = |kind: &str| events.iter().filter(|e| e.kind == kind).count();
    assert_eq!((count("intent"), count("effect_applied")), (1, 1));
    assert!(h.ledger().verify_chain().await.unwrap().is_intact());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_stopped_every_head_fails_closed_and_nothing_is_lost_after_restart() {
    let server = ThrowawayPgServer::start().expect("a throwaway PostgreSQL server");
    let db = TempPgDatabase::create_on(&server.admin_url())
        .await
        .unwrap();
    let h = Harness::start_with_pg(Registry::default_toml(), Some(db)).await;
    let id = h.propose("schedule.create", CREATE_NIGHTLY).await;
    let proof = h.approve_to_file(&id).await;
    let other = h
        .propose(
            "schedule.create",
            CREATE_NIGHTLY.replace("nightly", "other").as_str(),
        )
        .await;

    server.stop().unwrap();
    // A head process: a clear error, promptly, and the error exit code.
    let started = Instant::now();
    let (code, stdout, stderr) = exec_process(&h, &id, &proof).await;
    let took = started.elapsed();
    assert_failed_closed(code, &stdout, &stderr, took);
    // The in-process CLI path, and the signer's side (approval) too.
    let run = h.exec(&id, &proof, &[]).await;
    assert!(
        matches!(run.result, Err(CliError::Error(_))),
        "{:?}",
        run.result
    );
    let approve = h
        .cli_with(&["approve", &other], "", Person::TypesTheChallenge)
        .await;
    assert!(approve.result.is_err(), "{}", approve.stdout);
    eprintln!(
        "postgres down: exec failed closed in {took:?}: {}",
        stderr.trim()
    );

    server.start_again().unwrap();
    applies_once_after(&h, &id, &proof).await;
    // The signer's pool reconnects as well.
    let approve = h
        .cli_with(&["approve", &other], "", Person::TypesTheChallenge)
        .await;
    assert_eq!(approve.result, Ok(()), "{}", approve.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_locked_past_the_busy_timeout_fails_closed_and_applies_once_after() {
    use sqlx::Connection as _;
    let h = Harness::start().await;
    let id = h.propose("schedule.create", CREATE_NIGHTLY).await;
    let proof = h.approve_to_file(&id).await;
    let options = sqlx::sqlite::SqliteConnectOptions::new().filename(h.signer.home().ledger_path());
    let mut locker = sqlx::SqliteConnection::connect_with(&options)
        .await
        .unwrap();
    sqlx::raw_sql("BEGIN EXCLUSIVE")
        .execute(&mut locker)
        .await
        .unwrap();

    let started = Instant::now();
    let (code, stdout, stderr) = exec_process(&h, &id, &proof).await;
    let took = started.elapsed();
    assert_eq!(code, i32::from(exit::ERROR), "{stdout}{stderr}");
    assert!(stderr.contains("database is locked"), "{stderr}");
    eprintln!(
        "sqlite locked: exec failed closed in {took:?}: {}",
        stderr.trim()
    );

    sqlx::raw_sql("ROLLBACK")
        .execute(&mut locker)
        .await
        .unwrap();
    locker.close().await.unwrap();
    applies_once_after(&h, &id, &proof).await;
}

/// Make every insert of an event of `kind` fail (`Some`), or stop doing so.
async fn events_fail(h: &Harness, kind: Option<&str>) {
    use sqlx::Connection as _;
    let sql = match (&h.pg, kind) {
        (None, Some(kind)) => format!(
            "CREATE TRIGGER inject_failure BEFORE INSERT ON events WHEN NEW.kind = '{kind}'
             BEGIN SELECT RAISE(ABORT, 'injected audit failure'); END"
        ),
        (None, None) => "DROP TRIGGER inject_failure".to_string(),
        (Some(_), Some(kind)) => format!(
            "CREATE FUNCTION inject_failure() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN IF NEW.kind = '{kind}' THEN RAISE EXCEPTION 'injected audit failure';
             END IF; RETURN NEW; END $$;
             CREATE TRIGGER inject_failure BEFORE INSERT ON events
             FOR EACH ROW EXECUTE FUNCTION inject_failure()"
        ),
        (Some(_), None) => {
            "DROP TRIGGER inject_failure ON events; DROP FUNCTION inject_failure()".to_string()
        }
    };
    // `raw_sql` wants a `'static` text here; a few bytes per test.
    let sql: &'static str = Box::leak(sql.into_boxed_str());
    match &h.pg {
        None => {
            let options =
                sqlx::sqlite::SqliteConnectOptions::new().filename(h.signer.home().ledger_path());
            let mut raw = sqlx::SqliteConnection::connect_with(&options)
                .await
                .unwrap();
            sqlx::raw_sql(sql).execute(&mut raw).await.unwrap();
            raw.close().await.unwrap();
        }
        Some(db) => {
            let mut raw = sqlx::PgConnection::connect(db.url()).await.unwrap();
            sqlx::raw_sql(sql).execute(&mut raw).await.unwrap();
            raw.close().await.unwrap();
        }
    }
}

async fn a_failed_audit_insert_burns_nothing_and_applies_nothing(backend: Backend, kind: &str) {
    let h = Harness::start_on(backend, Registry::default_toml()).await;
    let id = h.propose("schedule.create", CREATE_NIGHTLY).await;
    let proof = h.approve_to_file(&id).await;
    events_fail(&h, Some(kind)).await;

    let (code, stdout, stderr) = exec_process(&h, &id, &proof).await;
    assert_eq!(code, i32::from(exit::ERROR), "{stdout}{stderr}");
    assert!(stderr.contains("injected audit failure"), "{stderr}");
    assert_eq!(h.schedules().await, vec![]);
    assert_eq!(
        h.ledger().disposition(&id).await.unwrap(),
        None,
        "nonce not burned"
    );
    assert_eq!(h.ledger().interrupted().await.unwrap(), vec![]);
    let show = h.cli(&["--json", "show", &id]).await;
    assert_eq!(show.json()["status"], "approved");

    let events = h.ledger().events().await.unwrap();
    assert!(
        events
            .iter()
            .all(|e| !["intent", "effect_applied", "completed"].contains(&e.kind.as_str())),
        "nothing of the consumption was recorded"
    );

    events_fail(&h, None).await;
    applies_once_after(&h, &id, &proof).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_audit_insert_on_sqlite_burns_nothing_and_applies_nothing() {
    a_failed_audit_insert_burns_nothing_and_applies_nothing(Backend::Sqlite, "intent").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_audit_insert_on_postgres_burns_nothing_and_applies_nothing() {
    a_failed_audit_insert_burns_nothing_and_applies_nothing(Backend::Postgres, "intent").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_completion_event_on_sqlite_rolls_back_the_applied_effect() {
    a_failed_audit_insert_burns_nothing_and_applies_nothing(Backend::Sqlite, "completed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_completion_event_on_postgres_rolls_back_the_applied_effect() {
    a_failed_audit_insert_burns_nothing_and_applies_nothing(Backend::Postgres, "completed").await;
}

/// A head that claimed a handoff and then hit a fault releases it: the
/// person's approval is not lost with the proof the head dropped, nothing
/// was applied, and the next execution from the same session claims it and
/// applies it once.
async fn a_failed_handoff_execution_keeps_the_approval(backend: Backend) {
    let h = Harness::start_on(backend, Registry::default_toml()).await;
    let id = h
        .propose_in("schedule.create", CREATE_NIGHTLY, "agent-1")
        .await;
    h.approve_for_mcp(&id).await;
    events_fail(&h, Some("intent")).await;

    let failed = h.exec_handoff(&id, "agent-1").await;
    assert!(
        matches!(&failed.result, Err(CliError::Error(m)) if m.contains("injected audit failure")),
        "{:?}",
        failed.result
    );
    the_handoff_still_waits(&h, &id).await;

    events_fail(&h, None).await;
    applies_once_through_the_handoff(&h, &id).await;
}

/// The approval of `id` still waits for session `agent-1`, and nothing was
/// applied: the handoff was released.
async fn the_handoff_still_waits(h: &Harness, id: &str) {
    assert_eq!(h.schedules().await, vec![]);
    assert_eq!(h.ledger().disposition(id).await.unwrap(), None);
    let show = h.cli(&["--json", "show", id]).await;
    assert_eq!(show.json()["status"], "approved");
    assert_eq!(show.json()["handoff_waiting"], true, "{}", show.stdout);
}

/// The next execution from session `agent-1` claims the approval of `id`
/// and applies it, once.
async fn applies_once_through_the_handoff(h: &Harness, id: &str) {
    let run = h.exec_handoff(id, "agent-1").await;
    assert_eq!(run.result, Ok(()), "{}", run.stdout);
    assert_eq!(run.json()["applied"], true, "{}", run.stdout);
    assert_refused(&h.exec_handoff(id, "agent-1").await, "already_used");
    assert_eq!(h.schedules().await.len(), 1);
    assert!(h.ledger().verify_chain().await.unwrap().is_intact());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_handoff_execution_on_sqlite_keeps_the_approval() {
    a_failed_handoff_execution_keeps_the_approval(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_handoff_execution_on_postgres_keeps_the_approval() {
    a_failed_handoff_execution_keeps_the_approval(Backend::Postgres).await;
}

/// A refusal that is not the person's fault (here a head configured with a
/// lifetime ceiling below the signer's proofs', as a head with a stale key
/// set or a skewed clock refuses a good proof) consumes nothing, so the head
/// releases the handoff it claimed: the approval survives and, once the
/// head is fixed, applies once.
async fn a_refused_handoff_execution_keeps_the_approval(backend: Backend) {
    let h = Harness::start_on(backend, Registry::default_toml()).await;
    let id = h
        .propose_in("schedule.create", CREATE_NIGHTLY, "agent-1")
        .await;
    h.approve_for_mcp(&id).await;
    let config_path = h.signer.home().config_path();
    let config = std::fs::read_to_string(&config_path).unwrap();
    std::fs::write(
        &config_path,
        format!("{config}[verifier]\nmax_lifetime_secs = 30\n"),
    )
    .unwrap();

    let refused = h.exec_handoff(&id, "agent-1").await;
    assert_refused(&refused, "lifetime_too_long");
    the_handoff_still_waits(&h, &id).await;

    std::fs::write(&config_path, config).unwrap();
    applies_once_through_the_handoff(&h, &id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_handoff_execution_on_sqlite_keeps_the_approval() {
    a_refused_handoff_execution_keeps_the_approval(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_handoff_execution_on_postgres_keeps_the_approval() {
    a_refused_handoff_execution_keeps_the_approval(Backend::Postgres).await;
}
