//! Codex's published hook schemas (tests/fixtures/codex, see its README)
//! accept every Codex fixture input and every output countersign renders
//! for Codex, and refuse what they should.
#![allow(clippy::unwrap_used)]

mod common;

use countersign_hook::{Agent, Answer, HookEvent, parse, refusal, render};
use jsonschema::Validator;
use serde_json::{Value, json};

fn schema(name: &str) -> Validator {
    let path = common::fixture_dir("codex").join(format!("{name}.schema.json"));
    let schema: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

fn assert_valid(validator: &Validator, instance: &Value, what: &str) {
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|error| error.to_string())
        .collect();
    assert!(errors.is_empty(), "{what}: {errors:?}");
}

fn input_schema(event: HookEvent) -> Validator {
    match event {
        HookEvent::PreToolUse => schema("pre-tool-use.command.input"),
        HookEvent::PermissionRequest => schema("permission-request.command.input"),
        other => panic!("not a Codex event: {other}"),
    }
}

fn output_schema(event: HookEvent) -> Validator {
    match event {
        HookEvent::PreToolUse => schema("pre-tool-use.command.output"),
        HookEvent::PermissionRequest => schema("permission-request.command.output"),
        other => panic!("not a Codex event: {other}"),
    }
}

#[test]
fn every_codex_fixture_input_is_valid_for_its_events_schema() {
    let fixtures = common::fixtures("codex");
    assert!(fixtures.len() >= 4);
    for fixture in fixtures {
        let call = parse(Agent::Codex, &fixture.input).unwrap();
        let instance: Value = serde_json::from_slice(&fixture.input).unwrap();
        assert_valid(&input_schema(call.event()), &instance, &fixture.name);
    }
}

#[test]
fn the_input_schemas_refuse_what_codex_would_never_send() {
    // Negative controls: the validator is really checking.
    let mut input = common::input_value("codex", "pre_tool_use_bash");
    input.as_object_mut().unwrap().remove("turn_id");
    assert!(!input_schema(HookEvent::PreToolUse).is_valid(&input));
    let mut input = common::input_value("codex", "permission_request_bash");
    input["tool_use_id"] = json!("call_1");
    assert!(!input_schema(HookEvent::PermissionRequest).is_valid(&input));
}

#[test]
fn every_rendered_codex_output_is_valid_for_its_events_schema() {
    let answers = [
        Answer::allow("approved by alice"),
        Answer::deny("denied by bob"),
        Answer::ask("a person must decide"),
        Answer::deny(""),
    ];
    let mut checked = 0;
    for event in Agent::Codex.events() {
        for answer in &answers {
            let rendered = render(Agent::Codex, Some(*event), answer);
            assert_eq!(rendered.exit_code, 0);
            assert!(rendered.stderr.is_empty());
            if rendered.stdout.is_empty() {
                continue; // no output: "no opinion", which Codex documents
            }
            let output: Value = serde_json::from_str(&rendered.stdout).unwrap();
            assert_valid(
                &output_schema(*event),
                &output,
                &format!("{event} {answer:?}"),
            );
            checked += 1;
        }
    }
    assert_eq!(
        checked, 6,
        "PreToolUse: deny, ask, empty deny; PermissionRequest: allow, deny, empty deny"
    );
}

#[test]
fn a_refusal_of_a_codex_input_with_a_known_event_is_valid_for_its_schema() {
    for (name, event) in [
        ("pre_tool_use_bash", HookEvent::PreToolUse),
        ("permission_request_bash", HookEvent::PermissionRequest),
    ] {
        let mut input = common::input_value("codex", name);
        input.as_object_mut().unwrap().remove("tool_name");
        let error = parse(Agent::Codex, input.to_string().as_bytes()).unwrap_err();
        assert_eq!(error.event(), Some(event));
        let rendered = refusal(Agent::Codex, &error);
        let output: Value = serde_json::from_str(&rendered.stdout).unwrap();
        assert_valid(&output_schema(event), &output, name);
    }
}

#[test]
fn the_output_schemas_refuse_what_codex_would_not_read() {
    let pre = output_schema(HookEvent::PreToolUse);
    assert!(!pre.is_valid(&json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "maybe"}})));
    assert!(!pre.is_valid(&json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest"}})));
    let request = output_schema(HookEvent::PermissionRequest);
    assert!(!request.is_valid(&json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "ask"}}})));
}
