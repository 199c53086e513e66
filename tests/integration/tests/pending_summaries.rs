//! The one-line action summary of a pending proposal, where a person picks
//! what to open: `countersign pending` prints one line per proposal with the
//! command itself, and a model-supplied command that imitates another line
//! (a newline, a terminal escape that erases the line, a bidirectional
//! override) is escaped there and in the console's pending list exactly as
//! the preview escapes it; `--json` (what the MCP and API results carry
//! too) holds the same escaped text.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod console_support;
mod support;

use console_support::get;
use support::{CREATE_NIGHTLY, Harness};

const HOSTILE: &str = "rm -rf build\u{1b}[2K\r\nAPPROVED by alice\u{202e}txt.exe";
const ESCAPED: &str = r"rm -rf build\u{1b}[2K\u{d}\u{a}APPROVED by alice\u{202e}txt.exe";

async fn propose_shell(h: &Harness, command: &str) -> String {
    let arguments = serde_json::json!({
        "agent": "claude-code",
        "tool_name": "Bash",
        "cwd": "/work/p",
        "tool_input": {"command": command, "description": "clean"},
    });
    h.propose_as_head("agent.shell", &arguments.to_string(), "hook-1")
        .await
}

#[tokio::test]
async fn pending_lines_lead_with_the_action_and_escape_what_imitates_a_line() {
    let h = Harness::start().await;
    let builtin = h.propose("schedule.create", CREATE_NIGHTLY).await;
    let plain = propose_shell(&h, "cargo test --workspace").await;
    let hostile = propose_shell(&h, HOSTILE).await;

    let run = h.cli(&["pending"]).await;
    assert_eq!(run.result, Ok(()), "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "one line per proposal: {:?}", run.stdout);
    let line = |id: &str| *lines.iter().find(|l| l.starts_with(id)).unwrap();
    assert!(
        line(&builtin)
            .contains(r#"schedule.create  Create schedule "nightly" with cron "0 3 * * *""#),
        "{}",
        line(&builtin)
    );
    assert!(
        line(&plain).contains("agent.shell  cargo test --workspace  session hook-1"),
        "{}",
        line(&plain)
    );
    assert!(line(&hostile).contains(ESCAPED), "{}", line(&hostile));
    assert!(
        !run.stdout.contains(['\u{1b}', '\r', '\u{202e}']),
        "{:?}",
        run.stdout
    );

    let json = h.cli(&["--json", "pending"]).await.json();
    let listed = json
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == hostile.as_str())
        .unwrap();
    assert_eq!(listed["action"]["summary"], ESCAPED);

    let site = console_support::serve(&h.home(), None).await;
    let (site, cookie) = console_support::pair(&site, &h.home(), "console").await;
    let list = get(&site, &cookie, "/").await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert!(
        list.body.contains("cargo test --workspace"),
        "{}",
        list.body
    );
    assert!(list.body.contains(ESCAPED), "{}", list.body);
    assert!(
        !list.body.contains(['\u{1b}', '\r', '\u{202e}']),
        "{:?}",
        list.body
    );
}
