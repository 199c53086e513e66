//! Validating proposed arguments into canonical form, and re-reading stored
//! canonical text.
#![allow(clippy::unwrap_used)]

use countersign_registry::{ArgumentsError, CanonicalArgs, Operation, Registry};
use countersign_verifier::canonical::{self, CanonicalError};

fn registry() -> Registry {
    Registry::from_toml_str(Registry::default_toml()).unwrap()
}

fn create(registry: &Registry) -> &Operation {
    registry.get("schedule.create").unwrap()
}

#[test]
fn valid_arguments_become_canonical_with_their_hash() {
    let registry = registry();
    let args = create(&registry)
        .validate_arguments(
            br#"{ "name": "nightly", "cron": "0 3 * * *", "description": "backups" }"#,
        )
        .unwrap();
    let text = r#"{"cron":"0 3 * * *","description":"backups","name":"nightly"}"#;
    assert_eq!(args.text(), text);
    assert_eq!(args.sha256_hex(), canonical::sha256_hex(text.as_bytes()));
    assert_eq!(args.value()["name"], "nightly");
}

#[test]
fn refuses_arguments_that_are_not_an_object() {
    let registry = registry();
    for json in [&b"[]"[..], b"\"x\"", b"1", b"null"] {
        assert_eq!(
            create(&registry).validate_arguments(json).unwrap_err(),
            ArgumentsError::NotAnObject
        );
    }
}

#[test]
fn refuses_non_strict_json_with_the_parser_reason() {
    let registry = registry();
    let op = create(&registry);
    assert_eq!(
        op.validate_arguments(br#"{"name":"a","name":"b","cron":"x"}"#)
            .unwrap_err(),
        ArgumentsError::Json(CanonicalError::DuplicateKey("name".into()))
    );
    assert_eq!(
        op.validate_arguments(br#"{"name":"a","cron":"x"} {}"#)
            .unwrap_err(),
        ArgumentsError::Json(CanonicalError::Trailing)
    );
    let big = format!(r#"{{"name":"a","cron":"{}"}}"#, "x".repeat(64 * 1024));
    assert_eq!(
        op.validate_arguments(big.as_bytes()).unwrap_err(),
        ArgumentsError::Json(CanonicalError::TooLarge { limit: 64 * 1024 })
    );
}

#[test]
fn schema_errors_name_the_instance_path_and_mask_values() {
    let registry = registry();
    let op = create(&registry);
    let err = op
        .validate_arguments(br#"{"name":"Bad Name\u001b[2J","cron":7}"#)
        .unwrap_err();
    let ArgumentsError::Schema(lines) = &err else {
        panic!("unexpected {err}");
    };
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("/cron: ") && l.contains("\"string\""))
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("/name: ") && l.contains("does not match"))
    );
    let shown = err.to_string();
    assert!(!shown.contains("Bad Name"), "{shown}");
    assert!(!shown.contains('\n') && !shown.contains('\u{1b}'));
}

#[test]
fn anchored_patterns_refuse_a_trailing_newline() {
    let registry = registry();
    let err = registry
        .get("schedule.pause")
        .unwrap()
        .validate_arguments(br#"{"name":"nightly\n"}"#)
        .unwrap_err();
    assert!(
        matches!(&err, ArgumentsError::Schema(l) if l[0].starts_with("/name: ")),
        "{err}"
    );
}

#[test]
fn schema_errors_report_missing_and_unexpected_properties() {
    let registry = registry();
    let op = create(&registry);
    let err = op
        .validate_arguments("{\"name\":\"ok\",\"evil\\u202e\\n\":1}".as_bytes())
        .unwrap_err();
    let ArgumentsError::Schema(lines) = &err else {
        panic!("unexpected {err}");
    };
    assert!(
        lines
            .iter()
            .any(|l| l.contains("\"cron\" is a required property")),
        "{lines:?}"
    );
    let extra = lines
        .iter()
        .find(|l| l.contains("Additional properties"))
        .unwrap();
    assert!(
        extra.contains("\\u{202e}") && extra.contains("\\u{a}"),
        "{extra}"
    );
    assert!(!extra.contains('\u{202e}') && !extra.contains('\n'));
}

#[test]
fn schema_error_lists_are_bounded() {
    let toml = r#"
[[operation]]
name = "many.fields"
description = "Many fields"
class = "read"
replay_safe = true
preview = "Many"
[operation.effect]
kind = "command"
program = "/bin/true"
timeout_secs = 1
[operation.schema]
type = "object"
additionalProperties = false
required = ["a", "b", "c", "d", "e", "f"]
"#;
    let registry = Registry::from_toml_str(toml).unwrap();
    let err = registry
        .get("many.fields")
        .unwrap()
        .validate_arguments(b"{}")
        .unwrap_err();
    let ArgumentsError::Schema(lines) = err else {
        panic!("expected a schema error");
    };
    assert!(lines.len() <= 5, "{lines:?}");
    assert!(lines.last().unwrap().starts_with("and "), "{lines:?}");
}

#[test]
fn stored_canonical_text_round_trips() {
    let registry = registry();
    let args = create(&registry)
        .validate_arguments(br#"{"cron":"0 3 * * *","name":"nightly"}"#)
        .unwrap();
    assert_eq!(CanonicalArgs::from_stored(args.text()).unwrap(), args);
}

#[test]
fn refuses_stored_text_that_is_not_canonical() {
    for text in [
        r#"{ "a":1}"#,
        r#"{"b":1,"a":2}"#,
        r#"{"a":1.0}"#,
        r#"{"a":"\u0041"}"#,
        "{\"a\":1}\n",
    ] {
        assert_eq!(
            CanonicalArgs::from_stored(text).unwrap_err(),
            ArgumentsError::NotCanonical,
            "{text}"
        );
    }
    assert_eq!(
        CanonicalArgs::from_stored("[1]").unwrap_err(),
        ArgumentsError::NotAnObject
    );
    assert!(matches!(
        CanonicalArgs::from_stored(r#"{"a":1,"a":1}"#).unwrap_err(),
        ArgumentsError::Json(CanonicalError::DuplicateKey(_))
    ));
}
