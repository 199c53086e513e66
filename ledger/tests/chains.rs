//! One hash chain per principal: each principal's events extend its own
//! chain, events of no principal the global one; checkpoints on the global
//! chain name the heads that moved, so a chain cut below one (its head
//! rewritten to match) or removed whole is detected; on PostgreSQL a
//! principal's writer does not wait for another's chain; and a ledger
//! written before there were several chains migrates with its history
//! verifying unchanged.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Kind, PRINCIPAL, TestLedger, approve, checkpoint_lease, create_schedule, verified};
use countersign_ledger::{ChainBreak, Consumed, GENESIS_HASH, GLOBAL_CHAIN, KeyEvent, Ledger};
use sha2::{Digest as _, Sha256};
use std::time::Duration;

const OTHER: &str = "pr_fedcba9876543210fedcba9876543210";

/// `create_schedule(n, name)` proposed by `principal`.
fn schedule_of(principal: &str, n: u32, name: &str) -> countersign_ledger::Proposal {
    let mut p = create_schedule(n, name);
    p.principal = principal.parse().unwrap();
    p
}

/// `(chain, seq, kind)` of every event, in insertion order.
async fn positions(ledger: &Ledger) -> Vec<(String, i64, String)> {
    let events = ledger.events().await.unwrap();
    events
        .into_iter()
        .map(|e| (e.chain, e.seq, e.kind))
        .collect()
}

on_both_backends!(each_principal_extends_its_own_chain_and_key_events_the_global_one);
async fn each_principal_extends_its_own_chain_and_key_events_the_global_one(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let mine = create_schedule(1, "a");
    let token = approve(&t.ledger, &mine, 1).await;
    approve(&t.ledger, &schedule_of(OTHER, 2, "b"), 2).await;
    t.ledger
        .record_key_event(KeyEvent::Rotated, "key-2", "admin")
        .await
        .unwrap();
    let consumed = t
        .ledger
        .consume_builtin(&verified(&mine, &token), "schedule.create")
        .await
        .unwrap();
    assert!(matches!(consumed, Consumed::Completed(_)));
    let p = PRINCIPAL.to_string();
    let o = OTHER.to_string();
    let g = GLOBAL_CHAIN.to_string();
    assert_eq!(
        positions(&t.ledger).await,
        vec![
            (p.clone(), 1, "proposed".into()),
            (p.clone(), 2, "approved".into()),
            (o.clone(), 1, "proposed".into()),
            (o, 2, "approved".into()),
            (g, 1, "key_rotated".into()),
            (p.clone(), 3, "intent".into()),
            (p.clone(), 4, "effect_applied".into()),
            (p, 5, "completed".into()),
        ]
    );
    // Each chain starts at the genesis hash.
    let events = t.ledger.events().await.unwrap();
    for first in events.iter().filter(|e| e.seq == 1) {
        assert_eq!(first.prev_hash, GENESIS_HASH, "{}", first.chain);
    }
    // The state's version is the `effect_applied` row's id.
    let applied = events.iter().find(|e| e.kind == "effect_applied").unwrap();
    let premise = t
        .ledger
        .read_premise(PRINCIPAL, "schedules", "a")
        .await
        .unwrap();
    assert_eq!(premise.version, u64::try_from(applied.id).unwrap());
    let report = t.ledger.verify_chain().await.unwrap();
    assert!(report.is_intact(), "{report:?}");
    assert_eq!((report.events, report.chains), (8, 3));
}

on_both_backends!(a_checkpoint_names_the_chains_that_moved_and_nothing_when_none_did);
async fn a_checkpoint_names_the_chains_that_moved_and_nothing_when_none_did(kind: Kind) {
    let t = TestLedger::on(kind).await;
    // Nothing to name on an empty ledger: nothing written.
    let first = t
        .ledger
        .checkpoint(&checkpoint_lease(&t.ledger).await)
        .await
        .unwrap();
    assert_eq!((first, t.ledger.events().await.unwrap().len()), (0, 0));
    approve(&t.ledger, &create_schedule(1, "a"), 1).await;
    approve(&t.ledger, &schedule_of(OTHER, 2, "b"), 2).await;
    let second = t
        .ledger
        .checkpoint(&checkpoint_lease(&t.ledger).await)
        .await
        .unwrap();
    assert_eq!(second, 2);
    let last = t.ledger.events().await.unwrap().pop().unwrap();
    assert_eq!(
        (last.chain.as_str(), last.kind.as_str()),
        ("", "checkpoint")
    );
    assert_eq!(last.details["heads"][PRINCIPAL]["count"], 2);
    assert_eq!(last.details["heads"][OTHER]["count"], 2);
    // No chain moved: nothing written.
    let third = t
        .ledger
        .checkpoint(&checkpoint_lease(&t.ledger).await)
        .await
        .unwrap();
    assert_eq!(third, 0);
    // One moved: the next names it alone.
    approve(&t.ledger, &create_schedule(3, "c"), 3).await;
    let fourth = t
        .ledger
        .checkpoint(&checkpoint_lease(&t.ledger).await)
        .await
        .unwrap();
    assert_eq!(fourth, 1);
    let last = t.ledger.events().await.unwrap().pop().unwrap();
    let named: Vec<&String> = last.details["heads"].as_object().unwrap().keys().collect();
    assert_eq!(named, vec![PRINCIPAL]);
    assert_eq!(last.details["heads"][PRINCIPAL]["count"], 4);
    let report = t.ledger.verify_chain().await.unwrap();
    assert!(report.is_intact(), "{report:?}");
    assert_eq!((report.chains, report.checkpoints), (3, 2));
}

/// Three approvals (four events on the principal's chain, two on the
/// other's), then a checkpoint naming both chains.
async fn checkpointed(kind: Kind) -> TestLedger {
    let t = TestLedger::on(kind).await;
    approve(&t.ledger, &create_schedule(1, "a"), 1).await;
    approve(&t.ledger, &create_schedule(2, "b"), 2).await;
    approve(&t.ledger, &schedule_of(OTHER, 3, "c"), 3).await;
    let written = t
        .ledger
        .checkpoint(&checkpoint_lease(&t.ledger).await)
        .await
        .unwrap();
    assert_eq!(written, 2);
    t
}

/// Run `statements` raw, with the guards on events and chain heads lifted.
async fn tamper(t: &TestLedger, statements: &[String]) -> Option<ChainBreak> {
    let mut raw = t.raw().await;
    let unguard_heads = match t.kind {
        Kind::Sqlite => "DROP TRIGGER chain_heads_no_delete",
        Kind::Postgres => "ALTER TABLE chain_heads DISABLE TRIGGER chain_heads_no_delete",
    };
    for sql in t.unguard_events() {
        raw.exec(sql).await.unwrap();
    }
    raw.exec(unguard_heads).await.unwrap();
    for sql in statements {
        raw.exec(sql).await.unwrap();
    }
    raw.close().await;
    t.ledger.verify_chain().await.unwrap().first_break
}

on_both_backends!(detects_a_chain_cut_below_its_checkpoint_with_its_head_rewritten);
async fn detects_a_chain_cut_below_its_checkpoint_with_its_head_rewritten(kind: Kind) {
    let t = checkpointed(kind).await;
    let kept = t
        .ledger
        .events()
        .await
        .unwrap()
        .into_iter()
        .find(|e| e.chain == PRINCIPAL && e.seq == 2)
        .unwrap();
    // The tail of the principal's chain deleted, and its head moved back
    // to the last row kept: the chain and its head agree again.
    let found = tamper(
        &t,
        &[
            format!("DELETE FROM events WHERE chain = '{PRINCIPAL}' AND seq > 2"),
            format!(
                "UPDATE chain_heads SET count = 2, hash = '{}' WHERE chain = '{PRINCIPAL}'",
                kept.hash
            ),
        ],
    )
    .await;
    assert_eq!(
        found,
        Some(ChainBreak::Checkpoint {
            chain: PRINCIPAL.into(),
            recorded: 4
        })
    );
    assert_eq!(
        found.unwrap().to_string(),
        format!("the chain of {PRINCIPAL:?} does not hold event 4 as a checkpoint recorded it")
    );
}

on_both_backends!(detects_a_chain_removed_whole_after_a_checkpoint);
async fn detects_a_chain_removed_whole_after_a_checkpoint(kind: Kind) {
    let t = checkpointed(kind).await;
    let found = tamper(
        &t,
        &[
            format!("DELETE FROM events WHERE chain = '{OTHER}'"),
            format!("DELETE FROM chain_heads WHERE chain = '{OTHER}'"),
        ],
    )
    .await;
    assert_eq!(
        found,
        Some(ChainBreak::Checkpoint {
            chain: OTHER.into(),
            recorded: 2
        })
    );
}

on_both_backends!(detects_a_rewritten_row_whose_hash_a_checkpoint_recorded);
async fn detects_a_rewritten_row_whose_hash_a_checkpoint_recorded(kind: Kind) {
    let t = checkpointed(kind).await;
    // The other principal's chain rewritten from its first row with the
    // hashes recomputed, as an attacker who knows the scheme would, and
    // its head moved to the new last hash: only the checkpoint still
    // holds the old one.
    let events: Vec<_> = t
        .ledger
        .events()
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.chain == OTHER)
        .collect();
    let mut prev = GENESIS_HASH.to_string();
    let mut statements = Vec::new();
    for e in &events {
        let body = serde_json::json!({
            "id": e.seq, "at": e.at, "kind": e.kind, "proposal_id": e.proposal_id,
            "actor": "mallory", "details": e.details, "chain": OTHER,
        });
        let hash = common::chained_hash(&prev, &body);
        statements.push(format!(
            "UPDATE events SET actor = 'mallory', prev_hash = '{prev}', hash = '{hash}'
             WHERE id = {}",
            e.id
        ));
        prev = hash;
    }
    statements.push(format!(
        "UPDATE chain_heads SET hash = '{prev}' WHERE chain = '{OTHER}'"
    ));
    let found = tamper(&t, &statements).await;
    assert_eq!(
        found,
        Some(ChainBreak::Checkpoint {
            chain: OTHER.into(),
            recorded: 2
        })
    );
}

/// On PostgreSQL a writer locks only its principal's chain head: while
/// another transaction holds one principal's, another principal's writes
/// commit, and the same principal's wait for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_principal_does_not_wait_for_another_principals_chain_on_postgres() {
    let t = TestLedger::on(Kind::Postgres).await;
    let mut holder = t.raw().await;
    holder.exec("BEGIN").await.unwrap();
    holder
        .exec(&format!(
            "SELECT * FROM countersign_lock_chain('{PRINCIPAL}')"
        ))
        .await
        .unwrap();
    // Another principal: not held up.
    let other = schedule_of(OTHER, 1, "b");
    tokio::time::timeout(Duration::from_secs(10), t.ledger.insert_proposal(&other))
        .await
        .expect("another principal's write waited for this chain")
        .unwrap();
    // The same principal: waits for the holder.
    let ledger = Ledger::open(&t.url).await.unwrap();
    let mine = create_schedule(2, "a");
    let write = tokio::spawn(async move { ledger.insert_proposal(&mine).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!write.is_finished(), "the chain's lock was not taken");
    holder.exec("COMMIT").await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), write)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    holder.close().await;
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());
}

/// The migrations of schema versions 1 to 7, per backend.
fn migrations_before_chains(kind: Kind) -> [(i64, &'static str); 6] {
    match kind {
        Kind::Sqlite => [
            (1, include_str!("../migrations/sqlite/0001_ledger.sql")),
            (
                2,
                include_str!("../migrations/sqlite/0002_review_fixes.sql"),
            ),
            (3, include_str!("../migrations/sqlite/0003_passkeys.sql")),
            (4, include_str!("../migrations/sqlite/0004_rules.sql")),
            (5, include_str!("../migrations/sqlite/0005_quorum.sql")),
            (7, include_str!("../migrations/sqlite/0007_premises.sql")),
        ],
        Kind::Postgres => [
            (1, include_str!("../migrations/postgres/0001_ledger.sql")),
            (
                2,
                include_str!("../migrations/postgres/0002_review_fixes.sql"),
            ),
            (3, include_str!("../migrations/postgres/0003_passkeys.sql")),
            (4, include_str!("../migrations/postgres/0004_rules.sql")),
            (5, include_str!("../migrations/postgres/0005_quorum.sql")),
            (7, include_str!("../migrations/postgres/0007_premises.sql")),
        ],
    }
}

/// A raw connection to a new, empty database of `kind` (a SQLite file in
/// `dir`, or a fresh PostgreSQL database, kept alive by the second value),
/// and its URL.
async fn empty_database(
    kind: Kind,
    dir: &std::path::Path,
) -> (
    common::Raw,
    String,
    Option<countersign_ledger::testing::TempPgDatabase>,
) {
    use sqlx::Connection as _;
    match kind {
        Kind::Sqlite => {
            let path = dir.join("ledger.db");
            let options = sqlx::sqlite::SqliteConnectOptions::new()
                .filename(&path)
                .create_if_missing(true);
            let conn = sqlx::SqliteConnection::connect_with(&options)
                .await
                .unwrap();
            let url = format!("sqlite://{}", path.display());
            (common::Raw::Sqlite(conn), url, None)
        }
        Kind::Postgres => {
            let db = countersign_ledger::testing::TempPgDatabase::create()
                .await
                .unwrap();
            let conn = sqlx::PgConnection::connect(db.url()).await.unwrap();
            (common::Raw::Postgres(conn), db.url().to_string(), Some(db))
        }
    }
}

/// Bring `raw`'s empty database to schema version 7 (one chain for every
/// event, numbered by id) holding `events` key events, hashed as that
/// version did.
async fn at_version_7(kind: Kind, mut raw: common::Raw, events: i64) {
    raw.exec(
        "CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY NOT NULL,
             description TEXT NOT NULL, sha256 TEXT NOT NULL, applied_at TEXT)",
    )
    .await
    .unwrap();
    for (version, sql) in migrations_before_chains(kind) {
        raw.exec(sql).await.unwrap();
        let sha = hex::encode(Sha256::digest(sql.as_bytes()));
        raw.exec(&format!(
            "INSERT INTO schema_migrations (version, description, sha256)
             VALUES ({version}, 'v{version}', '{sha}')"
        ))
        .await
        .unwrap();
    }
    let mut prev = GENESIS_HASH.to_string();
    for id in 1..=events {
        let at = "2026-11-01T00:00:00Z";
        let details = serde_json::json!({ "key_id": format!("key-{id}") });
        let body = serde_json::json!({
            "id": id, "at": at, "kind": "key_rotated", "proposal_id": null,
            "actor": "admin", "details": details,
        });
        let hash = common::chained_hash(&prev, &body);
        raw.exec(&format!(
            "INSERT INTO events (id, at, kind, proposal_id, actor, details, prev_hash, hash)
             VALUES ({id}, '{at}', 'key_rotated', NULL, 'admin', '{details}', '{prev}', '{hash}')"
        ))
        .await
        .unwrap();
        prev = hash;
    }
    raw.close().await;
}

on_both_backends!(a_single_chain_ledger_migrates_with_its_history_on_the_global_chain);
async fn a_single_chain_ledger_migrates_with_its_history_on_the_global_chain(kind: Kind) {
    let dir = tempfile::tempdir().unwrap();
    let (raw, url, _pg) = empty_database(kind, dir.path()).await;
    at_version_7(kind, raw, 3).await;
    let ledger = Ledger::open(&url).await.unwrap();
    // The history verifies unchanged, as the global chain.
    let report = ledger.verify_chain().await.unwrap();
    assert!(report.is_intact(), "{report:?}");
    assert_eq!((report.events, report.chains), (3, 1));
    let g = GLOBAL_CHAIN.to_string();
    assert_eq!(
        positions(&ledger).await,
        (1..=3)
            .map(|seq| (g.clone(), seq, "key_rotated".to_string()))
            .collect::<Vec<_>>()
    );
    // New events: the global chain continues from its old head, a
    // principal's starts its own, and row ids continue after the old ones.
    ledger
        .record_key_event(KeyEvent::Rotated, "key-4", "admin")
        .await
        .unwrap();
    let p = create_schedule(1, "a");
    let token = approve(&ledger, &p, 1).await;
    ledger
        .consume_builtin(&verified(&p, &token), "schedule.create")
        .await
        .unwrap();
    let events = ledger.events().await.unwrap();
    let ids: Vec<i64> = events.iter().map(|e| e.id).collect();
    assert_eq!(ids, (1..=9).collect::<Vec<_>>());
    assert_eq!((events[3].chain.as_str(), events[3].seq), ("", 4));
    assert_eq!((events[4].chain.as_str(), events[4].seq), (PRINCIPAL, 1));
    ledger
        .checkpoint(&checkpoint_lease(&ledger).await)
        .await
        .unwrap();
    let report = ledger.verify_chain().await.unwrap();
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(
        (report.events, report.chains, report.checkpoints),
        (10, 2, 1)
    );
}

on_both_backends!(the_audit_reads_one_snapshot_while_principals_write);
async fn the_audit_reads_one_snapshot_while_principals_write(kind: Kind) {
    let t = TestLedger::on(kind).await;
    approve(&t.ledger, &create_schedule(1, "a"), 1).await;
    // Two principals write while the log is verified again and again: the
    // heads and the rows come from one snapshot, so no verification sees
    // rows past the heads it read.
    let writer = {
        let ledger = t.ledger.clone();
        tokio::spawn(async move {
            for n in 2..60 {
                let principal = if n % 2 == 0 { PRINCIPAL } else { OTHER };
                approve(&ledger, &schedule_of(principal, n, &format!("s{n}")), n).await;
            }
        })
    };
    let mut verified = 0;
    while !writer.is_finished() {
        let report = t.ledger.verify_chain().await.unwrap();
        assert!(report.is_intact(), "{report:?}");
        verified += 1;
    }
    writer.await.unwrap();
    assert!(verified > 1, "verified {verified} times");
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());
}
