//! Premises: the state read the signer binds into a proof, its version,
//! and the consume transaction that refuses a proof whose premise moved
//! (nothing applied, nonce not burned), on both backends.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Kind, PRINCIPAL, TestLedger, approve, create_schedule, proposal, verified};
use countersign_ledger::{
    ConsumeStart, Consumed, DispositionStatus, Ledger, LedgerError, LedgerRefusal, Proposal,
};
use countersign_verifier::Premise;
use serde_json::json;

/// Create schedule `name` (proposal `n`) and apply it.
async fn created(ledger: &Ledger, n: u32, name: &str) {
    let p = create_schedule(n, name);
    let token = approve(ledger, &p, n).await;
    let done = ledger
        .consume_builtin(&verified(&p, &token), "schedule.create")
        .await
        .unwrap();
    assert!(matches!(done, Consumed::Completed(_)), "{done:?}");
}

/// Proposal `n` of `operation` on schedule `name`, with the premise the
/// ledger holds for it now (as the signer records it at proposal).
async fn with_premise(ledger: &Ledger, n: u32, operation: &str, name: &str) -> Proposal {
    let mut p = proposal(n, operation, json!({"name": name}));
    p.premise = Some(
        ledger
            .read_premise(PRINCIPAL, "schedules", name)
            .await
            .unwrap(),
    );
    p
}

on_both_backends!(a_premise_reads_the_value_and_the_version_of_the_event_that_wrote_it);
async fn a_premise_reads_the_value_and_the_version_of_the_event_that_wrote_it(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let absent = t
        .ledger
        .read_premise(PRINCIPAL, "schedules", "nightly")
        .await
        .unwrap();
    assert_eq!(
        absent,
        Premise {
            namespace: "schedules".into(),
            key: "nightly".into(),
            value: None,
            version: 0
        }
    );
    created(&t.ledger, 1, "nightly").await;
    let first = t
        .ledger
        .read_premise(PRINCIPAL, "schedules", "nightly")
        .await
        .unwrap();
    assert_eq!(
        first.value,
        Some(json!({"cron": "0 * * * *", "name": "nightly", "state": "created"}))
    );
    let applied = t
        .ledger
        .events()
        .await
        .unwrap()
        .into_iter()
        .rfind(|e| e.kind == "effect_applied")
        .unwrap();
    assert_eq!(first.version, u64::try_from(applied.id).unwrap());
    // Another principal's state is not this principal's premise.
    let other = t
        .ledger
        .read_premise("pr_other", "schedules", "nightly")
        .await
        .unwrap();
    assert_eq!(other.value, None);
}

on_both_backends!(refuses_a_proof_whose_premise_moved_and_applies_nothing);
async fn refuses_a_proof_whose_premise_moved_and_applies_nothing(kind: Kind) {
    let t = TestLedger::on(kind).await;
    created(&t.ledger, 1, "nightly").await;
    // Two approvals under the same premise: activate, and delete.
    let activate = with_premise(&t.ledger, 2, "schedule.activate", "nightly").await;
    let delete = with_premise(&t.ledger, 3, "schedule.delete", "nightly").await;
    let activate_token = approve(&t.ledger, &activate, 2).await;
    let delete_token = approve(&t.ledger, &delete, 3).await;
    let before = t
        .ledger
        .read_premise(PRINCIPAL, "schedules", "nightly")
        .await
        .unwrap();

    // The first one applies, and moves the premise.
    let done = t
        .ledger
        .consume_builtin(&verified(&activate, &activate_token), "schedule.activate")
        .await
        .unwrap();
    let Consumed::Completed(done) = done else {
        panic!("{done:?}")
    };
    assert_eq!(done.status, DispositionStatus::Applied);
    let after = t
        .ledger
        .read_premise(PRINCIPAL, "schedules", "nightly")
        .await
        .unwrap();
    assert!(after.version > before.version);

    // The second is refused, in both consume paths; nothing is consumed.
    let nonces = t.count("consumed_nonces").await;
    let proof = verified(&delete, &delete_token);
    assert_eq!(
        t.ledger.consume_builtin(&proof, "schedule.delete").await,
        Err(LedgerError::Refused(LedgerRefusal::PremiseChanged))
    );
    assert_eq!(
        t.ledger
            .begin_consume(&proof, common::NO_LEASE)
            .await
            .map(|_| ()),
        Err(LedgerError::Refused(LedgerRefusal::PremiseChanged))
    );
    assert_eq!(t.count("consumed_nonces").await, nonces);
    assert_eq!(t.ledger.disposition(&delete.id).await.unwrap(), None);
    assert_eq!(
        t.ledger
            .read_premise(PRINCIPAL, "schedules", "nightly")
            .await
            .unwrap(),
        after,
        "the schedule is still there, unchanged"
    );
}

on_both_backends!(a_value_written_back_to_what_it_was_is_still_a_moved_premise);
async fn a_value_written_back_to_what_it_was_is_still_a_moved_premise(kind: Kind) {
    let t = TestLedger::on(kind).await;
    created(&t.ledger, 1, "nightly").await;
    let delete = with_premise(&t.ledger, 2, "schedule.delete", "nightly").await;
    let delete_token = approve(&t.ledger, &delete, 2).await;
    // Deleted and created again with the same fields: the same value.
    let gone = proposal(3, "schedule.delete", json!({"name": "nightly"}));
    let gone_token = approve(&t.ledger, &gone, 3).await;
    t.ledger
        .consume_builtin(&verified(&gone, &gone_token), "schedule.delete")
        .await
        .unwrap();
    created(&t.ledger, 4, "nightly").await;
    let now = t
        .ledger
        .read_premise(PRINCIPAL, "schedules", "nightly")
        .await
        .unwrap();
    assert_eq!(now.value, delete.premise.as_ref().unwrap().value);
    assert_eq!(
        t.ledger
            .consume_builtin(&verified(&delete, &delete_token), "schedule.delete")
            .await,
        Err(LedgerError::Refused(LedgerRefusal::PremiseChanged))
    );
}

on_both_backends!(a_premise_that_still_holds_lets_the_proof_apply_once);
async fn a_premise_that_still_holds_lets_the_proof_apply_once(kind: Kind) {
    let t = TestLedger::on(kind).await;
    created(&t.ledger, 1, "nightly").await;
    let activate = with_premise(&t.ledger, 2, "schedule.activate", "nightly").await;
    let token = approve(&t.ledger, &activate, 2).await;
    let proof = verified(&activate, &token);
    let first = t
        .ledger
        .consume_builtin(&proof, "schedule.activate")
        .await
        .unwrap();
    assert!(matches!(first, Consumed::Completed(_)), "{first:?}");
    // Presented again: the recorded disposition, not `premise_changed`
    // (its own effect moved the premise).
    let again = t
        .ledger
        .consume_builtin(&proof, "schedule.activate")
        .await
        .unwrap();
    assert!(matches!(again, Consumed::Replay(_)), "{again:?}");
    let start = t
        .ledger
        .begin_consume(&proof, common::NO_LEASE)
        .await
        .unwrap();
    assert!(matches!(start, ConsumeStart::Replay(_)), "{start:?}");
}

on_both_backends!(a_proof_without_the_recorded_premise_does_not_match_its_proposal);
async fn a_proof_without_the_recorded_premise_does_not_match_its_proposal(kind: Kind) {
    let t = TestLedger::on(kind).await;
    created(&t.ledger, 1, "nightly").await;
    let recorded = with_premise(&t.ledger, 2, "schedule.activate", "nightly").await;
    t.ledger.insert_proposal(&recorded).await.unwrap();
    // Claims that leave the recorded premise out, or carry another one: the
    // issuance is recorded as the claims say, and still nothing matches.
    let other = Premise {
        version: 999_999,
        ..recorded.premise.clone().unwrap()
    };
    for (n, premise) in [(2, None), (3, Some(other))] {
        let forged = Proposal {
            premise,
            ..recorded.clone()
        };
        let (token, record) = common::issue(&forged, n, 300);
        let _ = t.ledger.record_approval(&record).await;
        assert_eq!(
            t.ledger
                .consume_builtin(&verified(&forged, &token), "schedule.activate")
                .await,
            Err(LedgerError::Refused(LedgerRefusal::ProposalMismatch))
        );
    }
    assert_eq!(t.count("consumed_nonces").await, 1);
}
