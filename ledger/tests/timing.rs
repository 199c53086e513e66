//! Time inside the consume transaction: a proof that expires while its
//! consumption waits for the lock is refused by the database's clock, and
//! an intent's lease keeps a person's resolution from overtaking the head
//! still running the effect.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Kind, TestLedger, approve, create_schedule, issue, proposal, verified};
use countersign_ledger::{ConsumeStart, EffectOutcome, Interrupted, LedgerError, LedgerRefusal};
use serde_json::json;

on_both_backends!(a_proof_that_expires_before_its_consumption_commits_is_refused);
async fn a_proof_that_expires_before_its_consumption_commits_is_refused(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    t.ledger.insert_proposal(&p).await.unwrap();
    let (token, record) = issue(&p, 1, 2);
    t.ledger.record_approval(&record).await.unwrap();
    // Verified in time (the head's check), consumed after expiry: as if it
    // had waited for the write lock that long.
    let proof = verified(&p, &token);
    tokio::time::sleep(std::time::Duration::from_millis(3100)).await;
    assert_eq!(
        t.ledger.consume_builtin(&proof, "schedule.create").await,
        Err(LedgerError::Refused(LedgerRefusal::Expired))
    );
    assert_eq!(
        t.ledger.begin_consume(&proof, common::NO_LEASE).await,
        Err(LedgerError::Refused(LedgerRefusal::Expired))
    );
    for table in ["consumed_nonces", "intents", "completions", "state"] {
        assert_eq!(t.count(table).await, 0, "{table}");
    }
}

on_both_backends!(a_resolution_waits_for_the_lease_of_a_running_execution);
async fn a_resolution_waits_for_the_lease_of_a_running_execution(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = proposal(1, "demo.echo", json!({"message": "slow"}));
    let token = approve(&t.ledger, &p, 1).await;
    let ConsumeStart::Fresh(intent) = t
        .ledger
        .begin_consume(&verified(&p, &token), time::Duration::minutes(5))
        .await
        .unwrap()
    else {
        panic!("expected a fresh intent");
    };
    assert_eq!(
        t.ledger.interrupted().await.unwrap(),
        vec![Interrupted {
            intent: intent.clone(),
            running: true
        }]
    );
    // A person cannot record "not applied" while the head may still run it.
    match t
        .ledger
        .resolve_uncertain(&p.id, false, "human:cli:x")
        .await
    {
        Err(LedgerError::StillRunning(id, _)) => assert_eq!(id, p.id),
        other => panic!("expected StillRunning, got {other:?}"),
    }
    assert_eq!(t.count("completions").await, 0);
    // The head's own completion is what counts.
    let done = t
        .ledger
        .complete(
            &intent,
            &EffectOutcome::Applied {
                result: json!({"exit": 0}),
            },
        )
        .await
        .unwrap();
    assert_eq!(done.status, countersign_ledger::DispositionStatus::Applied);
    assert!(t.ledger.interrupted().await.unwrap().is_empty());
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());
}
