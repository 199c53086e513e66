//! The fact tables and the event log must agree, and `INSERT OR REPLACE`
//! cannot remove a recorded fact on SQLite: `verify_chain` (what `audit
//! --verify` runs) reports a row without its event and a state value that
//! no applied effect produced, on both backends.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Kind, NO_LEASE, PRINCIPAL, TestLedger, approve, create_schedule, verified};
use countersign_ledger::{ChainBreak, ConsumeStart, Consumed, KeyEvent};

/// One schedule created and applied: events proposed, approved, intent,
/// effect_applied, completed.
async fn applied(kind: Kind) -> (TestLedger, String) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    let token = approve(&t.ledger, &p, 1).await;
    let done = t
        .ledger
        .consume_builtin(&verified(&p, &token), "schedule.create")
        .await
        .unwrap();
    assert!(matches!(done, Consumed::Completed(_)));
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());
    (t, token)
}

fn disagreement(report: countersign_ledger::ChainReport) -> String {
    match report.first_break {
        Some(ChainBreak::Disagrees { detail }) => detail,
        other => panic!("expected a disagreement, got {other:?}"),
    }
}

on_both_backends!(a_state_value_no_applied_effect_produced_is_reported);
async fn a_state_value_no_applied_effect_produced_is_reported(kind: Kind) {
    let (t, _) = applied(kind).await;
    let mut raw = t.raw().await;
    raw.exec(&format!(
        "UPDATE state SET value = '{{\"cron\":\"* * * * *\",\"name\":\"nightly\",\"state\":\"active\"}}'
         WHERE principal = '{PRINCIPAL}'"
    ))
    .await
    .unwrap();
    raw.close().await;
    assert_eq!(
        disagreement(t.ledger.verify_chain().await.unwrap()),
        format!("state \"nightly\" of {PRINCIPAL} is not what its applied effects produce")
    );
}

on_both_backends!(a_state_row_written_without_an_effect_is_reported);
async fn a_state_row_written_without_an_effect_is_reported(kind: Kind) {
    let (t, _) = applied(kind).await;
    let mut raw = t.raw().await;
    raw.exec(&format!(
        "INSERT INTO state (principal, namespace, key, value, updated_at)
         VALUES ('{PRINCIPAL}', 'schedules', 'forged', '{{}}', '2026-01-01T00:00:00Z')"
    ))
    .await
    .unwrap();
    raw.close().await;
    assert_eq!(
        disagreement(t.ledger.verify_chain().await.unwrap()),
        format!("state \"forged\" of {PRINCIPAL} is not what its applied effects produce")
    );
}

on_both_backends!(a_deleted_state_row_is_reported);
async fn a_deleted_state_row_is_reported(kind: Kind) {
    let (t, _) = applied(kind).await;
    let mut raw = t.raw().await;
    raw.exec("DELETE FROM state").await.unwrap();
    raw.close().await;
    assert_eq!(
        disagreement(t.ledger.verify_chain().await.unwrap()),
        format!(
            "state \"nightly\" of {PRINCIPAL} is missing though its applied effects produce it"
        )
    );
}

on_both_backends!(a_completion_written_without_its_event_is_reported);
async fn a_completion_written_without_its_event_is_reported(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = common::proposal(1, "demo.echo", serde_json::json!({"message": "hi"}));
    let token = approve(&t.ledger, &p, 1).await;
    let ConsumeStart::Fresh(intent) = t
        .ledger
        .begin_consume(&verified(&p, &token), NO_LEASE)
        .await
        .unwrap()
    else {
        panic!("expected a fresh intent");
    };
    // An uncertain execution made to read `applied` by a raw insert.
    let mut raw = t.raw().await;
    raw.exec(&format!(
        "INSERT INTO completions (nonce, proposal_id, status, error, result, resolved_by,
             completed_at)
         VALUES ('{}', '{}', 'applied', NULL, 'null', NULL, '2026-01-01T00:00:00Z')",
        intent.nonce(),
        intent.proposal_id()
    ))
    .await
    .unwrap();
    raw.close().await;
    assert_eq!(
        disagreement(t.ledger.verify_chain().await.unwrap()),
        format!(
            "the ledger records `completed {} {} applied` 1 time(s) but the event log 0",
            intent.proposal_id(),
            intent.nonce()
        )
    );
}

/// `INSERT OR REPLACE` deletes the conflicting row without firing a DELETE
/// trigger; every append-only table refuses an insert whose key exists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_or_replace_cannot_remove_a_recorded_fact_on_sqlite() {
    let (t, token) = applied(Kind::Sqlite).await;
    let p = create_schedule(1, "nightly");
    let tables = [
        "consumed_nonces",
        "intents",
        "completions",
        "effect_applied",
        "issuances",
        "decisions",
        "proposals",
        "events",
    ];
    let mut before = Vec::new();
    for table in tables {
        before.push(t.count(table).await);
    }
    let mut raw = t.raw().await;
    for table in tables {
        for verb in ["INSERT OR REPLACE", "REPLACE"] {
            let err = raw
                .exec(&format!("{verb} INTO {table} SELECT * FROM {table}"))
                .await
                .expect_err(table);
            assert!(
                err.contains("append-only: the key exists"),
                "{table}: {err}"
            );
        }
    }
    raw.close().await;
    for (table, n) in tables.iter().zip(before) {
        assert_eq!(t.count(table).await, n, "{table}");
    }
    // The proof stays used: presenting it again replays, runs nothing.
    let again = t
        .ledger
        .consume_builtin(&verified(&p, &token), "schedule.create")
        .await
        .unwrap();
    assert!(matches!(again, Consumed::Replay(_)));
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());
}

on_both_backends!(key_rotation_and_retirement_keep_the_audit_intact);
async fn key_rotation_and_retirement_keep_the_audit_intact(kind: Kind) {
    let (t, _) = applied(kind).await;
    t.ledger
        .record_key_event(KeyEvent::Rotated, "k4.pid.new", "signer-admin")
        .await
        .unwrap();
    t.ledger
        .record_key_event(KeyEvent::Retired, "k4.pid.old", "signer-admin")
        .await
        .unwrap();
    let report = t.ledger.verify_chain().await.unwrap();
    assert!(report.is_intact(), "{report:?}");
    let kinds: Vec<String> = t
        .ledger
        .events()
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(kinds[kinds.len() - 2..], ["key_rotated", "key_retired"]);
}
