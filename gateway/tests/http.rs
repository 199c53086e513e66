//! Streamable HTTP upstreams against a real MCP server: server-everything
//! (npm) serving streamable HTTP on a free loopback port, started here as
//! a child process.

mod common;

use std::net::TcpListener;
use std::time::Duration;

use common::{EverythingHttp, assert_unanswered, call_until_ok, gateway, text_of};
use countersign_gate::mcp::McpUpstreams as _;
use countersign_gateway::{CallFailure, Upstreams};
use serde_json::json;

fn object(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    value.as_object().cloned().unwrap_or_default()
}

#[tokio::test]
async fn lists_and_calls_tools_over_streamable_http() {
    let everything = EverythingHttp::start().await;
    let upstreams = Upstreams::start(&gateway(&everything.upstream("")));
    let tools = upstreams
        .list_tools("web")
        .await
        .unwrap_or_else(|e| panic!("list: {e}"));
    let echo = tools
        .iter()
        .find(|t| t.definition.name == "echo")
        .unwrap_or_else(|| panic!("no echo in {tools:?}"));
    assert!(echo.definition.input_schema["properties"]["message"].is_object());
    let get_env = tools
        .iter()
        .find(|t| t.definition.name == "get-env")
        .unwrap_or_else(|| panic!("no get-env"));
    assert_eq!(get_env.title.as_deref(), Some("Print Environment Tool"));
    assert_eq!(get_env.read_only_hint, Some(true));
    assert_eq!(get_env.destructive_hint, Some(false));

    for n in 0..3 {
        let message = format!("over http {n}");
        let answer = upstreams
            .call(
                "web",
                "echo",
                object(json!({"message": message})),
                Duration::from_secs(10),
            )
            .await
            .unwrap_or_else(|e| panic!("echo: {e:?}"));
        assert_eq!(text_of(&answer), format!("Echo: {message}"));
    }
    let sum = upstreams
        .call(
            "web",
            "get-sum",
            object(json!({"a": 2, "b": 40})),
            Duration::from_secs(10),
        )
        .await
        .unwrap_or_else(|e| panic!("get-sum: {e:?}"));
    assert!(text_of(&sum).contains("42"), "{sum}");
    assert_eq!(
        upstreams
            .tool_sha256("web", "echo")
            .await
            .unwrap_or_else(|e| panic!("{e}")),
        echo.definition.sha256_hex()
    );
    upstreams.shutdown().await;
}

#[tokio::test]
async fn a_slow_call_over_http_is_unanswered_and_the_session_goes_on() {
    let everything = EverythingHttp::start().await;
    let upstreams = Upstreams::start(&gateway(&everything.upstream("")));
    call_until_ok(
        &upstreams,
        "web",
        "echo",
        json!({"message": "up"}),
        Duration::from_secs(10),
    )
    .await;
    let slow = upstreams
        .call(
            "web",
            "trigger-long-running-operation",
            object(json!({"duration": 5, "steps": 5})),
            Duration::from_millis(500),
        )
        .await;
    assert_unanswered(slow);
    let echo = upstreams
        .call(
            "web",
            "echo",
            object(json!({"message": "after"})),
            Duration::from_secs(10),
        )
        .await
        .unwrap_or_else(|e| panic!("echo after a timeout: {e:?}"));
    assert_eq!(text_of(&echo), "Echo: after");
    upstreams.shutdown().await;
}

#[tokio::test]
async fn an_http_upstream_nobody_listens_on_is_not_sent() {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("free port: {e}"));
    let upstreams = Upstreams::start(&gateway(&format!(
        "[[upstream]]\nname = \"web\"\n[upstream.http]\nurl = \"http://127.0.0.1:{port}/mcp\"\n"
    )));
    let call = upstreams
        .call(
            "web",
            "echo",
            object(json!({"message": "x"})),
            Duration::from_secs(2),
        )
        .await;
    assert!(matches!(call, Err(CallFailure::NotSent(_))), "{call:?}");
    assert!(upstreams.list_tools("web").await.is_err());
    upstreams.shutdown().await;
}

#[tokio::test]
async fn a_bearer_file_others_can_read_keeps_the_http_upstream_down() {
    let everything = EverythingHttp::start().await;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let bearer = dir.path().join("bearer");
    std::fs::write(&bearer, "token\n").unwrap_or_else(|e| panic!("write: {e}"));
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&bearer, std::fs::Permissions::from_mode(0o640))
        .unwrap_or_else(|e| panic!("chmod: {e}"));
    let extra = format!(
        "bearer_file = {}",
        common::quoted(&bearer.display().to_string())
    );
    let upstreams = Upstreams::start(&gateway(&everything.upstream(&extra)));
    let error = upstreams
        .list_tools("web")
        .await
        .err()
        .unwrap_or_else(|| panic!("listed with a 0640 bearer file"))
        .to_string();
    assert!(
        error.contains(&bearer.display().to_string()) && error.contains("chmod 600"),
        "{error}"
    );
    // With the mode fixed, the next attempt (after the backoff) connects.
    std::fs::set_permissions(&bearer, std::fs::Permissions::from_mode(0o600))
        .unwrap_or_else(|e| panic!("chmod: {e}"));
    call_until_ok(
        &upstreams,
        "web",
        "echo",
        json!({"message": "now"}),
        Duration::from_secs(10),
    )
    .await;
    upstreams.shutdown().await;
}
