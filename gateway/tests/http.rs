//! Streamable HTTP upstreams against a real MCP server: server-everything
//! (npm) serving streamable HTTP on a free loopback port, started here as
//! a child process.

mod common;

use std::net::TcpListener;
use std::time::Duration;

use common::{EverythingHttp, assert_unanswered, call_until_ok, gateway, text_of};
use countersign_gate::mcp::McpUpstreams as _;
use countersign_gateway::{CallFailure, Upstreams};
use countersign_registry::gateway::{BEARER_NEEDS_HTTPS, GatewayFile};
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

/// A plain TCP listener in the place of an upstream that restarts: it
/// records every byte any connection sends it.
async fn squatter() -> (u16, std::sync::Arc<std::sync::Mutex<Vec<u8>>>) {
    use tokio::io::AsyncReadExt as _;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    let received = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = std::sync::Arc::clone(&received);
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            let log = std::sync::Arc::clone(&log);
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                // Read what the client sends, answer nothing, close.
                while let Ok(Ok(n)) =
                    tokio::time::timeout(Duration::from_millis(500), tcp.read(&mut buf)).await
                {
                    if n == 0 {
                        break;
                    }
                    log.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .extend_from_slice(&buf[..n]);
                }
            });
        }
    });
    (port, received)
}

#[tokio::test]
async fn a_squatter_on_a_plain_http_upstreams_port_never_receives_its_bearer_credential() {
    let (port, received) = squatter().await;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let bearer = dir.path().join("bearer");
    std::fs::write(&bearer, "tok-squatted\n").unwrap_or_else(|e| panic!("write: {e}"));
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&bearer, std::fs::Permissions::from_mode(0o600))
        .unwrap_or_else(|e| panic!("chmod: {e}"));
    let toml = format!(
        "[[upstream]]\nname = \"web\"\n[upstream.http]\nurl = \"http://127.0.0.1:{port}/mcp\"\nbearer_file = {}\n",
        common::quoted(&bearer.display().to_string())
    );
    let parsed = GatewayFile::parse(&toml);
    // Were it loaded, the gateway would reach the upstream as it always
    // does: list its tools, which sends the credential.
    if let Ok(file) = &parsed {
        let upstreams = Upstreams::start(file);
        let _ = tokio::time::timeout(Duration::from_secs(5), upstreams.list_tools("web")).await;
        upstreams.shutdown().await;
    }
    let error = parsed.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        error.contains(&format!("upstream \"web\": {BEARER_NEEDS_HTTPS}")),
        "{error}"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    let received = received.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert!(
        received.is_empty(),
        "the squatter received: {}",
        String::from_utf8_lossy(&received)
    );
}
