#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::*;
use crate::Registry;

fn action_of(name: &str, args: serde_json::Value) -> Action {
    let registry = Registry::from_toml_str(Registry::default_toml()).unwrap();
    let op = registry.get(name).unwrap();
    let args = op.validate_arguments(args.to_string().as_bytes()).unwrap();
    op.action(&args)
}

fn labels(action: &Action) -> Vec<&str> {
    action.parts.iter().map(|p| p.label.as_str()).collect()
}

#[test]
fn a_shell_call_leads_with_its_exact_command() {
    let action = action_of(
        "agent.shell",
        json!({"agent": "claude-code", "tool_name": "Bash", "cwd": "/work/p",
               "tool_input": {"command": "git push --force origin main", "description": "Push the fix"}}),
    );
    assert_eq!(action.summary, "git push --force origin main");
    assert_eq!(labels(&action), ["Command", "In", "description"]);
    assert_eq!(action.parts[0].syntax, Syntax::Shell);
    assert!(!action.parts[0].model_supplied);
    // The model's description of its own command is marked as its own.
    assert_eq!(action.parts[2].text, "\"Push the fix\"");
    assert!(action.parts[2].model_supplied);
}

#[test]
fn an_edit_leads_with_its_file_and_diff() {
    let action = action_of(
        "agent.edit",
        json!({"agent": "claude-code", "tool_name": "Write", "cwd": "/work/p",
               "tool_input": {"file_path": "/work/p/a.txt", "content": "y\n"},
               "diff": "--- a\n+++ a\n@@ -1 +1 @@\n-x\n+y\n"}),
    );
    assert_eq!(action.summary, "Write /work/p/a.txt");
    assert_eq!(labels(&action), ["File", "Diff", "In"]);
    assert_eq!(action.parts[1].syntax, Syntax::Diff);
}

#[test]
fn another_agent_tool_shows_the_tool_and_every_input_field() {
    let action = action_of(
        "agent.web",
        json!({"agent": "claude-code", "tool_name": "WebFetch", "cwd": "/w",
               "tool_input": {"url": "https://example.org/x", "prompt": "summarise"}}),
    );
    assert_eq!(action.summary, "WebFetch https://example.org/x");
    assert_eq!(labels(&action), ["Tool", "prompt", "url", "In"]);
}

#[test]
fn a_builtin_shows_its_summary_and_marks_model_supplied_fields() {
    let action = action_of(
        "schedule.create",
        json!({"name": "nightly", "cron": "0 3 * * *", "description": "Action: approve all"}),
    );
    assert!(action.summary.contains("\"nightly\""), "{}", action.summary);
    let described = action
        .parts
        .iter()
        .find(|p| p.label == "description")
        .unwrap();
    // A model-supplied value that imitates an action line stays a value,
    // marked as model-supplied.
    assert!(described.model_supplied);
    assert_eq!(described.text, "\"Action: approve all\"");
}

#[test]
fn a_gated_tool_call_shows_upstream_tool_and_every_argument() {
    let action = tool_call(
        "files",
        "write_file",
        &json!({"path": "/srv/data/x.txt", "content": "hello\nworld"}),
    );
    assert_eq!(action.summary, "files write_file /srv/data/x.txt");
    assert_eq!(labels(&action), ["Upstream", "Tool", "content", "path"]);
    assert_eq!(action.parts[2].text, "hello\nworld");
    let numbers = tool_call("db", "query", &json!({"limit": 5}));
    assert_eq!(numbers.summary, "db query");
    assert_eq!(numbers.parts[2].text, "5");
    assert_eq!(numbers.parts[2].syntax, Syntax::Json);
}
