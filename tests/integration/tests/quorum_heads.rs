//! A quorum proposal on every head: the API's, MCP's and the CLI's views of
//! it carry the same quorum with each decision so far (valid against the
//! surface's result schema); before the quorum nothing can be executed from
//! any head and nothing is applied; the approval that reaches it lets the
//! MCP head execute it once. Approvals are made at the (scripted) terminal
//! with each approver's own named certificate (`approve --as NAME`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod support;

use api_support::Api;
use countersign_registry::Registry;
use countersign_surface::DATA_OPERATIONS;
use serde_json::{Value, json};
use support::mcp::{call, mcp_head};
use support::{Harness, Person};

fn registry() -> String {
    Registry::default_toml().replacen(
        "[[operation]]\nname = \"schedule.create\"",
        "[[operation]]\nname = \"schedule.create\"\nquorum = { required = 2, approvers = [\"alice\", \"bob\"] }",
        1,
    )
}

fn assert_proposal_schema(value: &Value) {
    let op = DATA_OPERATIONS
        .iter()
        .find(|o| o.name == "get_proposal")
        .unwrap();
    let validator = jsonschema::validator_for(&(op.result)()).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?} in {value}");
}

#[tokio::test]
async fn every_head_shows_the_quorum_and_executes_only_once_it_is_reached() {
    let api = Api::over(Harness::start_with_registry(&registry()).await).await;
    api.h.approver_credentials(&["alice", "bob"]).await;
    let token = api.token().await;
    let mcp = mcp_head(&api.h).await;
    let structured = |v: Value| v["structuredContent"].clone();

    let proposed = call(
        &mcp,
        "propose_schedule_create",
        json!({"arguments": {"name": "nightly", "cron": "0 3 * * *"}}),
    )
    .await;
    let text = proposed["content"][0]["text"].as_str().unwrap().to_owned();
    assert!(
        text.contains("2 of the approvers alice, bob must each approve"),
        "{text}"
    );
    let id = structured(proposed)["id"].as_str().unwrap().to_owned();

    let run = api
        .h
        .cli_with(
            &["approve", &id, "--for-mcp", "--as", "alice"],
            "",
            Person::TypesTheChallenge,
        )
        .await;
    assert_eq!(run.result, Ok(()), "{}", run.stderr);
    assert!(
        run.stdout
            .starts_with(&format!("approval recorded for {id}: 1 of 2 required")),
        "{}",
        run.stdout
    );
    assert!(
        run.shown
            .contains("This operation needs 2 approvals (alice, bob)"),
        "{}",
        run.shown
    );

    // The same quorum, with alice's decision, on the API, MCP and the CLI.
    let via_api = api.get(&token, &format!("/v1/proposals/{id}")).await.json();
    assert_proposal_schema(&via_api);
    let via_cli = api.h.cli(&["--json", "show", &id]).await.json();
    let via_mcp = structured(call(&mcp, "get_proposal", json!({"proposal_id": id})).await);
    // Each was read at its own instant: the seconds left may differ by the
    // time between the reads (a second under load), the rest not at all.
    let left = |view: &Value| view["seconds_left"].as_i64().expect("seconds left");
    for view in [&via_cli, &via_mcp] {
        assert!((left(&via_api) - left(view)).abs() <= 2, "{via_api} {view}");
    }
    let same = |mut view: Value| {
        view["seconds_left"] = Value::Null;
        view
    };
    assert_eq!(same(via_api.clone()), same(via_cli));
    assert_eq!(same(via_api.clone()), same(via_mcp));
    assert_eq!(via_api["status"], "pending");
    assert_eq!(via_api["quorum"]["required"], 2);
    assert_eq!(via_api["quorum"]["approvers"], json!(["alice", "bob"]));
    let decisions = via_api["quorum"]["decisions"].as_array().unwrap();
    assert_eq!(decisions.len(), 1);
    assert_eq!(
        (&decisions[0]["approver"], &decisions[0]["decision"]),
        (&json!("alice"), &json!("approve"))
    );

    // Before the quorum there is nothing to execute, on any head.
    let early = call(&mcp, "execute_approved", json!({"proposal_id": id})).await;
    assert_eq!(early["isError"], true, "{early}");
    assert!(api.h.schedules().await.is_empty());
    assert_eq!(api.h.effects_run().await, 0);

    let run = api
        .h
        .cli_with(
            &["--json", "approve", &id, "--for-mcp", "--as", "bob"],
            "",
            Person::TypesTheChallenge,
        )
        .await;
    assert_eq!(run.result, Ok(()), "{}", run.stderr);
    assert_eq!(run.json()["status"], "approved");
    let done = structured(call(&mcp, "execute_approved", json!({"proposal_id": id})).await);
    assert_eq!(done["status"], "applied", "{done}");
    let again = structured(call(&mcp, "execute_approved", json!({"proposal_id": id})).await);
    assert_eq!(again["status"], "already_used", "{again}");
    assert_eq!(api.h.schedules().await.len(), 1);
    let shown = api.get(&token, &format!("/v1/proposals/{id}")).await.json();
    assert_eq!(shown["quorum"]["decisions"].as_array().unwrap().len(), 2);
    assert!(api.h.ledger().verify_chain().await.unwrap().is_intact());
}
