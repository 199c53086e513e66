//! Hook inputs that are not a call a person can be asked about are refused
//! with a one-line reason, and the refusal is a deny in the shape of the
//! agent that was asked.
#![allow(clippy::unwrap_used)]

mod common;

use countersign_hook::{
    Agent, HookEvent, MAX_INPUT_BYTES, ParseErrorKind, Rendered, parse, refusal,
};
use countersign_verifier::canonical::CanonicalError;
use serde_json::{Value, json};

/// The refusal of `bytes` as `agent`'s input, with its error kind.
fn refuse(agent: Agent, bytes: &[u8]) -> (ParseErrorKind, Option<HookEvent>, Rendered) {
    let error = parse(agent, bytes).expect_err("the input must be refused");
    (error.kind().clone(), error.event(), refusal(agent, &error))
}

fn exit_two(reason: &str) -> Rendered {
    Rendered {
        stdout: String::new(),
        stderr: format!("{reason}\n"),
        exit_code: 2,
    }
}

fn json(stdout: &str) -> Rendered {
    Rendered {
        stdout: format!("{stdout}\n"),
        stderr: String::new(),
        exit_code: 0,
    }
}

fn cursor_deny(reason: &str) -> Rendered {
    json(&format!(
        r#"{{"agent_message":"{reason}","permission":"deny","user_message":"{reason}"}}"#
    ))
}

#[test]
fn refuses_input_that_is_not_json_with_a_deny_each_agent_honours() {
    let reason = |agent: &str| {
        format!(
            "countersign refused this {agent} hook input: input is not strict JSON: JSON syntax error at byte 0"
        )
    };
    for agent in [Agent::ClaudeCode, Agent::Codex, Agent::Gemini] {
        let (kind, event, rendered) = refuse(agent, b"not json");
        assert_eq!(
            kind,
            ParseErrorKind::NotJson(CanonicalError::Syntax { offset: 0 })
        );
        assert_eq!(event, None);
        assert_eq!(rendered, exit_two(&reason(agent.name())));
    }
    let (_, _, rendered) = refuse(Agent::Cursor, b"not json");
    assert_eq!(rendered, cursor_deny(&reason("cursor")));
}

#[test]
fn refuses_empty_input() {
    let (kind, _, _) = refuse(Agent::ClaudeCode, b"");
    assert!(matches!(kind, ParseErrorKind::NotJson(_)), "{kind:?}");
}

#[test]
fn refuses_json_that_is_not_an_object() {
    for bytes in [&b"[1,2]"[..], b"\"PreToolUse\"", b"null", b"42"] {
        let (kind, event, rendered) = refuse(Agent::Codex, bytes);
        assert_eq!(kind, ParseErrorKind::NotAnObject);
        assert_eq!(event, None);
        assert_eq!(
            rendered,
            exit_two("countersign refused this codex hook input: input is not a JSON object")
        );
    }
}

#[test]
fn refuses_oversize_input_before_parsing_it() {
    let mut bytes = common::input("claude_code", "pre_tool_use_bash");
    bytes.resize(MAX_INPUT_BYTES + 1, b' ');
    let (kind, event, rendered) = refuse(Agent::ClaudeCode, &bytes);
    assert_eq!(
        kind,
        ParseErrorKind::TooLarge {
            limit: MAX_INPUT_BYTES
        }
    );
    assert_eq!(event, None);
    assert_eq!(
        rendered,
        exit_two(
            "countersign refused this claude-code hook input: input larger than 1048576 bytes"
        )
    );
}

#[test]
fn accepts_input_of_exactly_the_limit() {
    let mut bytes = common::input("claude_code", "pre_tool_use_bash");
    bytes.resize(MAX_INPUT_BYTES, b' ');
    assert!(parse(Agent::ClaudeCode, &bytes).is_ok());
}

#[test]
fn refuses_duplicate_keys_rather_than_guessing_which_one_counts() {
    let bytes = br#"{"hook_event_name":"BeforeTool","session_id":"s","cwd":"/w","tool_name":"read_file","tool_name":"run_shell_command","tool_input":{}}"#;
    let (kind, event, rendered) = refuse(Agent::Gemini, bytes);
    assert_eq!(
        kind,
        ParseErrorKind::NotJson(CanonicalError::DuplicateKey("tool_name".into()))
    );
    assert_eq!(event, None);
    assert_eq!(
        rendered,
        exit_two(
            r#"countersign refused this gemini hook input: input is not strict JSON: duplicate object key "tool_name""#
        )
    );
}

#[test]
fn refuses_nesting_deeper_than_the_strict_parsers_limit() {
    let mut input = common::input_value("claude_code", "pre_tool_use_bash");
    let mut deep = json!("bottom");
    for _ in 0..40 {
        deep = json!([deep]);
    }
    input["tool_input"]["deep"] = deep;
    let (kind, _, _) = refuse(Agent::ClaudeCode, input.to_string().as_bytes());
    assert_eq!(kind, ParseErrorKind::NotJson(CanonicalError::TooDeep));
}

/// `fixture` of `dir` with `change` applied, refused as `agent`.
fn refuse_changed(
    agent: Agent,
    dir: &str,
    fixture: &str,
    change: impl FnOnce(&mut serde_json::Map<String, Value>),
) -> (ParseErrorKind, Option<HookEvent>, Rendered) {
    let mut input = common::input_value(dir, fixture);
    change(input.as_object_mut().unwrap());
    refuse(agent, input.to_string().as_bytes())
}

#[test]
fn refuses_a_claude_code_call_without_tool_name_in_the_events_own_shape() {
    let (kind, event, rendered) = refuse_changed(
        Agent::ClaudeCode,
        "claude_code",
        "pre_tool_use_bash",
        |input| {
            input.remove("tool_name");
        },
    );
    assert_eq!(kind, ParseErrorKind::Missing("tool_name"));
    assert_eq!(event, Some(HookEvent::PreToolUse));
    assert_eq!(
        rendered,
        json(
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"countersign refused this claude-code hook input: missing field tool_name"}}"#
        )
    );
}

#[test]
fn refuses_a_permission_request_with_a_null_tool_name_as_a_denied_request() {
    let (kind, event, rendered) = refuse_changed(
        Agent::ClaudeCode,
        "claude_code",
        "permission_request_bash",
        |input| {
            input.insert("tool_name".into(), Value::Null);
        },
    );
    assert_eq!(kind, ParseErrorKind::Missing("tool_name"));
    assert_eq!(event, Some(HookEvent::PermissionRequest));
    assert_eq!(
        rendered,
        json(
            r#"{"hookSpecificOutput":{"decision":{"behavior":"deny","message":"countersign refused this claude-code hook input: missing field tool_name"},"hookEventName":"PermissionRequest"}}"#
        )
    );
}

#[test]
fn refuses_fields_of_the_wrong_type() {
    let cases: [(&str, Value, ParseErrorKind); 4] = [
        (
            "tool_input",
            json!("git status"),
            ParseErrorKind::WrongType {
                field: "tool_input",
                expected: "a JSON object",
            },
        ),
        (
            "tool_name",
            json!(["Bash"]),
            ParseErrorKind::WrongType {
                field: "tool_name",
                expected: "a string",
            },
        ),
        (
            "session_id",
            json!(7),
            ParseErrorKind::WrongType {
                field: "session_id",
                expected: "a string",
            },
        ),
        (
            "tool_use_id",
            json!(false),
            ParseErrorKind::WrongType {
                field: "tool_use_id",
                expected: "a string",
            },
        ),
    ];
    for (field, value, expected) in cases {
        let (kind, event, _) = refuse_changed(
            Agent::ClaudeCode,
            "claude_code",
            "pre_tool_use_bash",
            |input| {
                input.insert(field.into(), value);
            },
        );
        assert_eq!(kind, expected, "{field}");
        assert_eq!(event, Some(HookEvent::PreToolUse));
    }
}

#[test]
fn refuses_a_gemini_call_whose_tool_input_is_not_an_object() {
    let (kind, event, rendered) =
        refuse_changed(Agent::Gemini, "gemini", "before_tool_shell", |input| {
            input.insert("tool_input".into(), json!(null));
        });
    assert_eq!(kind, ParseErrorKind::Missing("tool_input"));
    assert_eq!(event, Some(HookEvent::BeforeTool));
    assert_eq!(
        rendered,
        json(
            r#"{"decision":"deny","reason":"countersign refused this gemini hook input: missing field tool_input"}"#
        )
    );
}

#[test]
fn refuses_a_pre_tool_use_without_its_tool_use_id() {
    let (kind, event, _) = refuse_changed(Agent::Codex, "codex", "pre_tool_use_bash", |input| {
        input.remove("tool_use_id");
    });
    assert_eq!(kind, ParseErrorKind::Missing("tool_use_id"));
    assert_eq!(event, Some(HookEvent::PreToolUse));
}

#[test]
fn refuses_an_event_countersign_does_not_answer() {
    let (kind, event, rendered) = refuse_changed(
        Agent::ClaudeCode,
        "claude_code",
        "pre_tool_use_bash",
        |input| {
            input.insert("hook_event_name".into(), json!("PostToolUse"));
        },
    );
    assert_eq!(
        kind,
        ParseErrorKind::UnsupportedEvent {
            agent: Agent::ClaudeCode,
            name: "PostToolUse".into()
        }
    );
    assert_eq!(event, None);
    assert_eq!(
        rendered,
        exit_two(
            r#"countersign refused this claude-code hook input: hook_event_name "PostToolUse" is not an event countersign answers for claude-code"#
        )
    );
}

#[test]
fn refuses_another_agents_event_and_echoes_only_a_bounded_name() {
    let (kind, _, rendered) =
        refuse_changed(Agent::Cursor, "cursor", "before_shell_execution", |input| {
            input.insert("hook_event_name".into(), json!("x".repeat(500)));
        });
    let name = "x".repeat(64);
    assert_eq!(
        kind,
        ParseErrorKind::UnsupportedEvent {
            agent: Agent::Cursor,
            name: name.clone()
        }
    );
    assert_eq!(
        rendered,
        cursor_deny(&format!(
            r#"countersign refused this cursor hook input: hook_event_name \"{name}\" is not an event countersign answers for cursor"#
        ))
    );
}

#[test]
fn refuses_input_without_hook_event_name() {
    let (kind, event, _) = refuse_changed(Agent::Gemini, "gemini", "before_tool_shell", |input| {
        input.remove("hook_event_name");
    });
    assert_eq!(kind, ParseErrorKind::Missing("hook_event_name"));
    assert_eq!(event, None);
}

#[test]
fn refuses_a_cursor_mcp_call_whose_tool_input_text_is_not_strict_json() {
    let (kind, event, rendered) = refuse_changed(
        Agent::Cursor,
        "cursor",
        "before_mcp_execution_text_input",
        |input| {
            input.insert(
                "tool_input".into(),
                json!(r#"{"query": "a", "query": "b"}"#),
            );
        },
    );
    assert_eq!(
        kind,
        ParseErrorKind::ToolInputNotJson(CanonicalError::DuplicateKey("query".into()))
    );
    assert_eq!(event, Some(HookEvent::BeforeMcpExecution));
    assert_eq!(
        rendered,
        cursor_deny(
            r#"countersign refused this cursor hook input: field tool_input is not strict JSON text: duplicate object key \"query\""#
        )
    );
}

#[test]
fn refuses_a_cursor_mcp_call_whose_tool_input_text_is_not_an_object() {
    let (kind, _, _) = refuse_changed(
        Agent::Cursor,
        "cursor",
        "before_mcp_execution_text_input",
        |input| {
            input.insert("tool_input".into(), json!("[1, 2]"));
        },
    );
    assert_eq!(
        kind,
        ParseErrorKind::WrongType {
            field: "tool_input",
            expected: "a JSON object or the JSON text of one"
        }
    );
}

#[test]
fn refuses_a_cursor_call_with_neither_cwd_nor_a_workspace_root() {
    let (kind, event, _) =
        refuse_changed(Agent::Cursor, "cursor", "before_shell_execution", |input| {
            input.remove("cwd");
            input.insert("workspace_roots".into(), json!([]));
        });
    assert_eq!(kind, ParseErrorKind::Missing("cwd"));
    assert_eq!(event, Some(HookEvent::BeforeShellExecution));
    let (kind, _, _) = refuse_changed(Agent::Cursor, "cursor", "before_shell_execution", |input| {
        input.remove("cwd");
        input.insert("workspace_roots".into(), json!(["/w", 3]));
    });
    assert_eq!(
        kind,
        ParseErrorKind::WrongType {
            field: "workspace_roots",
            expected: "an array of strings"
        }
    );
}

#[test]
fn a_refusal_never_allows_for_any_agent_or_event() {
    let inputs: [&[u8]; 4] = [b"", b"{", b"[]", br#"{"hook_event_name":"PreToolUse"}"#];
    for agent in Agent::ALL {
        for bytes in inputs {
            let error = parse(agent, bytes).unwrap_err();
            let rendered = refusal(agent, &error);
            let denied = rendered.exit_code == 2 || rendered.stdout.contains(r#""deny""#);
            assert!(denied, "{agent} {bytes:?}: {rendered:?}");
            assert!(!rendered.stdout.contains(r#""allow""#));
        }
    }
}
