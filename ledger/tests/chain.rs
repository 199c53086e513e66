//! The event log: append-only triggers, and tampering by someone with raw
//! write access to the file (who drops the triggers first) is detected by
//! `verify_chain`, which names the row.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Kind, TestLedger, approve, create_schedule};
use countersign_ledger::{ChainBreak, GENESIS_HASH};

/// A ledger with two approved proposals: events 1..=4.
async fn four_events(kind: Kind) -> TestLedger {
    let t = TestLedger::on(kind).await;
    approve(&t.ledger, &create_schedule(1, "a"), 1).await;
    approve(&t.ledger, &create_schedule(2, "b"), 2).await;
    let report = t.ledger.verify_chain().await.unwrap();
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.events, 4);
    t
}

/// Lift the append-only guard on events, run `statements` on a raw
/// connection, then verify the chain.
async fn tampered(t: &TestLedger, statements: &[&'static str]) -> Option<ChainBreak> {
    let mut raw = t.raw().await;
    for sql in t.unguard_events().iter().chain(statements) {
        raw.exec(sql).await.unwrap();
    }
    raw.close().await;
    t.ledger.verify_chain().await.unwrap().first_break
}

on_both_backends!(refuses_update_and_delete_of_recorded_facts);
async fn refuses_update_and_delete_of_recorded_facts(kind: Kind) {
    let t = four_events(kind).await;
    let mut raw = t.raw().await;
    let refused = [
        (
            "UPDATE events SET actor = 'x' WHERE id = 1",
            "events are append-only",
        ),
        ("DELETE FROM events WHERE id = 4", "events are append-only"),
        (
            "UPDATE decisions SET decision = 'deny'",
            "decisions are append-only",
        ),
        ("DELETE FROM decisions", "decisions are append-only"),
        (
            "UPDATE issuances SET expires_at = '2999-01-01T00:00:00Z'",
            "issuances are append-only",
        ),
        ("DELETE FROM issuances", "issuances are append-only"),
        (
            "UPDATE proposals SET arguments_json = '{}'",
            "proposals are append-only",
        ),
        ("DELETE FROM chain_heads", "chain heads are never removed"),
        (
            "INSERT INTO events (chain, seq, at, kind, actor, details, prev_hash, hash)
             VALUES ('x', 9, 'x', 'x', 'x', '{}', 'x', 'x')",
            "an event must extend its chain's head",
        ),
    ];
    for (sql, message) in refused {
        let err = raw.exec(sql).await.unwrap_err();
        assert!(err.contains(message), "{sql}: {err}");
    }
    // Rows in consumed_nonces are protected the same way.
    let p = create_schedule(3, "c");
    let token = approve(&t.ledger, &p, 3).await;
    t.ledger
        .begin_consume(&common::verified(&p, &token), common::NO_LEASE)
        .await
        .unwrap();
    for sql in [
        "UPDATE consumed_nonces SET proposal_id = 'x'",
        "DELETE FROM consumed_nonces",
    ] {
        let err = raw.exec(sql).await.unwrap_err();
        assert!(
            err.contains("consumed nonces are append-only"),
            "{sql}: {err}"
        );
    }
    raw.close().await;
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());
}

on_both_backends!(detects_an_edited_row_and_names_it);
async fn detects_an_edited_row_and_names_it(kind: Kind) {
    let t = four_events(kind).await;
    let found = tampered(&t, &["UPDATE events SET actor = 'mallory' WHERE id = 2"])
        .await
        .unwrap();
    assert_eq!(found, ChainBreak::Edited { id: 2 });
    assert_eq!(
        found.to_string(),
        "event 2 was edited (its hash does not match its content)"
    );
}

on_both_backends!(detects_an_edit_whose_hash_was_recomputed_at_the_next_row);
async fn detects_an_edit_whose_hash_was_recomputed_at_the_next_row(kind: Kind) {
    let t = four_events(kind).await;
    let mut raw = t.raw().await;
    for sql in t.unguard_events() {
        raw.exec(sql).await.unwrap();
    }
    raw.exec("UPDATE events SET actor = 'mallory' WHERE id = 2")
        .await
        .unwrap();
    // Recompute row 2's hash as an attacker who knows the scheme would.
    let field = |c: &str| format!("SELECT {c} FROM events WHERE id = 2");
    let details: serde_json::Value =
        serde_json::from_str(&raw.scalar_text(&field("details")).await.unwrap()).unwrap();
    let proposal_id = raw.scalar_text(&field("proposal_id")).await.unwrap();
    let body = serde_json::json!({
        "id": 2,
        "at": raw.scalar_text(&field("at")).await.unwrap(),
        "kind": raw.scalar_text(&field("kind")).await.unwrap(),
        "proposal_id": proposal_id,
        "actor": "mallory",
        "details": details,
        "chain": common::PRINCIPAL,
    });
    let prev = raw.scalar_text(&field("prev_hash")).await.unwrap();
    raw.exec(&format!(
        "UPDATE events SET hash = '{}' WHERE id = 2",
        common::chained_hash(&prev, &body)
    ))
    .await
    .unwrap();
    raw.close().await;
    let report = t.ledger.verify_chain().await.unwrap();
    assert_eq!(report.first_break, Some(ChainBreak::BrokenLink { id: 3 }));
}

on_both_backends!(detects_a_deleted_row_and_names_it);
async fn detects_a_deleted_row_and_names_it(kind: Kind) {
    let t = four_events(kind).await;
    let found = tampered(&t, &["DELETE FROM events WHERE id = 2"]);
    assert_eq!(
        found.await,
        Some(ChainBreak::Missing {
            chain: common::PRINCIPAL.into(),
            missing: 2,
            after: 1,
            next: 3
        })
    );
}

on_both_backends!(detects_a_truncated_tail_through_the_chain_head);
async fn detects_a_truncated_tail_through_the_chain_head(kind: Kind) {
    let t = four_events(kind).await;
    let found = tampered(&t, &["DELETE FROM events WHERE id >= 3"]);
    assert_eq!(
        found.await,
        Some(ChainBreak::Truncated {
            chain: common::PRINCIPAL.into(),
            recorded: 4,
            found: 2
        })
    );
}

on_both_backends!(an_empty_log_is_intact_at_the_genesis_hash);
async fn an_empty_log_is_intact_at_the_genesis_hash(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let report = t.ledger.verify_chain().await.unwrap();
    assert!(report.is_intact());
    assert_eq!(
        (report.events, report.head_hash.as_str()),
        (0, GENESIS_HASH)
    );
}

on_both_backends!(events_link_each_to_the_one_before);
async fn events_link_each_to_the_one_before(kind: Kind) {
    let t = four_events(kind).await;
    let events = t.ledger.events().await.unwrap();
    assert_eq!(events[0].prev_hash, GENESIS_HASH);
    for pair in events.windows(2) {
        assert_eq!(pair[1].prev_hash, pair[0].hash);
        assert_eq!(pair[1].id, pair[0].id + 1);
    }
}
