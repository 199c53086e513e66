//! The state store is keyed by principal: on a ledger shared by several
//! installations, one principal's approved effects never read, change or
//! reveal another's state.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Kind, PRINCIPAL, TestLedger, approve, proposal, verified};
use countersign_ledger::{Consumed, DispositionStatus, SCHEDULES_NAMESPACE};
use serde_json::json;

const OTHER: &str = "pr_fedcba9876543210fedcba9876543210";

/// Approve and consume `operation` on schedule `name` as `principal`.
async fn run(t: &TestLedger, n: u32, principal: &str, operation: &str) -> DispositionStatus {
    let mut p = proposal(
        n,
        operation,
        json!({"name": "nightly", "cron": "0 3 * * *"}),
    );
    if operation != "schedule.create" {
        p = proposal(n, operation, json!({"name": "nightly"}));
    }
    p.principal = principal.parse().unwrap();
    let token = approve(&t.ledger, &p, n).await;
    match t
        .ledger
        .consume_builtin(&verified(&p, &token), operation)
        .await
        .unwrap()
    {
        Consumed::Completed(d) => d.status,
        Consumed::Replay(_) => panic!("fresh proof replayed"),
    }
}

on_both_backends!(one_principals_effects_never_touch_anothers_schedule);
async fn one_principals_effects_never_touch_anothers_schedule(kind: Kind) {
    let t = TestLedger::on(kind).await;
    assert_eq!(
        run(&t, 1, PRINCIPAL, "schedule.create").await,
        DispositionStatus::Applied
    );
    let mine = t
        .ledger
        .state(PRINCIPAL, SCHEDULES_NAMESPACE)
        .await
        .unwrap();
    assert_eq!(mine.len(), 1);

    // The other principal's delete of the same name finds nothing of its
    // own (and says so); the first principal's schedule is untouched.
    assert_eq!(
        run(&t, 2, OTHER, "schedule.delete").await,
        DispositionStatus::Failed
    );
    assert_eq!(
        t.ledger
            .disposition(&format!("prop_{:032x}", 2))
            .await
            .unwrap()
            .unwrap()
            .error
            .as_deref(),
        Some("no schedule named \"nightly\"")
    );
    assert_eq!(
        t.ledger
            .state(PRINCIPAL, SCHEDULES_NAMESPACE)
            .await
            .unwrap(),
        mine
    );

    // Creating the same name does not probe the first principal's names
    // ("already exists"): it is the other principal's own schedule.
    assert_eq!(
        run(&t, 3, OTHER, "schedule.create").await,
        DispositionStatus::Applied
    );
    assert_eq!(
        run(&t, 4, OTHER, "schedule.activate").await,
        DispositionStatus::Applied
    );
    assert_eq!(
        t.ledger
            .state(PRINCIPAL, SCHEDULES_NAMESPACE)
            .await
            .unwrap(),
        mine
    );
    let theirs = t.ledger.state(OTHER, SCHEDULES_NAMESPACE).await.unwrap();
    assert_eq!(theirs.len(), 1);
    assert_eq!(theirs[0].1["state"], "active");
    assert_eq!(mine[0].1["state"], "created");
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());
}
