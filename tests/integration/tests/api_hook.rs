//! Claude Code's `type: "http"` hook on the API head
//! (`POST /v1/hooks/claude-code`): the same flow as `countersign hook
//! claude-code`, behind an API credential. A request without one is
//! refused and proposes nothing; a call a rule covers is allowed once; one
//! nobody decides is denied and withdrawn; an input that does not parse is
//! a deny in Claude Code's shape, never an error status.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod support;

use api_support::Api;
use serde_json::{Value, json};
use support::{Backend, Harness};

const PATH: &str = "/v1/hooks/claude-code";

fn bash(tool_use_id: &str, command: &str) -> String {
    json!({
        "session_id": "9d1f6b9e-2f4c-4c1e-8f1a-3b2c1d0e9f8a",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/work/project",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": tool_use_id,
    })
    .to_string()
}

fn decision(reply: &api_support::Reply) -> (String, String) {
    assert_eq!(reply.status, 200, "{}", reply.body);
    let out = reply.json()["hookSpecificOutput"].clone();
    assert_eq!(out["hookEventName"], "PreToolUse", "{}", reply.body);
    (
        out["permissionDecision"].as_str().unwrap().to_owned(),
        out["permissionDecisionReason"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn the_http_hook_needs_a_credential_and_answers_like_the_command() {
    let api = Api::over(Harness::start_with_rules(Backend::Sqlite).await).await;
    let token = api.token().await;
    let expires = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    api.h
        .create_rule(&json!({
            "operations": ["agent.shell"],
            "constraints": [{"pointer": "/tool_input/command", "argv": {"program": "git", "args": ["status"], "more_args": false}}],
            "sessions": ["*"], "max_uses": 5, "per_hour": 5,
            "expires_at": countersign_verifier::timestamp::format_whole_seconds(expires).unwrap(),
        }))
        .await;

    // No credential: refused, nothing proposed.
    let reply = api
        .raw(
            "POST",
            PATH,
            &[("Content-Type", "application/json")],
            bash("toolu_1", "git status").as_bytes(),
        )
        .await;
    assert_eq!(reply.status, 401, "{}", reply.body);
    let listed = api.h.cli(&["--json", "list"]).await.json();
    assert_eq!(listed, json!([]));

    // An agent operation is no data route: only a hook proposes one.
    let arguments = json!({"arguments": {"agent": "claude-code", "tool_name": "Bash",
        "tool_input": {"command": "git status"}, "cwd": "/"}});
    let reply = api
        .post(
            &token,
            "/v1/operations/agent.shell/proposals",
            &arguments.to_string(),
        )
        .await;
    assert_eq!(reply.status, 404, "{}", reply.body);

    // Covered by the rule: allowed, once.
    let reply = api.post(&token, PATH, &bash("toolu_2", "git status")).await;
    let (answer, reason) = decision(&reply);
    assert_eq!(answer, "allow", "{reason}");
    assert!(
        reply
            .headers
            .to_ascii_lowercase()
            .contains("content-type: application/json")
    );

    // Not covered, nobody decides within the wait: denied, withdrawn.
    let target = format!("{PATH}?wait_secs=1");
    let reply = api
        .post(&token, &target, &bash("toolu_3", "git status; touch x"))
        .await;
    let (answer, reason) = decision(&reply);
    assert_eq!(answer, "deny");
    assert!(
        reason.starts_with("no decision within 1 s; countersign withdrew proposal"),
        "{reason}"
    );

    // A body that is not JSON: a deny in Claude Code's shape.
    let reply = api.post(&token, PATH, "{not json").await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let body: Value = reply.json();
    assert_eq!(body["decision"], "block", "{body}");

    // A wait out of bounds: refused, nothing proposed.
    let reply = api
        .post(
            &token,
            &format!("{PATH}?wait_secs=0"),
            &bash("toolu_4", "ls"),
        )
        .await;
    assert_eq!(reply.status, 400, "{}", reply.body);

    let mut statuses: Vec<String> = api
        .h
        .cli(&["--json", "list"])
        .await
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["status"].as_str().unwrap().to_owned())
        .collect();
    // Both were proposed within one second: the list's order between them
    // is their random ids'.
    statuses.sort();
    assert_eq!(statuses, ["applied", "withdrawn"]);
}

#[tokio::test]
async fn the_http_hook_denies_when_the_signer_is_unreachable() {
    let mut api = Api::start().await;
    let token = api.token().await;
    api.h.signer.halt().await.unwrap();
    let reply = api
        .post(&token, PATH, &bash("toolu_5", "make deploy"))
        .await;
    let (answer, reason) = decision(&reply);
    assert_eq!(answer, "deny");
    assert!(
        reason.starts_with("countersign denied this call: "),
        "{reason}"
    );
    let events = api.h.ledger().events().await.unwrap();
    assert!(events.iter().all(|e| e.kind != "proposed"), "{events:?}");
}

/// The deny an http hook answers for an input it could not take: status
/// 200 and Claude Code's `decision: block` with the reason, as the command
/// hook's exit-2 deny, and nothing proposed.
async fn assert_blocked_and_nothing_proposed(api: &Api, reply: &api_support::Reply, reason: &str) {
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        reply.json(),
        json!({"decision": "block", "reason": reason}),
        "{}",
        reply.body
    );
    let listed = api.h.cli(&["--json", "list"]).await.json();
    assert_eq!(listed, json!([]));
    let events = api.h.ledger().events().await.unwrap();
    assert!(events.iter().all(|e| e.kind != "proposed"), "{events:?}");
}

#[tokio::test]
async fn the_http_hook_denies_an_input_over_one_mebibyte_with_a_200_and_proposes_nothing() {
    let api = Api::start().await;
    let token = api.token().await;
    // A Write of a 1.1 MiB file: valid JSON, only too large.
    let content = "x".repeat(1024 * 1024 + 100 * 1024);
    let body = json!({
        "session_id": "9d1f6b9e-2f4c-4c1e-8f1a-3b2c1d0e9f8a",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/work/project",
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": "/work/project/big.txt", "content": content},
        "tool_use_id": "toolu_big",
    })
    .to_string();
    let reply = api.post(&token, PATH, &body).await;
    assert_blocked_and_nothing_proposed(
        &api,
        &reply,
        "countersign refused this claude-code hook input: input larger than 1048576 bytes",
    )
    .await;
}

#[tokio::test]
async fn the_http_hook_denies_an_input_that_is_not_utf8_with_a_200_and_proposes_nothing() {
    let api = Api::start().await;
    let token = api.token().await;
    let auth = format!("Bearer {token}");
    let mut body = bash("toolu_bad", "git status").into_bytes();
    body.extend_from_slice(b"\xff\xfe");
    let reply = api
        .raw(
            "POST",
            PATH,
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
            ],
            &body,
        )
        .await;
    assert_blocked_and_nothing_proposed(
        &api,
        &reply,
        "countersign refused this claude-code hook input: input is not strict JSON: input is not valid UTF-8",
    )
    .await;
}
