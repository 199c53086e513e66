//! The plans SQLite runs for the reads every head and the signer make.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::{Reads, Store};

/// Every table a read of a proposal joins is searched by index, none
/// scanned: the rule a proposal created is found by `rules_by_proposal`.
#[tokio::test]
async fn a_proposal_read_searches_every_joined_table_by_index() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("ledger.db"), Reads::Pool)
        .await
        .unwrap();
    let plan: Vec<(i64, i64, i64, String)> = sqlx::query_as(concat!(
        "EXPLAIN QUERY PLAN ",
        super::rows::proposal_select!(),
        "WHERE p.id = $1"
    ))
    .bind("prop_1")
    .fetch_all(&store.reader)
    .await
    .unwrap();
    let steps: Vec<&str> = plan.iter().map(|(_, _, _, step)| step.as_str()).collect();
    assert_eq!(steps.len(), 8, "{steps:#?}");
    assert!(
        steps.iter().all(|step| step.starts_with("SEARCH ")),
        "{steps:#?}"
    );
    assert!(
        steps.contains(&"SEARCH cr USING INDEX rules_by_proposal (proposal_id=?) LEFT-JOIN"),
        "{steps:#?}"
    );
}
