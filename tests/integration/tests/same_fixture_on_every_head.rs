//! The same fixture proposal through the CLI, the HTTP API and MCP gives the
//! same preview, the same schemas and the same results: the API's bodies and
//! MCP's structured content are the values the CLI prints with `--json`
//! (MCP wrapping an array as `{"items": [...]}`), and all validate against
//! the table's result schemas.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod support;

use api_support::Api;
use countersign_surface::DATA_OPERATIONS;
use serde_json::Value;
use serde_json::json;
use support::mcp::{call, mcp_head};
use support::{CREATE_NIGHTLY, Person};

/// Assert `value` satisfies the result schema of data operation `name`.
fn assert_result_schema(name: &str, value: &Value) {
    let op = DATA_OPERATIONS.iter().find(|o| o.name == name).unwrap();
    let schema = (op.result)();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{name}: {errors:?} in {value}");
}

/// The parts of a proposal that are the same for the same fixture.
/// `v` without any `seconds_left` (a proposal's, or each listed one's),
/// whose value each head reads from the clock when it answers.
fn unclocked(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| *k != "seconds_left")
                .map(|(k, v)| (k.clone(), unclocked(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(unclocked).collect()),
        other => other.clone(),
    }
}

fn fixture_view(p: &Value) -> Value {
    let mut p = p.clone();
    // Proposed at their own instants: the window's close and the seconds
    // left move with `created_at`.
    for volatile in ["id", "session", "created_at", "decide_by", "seconds_left"] {
        p.as_object_mut().unwrap().remove(volatile);
    }
    p
}

#[tokio::test]
async fn the_same_fixture_gives_the_same_preview_schema_and_result_on_cli_api_and_mcp() {
    let api = Api::start().await;
    let token = api.token().await;
    let mcp = mcp_head(&api.h).await;
    let structured = |v: Value| v["structuredContent"].clone();
    let session = format!("api:{}", token.split('_').nth(1).unwrap());

    // list_operations: identical.
    let ops_api = api.get(&token, "/v1/operations").await.json();
    assert_eq!(ops_api, api.h.cli(&["--json", "ops", "list"]).await.json());
    let ops_mcp = structured(call(&mcp, "list_operations", json!({})).await);
    assert_eq!(ops_mcp, json!({ "items": ops_api }));
    assert_result_schema("list_operations", &ops_api);

    // propose: the same fixture on both heads, the same preview and arguments.
    let body = format!(r#"{{"arguments":{CREATE_NIGHTLY},"note":"nightly KPIs"}}"#);
    let via_api = api
        .post(&token, "/v1/operations/schedule.create/proposals", &body)
        .await
        .json();
    let via_cli = api
        .h
        .cli_with(
            &[
                "--json",
                "propose",
                "schedule.create",
                "--args-file",
                "-",
                "--note",
                "nightly KPIs",
                "--session",
                &session,
            ],
            CREATE_NIGHTLY,
            Person::NoTerminal,
        )
        .await
        .json();
    assert_result_schema("propose", &via_api);
    assert_eq!(fixture_view(&via_api), fixture_view(&via_cli));
    let via_mcp = structured(
        call(
            &mcp,
            "propose_schedule_create",
            json!({"arguments": serde_json::from_str::<Value>(CREATE_NIGHTLY).unwrap(), "note": "nightly KPIs"}),
        )
        .await,
    );
    assert_eq!(fixture_view(&via_api), fixture_view(&via_mcp));
    assert_eq!(via_api["session"], session);
    let api_id = via_api["id"].as_str().unwrap();

    // get_proposal and list_proposals: byte-identical values for the same proposal.
    let shown = api
        .get(&token, &format!("/v1/proposals/{api_id}"))
        .await
        .json();
    // Identical but for `seconds_left`, which each head reads from the
    // clock when it answers (a second may pass between two answers).
    assert_eq!(
        unclocked(&shown),
        unclocked(&api.h.cli(&["--json", "show", api_id]).await.json())
    );
    let by_id = json!({ "proposal_id": api_id });
    assert_eq!(
        unclocked(&shown),
        unclocked(&structured(call(&mcp, "get_proposal", by_id.clone()).await))
    );
    assert_result_schema("get_proposal", &shown);
    let listed = api.get(&token, "/v1/proposals?status=pending").await.json();
    assert_eq!(
        unclocked(&listed),
        unclocked(
            &api.h
                .cli(&["--json", "list", "--status", "pending"])
                .await
                .json()
        )
    );
    let listed_mcp = call(&mcp, "list_proposals", json!({"status": "pending"})).await;
    assert_eq!(
        unclocked(&structured(listed_mcp)),
        unclocked(&json!({ "items": listed }))
    );
    assert_result_schema("list_proposals", &listed);

    // execute with a proof, and the recorded result: the API's proposal
    // through the API here; the same fixture through the CLI alone in a second
    // installation. The same outcome and result, up to the proposal id.
    let api_proof = std::fs::read_to_string(api.h.approve_to_file(api_id).await).unwrap();
    let out_api = api.execute(&token, api_id, &api_proof).await.json();
    assert_result_schema("execute_with_proof", &out_api);
    assert_eq!(out_api["applied"], true, "{out_api}");
    let result = api
        .get(&token, &format!("/v1/proposals/{api_id}/result"))
        .await
        .json();
    assert_eq!(
        result,
        api.h.cli(&["--json", "result", api_id]).await.json()
    );
    assert_eq!(
        result,
        structured(call(&mcp, "get_result", by_id.clone()).await)
    );
    assert_result_schema("get_result", &result);
    // One time form on every head (the values above are byte-identical).
    for at in [&shown["created_at"], &result["completed_at"]] {
        let at = at.as_str().unwrap();
        assert!(countersign_verifier::timestamp::parse(at).is_ok(), "{at}");
    }

    let alone = support::Harness::start().await;
    let alone_id = alone.propose("schedule.create", CREATE_NIGHTLY).await;
    let alone_proof = alone.approve_to_file(&alone_id).await;
    let out_cli = alone.exec(&alone_id, &alone_proof, &[]).await.json();
    let result_cli = alone.cli(&["--json", "result", &alone_id]).await.json();
    let normal = |v: &Value, id: &str| {
        let mut v: Value = serde_json::from_str(&v.to_string().replace(id, "ID")).unwrap();
        if let Some(o) = v.as_object_mut() {
            o.remove("completed_at");
        }
        v
    };
    assert_eq!(normal(&out_api, api_id), normal(&out_cli, &alone_id));
    assert_eq!(normal(&result, api_id), normal(&result_cli, &alone_id));

    // execute via handoff: approved for a later execution by a head; the API claims it.
    let activate = api
        .propose(&token, "schedule.activate", r#"{"name":"nightly"}"#)
        .await;
    let approve = api
        .h
        .cli_with(
            &["approve", &activate, "--for-mcp"],
            "",
            Person::TypesTheChallenge,
        )
        .await;
    assert_eq!(approve.result, Ok(()), "{}", approve.stdout);
    let handoff = api.execute_handoff(&token, &activate).await.json();
    assert_result_schema("execute", &handoff);
    assert_eq!(handoff["applied"], true, "{handoff}");
    assert!(!handoff.to_string().contains("v4.public."));
    let replay_api = api.execute_handoff(&token, &activate).await.json();
    let replay_cli = api
        .h
        .cli(&[
            "--json",
            "exec",
            &activate,
            "--handoff",
            "--session",
            &session,
        ])
        .await
        .json();
    assert_eq!(replay_api, replay_cli);
    let replay_mcp = call(&mcp, "execute_approved", json!({ "proposal_id": activate })).await;
    assert_eq!(structured(replay_mcp), replay_api);

    // withdraw: the same value as the CLI would show afterwards.
    let third = api
        .propose(&token, "schedule.delete", r#"{"name":"nightly"}"#)
        .await;
    let withdrawn = api
        .post(&token, &format!("/v1/proposals/{third}/withdraw"), "")
        .await
        .json();
    assert_result_schema("withdraw", &withdrawn);
    assert_eq!(
        withdrawn,
        api.h.cli(&["--json", "show", &third]).await.json()
    );
}
