//! Each agent's documented hook inputs (the fixtures) parse to the call and
//! the proposal arguments expected of them.
#![allow(clippy::unwrap_used)]

mod common;

use countersign_hook::{Agent, HookEvent, ToolClass, UnknownAgent, parse};
use serde_json::{Value, json};

/// Parses every fixture of `dir` as `agent` and compares it with its
/// expected summary.
fn check_fixtures(agent: Agent, dir: &str, at_least: usize) {
    let fixtures = common::fixtures(dir);
    assert!(
        fixtures.len() >= at_least,
        "{dir}: {} fixtures, expected at least {at_least}",
        fixtures.len()
    );
    for fixture in fixtures {
        let call = parse(agent, &fixture.input)
            .unwrap_or_else(|error| panic!("{dir}/{}: {error}", fixture.name));
        assert_eq!(call.agent(), agent, "{dir}/{}", fixture.name);
        assert_eq!(
            common::summary(&call),
            fixture.expected,
            "{dir}/{}",
            fixture.name
        );
    }
}

#[test]
fn claude_code_fixtures_parse_to_their_expected_calls() {
    check_fixtures(Agent::ClaudeCode, "claude_code", 7);
}

#[test]
fn codex_fixtures_parse_to_their_expected_calls() {
    check_fixtures(Agent::Codex, "codex", 4);
}

#[test]
fn gemini_fixtures_parse_to_their_expected_calls() {
    check_fixtures(Agent::Gemini, "gemini", 5);
}

#[test]
fn cursor_fixtures_parse_to_their_expected_calls() {
    check_fixtures(Agent::Cursor, "cursor", 4);
}

/// Parses `value` as `agent`'s input.
fn parse_value(agent: Agent, value: &Value) -> countersign_hook::ToolCall {
    parse(agent, value.to_string().as_bytes()).unwrap()
}

#[test]
fn unknown_top_level_fields_are_ignored_and_kept_out_of_the_arguments() {
    let plain = common::input_value("claude_code", "pre_tool_use_read");
    let mut extended = plain.clone();
    let object = extended.as_object_mut().unwrap();
    object.insert("brand_new_field".into(), json!({"deep": [null, true, 1.5]}));
    object.insert("another".into(), json!("text"));
    let (plain, extended) = (
        parse_value(Agent::ClaudeCode, &plain),
        parse_value(Agent::ClaudeCode, &extended),
    );
    assert_eq!(plain, extended);
    assert_eq!(
        extended
            .arguments()
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["agent", "cwd", "tool_input", "tool_name"]
    );
}

#[test]
fn fields_countersign_does_not_use_are_not_checked() {
    // transcript_path, model, permission_mode and turn_id are not carried:
    // whatever they hold does not make a call unreadable.
    let mut input = common::input_value("codex", "pre_tool_use_bash");
    let object = input.as_object_mut().unwrap();
    object.insert("transcript_path".into(), json!(17));
    object.insert("model".into(), json!(["not", "a", "string"]));
    object.remove("turn_id");
    let call = parse_value(Agent::Codex, &input);
    assert_eq!(call.tool_name(), "Bash");
}

#[test]
fn tool_input_is_kept_exactly_as_received_unknown_fields_included() {
    let mut input = common::input_value("gemini", "before_tool_shell");
    input["tool_input"]["a_future_parameter"] = json!({"x": [1, 2, {"y": null}]});
    let call = parse_value(Agent::Gemini, &input);
    assert_eq!(
        Value::Object(call.tool_input().clone()),
        input["tool_input"]
    );
    assert_eq!(call.arguments()["tool_input"], input["tool_input"]);
}

#[test]
fn claude_code_tools_are_classed_as_documented() {
    use countersign_hook::claude_code::classify;
    for (name, class) in [
        ("Bash", ToolClass::Shell),
        ("PowerShell", ToolClass::Shell),
        ("Edit", ToolClass::Edit),
        ("MultiEdit", ToolClass::Edit),
        ("Write", ToolClass::Edit),
        ("NotebookEdit", ToolClass::Edit),
        ("Read", ToolClass::Read),
        ("Glob", ToolClass::Read),
        ("Grep", ToolClass::Read),
        ("LS", ToolClass::Read),
        ("NotebookRead", ToolClass::Read),
        ("WebFetch", ToolClass::Web),
        ("WebSearch", ToolClass::Web),
        ("mcp__github__create_issue", ToolClass::Mcp),
        ("Task", ToolClass::Other("Task".into())),
        ("TodoWrite", ToolClass::Other("TodoWrite".into())),
        ("bash", ToolClass::Other("bash".into())),
    ] {
        assert_eq!(classify(name), class, "{name}");
    }
}

#[test]
fn codex_gemini_tools_are_classed_as_documented() {
    use countersign_hook::{codex, gemini};
    assert_eq!(codex::classify("Bash"), ToolClass::Shell);
    assert_eq!(codex::classify("apply_patch"), ToolClass::Edit);
    assert_eq!(codex::classify("mcp__memory__read_graph"), ToolClass::Mcp);
    assert_eq!(
        codex::classify("view_image"),
        ToolClass::Other("view_image".into())
    );
    for (name, class) in [
        ("run_shell_command", ToolClass::Shell),
        ("write_file", ToolClass::Edit),
        ("replace", ToolClass::Edit),
        ("read_file", ToolClass::Read),
        ("read_many_files", ToolClass::Read),
        ("glob", ToolClass::Read),
        ("grep_search", ToolClass::Read),
        ("list_directory", ToolClass::Read),
        ("web_fetch", ToolClass::Web),
        ("google_web_search", ToolClass::Web),
        ("mcp_github_create_issue", ToolClass::Mcp),
        ("write_todos", ToolClass::Other("write_todos".into())),
    ] {
        assert_eq!(gemini::classify(name), class, "{name}");
    }
}

#[test]
fn a_gemini_call_with_an_mcp_context_is_an_mcp_call_whatever_its_name() {
    let mut input = common::input_value("gemini", "before_tool_mcp");
    input["tool_name"] = json!("create_issue");
    assert_eq!(parse_value(Agent::Gemini, &input).class(), &ToolClass::Mcp);
}

#[test]
fn each_class_is_proposed_as_its_operation() {
    for (class, operation) in [
        (ToolClass::Shell, "agent.shell"),
        (ToolClass::Edit, "agent.edit"),
        (ToolClass::Read, "agent.read"),
        (ToolClass::Web, "agent.web"),
        (ToolClass::Mcp, "agent.mcp"),
        (ToolClass::Other("Anything".into()), "agent.other"),
    ] {
        assert_eq!(class.operation(), operation);
    }
}

#[test]
fn agents_are_named_as_the_cli_spells_them() {
    for agent in Agent::ALL {
        assert_eq!(agent.name().parse::<Agent>(), Ok(agent));
        assert_eq!(agent.to_string(), agent.name());
    }
    assert_eq!(
        "claude".parse::<Agent>(),
        Err(UnknownAgent("claude".into()))
    );
}

#[test]
fn each_agent_answers_its_documented_events_only() {
    assert_eq!(
        Agent::ClaudeCode.events(),
        [HookEvent::PreToolUse, HookEvent::PermissionRequest]
    );
    assert_eq!(
        Agent::Codex.events(),
        [HookEvent::PreToolUse, HookEvent::PermissionRequest]
    );
    assert_eq!(Agent::Gemini.events(), [HookEvent::BeforeTool]);
    assert_eq!(
        Agent::Cursor.events(),
        [
            HookEvent::BeforeShellExecution,
            HookEvent::BeforeMcpExecution
        ]
    );
    assert_eq!(
        Agent::Cursor.event_named("beforeMCPExecution"),
        Some(HookEvent::BeforeMcpExecution)
    );
    assert_eq!(Agent::Gemini.event_named("PreToolUse"), None);
}
