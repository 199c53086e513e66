//! Announcements between the signers of one ledger: on PostgreSQL what
//! one publishes, every other listener hears, and its own listener does
//! not; a listener whose connection was ended listens again and first says
//! that anything may have changed. On SQLite (one signer) there is nothing
//! to publish to and no listener.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use countersign_ledger::testing::TempPgDatabase;
use countersign_ledger::{
    CHANGE_LISTENER_APPLICATION, ChangeListener, Ledger, ProposalChange, SignerInstance,
};
use countersign_verifier::{Principal, ProposalId};
use sqlx::{Connection as _, PgConnection};

/// Generous: an announcement arrives in milliseconds.
const PROMPTLY: Duration = Duration::from_secs(5);

async fn next(listener: &mut ChangeListener) -> ProposalChange {
    tokio::time::timeout(PROMPTLY, listener.next())
        .await
        .expect("an announcement")
}

fn change(n: u8) -> ProposalChange {
    ProposalChange::Proposal {
        principal: Principal::from_random([n; 16]),
        proposal: ProposalId::from_random([n; 16]),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_signers_announcement_is_heard_and_an_own_one_is_not() {
    let db = TempPgDatabase::create().await.unwrap();
    let ledger = Ledger::open(db.url()).await.unwrap();
    let (a, b) = (
        SignerInstance::from_random([1; 16]),
        SignerInstance::from_random([2; 16]),
    );
    let mut on_b = ledger.change_listener(&b).unwrap();
    // Connected, it first says that anything may have changed.
    assert_eq!(next(&mut on_b).await, ProposalChange::Anything);

    ledger.publish_changes(&b, &[change(9)]).await.unwrap();
    ledger
        .publish_changes(&a, &[change(1), ProposalChange::Anything, change(2)])
        .await
        .unwrap();
    // B's own is not heard; A's are, in order.
    assert_eq!(next(&mut on_b).await, change(1));
    assert_eq!(next(&mut on_b).await, ProposalChange::Anything);
    assert_eq!(next(&mut on_b).await, change(2));
    ledger.publish_changes(&a, &[]).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_whose_connection_ended_listens_again_and_says_anything_changed() {
    let db = TempPgDatabase::create().await.unwrap();
    let ledger = Ledger::open(db.url()).await.unwrap();
    let a = SignerInstance::from_random([1; 16]);
    let mut on_b = ledger
        .change_listener(&SignerInstance::from_random([2; 16]))
        .unwrap();
    assert_eq!(next(&mut on_b).await, ProposalChange::Anything);

    let mut admin = PgConnection::connect(db.url()).await.unwrap();
    let ended: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = current_database() AND application_name = $1",
    )
    .bind(CHANGE_LISTENER_APPLICATION)
    .fetch_all(&mut admin)
    .await
    .unwrap();
    assert_eq!(ended, [true]);

    // Whatever was sent meanwhile may be lost: it says so first.
    assert_eq!(next(&mut on_b).await, ProposalChange::Anything);
    ledger.publish_changes(&a, &[change(3)]).await.unwrap();
    assert_eq!(next(&mut on_b).await, change(3));
}

#[tokio::test]
async fn a_sqlite_ledger_has_no_listener_and_publishes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("ledger.db").display());
    let ledger = Ledger::open(&url).await.unwrap();
    let me = SignerInstance::from_random([1; 16]);
    assert!(ledger.change_listener(&me).is_none());
    ledger.publish_changes(&me, &[change(1)]).await.unwrap();
}
