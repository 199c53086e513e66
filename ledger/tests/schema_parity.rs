//! The SQLite and PostgreSQL schemas, as the migrations leave them, hold
//! the same tables with the same columns, the same named constraints, the
//! same indexes and the same triggers, except for the differences listed
//! here, each with the reason the two backends differ. A migration applied
//! to one backend only, or a column added on one side, fails this test.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::{Kind, Raw, TestLedger};

/// What the test compares: tables with their columns, and the names of
/// constraints, indexes and triggers.
#[derive(Debug, Default, PartialEq, Eq)]
struct Schema {
    tables: BTreeMap<String, BTreeSet<String>>,
    constraints: BTreeSet<String>,
    indexes: BTreeSet<String>,
    triggers: BTreeSet<String>,
}

/// The names after `CONSTRAINT` in a statement's text.
fn constraint_names(sql: &str) -> Vec<String> {
    let words: Vec<&str> = sql.split_whitespace().collect();
    words
        .windows(2)
        .filter(|pair| pair[0].eq_ignore_ascii_case("CONSTRAINT"))
        .map(|pair| {
            pair[1]
                .trim_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .to_owned()
        })
        .collect()
}

async fn sqlite_schema(raw: &mut sqlx::SqliteConnection) -> Schema {
    let mut schema = Schema::default();
    let rows: Vec<(String, String, Option<String>)> =
        sqlx::query_as("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")
            .fetch_all(&mut *raw)
            .await
            .unwrap();
    for (kind, name, sql) in rows {
        match kind.as_str() {
            "table" => {
                let columns: Vec<(String,)> =
                    sqlx::query_as("SELECT name FROM pragma_table_info(?1)")
                        .bind(&name)
                        .fetch_all(&mut *raw)
                        .await
                        .unwrap();
                schema
                    .constraints
                    .extend(constraint_names(sql.as_deref().unwrap_or_default()));
                schema
                    .tables
                    .insert(name, columns.into_iter().map(|(c,)| c).collect());
            }
            "index" => {
                schema.indexes.insert(name);
            }
            "trigger" => {
                schema.triggers.insert(name);
            }
            _ => {}
        }
    }
    schema
}

async fn postgres_schema(raw: &mut sqlx::PgConnection) -> Schema {
    let mut schema = Schema::default();
    let columns: Vec<(String, String)> = sqlx::query_as(
        "SELECT table_name::text, column_name::text FROM information_schema.columns
         WHERE table_schema = 'public'",
    )
    .fetch_all(&mut *raw)
    .await
    .unwrap();
    for (table, column) in columns {
        schema.tables.entry(table).or_default().insert(column);
    }
    // Named explicitly in the migrations (PostgreSQL names the others
    // itself: `<table>_pkey`, `<table>_<column>_check`, ...).
    let constraints: Vec<(String, String)> = sqlx::query_as(
        "SELECT c.conname::text, pg_get_constraintdef(c.oid)
         FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
         WHERE n.nspname = 'public'",
    )
    .fetch_all(&mut *raw)
    .await
    .unwrap();
    schema.constraints.extend(
        constraints
            .into_iter()
            .map(|(name, _)| name)
            .filter(|name| {
                !["_pkey", "_key", "_check", "_fkey", "_not_null"]
                    .iter()
                    .any(|s| name.ends_with(s))
            }),
    );
    let indexes: Vec<(String,)> = sqlx::query_as(
        "SELECT indexname::text FROM pg_indexes WHERE schemaname = 'public'
         AND indexname NOT IN (SELECT conname FROM pg_constraint)",
    )
    .fetch_all(&mut *raw)
    .await
    .unwrap();
    schema.indexes.extend(indexes.into_iter().map(|(n,)| n));
    let triggers: Vec<(String,)> = sqlx::query_as(
        "SELECT DISTINCT trigger_name::text FROM information_schema.triggers
         WHERE trigger_schema = 'public'",
    )
    .fetch_all(&mut *raw)
    .await
    .unwrap();
    schema.triggers.extend(triggers.into_iter().map(|(n,)| n));
    schema
}

/// The tables an append-only guard protects: SQLite guards each with
/// `<table>_no_update`, `<table>_no_delete` and `<table>_no_replace` (its
/// `INSERT OR REPLACE` deletes a row), PostgreSQL with one
/// `<table>_append_only` trigger. Other triggers are returned as they are.
fn guards(triggers: &BTreeSet<String>) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut guarded, mut others) = (BTreeSet::new(), BTreeSet::new());
    for name in triggers {
        let table = ["_no_update", "_no_delete", "_no_replace", "_append_only"]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix));
        match table {
            // `chain_heads` is kept (no delete), not append-only: its rows advance.
            Some(table) if table != "chain_heads" && table != "passkey_challenges" => {
                guarded.insert(table.to_owned());
            }
            _ => {
                others.insert(name.clone());
            }
        }
    }
    (guarded, others)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_backends_migrate_to_the_same_schema() {
    let sqlite = TestLedger::on(Kind::Sqlite).await;
    let postgres = TestLedger::on(Kind::Postgres).await;
    let Raw::Sqlite(mut lite) = sqlite.raw().await else {
        unreachable!()
    };
    let Raw::Postgres(mut pg) = postgres.raw().await else {
        unreachable!()
    };
    let mut lite = sqlite_schema(&mut lite).await;
    let mut pg = postgres_schema(&mut pg).await;

    // Proof possession at consumption: PostgreSQL's head role can write
    // every table, so a consumed nonce must carry the proof's consume key
    // (checked by a trigger, then dropped). A SQLite file's owner can
    // write anything, so SQLite has neither.
    assert!(
        pg.tables
            .get_mut("consumed_nonces")
            .unwrap()
            .remove("consume_key")
    );
    assert!(pg.triggers.remove("consumed_nonces_need_proof"));
    // A passkey challenge is answered once: a named UNIQUE constraint on
    // PostgreSQL, a trigger on SQLite (so `INSERT OR REPLACE` cannot
    // replace the first answer).
    assert!(pg.constraints.remove("passkey_challenges_single_use"));
    assert!(lite.triggers.remove("passkey_challenges_no_replace"));
    // The chain head advances in PostgreSQL's `events_extend_head` (BEFORE
    // INSERT, which locks the head row); SQLite checks in that trigger and
    // advances in an AFTER INSERT one.
    assert!(lite.triggers.remove("events_advance_head"));
    // A witness's state row is never removed and its acknowledged size
    // never decreases: one PostgreSQL trigger for UPDATE and DELETE, two
    // on SQLite, whose triggers each take one event.
    assert!(lite.triggers.remove("tlog_witnesses_kept"));

    let (lite_guarded, lite_others) = guards(&lite.triggers);
    let (pg_guarded, pg_others) = guards(&pg.triggers);
    assert_eq!(lite_guarded, pg_guarded, "append-only tables differ");
    assert!(lite_guarded.contains("events") && lite_guarded.len() > 10);
    assert_eq!(lite_others, pg_others, "other triggers differ");
    for table in &lite_guarded {
        let expected: BTreeSet<String> = ["update", "delete", "replace"]
            .iter()
            .map(|what| format!("{table}_no_{what}"))
            .collect();
        assert!(
            expected.is_subset(&lite.triggers),
            "SQLite guards {table} against update, delete and replace"
        );
    }
    assert_eq!(lite.tables, pg.tables, "tables or columns differ");
    assert_eq!(lite.constraints, pg.constraints, "named constraints differ");
    assert_eq!(lite.indexes, pg.indexes, "indexes differ");
}
