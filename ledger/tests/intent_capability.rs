//! The second phase of a consumption is a capability: only the intent the
//! ledger recorded can be completed or applied, checked inside the write
//! transaction; a stale or altered copy is refused and changes nothing.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Kind, PRINCIPAL, TestLedger};
use countersign_ledger::testing::{IntentField, altered_intent};
use countersign_ledger::{
    EffectFailure, EffectOutcome, Intent, Ledger, LedgerError, ProposalStatus,
};
use serde_json::{Value, json};

/// Every field a proof binds, with a value it does not have.
const ALTERATIONS: &[(IntentField, &str)] = &[
    (
        IntentField::ProposalId,
        "prop_ffffffffffffffffffffffffffffffff",
    ),
    (
        IntentField::Principal,
        "pr_ffffffffffffffffffffffffffffffff",
    ),
    (IntentField::Session, "another-session"),
    (IntentField::Operation, "schedule.delete"),
    (IntentField::ArgumentsJson, r#"{"cron":"c","name":"b"}"#),
    (
        IntentField::ProofSha256,
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    ),
    (IntentField::ContractRevision, "changed"),
];

/// A consumed `schedule.create` of "a": the intent the ledger recorded.
async fn recorded_intent(ledger: &Ledger) -> Intent {
    common::consumed(
        ledger,
        1,
        "schedule.create",
        json!({"name": "a", "cron": "c"}),
    )
    .await
}

on_both_backends!(an_altered_intent_is_neither_applied_nor_completed);
async fn an_altered_intent_is_neither_applied_nor_completed(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let l = &t.ledger;
    let intent = recorded_intent(l).await;
    let events_before = l.events().await.unwrap().len();
    for (field, value) in ALTERATIONS {
        let altered = altered_intent(&intent, *field, value);
        assert_eq!(
            l.apply_builtin(&altered).await,
            Err(EffectFailure::NotTheRecordedIntent),
            "{field:?}"
        );
        assert_eq!(
            l.apply_builtin_and_complete(&altered).await,
            Err(LedgerError::NotTheRecordedIntent(
                altered.proposal_id().to_string()
            )),
            "{field:?}"
        );
        let applied = EffectOutcome::Applied {
            result: Value::Null,
        };
        assert_eq!(
            l.complete(&altered, &applied).await,
            Err(LedgerError::NotTheRecordedIntent(
                altered.proposal_id().to_string()
            )),
            "{field:?}"
        );
    }
    // Nothing was written: no effect, no completion, no event.
    assert!(l.state(PRINCIPAL, "schedules").await.unwrap().is_empty());
    assert_eq!(l.events().await.unwrap().len(), events_before);
    let record = l.proposal(intent.proposal_id()).await.unwrap().unwrap();
    assert_eq!(record.status, ProposalStatus::Uncertain);
    // The recorded intent itself still runs its own effect, once.
    let (outcome, disposition) = l.apply_builtin_and_complete(&intent).await.unwrap();
    assert!(matches!(outcome, EffectOutcome::Applied { .. }));
    assert_eq!(disposition.proposal_id, intent.proposal_id());
    assert_eq!(common::schedule_keys(l).await, ["a"]);
}

on_both_backends!(an_intent_from_another_ledger_is_unknown_here);
async fn an_intent_from_another_ledger_is_unknown_here(kind: Kind) {
    let there = TestLedger::on(kind).await;
    let here = TestLedger::on(kind).await;
    let intent = recorded_intent(&there.ledger).await;
    let applied = EffectOutcome::Applied {
        result: Value::Null,
    };
    assert_eq!(
        here.ledger.complete(&intent, &applied).await,
        Err(LedgerError::UnknownIntent(intent.proposal_id().to_string()))
    );
    assert_eq!(
        here.ledger.apply_builtin(&intent).await,
        Err(EffectFailure::UnknownIntent)
    );
    assert!(here.ledger.events().await.unwrap().is_empty());
}

on_both_backends!(the_interrupted_intent_read_back_is_the_one_recorded);
async fn the_interrupted_intent_read_back_is_the_one_recorded(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let l = &t.ledger;
    let intent = recorded_intent(l).await;
    let found = l.interrupted().await.unwrap();
    assert_eq!(found.len(), 1);
    let read_back = &found[0].intent;
    assert_eq!(read_back, &intent);
    let failed = EffectOutcome::Failed {
        error: "did not run".into(),
        result: Value::Null,
    };
    let disposition = l.complete(read_back, &failed).await.unwrap();
    assert_eq!(disposition.nonce, intent.nonce());
    assert_eq!(
        l.complete(&intent, &failed).await,
        Err(LedgerError::AlreadyCompleted(
            intent.proposal_id().to_string()
        ))
    );
}
