//! `countersign gateway tools` with one upstream that never answers (a
//! stdio program that does not speak MCP, as a server still starting
//! would not): the other upstream's tools are listed all the same, the
//! silent one is named with why and the command exits 1; `--accept` of
//! the answering upstream's tool still proposes, and of the silent one's
//! is refused with nothing proposed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::{Duration, Instant};

use serde_json::Value;
use support::Harness;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_never_answers_does_not_hide_the_others() {
    let h = Harness::start().await;
    let root = h.scratch.path().join("files");
    std::fs::create_dir(&root).unwrap();
    let node = which("node");
    let server = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../mcp-servers/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    assert!(
        server.is_file(),
        "run `npm ci --prefix tests/mcp-servers` first"
    );
    let gateway = format!(
        "[[upstream]]\nname = \"files\"\n[upstream.stdio]\nprogram = {}\nargs = [{}, {}]\n[upstream.tools]\nread_text_file = \"allow\"\n\n\
         [[upstream]]\nname = \"silent\"\ntimeout_secs = 3\n[upstream.stdio]\nprogram = \"/bin/sleep\"\nargs = [\"60\"]\n",
        quoted(&node),
        quoted(&server.display().to_string()),
        quoted(&root.display().to_string()),
    );
    std::fs::write(
        std::path::Path::new(&h.home()).join("gateway.toml"),
        gateway,
    )
    .unwrap();

    let started = Instant::now();
    let listed = h.cli(&["--json", "gateway", "tools"]).await;
    let took = started.elapsed();
    let rows: Vec<Value> = serde_json::from_str(&listed.stdout).unwrap();
    assert!(
        rows.iter().any(|r| r["upstream"] == "files"
            && r["tool"] == "read_text_file"
            && r["standing"] == "new"),
        "{rows:?}"
    );
    let why = listed.result.unwrap_err().to_string();
    assert_eq!(
        why,
        "silent could not be listed (shown as `unlisted`, their pinned tools only); run `countersign gateway tools` again once it has started"
    );
    assert!(took < Duration::from_secs(20), "asked at once: {took:?}");

    let text = h.cli(&["gateway", "tools"]).await;
    assert!(
        text.stdout.contains("files/read_text_file  allow  new")
            && text.stdout.contains("silent: not listed: "),
        "{}",
        text.stdout
    );

    let refused = h
        .cli(&["gateway", "tools", "--accept", "silent/anything"])
        .await;
    let why = refused.result.unwrap_err().to_string();
    assert!(
        why.starts_with("--accept silent/anything: silent could not be listed (")
            && why.ends_with("); nothing was proposed"),
        "{why}"
    );
    let accepted = h
        .cli(&[
            "--json",
            "gateway",
            "tools",
            "--accept",
            "files/read_text_file",
        ])
        .await;
    assert_eq!(accepted.result, Ok(()), "{}", accepted.stderr);
    assert_eq!(accepted.json()["operation"], "gateway.pin");
    let pending = h.cli(&["--json", "pending"]).await.json();
    assert_eq!(pending.as_array().unwrap().len(), 1, "{pending}");
}

fn quoted(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

fn which(program: &str) -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| panic!("{program} is not on PATH"))
        .display()
        .to_string()
}
