//! `[operation.premise]`: what the checks accept and refuse, what it does
//! to the contract revision, the read it names and its preview line.
#![allow(clippy::unwrap_used)]

use countersign_registry::{ArgumentsError, PremiseRead, Registry, RegistryError};
use countersign_verifier::Premise;
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
    let registry = registry(PREMISE, REQUIRED).unwrap();
    let op = registry.get("thing.do").unwrap();
    let args = op
        .validate_arguments(br#"{"count":1,"target":"nightly"}"#)
        .unwrap();
    assert_eq!(
        op.premise_read(&args).unwrap(),
        Some(PremiseRead {
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
    let revision = |premise: &str| {
        registry(premise, REQUIRED)
            .unwrap()
            .get("thing.do")
            .unwrap()
            .contract_revision()
            .to_owned()
    };
    let without = revision("");
    let with = revision(PREMISE);
    let other_namespace = revision(r#"premise = { namespace = "other", key = "target" }"#);
    assert_ne!(without, with);
    assert_ne!(with, other_namespace);
    assert_eq!(without, revision(""));
}

#[test]
fn an_empty_key_argument_names_no_state_and_is_refused() {
    let registry = registry(PREMISE, REQUIRED).unwrap();
    let op = registry.get("thing.do").unwrap();
    let args = op
        .validate_arguments(br#"{"count":1,"target":""}"#)
        .unwrap();
    assert_eq!(
        op.premise_read(&args),
        Err(ArgumentsError::PremiseKey("target".into()))
    );
    let without = self::registry("", REQUIRED).unwrap();
    let op = without.get("thing.do").unwrap();
    assert_eq!(op.premise_read(&args), Ok(None));
}

#[test]
fn the_preview_shows_the_premise_the_signer_read_above_the_model_supplied_section() {
    let registry = registry(PREMISE, REQUIRED).unwrap();
    let op = registry.get("thing.do").unwrap();
    let args = op
        .validate_arguments(br#"{"count":1,"target":"nightly"}"#)
        .unwrap();
    let found = Premise {
        namespace: "schedules".into(),
        key: "nightly".into(),
        value: Some(json!({"state": "active", "note": "\u{1b}[2J"})),
        version: 9,
    };
    let text = op.render_preview(&args, Some(&found), "it is paused already");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[3],
        r#"Premise:   schedules "nightly" = {"note":"\u001b[2J","state":"active"} (version 9), read by the signer"#
    );
    assert_eq!(lines[4], "---- Model-supplied, unverified ----");
    assert_eq!(lines[5], r#"note: "it is paused already""#);
    let absent = Premise {
        value: None,
        version: 0,
        ..found
    };
    let text = op.render_preview(&args, Some(&absent), "");
    assert!(
        text.contains("Premise:   schedules \"nightly\" has no value, read by the signer\n"),
        "{text}"
    );
    assert!(!op.render_preview(&args, None, "").contains("Premise:"));
}
