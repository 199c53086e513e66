//! Builtin schedule effects through the ledger, failures that change
//! nothing, and a person's resolution of an uncertain intent.
#![allow(clippy::unwrap_used)]

mod common;

use common::Kind;

use common::{PRINCIPAL, TestLedger, approve, proposal, verified};
use countersign_ledger::testing::{IntentField, altered_intent};
use countersign_ledger::{
    ConsumeStart, Consumed, DispositionStatus, EffectFailure, EffectOutcome, Intent, Ledger,
    LedgerError, LedgerRefusal, ProposalStatus, SCHEDULES_NAMESPACE,
};
use serde_json::{Value, json};

/// Propose, approve and consume `operation(args)` as proposal `n`.
async fn consume(ledger: &Ledger, n: u32, operation: &str, args: Value) -> Intent {
    common::consumed(ledger, n, operation, args).await
}

/// A consumed `schedule.create` of schedule "a".
async fn create_a(ledger: &Ledger) -> Intent {
    consume(
        ledger,
        1,
        "schedule.create",
        json!({"name": "a", "cron": "c"}),
    )
    .await
}

/// Consume, apply and complete; the effect's result or failure.
async fn run(
    ledger: &Ledger,
    n: u32,
    operation: &str,
    args: Value,
) -> Result<Value, EffectFailure> {
    let intent = consume(ledger, n, operation, args).await;
    let outcome = ledger.apply_builtin(&intent).await;
    let record = match &outcome {
        Ok(result) => EffectOutcome::Applied {
            result: result.clone(),
        },
        Err(e) => EffectOutcome::Failed {
            error: e.to_string(),
            result: Value::Null,
        },
    };
    ledger.complete(&intent, &record).await.unwrap();
    outcome
}

on_both_backends!(schedules_move_through_their_states);
async fn schedules_move_through_their_states(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let l = &t.ledger;
    let name = json!({"name": "nightly"});
    let create = json!({"name": "nightly", "cron": "0 3 * * *", "description": "backup"});
    run(l, 1, "schedule.create", create).await.unwrap();
    let stored = json!({"name": "nightly", "cron": "0 3 * * *", "description": "backup", "state": "created"});
    assert_eq!(
        l.state(PRINCIPAL, "schedules").await.unwrap(),
        vec![("nightly".to_string(), stored)]
    );
    for (n, op, state) in [
        (2, "schedule.activate", "active"),
        (3, "schedule.pause", "paused"),
        (4, "schedule.resume", "active"),
    ] {
        let result = run(l, n, op, name.clone()).await.unwrap();
        assert_eq!(result, json!({"name": "nightly", "state": state}));
        assert_eq!(
            l.state(PRINCIPAL, "schedules").await.unwrap()[0].1["state"],
            state
        );
    }
    let result = run(l, 5, "schedule.delete", name).await.unwrap();
    assert_eq!(result, json!({"name": "nightly", "deleted": true}));
    assert!(l.state(PRINCIPAL, "schedules").await.unwrap().is_empty());
    assert!(l.verify_chain().await.unwrap().is_intact());
}

on_both_backends!(a_refused_transition_changes_nothing_and_records_failed);
async fn a_refused_transition_changes_nothing_and_records_failed(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let l = &t.ledger;
    run(
        l,
        1,
        "schedule.create",
        json!({"name": "n", "cron": "* * * * *"}),
    )
    .await
    .unwrap();
    let before = l.state(PRINCIPAL, "schedules").await.unwrap();
    let err = run(l, 2, "schedule.pause", json!({"name": "n"}))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        EffectFailure::Transition(
            "schedule \"n\" is created; schedule.pause needs it active".into()
        )
    );
    let err = run(l, 3, "schedule.create", json!({"name": "n", "cron": "x"}))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        EffectFailure::Transition("schedule \"n\" already exists".into())
    );
    assert_eq!(l.state(PRINCIPAL, "schedules").await.unwrap(), before);
    let failed = l
        .proposal(&proposal(2, "schedule.pause", json!({})).id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(failed.status, ProposalStatus::Failed);
    assert_eq!(
        failed.reason.as_deref(),
        Some("schedule \"n\" is created; schedule.pause needs it active")
    );
    let events = l.events().await.unwrap();
    assert_eq!(
        events.iter().filter(|e| e.kind == "effect_applied").count(),
        1
    );
}

on_both_backends!(the_effect_uses_the_recorded_arguments_not_the_callers_copy);
async fn the_effect_uses_the_recorded_arguments_not_the_callers_copy(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let intent = create_a(&t.ledger).await;
    let evil = json!({"name": "evil", "cron": "c"}).to_string();
    let altered = altered_intent(&intent, IntentField::ArgumentsJson, &evil);
    assert_eq!(
        t.ledger.apply_builtin(&altered).await,
        Err(EffectFailure::NotTheRecordedIntent)
    );
    t.ledger.apply_builtin(&intent).await.unwrap();
    assert_eq!(common::schedule_keys(&t.ledger).await, ["a"]);
}

on_both_backends!(refuses_to_apply_for_an_intent_it_never_recorded);
async fn refuses_to_apply_for_an_intent_it_never_recorded(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let intent = create_a(&t.ledger).await;
    let intent = altered_intent(&intent, IntentField::Nonce, &format!("{:0>42}A", 99));
    assert_eq!(
        t.ledger.apply_builtin(&intent).await,
        Err(EffectFailure::UnknownIntent)
    );
    assert!(
        t.ledger
            .state(PRINCIPAL, "schedules")
            .await
            .unwrap()
            .is_empty()
    );
}

on_both_backends!(a_person_resolves_an_uncertain_intent_once);
async fn a_person_resolves_an_uncertain_intent_once(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let l = &t.ledger;
    let intent = create_a(l).await;
    assert_eq!(
        l.interrupted().await.unwrap(),
        vec![countersign_ledger::Interrupted {
            intent: intent.clone(),
            running: false
        }]
    );
    let resolved = l
        .resolve_uncertain(intent.proposal_id(), false, "alice")
        .await
        .unwrap();
    assert_eq!(resolved.status, DispositionStatus::Failed);
    assert!(l.interrupted().await.unwrap().is_empty());
    assert_eq!(
        l.resolve_uncertain(intent.proposal_id(), true, "alice")
            .await,
        Err(LedgerError::NotUncertain(intent.proposal_id().to_string()))
    );
    assert_eq!(
        l.apply_builtin(&intent).await,
        Err(EffectFailure::AlreadyCompleted)
    );
    let last = l.events().await.unwrap().pop().unwrap();
    assert_eq!(
        (last.kind.as_str(), last.actor.as_str()),
        ("resolved", "alice")
    );
    assert_eq!(
        l.resolve_uncertain("prop_never", true, "alice").await,
        Err(LedgerError::NotUncertain("prop_never".into()))
    );
}

on_both_backends!(a_builtin_effect_and_its_completion_commit_together);
async fn a_builtin_effect_and_its_completion_commit_together(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let intent = create_a(&t.ledger).await;
    // The completion cannot be written: the effect is rolled back with it.
    t.inject_insert_failure("completions", true).await;
    let err = t
        .ledger
        .apply_builtin_and_complete(&intent)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, LedgerError::Database(m) if m.contains("injected failure")),
        "{err:?}"
    );
    assert_eq!(
        t.ledger
            .state(PRINCIPAL, SCHEDULES_NAMESPACE)
            .await
            .unwrap(),
        vec![]
    );
    assert_eq!(t.count("effect_applied").await, 0);
    assert_eq!(
        t.ledger.interrupted().await.unwrap(),
        vec![countersign_ledger::Interrupted {
            intent: intent.clone(),
            running: false
        }]
    );

    t.inject_insert_failure("completions", false).await;
    let (outcome, disposition) = t.ledger.apply_builtin_and_complete(&intent).await.unwrap();
    assert!(
        matches!(outcome, EffectOutcome::Applied { .. }),
        "{outcome:?}"
    );
    assert_eq!(disposition.status, DispositionStatus::Applied);
    assert_eq!(
        t.ledger
            .state(PRINCIPAL, SCHEDULES_NAMESPACE)
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(t.ledger.interrupted().await.unwrap().is_empty());

    // A refused transition records a failed completion and changes nothing.
    let again = consume(
        &t.ledger,
        2,
        "schedule.create",
        json!({"name": "a", "cron": "c"}),
    )
    .await;
    let before = t
        .ledger
        .state(PRINCIPAL, SCHEDULES_NAMESPACE)
        .await
        .unwrap();
    let (outcome, disposition) = t.ledger.apply_builtin_and_complete(&again).await.unwrap();
    assert!(
        matches!(outcome, EffectOutcome::Failed { .. }),
        "{outcome:?}"
    );
    assert_eq!(disposition.status, DispositionStatus::Failed);
    assert_eq!(
        t.ledger
            .state(PRINCIPAL, SCHEDULES_NAMESPACE)
            .await
            .unwrap(),
        before
    );
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());
}

on_both_backends!(a_builtin_is_consumed_applied_and_completed_in_one_transaction);
async fn a_builtin_is_consumed_applied_and_completed_in_one_transaction(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let l = &t.ledger;
    let p = proposal(1, "schedule.create", json!({"name": "a", "cron": "c"}));
    let token = approve(l, &p, 1).await;
    let proof = verified(&p, &token);
    // Only the transition the proof names, and nothing written otherwise.
    assert_eq!(
        l.consume_builtin(&proof, "schedule.delete").await,
        Err(LedgerError::Refused(LedgerRefusal::ProposalMismatch))
    );
    assert_eq!(t.count("consumed_nonces").await, 0);
    let Consumed::Completed(done) = l.consume_builtin(&proof, "schedule.create").await.unwrap()
    else {
        panic!("expected a completed consumption");
    };
    assert_eq!(done.status, DispositionStatus::Applied);
    assert_eq!(done.result, json!({"name": "a", "state": "created"}));
    assert!(done.completed_at.is_some());
    assert_eq!(
        l.state(PRINCIPAL, SCHEDULES_NAMESPACE).await.unwrap().len(),
        1
    );
    assert!(l.interrupted().await.unwrap().is_empty());
    let kinds: Vec<String> = l
        .events()
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .filter(|k| k != "proposed" && k != "approved")
        .collect();
    assert_eq!(kinds, ["intent", "effect_applied", "completed"]);

    // Presented again: the recorded disposition, nothing applied twice.
    assert_eq!(
        l.consume_builtin(&proof, "schedule.create").await.unwrap(),
        Consumed::Replay(done.clone())
    );
    assert_eq!(
        l.begin_consume(&proof, common::NO_LEASE).await.unwrap(),
        ConsumeStart::Replay(done)
    );
    assert_eq!(t.count("effect_applied").await, 1);

    // A refused transition consumes the proof and records `failed`, in the
    // same single transaction, changing nothing in the store.
    let q = proposal(2, "schedule.create", json!({"name": "a", "cron": "x"}));
    let token = approve(l, &q, 2).await;
    let before = l.state(PRINCIPAL, SCHEDULES_NAMESPACE).await.unwrap();
    let Consumed::Completed(failed) = l
        .consume_builtin(&verified(&q, &token), "schedule.create")
        .await
        .unwrap()
    else {
        panic!("expected a completed consumption");
    };
    assert_eq!(failed.status, DispositionStatus::Failed);
    assert_eq!(
        failed.error.as_deref(),
        Some("schedule \"a\" already exists")
    );
    assert_eq!(
        l.state(PRINCIPAL, SCHEDULES_NAMESPACE).await.unwrap(),
        before
    );
    assert_eq!(t.count("consumed_nonces").await, 2);
    assert!(l.verify_chain().await.unwrap().is_intact());
}

on_both_backends!(every_transition_in_one_transaction_is_stored_as_returned);
async fn every_transition_in_one_transaction_is_stored_as_returned(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let l = &t.ledger;
    let name = json!({"name": "nightly"});
    let steps = [
        (
            "schedule.create",
            json!({"name": "nightly", "cron": "0 3 * * *"}),
            Some("created"),
        ),
        ("schedule.activate", name.clone(), Some("active")),
        ("schedule.pause", name.clone(), Some("paused")),
        ("schedule.resume", name.clone(), Some("active")),
        ("schedule.delete", name.clone(), None),
    ];
    for (n, (operation, args, state)) in (1..).zip(steps) {
        let p = proposal(n, operation, args);
        let token = approve(l, &p, n).await;
        let Consumed::Completed(done) = l
            .consume_builtin(&verified(&p, &token), operation)
            .await
            .unwrap()
        else {
            panic!("{operation}: expected a completed consumption");
        };
        assert_eq!(done.status, DispositionStatus::Applied, "{operation}");
        // What the one transaction returned is exactly what it stored.
        assert_eq!(
            l.disposition(&p.id).await.unwrap(),
            Some(done),
            "{operation}"
        );
        let stored = l.state(PRINCIPAL, SCHEDULES_NAMESPACE).await.unwrap();
        match state {
            Some(state) => assert_eq!(stored[0].1["state"], state, "{operation}"),
            None => assert!(stored.is_empty(), "{operation}: {stored:?}"),
        }
    }
    assert_eq!(t.count("effect_applied").await, 5);
    assert_eq!(t.count("completions").await, 5);
    let report = l.verify_chain().await.unwrap();
    assert!(report.is_intact(), "{report:?}");
}

on_both_backends!(a_failure_anywhere_in_the_one_transaction_burns_nothing);
async fn a_failure_anywhere_in_the_one_transaction_burns_nothing(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let l = &t.ledger;
    let p = proposal(1, "schedule.create", json!({"name": "a", "cron": "c"}));
    let token = approve(l, &p, 1).await;
    let proof = verified(&p, &token);
    // The last write of the transaction (the completion), then the first
    // audit write (every event), fail: everything before rolls back too.
    for table in ["completions", "events", "effect_applied"] {
        t.inject_insert_failure(table, true).await;
        let err = l
            .consume_builtin(&proof, "schedule.create")
            .await
            .unwrap_err();
        assert!(
            matches!(&err, LedgerError::Database(m) if m.contains("injected failure")),
            "{table}: {err:?}"
        );
        t.inject_insert_failure(table, false).await;
        assert_eq!(t.count("consumed_nonces").await, 0, "{table}");
        assert_eq!(t.count("intents").await, 0, "{table}");
        assert_eq!(
            l.state(PRINCIPAL, SCHEDULES_NAMESPACE).await.unwrap(),
            vec![]
        );
        assert!(l.interrupted().await.unwrap().is_empty());
        let status = l.proposal(&p.id).await.unwrap().unwrap().status;
        assert_eq!(status, ProposalStatus::Approved, "{table}");
    }
    // The same proof then applies, once.
    let Consumed::Completed(done) = l.consume_builtin(&proof, "schedule.create").await.unwrap()
    else {
        panic!("expected a completed consumption");
    };
    assert_eq!(done.status, DispositionStatus::Applied);
    assert_eq!(
        l.state(PRINCIPAL, SCHEDULES_NAMESPACE).await.unwrap().len(),
        1
    );
    assert!(l.verify_chain().await.unwrap().is_intact());
}
