//! The plans PostgreSQL runs under a batch's chain lock: a write
//! transaction plans generically, a batch's later proposals are found
//! through the primary key, not by scanning `proposals`, and so are the
//! schedules its writes delete.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::Store;
use super::consume_sql::BATCH_WRITES;
use super::locks::LOCK_FREE_PROPOSALS;
use crate::testing::TempPgDatabase;

#[tokio::test]
async fn a_write_transaction_plans_generically_and_finds_proposals_by_key() {
    let db = TempPgDatabase::create().await.unwrap();
    let store = Store::open(db.url()).await.unwrap();
    let mut tx = store.write_tx().await.unwrap();
    let mode: String = sqlx::query_scalar("SELECT current_setting('plan_cache_mode')")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert_eq!(mode, "force_generic_plan");

    // Enough proposals that a join over a guessed 100 ids is planned as a
    // sequential scan (the old `IN (SELECT json_array_elements_text(..))`
    // was, from a few thousand rows).
    sqlx::query(
        "INSERT INTO proposals (id, principal, session, operation, arguments_json,
             arguments_sha256, contract_revision, policy_revision, note, preview, created_at)
         SELECT 'prop_' || i, 'pr', 's', 'op', '{}', '', '', '', '', '', ''
         FROM generate_series(1, 20000) AS i",
    )
    .execute(&mut *tx)
    .await
    .unwrap();
    sqlx::query("ANALYZE proposals")
        .execute(&mut *tx)
        .await
        .unwrap();
    let ids = serde_json::to_string(&["prop_7", "prop_19999"]).unwrap();
    let plan: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "EXPLAIN {LOCK_FREE_PROPOSALS}"
    )))
    .bind(&ids)
    .fetch_all(&mut *tx)
    .await
    .unwrap();
    let plan = plan.join("\n");
    assert!(plan.contains("proposals_pkey"), "{plan}");
    assert!(!plan.contains("Seq Scan on proposals"), "{plan}");
    let found: Vec<String> = sqlx::query_scalar(LOCK_FREE_PROPOSALS)
        .bind(&ids)
        .fetch_all(&mut *tx)
        .await
        .unwrap();
    assert_eq!(found.len(), 2);
    tx.rollback().await.unwrap();
}

#[tokio::test]
async fn a_batch_write_finds_state_rows_by_key() {
    let db = TempPgDatabase::create().await.unwrap();
    let store = Store::open(db.url()).await.unwrap();
    let mut tx = store.write_tx().await.unwrap();
    // Enough schedules that scanning `state` for a batch's deletions would
    // be the planner's choice were it not for the key.
    sqlx::query(
        "INSERT INTO state (principal, namespace, key, value, updated_at)
         SELECT 'pr', 'schedules', 'schedule-' || i, '{}', ''
         FROM generate_series(1, 20000) AS i",
    )
    .execute(&mut *tx)
    .await
    .unwrap();
    sqlx::query("ANALYZE state")
        .execute(&mut *tx)
        .await
        .unwrap();
    // Prepared and explained as executed: the generic plan the write
    // transaction runs, not one planned for these values.
    let prepare = format!("PREPARE batch_writes (text, text, text) AS {BATCH_WRITES}");
    sqlx::raw_sql(sqlx::AssertSqlSafe(prepare))
        .execute(&mut *tx)
        .await
        .unwrap();
    let plan: Vec<String> =
        sqlx::query_scalar("EXPLAIN EXECUTE batch_writes ('[]', '[]', 'schedules')")
            .fetch_all(&mut *tx)
            .await
            .unwrap();
    let plan = plan.join("\n");
    assert!(plan.contains("namespace = $3"), "a generic plan: {plan}");
    assert!(
        plan.contains("Index Scan using state_pkey on state"),
        "{plan}"
    );
    assert!(!plan.contains("Seq Scan on state"), "{plan}");
    tx.rollback().await.unwrap();
}

#[tokio::test]
async fn a_proposal_read_finds_the_rule_it_created_by_index() {
    let db = TempPgDatabase::create().await.unwrap();
    let store = Store::open(db.url()).await.unwrap();
    let mut tx = store.write_tx().await.unwrap();
    // Enough rule versions that scanning `rules` at each read of a
    // proposal would be the planner's choice were there no index.
    sqlx::query(
        "INSERT INTO rules (id, version, principal, status, definition, definition_sha256,
             max_uses, per_hour, expires_at, changed_by, changed_at, reason)
         SELECT 'rule_' || i, 1, 'pr', 'active', '{}', '', 1, 1, '', '', '', ''
         FROM generate_series(1, 20000) AS i",
    )
    .execute(&mut *tx)
    .await
    .unwrap();
    sqlx::query("ANALYZE rules")
        .execute(&mut *tx)
        .await
        .unwrap();
    let plan: Vec<String> = sqlx::query_scalar(concat!(
        "EXPLAIN ",
        super::rows::proposal_select!(),
        "WHERE p.id = $1"
    ))
    .bind("prop_1")
    .fetch_all(&mut *tx)
    .await
    .unwrap();
    let plan = plan.join("\n");
    assert!(plan.contains("rules_by_proposal"), "{plan}");
    assert!(!plan.contains("Seq Scan on rules"), "{plan}");
    tx.rollback().await.unwrap();
}
