//! Opening the ledger: concurrent first opens of one file, refusing a
//! schema it does not know, and agreement with the registry on builtins.
#![allow(clippy::unwrap_used)]

mod common;

use common::Kind;

use common::TestLedger;
use countersign_ledger::{Ledger, LedgerError};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_first_opens_of_one_file_apply_the_schema_once() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("ledger.db").display());
    let opens: Vec<_> = (0..6)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(async move { Ledger::open(&url).await.map(|_| ()) })
        })
        .collect();
    for open in opens {
        open.await.unwrap().unwrap();
    }
    let ledger = Ledger::open(&url).await.unwrap();
    assert!(ledger.verify_chain().await.unwrap().is_intact());
}

/// Run `sql` raw, then open the ledger both ways a process does: to serve,
/// and for one command (`Ledger::open_for_one_command`).
async fn reopen_after(t: &TestLedger, sql: &'static str) -> [Result<(), LedgerError>; 2] {
    let mut raw = t.raw().await;
    raw.exec(sql).await.unwrap();
    raw.close().await;
    [
        Ledger::open(&t.url).await.map(|_| ()),
        Ledger::open_for_one_command(&t.url).await.map(|_| ()),
    ]
}

on_both_backends!(refuses_a_database_whose_applied_migration_was_altered);
async fn refuses_a_database_whose_applied_migration_was_altered(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let got = reopen_after(
        &t,
        "UPDATE schema_migrations SET sha256 = 'x' WHERE version = 1",
    )
    .await;
    let refused = Err(LedgerError::Migration(
        "applied migration 1 differs from this build's".into(),
    ));
    assert_eq!(got, [refused.clone(), refused]);
}

on_both_backends!(refuses_a_database_from_a_newer_build);
async fn refuses_a_database_from_a_newer_build(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let got = reopen_after(
        &t,
        "INSERT INTO schema_migrations (version, description, sha256) VALUES (999, 'future', 'x')",
    )
    .await;
    let refused = Err(LedgerError::Migration(
        "the database has schema version 999, unknown to this build".into(),
    ));
    assert_eq!(got, [refused.clone(), refused]);
}

#[tokio::test]
async fn schema_status_reads_without_creating_or_migrating() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let url = format!("sqlite://{}", path.display());
    // Absent: an error, and still absent afterwards.
    assert!(Ledger::schema_status(&url).await.is_err());
    assert!(!path.exists());
    // Empty (as `countersign init` leaves it): nothing applied, nothing written.
    std::fs::write(&path, b"").unwrap();
    let empty = Ledger::schema_status(&url).await.unwrap();
    assert_eq!(empty.applied, Vec::<i64>::new());
    assert!(!empty.is_current());
    assert_eq!(empty.current_version(), 0);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    // Opened once: current.
    drop(Ledger::open(&url).await.unwrap());
    let current = Ledger::schema_status(&url).await.unwrap();
    assert!(current.is_current());
    assert_eq!(current.current_version(), current.expected_version());
    assert_eq!(current.server_time_unix, None);
}
