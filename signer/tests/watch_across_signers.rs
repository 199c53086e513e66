//! Watches across the two signers of one PostgreSQL ledger: a watch held
//! through one signer hears what is proposed and decided through the
//! other (`LISTEN`/`NOTIFY`, ids only), and still does after the
//! connection that listens was ended by the server; two signer processes
//! do the same, and each still stops cleanly on SIGTERM.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use countersign_ledger::CHANGE_LISTENER_APPLICATION;
use countersign_ledger::testing::TempPgDatabase;
use countersign_proto::v1::{
    Delivery, ListPendingResponse, ProposalStatus, ProposalView, WatchPendingRequest,
};
use countersign_registry::Registry;
use countersign_signer::testing::TestSigner;
use sqlx::{Connection as _, PgConnection};
use tonic::Streaming;

use support::{
    WATCH_PATIENCE, approve, approver, head, listening_on, next, process_client, process_home,
    propose, ready_line, spawn_serve, stop_with_sigterm, watch_past_pending,
};

/// Two signers of one new PostgreSQL database.
async fn two_signers(db: &TempPgDatabase) -> (TestSigner, TestSigner) {
    let a = TestSigner::start_with(Registry::default_toml(), Some(db.url()))
        .await
        .unwrap();
    let b = a.another_on_this_home().await.unwrap();
    (a, b)
}

/// `WatchProposal` of `id` through `signer`, past its first (pending) view.
async fn watch_pending_proposal(signer: &TestSigner, id: &str) -> Streaming<ProposalView> {
    watch_past_pending(head(signer).await, id).await
}

/// Approves `id` through `signer`, and the next view of `views` (a watch
/// of it, held through the other signer) is the approved one.
async fn approve_and_hear(signer: &TestSigner, id: &str, views: &mut Streaming<ProposalView>) {
    approver(signer)
        .await
        .decide(approve(id, Delivery::Handoff))
        .await
        .unwrap();
    assert_eq!(next(views).await.status(), ProposalStatus::Approved);
}

/// The ids of a pending list.
fn ids(list: &ListPendingResponse) -> Vec<&str> {
    list.proposals.iter().map(|p| p.id.as_str()).collect()
}

/// The server processes of `db`'s listeners that sent their `LISTEN`,
/// once there are `listeners` of them and none is in `old`.
async fn listening(db: &TempPgDatabase, listeners: usize, old: &[i32]) -> Vec<i32> {
    let mut admin = PgConnection::connect(db.url()).await.unwrap();
    let deadline = tokio::time::Instant::now() + WATCH_PATIENCE;
    loop {
        let now: Vec<i32> = sqlx::query_scalar(
            "SELECT pid FROM pg_stat_activity
             WHERE datname = current_database() AND application_name = $1
               AND query LIKE 'LISTEN%'",
        )
        .bind(CHANGE_LISTENER_APPLICATION)
        .fetch_all(&mut admin)
        .await
        .unwrap();
        if now.len() == listeners && now.iter().all(|pid| !old.contains(pid)) {
            return now;
        }
        assert!(tokio::time::Instant::now() < deadline, "{now:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Ends the server processes `pids`.
async fn end(db: &TempPgDatabase, pids: &[i32]) {
    let mut admin = PgConnection::connect(db.url()).await.unwrap();
    for pid in pids {
        let ended: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
            .bind(pid)
            .fetch_one(&mut admin)
            .await
            .unwrap();
        assert!(ended);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_through_one_signer_hears_what_is_proposed_and_decided_through_the_other() {
    let db = TempPgDatabase::create().await.unwrap();
    let (a, b) = two_signers(&db).await;
    let mut pending_on_b = approver(&b)
        .await
        .watch_pending(WatchPendingRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(next(&mut pending_on_b).await.proposals.is_empty());

    // Proposed through A: B's pending list has it.
    let proposal = propose(&mut head(&a).await).await;
    assert_eq!(ids(&next(&mut pending_on_b).await), [proposal.id.as_str()]);

    // Decided through A: B's watch of the proposal hears the decision and
    // ends, and B's pending list is empty again.
    let mut views_on_b = watch_pending_proposal(&b, &proposal.id).await;
    approve_and_hear(&a, &proposal.id, &mut views_on_b).await;
    assert!(views_on_b.message().await.unwrap().is_none(), "it ends");
    assert!(next(&mut pending_on_b).await.proposals.is_empty());

    // And the other way: decided through B, heard through A.
    let proposal = propose(&mut head(&b).await).await;
    let mut views_on_a = watch_pending_proposal(&a, &proposal.id).await;
    approve_and_hear(&b, &proposal.id, &mut views_on_a).await;
    b.stop().await.unwrap();
    a.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_hears_the_other_signer_after_the_listening_connection_was_ended() {
    let db = TempPgDatabase::create().await.unwrap();
    let (a, b) = two_signers(&db).await;
    let proposal = propose(&mut head(&a).await).await;
    let mut views_on_b = watch_pending_proposal(&b, &proposal.id).await;
    // Both listeners ended, and listening again on new connections: what
    // follows is heard through a notification.
    let first = listening(&db, 2, &[]).await;
    end(&db, &first).await;
    let second = listening(&db, 2, &first).await;
    approve_and_hear(&a, &proposal.id, &mut views_on_b).await;

    // Ended while a watch waits, and a decision made at once: heard
    // either through the notification or through the reading again that
    // follows the reconnection, never lost.
    let proposal = propose(&mut head(&a).await).await;
    let mut views_on_b = watch_pending_proposal(&b, &proposal.id).await;
    end(&db, &second).await;
    approve_and_hear(&a, &proposal.id, &mut views_on_b).await;
    b.stop().await.unwrap();
    a.stop().await.unwrap();
}

/// A `countersign-signer serve` process of `home`; its address, from the
/// ready line.
fn serve(home: &countersign_identity::Home) -> (std::process::Child, String) {
    let (child, mut stderr) = spawn_serve(env!("CARGO_BIN_EXE_countersign-signer"), home);
    let line = ready_line(&mut stderr);
    // The rest of its log, read so that it never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    (child, listening_on(&line).0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_signer_processes_of_one_database_carry_a_decision_to_each_others_watches() {
    use countersign_identity::Role;
    let db = TempPgDatabase::create().await.unwrap();
    let (_dir, home) = process_home();
    std::fs::remove_file(home.config_path()).unwrap();
    countersign_identity::files::write_private_new(
        &home.config_path(),
        format!(
            "[signer]\naddr = \"127.0.0.1:0\"\n[ledger]\nurl = \"{}\"\n",
            db.url()
        )
        .as_bytes(),
    )
    .unwrap();
    let (a, addr_a) = serve(&home);
    let (b, addr_b) = serve(&home);

    let proposal = propose(&mut process_client(&addr_a, &home, Role::Head).await).await;
    let client_of_b = process_client(&addr_b, &home, Role::Head).await;
    let mut views_on_b = watch_past_pending(client_of_b, &proposal.id).await;
    process_client(&addr_a, &home, Role::Approver)
        .await
        .decide(approve(&proposal.id, Delivery::Handoff))
        .await
        .unwrap();
    assert_eq!(
        next(&mut views_on_b).await.status(),
        ProposalStatus::Approved
    );

    stop_with_sigterm(b).await;
    stop_with_sigterm(a).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_nobody_announced_still_reaches_the_other_signers_watch() {
    let db = TempPgDatabase::create().await.unwrap();
    let (a, b) = two_signers(&db).await;
    // Both listen (and their first "anything", said on connecting, is
    // behind them) before the watch opens.
    listening(&db, 2, &[]).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let id = propose(&mut head(&a).await).await.id;
    let mut views = watch_pending_proposal(&b, &id).await;
    // A writes the approval and dies before its NOTIFY: written through
    // the ledger alone, announced to nobody.
    a.record_unoffered_direct_approval(&id).await.unwrap();
    // Nothing announced it: the watch hears nothing at once.
    assert!(
        tokio::time::timeout(Duration::from_millis(300), views.message())
            .await
            .is_err()
    );
    // B's sweep sees the ledger's events moved and its watch reads again.
    let view = tokio::time::timeout(
        countersign_signer::SWEEP_EVERY + WATCH_PATIENCE,
        views.message(),
    )
    .await
    .expect("heard within one sweep")
    .unwrap()
    .expect("the stream goes on");
    assert_eq!(view.status(), ProposalStatus::Approved);
}
