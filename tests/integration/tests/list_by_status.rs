//! `list --status S --limit N` (CLI) and `GET /v1/proposals?status=&limit=`
//! (API) are the newest N proposals in status S: with 4 applied proposals
//! and 2 newer pending ones, `status=applied&limit=2` used to find nothing,
//! because the limit was applied before the status filter. Both backends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod support;

use std::time::Duration;

use api_support::Api;
use countersign_registry::Registry;
use serde_json::Value;
use support::{Backend, Harness, Person};

fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_string())
        .collect()
}

async fn the_limit_counts_proposals_in_the_wanted_status(backend: Backend) {
    let h = Harness::start_on(backend, Registry::default_toml()).await;
    let mut applied = Vec::new();
    for n in 0..4 {
        let id = h
            .propose("demo.echo", &format!(r#"{{"message":"{n}"}}"#))
            .await;
        let run = h
            .cli_with(&["approve", &id], "", Person::TypesTheChallenge)
            .await;
        assert_eq!(run.result, Ok(()), "{}", run.stdout);
        applied.push(id);
    }
    // Newer by the ledger's clock (whole seconds).
    tokio::time::sleep(Duration::from_millis(1100)).await;
    for n in 0..2 {
        h.propose("demo.echo", &format!(r#"{{"message":"later {n}"}}"#))
            .await;
    }
    // The two newest applied proposals (the ledger orders by time, then id).
    let newest_applied = ids(&h
        .cli(&["--json", "list", "--status", "applied"])
        .await
        .json());
    assert_eq!(newest_applied.len(), 4);
    assert!(applied.iter().all(|id| newest_applied.contains(id)));
    let expected = newest_applied[..2].to_vec();

    let cli = h
        .cli(&["--json", "list", "--status", "applied", "--limit", "2"])
        .await;
    assert_eq!(ids(&cli.json()), expected, "{}", cli.stdout);
    let pending = h
        .cli(&["--json", "list", "--status", "pending", "--limit", "1"])
        .await;
    assert_eq!(ids(&pending.json()).len(), 1);

    let api = Api::over(h).await;
    let token = api.token().await;
    let reply = api
        .get(&token, "/v1/proposals?status=applied&limit=2")
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(ids(&reply.json()), expected);

    // A status that is none of the statuses is refused where it is read,
    // naming the ones there are; `unknown` (what a head prints for a status
    // it does not know) is never one.
    let bad = tokio::process::Command::new(countersign_integration_tests::bin("countersign"))
        .args(["--home", &api.h.home(), "list", "--status", "unknown"])
        .output()
        .await
        .unwrap();
    let said = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{said}");
    assert!(
        said.contains("expected one of pending, denied, withdrawn, approved, revoked, expired, applied, failed, uncertain"),
        "{said}"
    );
    let reply = api.get(&token, "/v1/proposals?status=unknown").await;
    assert_eq!(reply.status, 400, "{}", reply.body);
}

#[tokio::test]
async fn the_limit_counts_proposals_in_the_wanted_status_on_sqlite() {
    the_limit_counts_proposals_in_the_wanted_status(Backend::Sqlite).await;
}

#[tokio::test]
async fn the_limit_counts_proposals_in_the_wanted_status_on_postgres() {
    the_limit_counts_proposals_in_the_wanted_status(Backend::Postgres).await;
}
