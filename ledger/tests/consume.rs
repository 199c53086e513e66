//! The heads' side: consuming a verified proof once, replay, revocation,
//! concurrency (tasks and two ledger instances on one file) and rollback.
#![allow(clippy::unwrap_used)]

mod common;

use common::{PRINCIPAL, TestLedger, approve, create_schedule, issue, verified};
use countersign_ledger::{
    ConsumeStart, DispositionStatus, EffectOutcome, Ledger, LedgerError, LedgerRefusal,
    ProposalStatus, RevokeOutcome,
};
use serde_json::json;
use sqlx::{Connection as _, Row as _};

fn fresh(start: ConsumeStart) -> countersign_ledger::Intent {
    match start {
        ConsumeStart::Fresh(intent) => intent,
        ConsumeStart::Replay(d) => panic!("expected a fresh intent, got replay {d:?}"),
    }
}

async fn consumed_nonces(t: &TestLedger) -> i64 {
    let mut raw = t.raw().await;
    let row = sqlx::query("SELECT COUNT(*) AS n FROM consumed_nonces")
        .fetch_one(&mut raw)
        .await
        .unwrap();
    let n = row.try_get("n").unwrap();
    raw.close().await.unwrap();
    n
}

#[tokio::test]
async fn full_lifecycle_from_proposal_to_applied() {
    let t = TestLedger::new().await;
    let p = create_schedule(1, "nightly");
    let token = approve(&t.ledger, &p, 1).await;

    let intent = fresh(t.ledger.begin_consume(&verified(&p, &token)).await.unwrap());
    assert_eq!(intent.proposal_id, p.id);
    assert_eq!(intent.arguments_json, p.arguments_json);
    let status = t.ledger.proposal(&p.id).await.unwrap().unwrap().status;
    assert_eq!(status, ProposalStatus::Uncertain);
    assert_eq!(t.ledger.interrupted().await.unwrap(), vec![intent.clone()]);
    let pending = t.ledger.disposition(&p.id).await.unwrap().unwrap();
    assert_eq!(pending.status, DispositionStatus::Uncertain);

    let result = t.ledger.apply_builtin(&intent).await.unwrap();
    assert_eq!(result, json!({"name": "nightly", "state": "created"}));
    assert_eq!(
        t.ledger.builtin_applied(&intent.nonce).await.unwrap(),
        Some(result.clone())
    );
    let done = t
        .ledger
        .complete(
            &intent,
            &EffectOutcome::Applied {
                result: result.clone(),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (done.status, &done.result),
        (DispositionStatus::Applied, &result)
    );
    assert!(done.completed_at.is_some());
    let status = t.ledger.proposal(&p.id).await.unwrap().unwrap().status;
    assert_eq!(status, ProposalStatus::Applied);
    assert!(t.ledger.interrupted().await.unwrap().is_empty());
    assert_eq!(
        t.ledger
            .complete(&intent, &EffectOutcome::Applied { result })
            .await,
        Err(LedgerError::AlreadyCompleted(p.id.clone()))
    );

    let kinds: Vec<String> = t
        .ledger
        .events()
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        kinds,
        [
            "proposed",
            "approved",
            "intent",
            "effect_applied",
            "completed"
        ]
    );
    let report = t.ledger.verify_chain().await.unwrap();
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.events, 5);
}

#[tokio::test]
async fn a_replay_returns_the_recorded_disposition_and_never_applies_twice() {
    let t = TestLedger::new().await;
    let p = create_schedule(1, "nightly");
    let token = approve(&t.ledger, &p, 1).await;
    let intent = fresh(t.ledger.begin_consume(&verified(&p, &token)).await.unwrap());
    let result = t.ledger.apply_builtin(&intent).await.unwrap();
    let done = t
        .ledger
        .complete(&intent, &EffectOutcome::Applied { result })
        .await
        .unwrap();

    for _ in 0..3 {
        match t.ledger.begin_consume(&verified(&p, &token)).await.unwrap() {
            ConsumeStart::Replay(d) => assert_eq!(d, done),
            ConsumeStart::Fresh(_) => panic!("a consumed proof started a second intent"),
        }
        // A retried effect returns the recorded result and changes nothing.
        assert_eq!(t.ledger.apply_builtin(&intent).await.unwrap(), done.result);
    }
    let events = t.ledger.events().await.unwrap();
    assert_eq!(
        events.iter().filter(|e| e.kind == "effect_applied").count(),
        1
    );
    assert_eq!(events.iter().filter(|e| e.kind == "intent").count(), 1);
    assert_eq!(t.ledger.state("schedules").await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_consumed_proof_without_completion_replays_as_uncertain() {
    let t = TestLedger::new().await;
    let p = create_schedule(1, "nightly");
    let token = approve(&t.ledger, &p, 1).await;
    fresh(t.ledger.begin_consume(&verified(&p, &token)).await.unwrap());
    match t.ledger.begin_consume(&verified(&p, &token)).await.unwrap() {
        ConsumeStart::Replay(d) => assert_eq!(d.status, DispositionStatus::Uncertain),
        ConsumeStart::Fresh(_) => panic!("consumed twice"),
    }
}

#[tokio::test]
async fn refuses_a_revoked_proof_and_applies_nothing() {
    let t = TestLedger::new().await;
    let p = create_schedule(1, "nightly");
    let token = approve(&t.ledger, &p, 1).await;
    assert_eq!(
        t.ledger.revoke(&p.id, PRINCIPAL, "no").await,
        Ok(RevokeOutcome::Revoked)
    );
    assert_eq!(
        t.ledger.begin_consume(&verified(&p, &token)).await,
        Err(LedgerError::Refused(LedgerRefusal::Revoked))
    );
    assert_eq!(consumed_nonces(&t).await, 0);
    assert_eq!(t.ledger.disposition(&p.id).await.unwrap(), None);
    assert!(t.ledger.state("schedules").await.unwrap().is_empty());
    let status = t.ledger.proposal(&p.id).await.unwrap().unwrap().status;
    assert_eq!(status, ProposalStatus::Revoked);
}

#[tokio::test]
async fn revoking_a_consumed_proof_is_too_late() {
    let t = TestLedger::new().await;
    let p = create_schedule(1, "nightly");
    let token = approve(&t.ledger, &p, 1).await;
    fresh(t.ledger.begin_consume(&verified(&p, &token)).await.unwrap());
    assert_eq!(
        t.ledger.revoke(&p.id, PRINCIPAL, "late").await,
        Ok(RevokeOutcome::AlreadyUsed)
    );
}

#[tokio::test]
async fn refuses_a_proof_for_an_unknown_proposal() {
    let t = TestLedger::new().await;
    let p = create_schedule(1, "nightly");
    let (token, _) = issue(&p, 1, 300);
    assert_eq!(
        t.ledger.begin_consume(&verified(&p, &token)).await,
        Err(LedgerError::Refused(LedgerRefusal::UnknownProposal))
    );
}

#[tokio::test]
async fn refuses_a_genuine_proof_the_ledger_never_issued() {
    let t = TestLedger::new().await;
    let p = create_schedule(1, "nightly");
    approve(&t.ledger, &p, 1).await;
    let (other_token, _) = issue(&p, 2, 300);
    assert_eq!(
        t.ledger.begin_consume(&verified(&p, &other_token)).await,
        Err(LedgerError::Refused(LedgerRefusal::NotIssued))
    );
    assert_eq!(consumed_nonces(&t).await, 0);
}

#[tokio::test]
async fn refuses_claims_that_differ_from_the_recorded_proposal() {
    let t = TestLedger::new().await;
    let p = create_schedule(1, "nightly");
    t.ledger.insert_proposal(&p).await.unwrap();
    let forged = create_schedule(1, "something-else");
    let (token, _) = issue(&forged, 1, 300);
    assert_eq!(
        t.ledger.begin_consume(&verified(&forged, &token)).await,
        Err(LedgerError::Refused(LedgerRefusal::ProposalMismatch))
    );
}

#[tokio::test]
async fn refuses_a_session_other_than_the_issuance_binds() {
    let t = TestLedger::new().await;
    let p = create_schedule(1, "nightly");
    t.ledger.insert_proposal(&p).await.unwrap();
    let (token, mut record) = issue(&p, 1, 300);
    record.session = "session-2".into();
    t.ledger.record_approval(&record).await.unwrap();
    assert_eq!(
        t.ledger.begin_consume(&verified(&p, &token)).await,
        Err(LedgerError::Refused(LedgerRefusal::ProposalMismatch))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_consumers_in_two_processes_start_exactly_one_intent() {
    let t = TestLedger::new().await;
    let p = create_schedule(1, "nightly");
    let token = approve(&t.ledger, &p, 1).await;
    // A second ledger on the same file stands in for a second process.
    let second = Ledger::open(&t.url).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..24 {
        let ledger = if i % 2 == 0 {
            t.ledger.clone()
        } else {
            second.clone()
        };
        let proof = verified(&p, &token);
        tasks.push(tokio::spawn(
            async move { ledger.begin_consume(&proof).await },
        ));
    }
    let mut fresh_count = 0;
    for task in tasks {
        match task.await.unwrap().unwrap() {
            ConsumeStart::Fresh(_) => fresh_count += 1,
            ConsumeStart::Replay(d) => assert_eq!(d.status, DispositionStatus::Uncertain),
        }
    }
    assert_eq!(fresh_count, 1);
    assert_eq!(consumed_nonces(&t).await, 1);
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());
}

#[tokio::test]
async fn a_failed_event_insert_rolls_back_the_nonce() {
    let t = TestLedger::new().await;
    let p = create_schedule(1, "nightly");
    let token = approve(&t.ledger, &p, 1).await;
    let mut raw = t.raw().await;
    sqlx::query(
        "CREATE TRIGGER inject_failure BEFORE INSERT ON events WHEN NEW.kind = 'intent'
         BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
    )
    .execute(&mut raw)
    .await
    .unwrap();

    let err = t
        .ledger
        .begin_consume(&verified(&p, &token))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, LedgerError::Database(m) if m.contains("injected failure")),
        "{err:?}"
    );
    assert_eq!(consumed_nonces(&t).await, 0);
    assert!(t.ledger.interrupted().await.unwrap().is_empty());
    let status = t.ledger.proposal(&p.id).await.unwrap().unwrap().status;
    assert_eq!(status, ProposalStatus::Approved);

    sqlx::query("DROP TRIGGER inject_failure")
        .execute(&mut raw)
        .await
        .unwrap();
    raw.close().await.unwrap();
    fresh(t.ledger.begin_consume(&verified(&p, &token)).await.unwrap());
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());
}
