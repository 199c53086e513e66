//! The heads' side: consuming a verified proof once, replay, revocation,
//! concurrency (tasks and two ledger instances on one file) and rollback.
#![allow(clippy::unwrap_used)]

mod common;

use common::Kind;

use common::{PRINCIPAL, TestLedger, approve, create_schedule, issue, verified};
use countersign_ledger::{
    ConsumeStart, DispositionStatus, EffectOutcome, Ledger, LedgerError, LedgerRefusal,
    ProposalStatus, RevokeOutcome,
};
use serde_json::json;

fn fresh(start: ConsumeStart) -> countersign_ledger::Intent {
    match start {
        ConsumeStart::Fresh(intent) => intent,
        ConsumeStart::Replay(d) => panic!("expected a fresh intent, got replay {d:?}"),
    }
}

async fn consumed_nonces(t: &TestLedger) -> i64 {
    t.count("consumed_nonces").await
}

on_both_backends!(full_lifecycle_from_proposal_to_applied);
async fn full_lifecycle_from_proposal_to_applied(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    let token = approve(&t.ledger, &p, 1).await;

    let intent = fresh(
        t.ledger
            .begin_consume(&verified(&p, &token), common::NO_LEASE)
            .await
            .unwrap(),
    );
    assert_eq!(intent.proposal_id(), p.id);
    assert_eq!(intent.arguments_json(), p.arguments_json);
    let status = t.ledger.proposal(&p.id).await.unwrap().unwrap().status;
    assert_eq!(status, ProposalStatus::Uncertain);
    assert_eq!(
        t.ledger.interrupted().await.unwrap(),
        vec![countersign_ledger::Interrupted {
            intent: intent.clone(),
            running: false
        }]
    );
    let pending = t.ledger.disposition(&p.id).await.unwrap().unwrap();
    assert_eq!(pending.status, DispositionStatus::Uncertain);

    let result = t.ledger.apply_builtin(&intent).await.unwrap();
    assert_eq!(result, json!({"name": "nightly", "state": "created"}));
    // Applied but not yet completed: still uncertain.
    let status = t.ledger.proposal(&p.id).await.unwrap().unwrap().status;
    assert_eq!(status, ProposalStatus::Uncertain);
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
        Err(LedgerError::AlreadyCompleted(p.id.to_string()))
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

on_both_backends!(a_replay_returns_the_recorded_disposition_and_never_applies_twice);
async fn a_replay_returns_the_recorded_disposition_and_never_applies_twice(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    let token = approve(&t.ledger, &p, 1).await;
    let intent = fresh(
        t.ledger
            .begin_consume(&verified(&p, &token), common::NO_LEASE)
            .await
            .unwrap(),
    );
    let result = t.ledger.apply_builtin(&intent).await.unwrap();
    let done = t
        .ledger
        .complete(&intent, &EffectOutcome::Applied { result })
        .await
        .unwrap();

    for _ in 0..3 {
        match t
            .ledger
            .begin_consume(&verified(&p, &token), common::NO_LEASE)
            .await
            .unwrap()
        {
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
    assert_eq!(
        t.ledger.state(PRINCIPAL, "schedules").await.unwrap().len(),
        1
    );
}

on_both_backends!(a_consumed_proof_without_completion_replays_as_uncertain);
async fn a_consumed_proof_without_completion_replays_as_uncertain(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    let token = approve(&t.ledger, &p, 1).await;
    fresh(
        t.ledger
            .begin_consume(&verified(&p, &token), common::NO_LEASE)
            .await
            .unwrap(),
    );
    match t
        .ledger
        .begin_consume(&verified(&p, &token), common::NO_LEASE)
        .await
        .unwrap()
    {
        ConsumeStart::Replay(d) => assert_eq!(d.status, DispositionStatus::Uncertain),
        ConsumeStart::Fresh(_) => panic!("consumed twice"),
    }
}

on_both_backends!(refuses_a_revoked_proof_and_applies_nothing);
async fn refuses_a_revoked_proof_and_applies_nothing(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    let token = approve(&t.ledger, &p, 1).await;
    assert_eq!(
        t.ledger.revoke(&p.id, PRINCIPAL, "no").await,
        Ok(RevokeOutcome::Revoked)
    );
    assert_eq!(
        t.ledger
            .begin_consume(&verified(&p, &token), common::NO_LEASE)
            .await,
        Err(LedgerError::Refused(LedgerRefusal::Revoked))
    );
    assert_eq!(consumed_nonces(&t).await, 0);
    assert_eq!(t.ledger.disposition(&p.id).await.unwrap(), None);
    assert!(
        t.ledger
            .state(PRINCIPAL, "schedules")
            .await
            .unwrap()
            .is_empty()
    );
    let status = t.ledger.proposal(&p.id).await.unwrap().unwrap().status;
    assert_eq!(status, ProposalStatus::Revoked);
}

on_both_backends!(revoking_a_consumed_proof_is_too_late);
async fn revoking_a_consumed_proof_is_too_late(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    let token = approve(&t.ledger, &p, 1).await;
    fresh(
        t.ledger
            .begin_consume(&verified(&p, &token), common::NO_LEASE)
            .await
            .unwrap(),
    );
    assert_eq!(
        t.ledger.revoke(&p.id, PRINCIPAL, "late").await,
        Ok(RevokeOutcome::AlreadyUsed)
    );
}

on_both_backends!(refuses_a_proof_for_an_unknown_proposal);
async fn refuses_a_proof_for_an_unknown_proposal(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    let (token, _) = issue(&p, 1, 300);
    assert_eq!(
        t.ledger
            .begin_consume(&verified(&p, &token), common::NO_LEASE)
            .await,
        Err(LedgerError::Refused(LedgerRefusal::UnknownProposal))
    );
}

on_both_backends!(refuses_a_genuine_proof_the_ledger_never_issued);
async fn refuses_a_genuine_proof_the_ledger_never_issued(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    approve(&t.ledger, &p, 1).await;
    let (other_token, _) = issue(&p, 2, 300);
    assert_eq!(
        t.ledger
            .begin_consume(&verified(&p, &other_token), common::NO_LEASE)
            .await,
        Err(LedgerError::Refused(LedgerRefusal::NotIssued))
    );
    assert_eq!(consumed_nonces(&t).await, 0);
}

on_both_backends!(refuses_claims_that_differ_from_the_recorded_proposal);
async fn refuses_claims_that_differ_from_the_recorded_proposal(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    t.ledger.insert_proposal(&p).await.unwrap();
    let forged = create_schedule(1, "something-else");
    let (token, _) = issue(&forged, 1, 300);
    assert_eq!(
        t.ledger
            .begin_consume(&verified(&forged, &token), common::NO_LEASE)
            .await,
        Err(LedgerError::Refused(LedgerRefusal::ProposalMismatch))
    );
}

on_both_backends!(refuses_a_session_other_than_the_issuance_binds);
async fn refuses_a_session_other_than_the_issuance_binds(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    t.ledger.insert_proposal(&p).await.unwrap();
    let (token, mut record) = issue(&p, 1, 300);
    record.session = "session-2".into();
    t.ledger.record_approval(&record).await.unwrap();
    assert_eq!(
        t.ledger
            .begin_consume(&verified(&p, &token), common::NO_LEASE)
            .await,
        Err(LedgerError::Refused(LedgerRefusal::ProposalMismatch))
    );
}

on_both_backends!(concurrent_consumers_in_two_processes_start_exactly_one_intent);
async fn concurrent_consumers_in_two_processes_start_exactly_one_intent(kind: Kind) {
    let t = TestLedger::on(kind).await;
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
        tasks.push(tokio::spawn(async move {
            ledger.begin_consume(&proof, common::NO_LEASE).await
        }));
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

on_both_backends!(a_failed_event_insert_rolls_back_the_nonce);
async fn a_failed_event_insert_rolls_back_the_nonce(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    let token = approve(&t.ledger, &p, 1).await;
    // Every intent event insert fails.
    t.inject_insert_failure("events", true).await;

    let err = t
        .ledger
        .begin_consume(&verified(&p, &token), common::NO_LEASE)
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

    t.inject_insert_failure("events", false).await;
    fresh(
        t.ledger
            .begin_consume(&verified(&p, &token), common::NO_LEASE)
            .await
            .unwrap(),
    );
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());
}

on_both_backends!(revocation_racing_consumption_never_lets_both_win);
async fn revocation_racing_consumption_never_lets_both_win(kind: Kind) {
    let t = TestLedger::on(kind).await;
    // A second ledger on the same database stands in for another process.
    let other = Ledger::open(&t.url).await.unwrap();
    let (mut consumed, mut revoked) = (0, 0);
    for n in 1..=30 {
        let p = create_schedule(n, &format!("s{n}"));
        let token = approve(&t.ledger, &p, n).await;
        let proof = verified(&p, &token);
        let consumer = t.ledger.clone();
        let consume =
            tokio::spawn(async move { consumer.begin_consume(&proof, common::NO_LEASE).await });
        let revoker = other.clone();
        let id = p.id.clone();
        let revoke = tokio::spawn(async move { revoker.revoke(&id, PRINCIPAL, "race").await });
        let (consume, revoke) = (consume.await.unwrap(), revoke.await.unwrap().unwrap());
        let status = t.ledger.proposal(&p.id).await.unwrap().unwrap().status;
        match (consume, revoke) {
            (Ok(ConsumeStart::Fresh(_)), RevokeOutcome::AlreadyUsed) => {
                assert_eq!(status, ProposalStatus::Uncertain);
                consumed += 1;
            }
            (Err(LedgerError::Refused(LedgerRefusal::Revoked)), RevokeOutcome::Revoked) => {
                assert_eq!(status, ProposalStatus::Revoked);
                revoked += 1;
            }
            other => panic!("round {n}: both or neither won: {other:?}"),
        }
    }
    assert_eq!(consumed + revoked, 30);
    assert_eq!(consumed_nonces(&t).await, consumed);
    assert_eq!(t.count("revocations").await, revoked);
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());
    eprintln!("{kind:?}: 30 races, consumption won {consumed}, revocation won {revoked}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_queue_held_past_the_busy_timeout_fails_closed_and_burns_nothing() {
    use rustix::fs::{FlockOperation, flock};
    let t = TestLedger::new().await;
    let p = create_schedule(1, "nightly");
    let token = approve(&t.ledger, &p, 1).await;
    // Another process's writer holds the queue (and never lets go).
    let mut lock_path = t.path().into_os_string();
    lock_path.push(".lock");
    let holder = std::fs::File::open(&lock_path).unwrap();
    flock(&holder, FlockOperation::LockExclusive).unwrap();

    let started = std::time::Instant::now();
    let err = t
        .ledger
        .begin_consume(&verified(&p, &token), common::NO_LEASE)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        LedgerError::Database("database is locked (writer queue timed out)".into())
    );
    assert!(started.elapsed() >= std::time::Duration::from_secs(4));
    assert_eq!(consumed_nonces(&t).await, 0);

    drop(holder);
    fresh(
        t.ledger
            .begin_consume(&verified(&p, &token), common::NO_LEASE)
            .await
            .unwrap(),
    );
    assert_eq!(consumed_nonces(&t).await, 1);
}
