//! Many `execute-handoff` requests at once, through the API server over
//! real TCP, for one proposal a person approved for the API credential's
//! session: exactly one applies; every other request is told the proposal
//! is being executed (`in_progress`, retryable) or gets the recorded
//! disposition, and none is told it was not approved (an agent would ask
//! the person to approve again). Both ledger backends. And a request from
//! another credential's session is told the exact command that lets it run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use api_support::{Api, assert_refused};
use countersign_registry::Registry;
use support::{Backend, CREATE_NIGHTLY, Harness};

const REQUESTS: usize = 50;

async fn concurrent_handoff_requests_apply_once_and_no_loser_is_told_to_approve_again(
    backend: Backend,
) {
    let api = Arc::new(Api::over(Harness::start_on(backend, Registry::default_toml()).await).await);
    let token = api.token().await;
    let id = api.propose(&token, "schedule.create", CREATE_NIGHTLY).await;
    api.h.approve_for_mcp(&id).await;

    let requests: Vec<_> = (0..REQUESTS)
        .map(|_| {
            let (api, token, id) = (Arc::clone(&api), token.clone(), id.clone());
            tokio::spawn(async move { api.execute_handoff(&token, &id).await })
        })
        .collect();
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    for request in requests {
        let reply = request.await.unwrap();
        assert_eq!(reply.status, 200, "{}", reply.body);
        let json = reply.json();
        let outcome = match json["reason"].as_str() {
            None => json["status"].as_str().unwrap().to_string(),
            Some("already_used") => format!("already_used/{}", json["recorded_status"]),
            Some(reason) => reason.to_string(),
        };
        *outcomes.entry(outcome).or_default() += 1;
    }
    println!("{backend:?}: {outcomes:?}");
    assert_eq!(outcomes.get("applied"), Some(&1), "{outcomes:?}");
    for outcome in outcomes.keys() {
        assert!(
            ["applied", "in_progress", "already_used/\"applied\""].contains(&outcome.as_str()),
            "{outcome} among {outcomes:?}"
        );
    }
    assert_eq!(api.h.schedules().await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_handoff_requests_apply_once_and_no_loser_is_told_to_approve_again_on_sqlite() {
    concurrent_handoff_requests_apply_once_and_no_loser_is_told_to_approve_again(Backend::Sqlite)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_handoff_requests_apply_once_and_no_loser_is_told_to_approve_again_on_postgres()
{
    concurrent_handoff_requests_apply_once_and_no_loser_is_told_to_approve_again(Backend::Postgres)
        .await;
}

#[tokio::test]
async fn a_handoff_for_another_credentials_session_names_the_command_that_allows_it() {
    let api = Api::start().await;
    let (a, b) = (api.token().await, api.token().await);
    let id = api.propose(&a, "schedule.create", CREATE_NIGHTLY).await;
    api.h.approve_for_mcp(&id).await;

    let other = api.execute_handoff(&b, &id).await;
    assert_refused(&other, "handoff_session_mismatch");
    let b_id = b.strip_prefix("cs1_").unwrap().split('_').next().unwrap();
    let command = format!("`countersign approve {id} --hand-off --execute-in-session api:{b_id}`");
    let message = other.json()["message"].as_str().unwrap().to_string();
    assert!(message.contains(&command), "{message}");
    assert_eq!(api.h.schedules().await, vec![]);
}
