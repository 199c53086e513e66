//! `[operation.premise]`, both kinds (a state read and a premise command):
//! what the checks accept and refuse, what it does to the contract
//! revision, the read it names and its preview line.
#![allow(clippy::unwrap_used)]

use countersign_registry::{ArgumentsError, PremiseRead, Registry, RegistryError};
use countersign_verifier::{CommandPremise, Premise, StatePremise};
use serde_json::json;

/// A one-operation registry with `premise` and `schema_extra` spliced in.
fn registry(premise: &str, schema_extra: &str) -> Result<Registry, RegistryError> {
    Registry::from_toml_str(&format!(
        r#"
[[operation]]
name = "thing.do"
description = "Do a thing"
class = "write"
replay_safe = false
preview = "Do {{target}}"
{premise}

[operation.effect]
kind = "command"
program = "/bin/true"
timeout_secs = 5

[operation.schema]
type = "object"
additionalProperties = false
{schema_extra}

[operation.schema.properties.target]
type = "string"

[operation.schema.properties.count]
type = "integer"
"#
    ))
}

const PREMISE: &str = r#"premise = { namespace = "schedules", key = "target" }"#;
const REQUIRED: &str = r#"required = ["target", "count"]"#;

/// The contract revision of `thing.do` with `premise`.
fn revision(premise: &str) -> String {
    registry(premise, REQUIRED)
        .unwrap()
        .get("thing.do")
        .unwrap()
        .contract_revision()
        .to_owned()
}

/// What `thing.do`'s premise reads for `args`.
fn read(premise: &str, args: &[u8]) -> Result<Option<PremiseRead>, ArgumentsError> {
    let registry = registry(premise, REQUIRED).unwrap();
    let op = registry.get("thing.do").unwrap();
    op.premise_read(&op.validate_arguments(args).unwrap())
}

fn refusal(premise: &str, schema_extra: &str) -> String {
    match registry(premise, schema_extra) {
        Err(RegistryError::InvalidField {
            operation,
            field,
            reason,
        }) => {
            assert_eq!(
                (operation.as_str(), field.as_str()),
                ("thing.do", "premise")
            );
            reason
        }
        other => panic!("expected a premise refusal, got {other:?}"),
    }
}

#[test]
fn a_premise_over_a_required_string_argument_loads() {
    assert_eq!(
        read(PREMISE, br#"{"count":1,"target":"nightly"}"#).unwrap(),
        Some(PremiseRead::State {
            namespace: "schedules".into(),
            key: "nightly".into()
        })
    );
}

#[test]
fn refuses_a_premise_keyed_by_an_optional_unknown_or_non_string_argument() {
    assert_eq!(
        refusal(PREMISE, r#"required = ["count"]"#),
        "key \"target\" must name a required argument of type string"
    );
    assert_eq!(
        refusal(
            r#"premise = { namespace = "schedules", key = "missing" }"#,
            REQUIRED
        ),
        "key \"missing\" must name a required argument of type string"
    );
    assert_eq!(
        refusal(
            r#"premise = { namespace = "schedules", key = "count" }"#,
            REQUIRED
        ),
        "key \"count\" must name a required argument of type string"
    );
    assert_eq!(
        refusal(
            r#"premise = { namespace = "Sched ules", key = "target" }"#,
            REQUIRED
        ),
        "namespace \"Sched ules\" is not a dotted lowercase name"
    );
    assert!(matches!(
        registry(
            r#"premise = { namespace = "schedules", key = "target", command = "/bin/x" }"#,
            REQUIRED
        ),
        Err(RegistryError::Toml(_))
    ));
}

#[test]
fn declaring_or_changing_a_premise_changes_the_contract_revision_and_only_then() {
    let without = revision("");
    let with = revision(PREMISE);
    let other_namespace = revision(r#"premise = { namespace = "other", key = "target" }"#);
    assert_ne!(without, with);
    assert_ne!(with, other_namespace);
    assert_eq!(without, revision(""));
}

#[test]
fn an_empty_key_argument_names_no_state_and_is_refused() {
    let empty = br#"{"count":1,"target":""}"#;
    assert_eq!(
        read(PREMISE, empty),
        Err(ArgumentsError::PremiseKey("target".into()))
    );
    assert_eq!(read("", empty), Ok(None));
}

#[test]
fn the_preview_shows_the_premise_the_signer_read_above_the_model_supplied_section() {
    let registry = registry(PREMISE, REQUIRED).unwrap();
    let op = registry.get("thing.do").unwrap();
    let args = op
        .validate_arguments(br#"{"count":1,"target":"nightly"}"#)
        .unwrap();
    let found = StatePremise {
        namespace: "schedules".into(),
        key: "nightly".into(),
        value: Some(json!({"state": "active", "note": "\u{1b}[2J"})),
        version: 9,
    };
    let text = op.render_preview(
        &args,
        Some(&Premise::State(found.clone())),
        "it is paused already",
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[3],
        r#"Premise:   schedules "nightly" = {"note":"\u001b[2J","state":"active"} (version 9), read by the signer"#
    );
    assert_eq!(lines[4], "---- Model-supplied, unverified ----");
    assert_eq!(lines[5], r#"note: "it is paused already""#);
    let absent = Premise::State(StatePremise {
        value: None,
        version: 0,
        ..found
    });
    let text = op.render_preview(&args, Some(&absent), "");
    assert!(
        text.contains("Premise:   schedules \"nightly\" has no value, read by the signer\n"),
        "{text}"
    );
    assert!(!op.render_preview(&args, None, "").contains("Premise:"));
}

const COMMAND: &str =
    r#"premise = { program = "/usr/local/bin/deployed-version", args = ["--short", "a b"] }"#;

#[test]
fn a_premise_command_loads_and_names_its_fixed_argv_whatever_the_arguments() {
    let empty = br#"{"count":1,"target":""}"#;
    assert_eq!(
        read(COMMAND, empty).unwrap(),
        Some(PremiseRead::Command {
            argv: vec![
                "/usr/local/bin/deployed-version".into(),
                "--short".into(),
                "a b".into()
            ]
        })
    );
    assert_eq!(
        read(r#"premise = { program = "/bin/date" }"#, empty).unwrap(),
        Some(PremiseRead::Command {
            argv: vec!["/bin/date".into()]
        })
    );
}

#[test]
fn refuses_a_premise_command_that_is_relative_too_long_or_mixed_with_a_state_read() {
    assert_eq!(
        refusal(r#"premise = { program = "date" }"#, REQUIRED),
        "program \"date\" is not an absolute path"
    );
    let many = vec!["\"x\""; 32].join(", ");
    assert_eq!(
        refusal(
            &format!(r#"premise = {{ program = "/bin/echo", args = [{many}] }}"#),
            REQUIRED
        ),
        "a premise command has at most 31 arguments"
    );
    let long = "y".repeat(257);
    assert_eq!(
        refusal(
            &format!(r#"premise = {{ program = "/bin/echo", args = ["{long}"] }}"#),
            REQUIRED
        ),
        format!("{long:?} is longer than 256 bytes")
    );
    for mixed in [
        r#"premise = { program = "/bin/date", namespace = "schedules", key = "target" }"#,
        r#"premise = { program = "/bin/date", key = "target" }"#,
        r#"premise = { namespace = "schedules" }"#,
        r#"premise = { args = ["x"] }"#,
    ] {
        match registry(mixed, REQUIRED) {
            Err(RegistryError::Toml(message)) => assert!(
                message.contains("a premise is either `namespace` and `key`"),
                "{mixed}: {message}"
            ),
            other => panic!("{mixed}: expected a TOML refusal, got {other:?}"),
        }
    }
}

#[test]
fn a_premise_commands_argv_is_part_of_the_contract() {
    let with = revision(COMMAND);
    assert_ne!(with, revision(PREMISE));
    assert_ne!(
        with,
        revision(r#"premise = { program = "/usr/local/bin/deployed-version", args = ["--long"] }"#)
    );
    assert_eq!(with, revision(COMMAND));
}

#[test]
fn the_preview_shows_what_the_premise_command_printed_escaped() {
    let registry = registry(COMMAND, REQUIRED).unwrap();
    let op = registry.get("thing.do").unwrap();
    let args = op
        .validate_arguments(br#"{"count":1,"target":"nightly"}"#)
        .unwrap();
    let printed = Premise::Command(CommandPremise {
        argv: vec!["/usr/local/bin/deployed-version".into(), "--short".into()],
        output: "v1.4.2\n\u{1b}[2J".into(),
    });
    let text = op.render_preview(&args, Some(&printed), "");
    assert_eq!(
        text.lines().nth(3).unwrap(),
        r#"Premise:   ["/usr/local/bin/deployed-version","--short"] printed "v1.4.2\n\u001b[2J", run by the signer"#
    );
}
