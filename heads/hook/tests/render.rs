//! Every agent's answer, per event and decision, exactly as the agent
//! documents it.
#![allow(clippy::unwrap_used)]

use countersign_hook::{Agent, Answer, HookEvent, MAX_REASON_CHARS, Rendered, render};

const REASON: &str = "approved by alice, proposal 01JE5K2V";

/// A JSON line on stdout, exit 0.
fn json(stdout: &str) -> Rendered {
    Rendered {
        stdout: format!("{stdout}\n"),
        stderr: String::new(),
        exit_code: 0,
    }
}

/// No output, exit 0.
fn silent() -> Rendered {
    Rendered {
        stdout: String::new(),
        stderr: String::new(),
        exit_code: 0,
    }
}

/// `reason` on stderr, exit 2.
fn exit_two(reason: &str) -> Rendered {
    Rendered {
        stdout: String::new(),
        stderr: format!("{reason}\n"),
        exit_code: 2,
    }
}

fn at(agent: Agent, event: HookEvent, answer: Answer) -> Rendered {
    render(agent, Some(event), &answer)
}

#[test]
fn claude_code_pre_tool_use_answers_each_decision_in_hook_specific_output() {
    let event = HookEvent::PreToolUse;
    for (answer, decision) in [
        (Answer::allow(REASON), "allow"),
        (Answer::deny(REASON), "deny"),
        (Answer::ask(REASON), "ask"),
    ] {
        assert_eq!(
            at(Agent::ClaudeCode, event, answer),
            json(&format!(
                r#"{{"hookSpecificOutput":{{"hookEventName":"PreToolUse","permissionDecision":"{decision}","permissionDecisionReason":"{REASON}"}}}}"#
            ))
        );
    }
}

#[test]
fn claude_code_permission_request_allows_denies_or_leaves_the_dialog() {
    let event = HookEvent::PermissionRequest;
    assert_eq!(
        at(Agent::ClaudeCode, event, Answer::allow(REASON)),
        json(
            r#"{"hookSpecificOutput":{"decision":{"behavior":"allow"},"hookEventName":"PermissionRequest"}}"#
        )
    );
    assert_eq!(
        at(Agent::ClaudeCode, event, Answer::deny(REASON)),
        json(&format!(
            r#"{{"hookSpecificOutput":{{"decision":{{"behavior":"deny","message":"{REASON}"}},"hookEventName":"PermissionRequest"}}}}"#
        ))
    );
    assert_eq!(at(Agent::ClaudeCode, event, Answer::ask(REASON)), silent());
}

#[test]
fn codex_pre_tool_use_allows_by_silence_and_denies_an_ask() {
    let event = HookEvent::PreToolUse;
    assert_eq!(at(Agent::Codex, event, Answer::allow(REASON)), silent());
    assert_eq!(
        at(Agent::Codex, event, Answer::deny(REASON)),
        json(&format!(
            r#"{{"hookSpecificOutput":{{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"{REASON}"}}}}"#
        ))
    );
    assert_eq!(
        at(Agent::Codex, event, Answer::ask(REASON)),
        json(&format!(
            r#"{{"hookSpecificOutput":{{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"{REASON} (Codex cannot ask before a tool call, so countersign denies it)"}}}}"#
        ))
    );
}

#[test]
fn codex_permission_request_allows_denies_or_leaves_the_prompt() {
    let event = HookEvent::PermissionRequest;
    assert_eq!(
        at(Agent::Codex, event, Answer::allow(REASON)),
        json(
            r#"{"hookSpecificOutput":{"decision":{"behavior":"allow"},"hookEventName":"PermissionRequest"}}"#
        )
    );
    assert_eq!(
        at(Agent::Codex, event, Answer::deny(REASON)),
        json(&format!(
            r#"{{"hookSpecificOutput":{{"decision":{{"behavior":"deny","message":"{REASON}"}},"hookEventName":"PermissionRequest"}}}}"#
        ))
    );
    assert_eq!(at(Agent::Codex, event, Answer::ask(REASON)), silent());
}

#[test]
fn gemini_before_tool_answers_decision_and_reason() {
    let event = HookEvent::BeforeTool;
    assert_eq!(
        at(Agent::Gemini, event, Answer::allow(REASON)),
        json(&format!(r#"{{"decision":"allow","reason":"{REASON}"}}"#))
    );
    assert_eq!(
        at(Agent::Gemini, event, Answer::deny(REASON)),
        json(&format!(r#"{{"decision":"deny","reason":"{REASON}"}}"#))
    );
    assert_eq!(
        at(Agent::Gemini, event, Answer::ask(REASON)),
        json(&format!(
            r#"{{"decision":"ask","reason":"{REASON}","systemMessage":"{REASON}"}}"#
        ))
    );
}

#[test]
fn cursor_answers_permission_with_both_messages_at_either_event() {
    for event in [
        HookEvent::BeforeShellExecution,
        HookEvent::BeforeMcpExecution,
    ] {
        for (answer, permission) in [
            (Answer::allow(REASON), "allow"),
            (Answer::deny(REASON), "deny"),
            (Answer::ask(REASON), "ask"),
        ] {
            assert_eq!(
                at(Agent::Cursor, event, answer),
                json(&format!(
                    r#"{{"agent_message":"{REASON}","permission":"{permission}","user_message":"{REASON}"}}"#
                ))
            );
        }
    }
}

const UNKNOWN: &str = "countersign cannot answer this hook event, so the call is denied";

#[test]
fn an_unknown_event_is_always_denied_in_the_form_every_event_honours() {
    for answer in [Answer::allow(REASON), Answer::ask(REASON)] {
        for agent in [Agent::ClaudeCode, Agent::Codex, Agent::Gemini] {
            assert_eq!(render(agent, None, &answer), exit_two(UNKNOWN), "{agent}");
        }
        assert_eq!(
            render(Agent::Cursor, None, &answer),
            json(&format!(
                r#"{{"agent_message":"{UNKNOWN}","permission":"deny","user_message":"{UNKNOWN}"}}"#
            ))
        );
    }
    assert_eq!(
        render(Agent::ClaudeCode, None, &Answer::deny(REASON)),
        exit_two(REASON)
    );
}

#[test]
fn an_event_of_another_agent_is_treated_as_unknown() {
    assert_eq!(
        render(
            Agent::Gemini,
            Some(HookEvent::PreToolUse),
            &Answer::allow(REASON)
        ),
        exit_two(UNKNOWN)
    );
    assert_eq!(
        render(
            Agent::Codex,
            Some(HookEvent::BeforeTool),
            &Answer::allow(REASON)
        ),
        exit_two(UNKNOWN)
    );
    assert_eq!(
        render(
            Agent::Cursor,
            Some(HookEvent::PermissionRequest),
            &Answer::allow(REASON)
        ),
        json(&format!(
            r#"{{"agent_message":"{UNKNOWN}","permission":"deny","user_message":"{UNKNOWN}"}}"#
        ))
    );
}

#[test]
fn an_empty_reason_becomes_one_that_says_what_happened() {
    assert_eq!(
        at(Agent::Codex, HookEvent::PreToolUse, Answer::deny("  \n ")),
        json(
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"countersign denied this tool call"}}"#
        )
    );
    assert_eq!(
        at(Agent::Gemini, HookEvent::BeforeTool, Answer::allow("")),
        json(r#"{"decision":"allow","reason":"countersign allowed this tool call"}"#)
    );
}

#[test]
fn terminal_escapes_in_a_reason_do_not_reach_the_terminal() {
    let rendered = render(
        Agent::ClaudeCode,
        None,
        &Answer::deny("\u{1b}[2Jdenied\u{7}\r by policy\u{9b}31m"),
    );
    assert_eq!(rendered, exit_two("[2Jdenied   by policy 31m"));
}

#[test]
fn a_long_reason_is_cut() {
    let rendered = at(
        Agent::Gemini,
        HookEvent::BeforeTool,
        Answer::deny("é".repeat(MAX_REASON_CHARS + 10)),
    );
    let value: serde_json::Value = serde_json::from_str(&rendered.stdout).unwrap();
    let reason = value["reason"].as_str().unwrap();
    assert_eq!(reason.chars().count(), MAX_REASON_CHARS + " [cut]".len());
    assert!(reason.ends_with("é [cut]"));
}

#[test]
fn a_reason_with_quotes_and_newlines_stays_one_json_line() {
    let rendered = at(
        Agent::Cursor,
        HookEvent::BeforeShellExecution,
        Answer::deny("line one\n\"quoted\" \\ line two"),
    );
    assert_eq!(
        rendered,
        json(
            r#"{"agent_message":"line one\n\"quoted\" \\ line two","permission":"deny","user_message":"line one\n\"quoted\" \\ line two"}"#
        )
    );
}
