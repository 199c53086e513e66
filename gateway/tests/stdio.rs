//! Stdio upstreams against real MCP servers (server-filesystem,
//! server-everything, server-memory from npm), each run by the gateway as
//! a child process.

mod common;

use std::os::unix::fs::PermissionsExt as _;
use std::time::Duration;

use common::{assert_unanswered, call_until_ok, gateway, pids_with, stdio_upstream, text_of};
use countersign_gate::mcp::McpUpstreams as _;
use countersign_gateway::{CallFailure, UpstreamError, Upstreams};
use serde_json::json;

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"))
}

fn private_file(dir: &std::path::Path, name: &str, content: &str, mode: u32) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap_or_else(|e| panic!("write {name}: {e}"));
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {name}: {e}"));
    path
}

fn object(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    value.as_object().cloned().unwrap_or_default()
}

#[tokio::test]
async fn filesystem_server_lists_its_tools_and_a_written_file_reads_back() {
    let dir = tempdir();
    let root = dir.path().display().to_string();
    let upstreams = Upstreams::start(&gateway(&stdio_upstream(
        "files",
        "server-filesystem",
        &[&root],
        "",
    )));
    let tools = upstreams
        .list_tools("files")
        .await
        .unwrap_or_else(|e| panic!("list: {e}"));
    for name in [
        "read_file",
        "write_file",
        "read_text_file",
        "list_directory",
    ] {
        assert!(
            tools.iter().any(|t| t.definition.name == name),
            "{name} missing"
        );
    }
    let write = tools
        .iter()
        .find(|t| t.definition.name == "write_file")
        .unwrap_or_else(|| panic!("no write_file"));
    let properties = &write.definition.input_schema["properties"];
    assert!(
        properties["path"].is_object() && properties["content"].is_object(),
        "{properties}"
    );
    assert!(write.definition.description.is_some());
    let read = tools
        .iter()
        .find(|t| t.definition.name == "read_text_file")
        .unwrap_or_else(|| panic!("no read_text_file"));
    assert_eq!(read.read_only_hint, Some(true));

    let file = dir.path().join("note.txt").display().to_string();
    let wrote = upstreams
        .call(
            "files",
            "write_file",
            object(json!({"path": file, "content": "hello from countersign\n"})),
            Duration::from_secs(10),
        )
        .await
        .unwrap_or_else(|e| panic!("write_file: {e:?}"));
    assert_ne!(wrote["isError"], json!(true), "{wrote}");
    let on_disk = std::fs::read_to_string(dir.path().join("note.txt"))
        .unwrap_or_else(|e| panic!("the file was not written: {e}"));
    assert_eq!(on_disk, "hello from countersign\n");
    let read = upstreams
        .call(
            "files",
            "read_file",
            object(json!({"path": file})),
            Duration::from_secs(10),
        )
        .await
        .unwrap_or_else(|e| panic!("read_file: {e:?}"));
    assert_eq!(text_of(&read), "hello from countersign\n");

    // A path outside the allowed directory is the tool's error: an answer.
    let refused = upstreams
        .call(
            "files",
            "read_file",
            object(json!({"path": "/etc/hostname"})),
            Duration::from_secs(10),
        )
        .await
        .unwrap_or_else(|e| panic!("read_file outside: {e:?}"));
    assert_eq!(refused["isError"], json!(true), "{refused}");
    upstreams.shutdown().await;
}

#[tokio::test]
async fn the_child_sees_only_the_allowed_variables_and_the_secret() {
    let dir = tempdir();
    let secret = private_file(dir.path(), "token", "s3cret-value\n", 0o600);
    let extra = format!(
        "env = [\"HOME\", \"COUNTERSIGN_GATEWAY_TEST_UNSET\"]\nsecret_env = {{ API_TOKEN = {} }}",
        common::quoted(&secret.display().to_string())
    );
    let upstreams = Upstreams::start(&gateway(&stdio_upstream(
        "everything",
        "server-everything",
        &["stdio"],
        &extra,
    )));
    let result = call_until_ok(
        &upstreams,
        "everything",
        "get-env",
        json!({}),
        Duration::from_secs(10),
    )
    .await;
    let env: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text_of(&result))
        .unwrap_or_else(|e| panic!("get-env is not JSON: {e}"));
    let mut names: Vec<&str> = env.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["API_TOKEN", "HOME"], "{env:?}");
    assert_eq!(env["API_TOKEN"], json!("s3cret-value"));
    assert_eq!(
        env["HOME"].as_str(),
        std::env::var("HOME").ok().as_deref(),
        "HOME passed through as is"
    );
    // PATH is set in the gateway's (this test's) environment but not allowed.
    assert!(std::env::var_os("PATH").is_some());
    upstreams.shutdown().await;
}

#[tokio::test]
async fn a_secret_file_others_can_read_keeps_the_upstream_from_starting() {
    let dir = tempdir();
    let secret = private_file(dir.path(), "token", "do-not-show\n", 0o644);
    let extra = format!(
        "secret_env = {{ API_TOKEN = {} }}",
        common::quoted(&secret.display().to_string())
    );
    let marker = dir.path().display().to_string();
    let upstreams = Upstreams::start(&gateway(&stdio_upstream(
        "files",
        "server-filesystem",
        &[&marker],
        &extra,
    )));
    let error = upstreams
        .list_tools("files")
        .await
        .err()
        .unwrap_or_else(|| panic!("listed tools with a 0644 secret file"));
    let UpstreamError::Unavailable { upstream, reason } = &error else {
        panic!("expected Unavailable, got {error:?}");
    };
    assert_eq!(upstream, "files");
    assert!(reason.contains(&secret.display().to_string()), "{reason}");
    assert!(reason.contains("chmod 600"), "{reason}");
    assert!(!reason.contains("do-not-show"), "{reason}");
    assert!(pids_with(&marker).is_empty(), "the server was started");
    let call = upstreams
        .call(
            "files",
            "list_allowed_directories",
            object(json!({})),
            Duration::from_secs(2),
        )
        .await;
    assert!(matches!(call, Err(CallFailure::NotSent(_))), "{call:?}");
    upstreams.shutdown().await;
}

#[tokio::test]
async fn a_killed_child_fails_calls_until_it_is_restarted() {
    let dir = tempdir();
    let marker = dir.path().display().to_string();
    let upstreams = files_answering(&marker).await;
    let pids = pids_with(&marker);
    assert_eq!(pids.len(), 1, "one child: {pids:?}");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pids[0].to_string()])
        .status()
        .unwrap_or_else(|e| panic!("kill: {e}"));
    assert!(killed.success());
    tokio::time::sleep(Duration::from_millis(100)).await;
    let during = upstreams
        .call(
            "files",
            "list_allowed_directories",
            object(json!({})),
            Duration::from_secs(2),
        )
        .await;
    assert!(
        matches!(
            during,
            Err(CallFailure::NotSent(_) | CallFailure::Unanswered(_))
        ),
        "{during:?}"
    );
    let again = call_until_ok(
        &upstreams,
        "files",
        "list_allowed_directories",
        json!({}),
        Duration::from_secs(10),
    )
    .await;
    assert!(
        text_of(&again).contains(&marker) || text_of(&again).contains("tmp"),
        "{again}"
    );
    let restarted = pids_with(&marker);
    assert_eq!(restarted.len(), 1, "{restarted:?}");
    assert_ne!(restarted, pids, "a new child");
    upstreams.shutdown().await;
    assert!(
        pids_with(&marker).is_empty(),
        "shutdown left the child running"
    );
}

#[tokio::test]
async fn dropping_the_upstreams_kills_the_child() {
    let dir = tempdir();
    let marker = dir.path().display().to_string();
    let upstreams = files_answering(&marker).await;
    assert_eq!(pids_with(&marker).len(), 1);
    drop(upstreams);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !pids_with(&marker).is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the child outlived the drop"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_call_longer_than_its_timeout_is_unanswered() {
    let upstreams = Upstreams::start(&gateway(&stdio_upstream(
        "everything",
        "server-everything",
        &["stdio"],
        "",
    )));
    call_until_ok(
        &upstreams,
        "everything",
        "echo",
        json!({"message": "up"}),
        Duration::from_secs(10),
    )
    .await;
    let started = std::time::Instant::now();
    let slow = upstreams
        .call(
            "everything",
            "trigger-long-running-operation",
            object(json!({"duration": 5, "steps": 5})),
            Duration::from_millis(500),
        )
        .await;
    assert_unanswered(slow);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    // The session survives a timed-out call.
    let echo = upstreams
        .call(
            "everything",
            "echo",
            object(json!({"message": "still here"})),
            Duration::from_secs(5),
        )
        .await
        .unwrap_or_else(|e| panic!("echo: {e:?}"));
    assert_eq!(text_of(&echo), "Echo: still here");
    upstreams.shutdown().await;
}

/// A signer host's copy of `gateway.toml` may leave an upstream's
/// transport out; a gateway given such a file starts nothing for it and
/// says why at once, sending nothing.
#[tokio::test]
async fn an_upstream_without_a_transport_here_is_unavailable_and_nothing_starts() {
    let upstreams = Upstreams::start(&gateway(
        "[[upstream]]\nname = \"files\"\n[upstream.tools]\nwrite_file = \"approve\"\n",
    ));
    let started = std::time::Instant::now();
    let error = upstreams.list_tools("files").await;
    let Err(UpstreamError::Unavailable { upstream, reason }) = &error else {
        panic!("expected Unavailable, got {error:?}");
    };
    assert_eq!(upstream, "files");
    assert_eq!(
        reason,
        "gateway.toml gives it no [upstream.stdio] or [upstream.http] on this host, so the gateway cannot reach it"
    );
    assert!(started.elapsed() < Duration::from_secs(2), "it waited");
    let call = upstreams
        .call(
            "files",
            "write_file",
            object(json!({})),
            Duration::from_secs(1),
        )
        .await;
    let Err(CallFailure::NotSent(why)) = &call else {
        panic!("{call:?}");
    };
    assert!(
        why.contains("no [upstream.stdio] or [upstream.http]"),
        "{why}"
    );
    upstreams.shutdown().await;
}

#[tokio::test]
async fn an_unknown_upstream_is_refused_without_sending() {
    let upstreams = Upstreams::start(&gateway(""));
    assert_eq!(
        upstreams.list_tools("nope").await,
        Err(UpstreamError::UnknownUpstream("nope".into()))
    );
    let call = upstreams
        .call("nope", "tool", object(json!({})), Duration::from_secs(1))
        .await;
    assert!(matches!(call, Err(CallFailure::NotSent(_))), "{call:?}");
    assert!(upstreams.tool_sha256("nope", "tool").await.is_err());
}

#[tokio::test]
async fn an_unknown_tool_is_the_servers_tool_error_and_no_digest() {
    let upstreams = Upstreams::start(&gateway(&stdio_upstream(
        "everything",
        "server-everything",
        &["stdio"],
        "",
    )));
    // The TypeScript SDK's McpServer answers an unknown tool with a tool
    // error result (isError), not a JSON-RPC error: an answer, for the
    // gate to record as a failed effect.
    let answer = call_until_ok(
        &upstreams,
        "everything",
        "no-such-tool",
        json!({}),
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(answer["isError"], json!(true), "{answer}");
    assert!(text_of(&answer).contains("not found"), "{answer}");
    assert_eq!(
        upstreams
            .tool_sha256("everything", "no-such-tool")
            .await
            .unwrap_or_else(|e| panic!("{e}")),
        None
    );
    upstreams.shutdown().await;
}

#[tokio::test]
async fn the_gate_sees_the_listed_definitions_digest_and_calls_with_json_text() {
    let dir = tempdir();
    let memory = dir.path().join("memory.jsonl").display().to_string();
    // The memory file's path travels as a secret file: the only way to give
    // a child a value the gateway's environment does not hold.
    let path_file = private_file(dir.path(), "memory-path", &memory, 0o600);
    let extra = format!(
        "secret_env = {{ MEMORY_FILE_PATH = {} }}",
        common::quoted(&path_file.display().to_string())
    );
    let upstreams = Upstreams::start(&gateway(&stdio_upstream(
        "memory",
        "server-memory",
        &[],
        &extra,
    )));
    let tools = upstreams
        .list_tools("memory")
        .await
        .unwrap_or_else(|e| panic!("list: {e}"));
    let create = tools
        .iter()
        .find(|t| t.definition.name == "create_entities")
        .unwrap_or_else(|| panic!("no create_entities"));
    let digest = upstreams
        .tool_sha256("memory", "create_entities")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(digest, create.definition.sha256_hex());
    assert!(digest.is_some());

    let arguments = r#"{"entities":[{"entityType":"person","name":"Ada","observations":["wrote the first program"]}]}"#;
    let created = countersign_gate::mcp::McpUpstreams::call(
        &upstreams,
        "memory",
        "create_entities",
        arguments,
        Duration::from_secs(10),
    )
    .await
    .unwrap_or_else(|e| panic!("create_entities: {e:?}"));
    assert_ne!(created["isError"], json!(true), "{created}");
    let stored = std::fs::read_to_string(&memory).unwrap_or_else(|e| panic!("memory file: {e}"));
    assert!(stored.contains("Ada"), "{stored}");
    let not_object = countersign_gate::mcp::McpUpstreams::call(
        &upstreams,
        "memory",
        "read_graph",
        "[1]",
        Duration::from_secs(10),
    )
    .await;
    assert!(
        matches!(not_object, Err(CallFailure::NotSent(_))),
        "{not_object:?}"
    );
    upstreams.shutdown().await;
}

/// server-filesystem over stdio, rooted at `root` (whose path also marks
/// its process), once it answers a call.
async fn files_answering(root: &str) -> Upstreams {
    let upstreams = Upstreams::start(&gateway(&stdio_upstream(
        "files",
        "server-filesystem",
        &[root],
        "",
    )));
    call_until_ok(
        &upstreams,
        "files",
        "list_allowed_directories",
        json!({}),
        Duration::from_secs(10),
    )
    .await;
    upstreams
}
