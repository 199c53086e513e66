//! PostgreSQL's connection pool: a connection idle for a quarter of a
//! second or more is checked before a call gets it, so a server that
//! dropped it is not noticed by the caller; one released a moment ago is
//! handed out as it is (sqlx checked it on release), without the round
//! trip of a ping.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use countersign_ledger::Ledger;
use countersign_ledger::testing::TempPgDatabase;
use sqlx::{Connection as _, PgConnection};

/// More than the pool's connections: calls enough to cycle through all.
const CALLS: usize = 20;
/// How long a connection idles before it is checked (`PING_IF_IDLE`).
const CHECKED_AFTER: Duration = Duration::from_millis(250);

/// End every server connection of the ledger's database (a server restart,
/// as its clients see it).
async fn drop_ledger_connections(admin: &mut PgConnection) {
    let ended: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid()
           AND application_name = 'countersign'",
    )
    .fetch_all(admin)
    .await
    .unwrap();
    assert!(!ended.is_empty() && ended.iter().all(|e| *e), "{ended:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_is_checked_and_a_fresh_one_is_not() {
    let db = TempPgDatabase::create().await.unwrap();
    let mut admin = PgConnection::connect(db.url()).await.unwrap();
    let ledger = Ledger::open(db.url()).await.unwrap();
    assert_eq!(ledger.proposal("prop_none").await.unwrap(), None);

    // Dropped, then idle: each is checked and replaced, so every call
    // works.
    drop_ledger_connections(&mut admin).await;
    tokio::time::sleep(CHECKED_AFTER * 2).await;
    for _ in 0..CALLS {
        assert_eq!(ledger.proposal("prop_none").await.unwrap(), None);
    }

    // Every connection now fresh, dropped and used at once: handed out
    // unchecked, so the call fails closed (as one does when the server
    // stops during it). Once idle, the rest are checked again.
    let released = Instant::now();
    drop_ledger_connections(&mut admin).await;
    let idle = released.elapsed();
    let failed = ledger.proposal("prop_none").await;
    if idle < CHECKED_AFTER {
        assert!(failed.is_err(), "{failed:?}");
    } else {
        // A machine so slow that the connection idled: checked.
        eprintln!("the connections idled {idle:?}: {failed:?}");
        assert!(failed.is_ok(), "{failed:?}");
    }
    tokio::time::sleep(CHECKED_AFTER * 2).await;
    for _ in 0..CALLS {
        assert_eq!(ledger.proposal("prop_none").await.unwrap(), None);
    }
    admin.close().await.unwrap();
}
