//! A ledger opened for one command (`Ledger::open_for_one_command`: on
//! SQLite one connection, which the reads go through too) consumes once,
//! answers replays and races other processes exactly as a ledger opened to
//! serve does. Its refusals of a schema it does not know are in `open.rs`.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{Kind, TestLedger, approve, create_schedule, verified};
use countersign_ledger::{Consumed, DispositionStatus, Ledger, Proposal, ProposalStatus};

#[tokio::test]
async fn opens_a_new_file_with_the_whole_schema_applied() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("ledger.db").display());
    let ledger = Ledger::open_for_one_command(&url).await.unwrap();
    let status = Ledger::schema_status(&url).await.unwrap();
    assert_eq!(status.applied, status.expected);
    assert!(ledger.verify_chain().await.unwrap().is_intact());
}

/// A ledger on `kind` with one approved `schedule.create` proposal, and
/// its proof.
async fn approved(kind: Kind) -> (TestLedger, Proposal, String) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    let token = approve(&t.ledger, &p, 1).await;
    (t, p, token)
}

on_both_backends!(consumes_once_and_reads_what_it_wrote);
async fn consumes_once_and_reads_what_it_wrote(kind: Kind) {
    let (t, p, token) = approved(kind).await;
    let ledger = Ledger::open_for_one_command(&t.url).await.unwrap();
    let proof = verified(&p, &token);
    let before = ledger.proposal(&p.id).await.unwrap().unwrap();
    assert_eq!(before.status, ProposalStatus::Approved);

    let Consumed::Completed(done) = ledger
        .consume_builtin(&proof, "schedule.create")
        .await
        .unwrap()
    else {
        panic!("expected a completed consumption");
    };
    assert_eq!(done.status, DispositionStatus::Applied);
    let after = ledger.proposal(&p.id).await.unwrap().unwrap();
    assert_eq!(after.status, ProposalStatus::Applied);
    assert_eq!(ledger.disposition(&p.id).await.unwrap(), Some(done.clone()));

    // Presented again, to this ledger and to one another process opens.
    assert_eq!(
        ledger
            .consume_builtin(&proof, "schedule.create")
            .await
            .unwrap(),
        Consumed::Replay(done.clone())
    );
    let again = Ledger::open_for_one_command(&t.url).await.unwrap();
    assert_eq!(
        again
            .consume_builtin(&proof, "schedule.create")
            .await
            .unwrap(),
        Consumed::Replay(done)
    );
    assert_eq!(t.count("consumed_nonces").await, 1);
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());
}

on_both_backends!(one_command_ledgers_racing_a_serving_one_consume_exactly_once);
async fn one_command_ledgers_racing_a_serving_one_consume_exactly_once(kind: Kind) {
    let (t, p, token) = approved(kind).await;
    // Each one-command ledger stands in for a `countersign exec` process;
    // the ledger of `t` for a serving head on the same file.
    let mut ledgers = vec![t.ledger.clone()];
    for _ in 0..5 {
        ledgers.push(Ledger::open_for_one_command(&t.url).await.unwrap());
    }
    let mut tasks = Vec::new();
    for i in 0..24 {
        let ledger = ledgers[i % ledgers.len()].clone();
        let proof = verified(&p, &token);
        tasks.push(tokio::spawn(async move {
            ledger.consume_builtin(&proof, "schedule.create").await
        }));
    }
    let mut completed = 0;
    for task in tasks {
        match task.await.unwrap().unwrap() {
            Consumed::Completed(d) => {
                assert_eq!(d.status, DispositionStatus::Applied);
                completed += 1;
            }
            Consumed::Replay(d) => assert_eq!(d.status, DispositionStatus::Applied),
        }
    }
    assert_eq!(completed, 1);
    assert_eq!(t.count("consumed_nonces").await, 1);
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());
}

on_both_backends!(reads_during_a_write_wait_for_it_and_never_deadlock);
async fn reads_during_a_write_wait_for_it_and_never_deadlock(kind: Kind) {
    let (t, p, token) = approved(kind).await;
    let ledger = Ledger::open_for_one_command(&t.url).await.unwrap();
    let proof = verified(&p, &token);
    let write = {
        let ledger = ledger.clone();
        tokio::spawn(async move { ledger.consume_builtin(&proof, "schedule.create").await })
    };
    let reads: Vec<_> = (0..8)
        .map(|_| {
            let ledger = ledger.clone();
            let id = p.id.clone();
            tokio::spawn(async move { ledger.proposal(&id).await })
        })
        .collect();
    // On SQLite the writer connection is the only one: every read takes it
    // before or after the write transaction, never waiting on itself.
    let all = async {
        for read in reads {
            let status = read.await.unwrap().unwrap().unwrap().status;
            assert!(
                matches!(status, ProposalStatus::Approved | ProposalStatus::Applied),
                "{status:?}"
            );
        }
        write.await.unwrap().unwrap()
    };
    let done = tokio::time::timeout(Duration::from_secs(10), all)
        .await
        .expect("reads and the write finish");
    assert!(matches!(done, Consumed::Completed(_)));
}
