//! The `quorum` field of an operation: what loads, what is refused (naming
//! the operation and the field), and how it enters the contract revision.
#![allow(clippy::unwrap_used)]

use countersign_registry::{ApproverName, MAX_QUORUM_APPROVERS, Registry, RegistryError};

const BASE: &str = r#"
[[operation]]
name = "thing.do"
description = "Do a thing"
class = "write"
replay_safe = false
preview = "Do {target}"
QUORUM

[operation.effect]
kind = "command"
program = "/bin/true"
timeout_secs = 5

[operation.schema]
type = "object"
additionalProperties = false

[operation.schema.properties.target]
type = "string"
"#;

fn with(quorum: &str) -> String {
    BASE.replace("QUORUM", quorum)
}

fn load(quorum: &str) -> Result<Registry, RegistryError> {
    Registry::from_toml_str(&with(quorum))
}

fn revision(quorum: &str) -> String {
    load(quorum)
        .unwrap()
        .get("thing.do")
        .unwrap()
        .contract_revision()
        .to_owned()
}

fn refusal(quorum: &str) -> String {
    match load(quorum).unwrap_err() {
        RegistryError::InvalidField {
            operation,
            field,
            reason,
        } => {
            assert_eq!((operation.as_str(), field.as_str()), ("thing.do", "quorum"));
            reason
        }
        other => panic!("{quorum}: {other:?}"),
    }
}

fn name(n: &str) -> ApproverName {
    ApproverName::parse(n).unwrap()
}

#[test]
fn a_quorum_loads_with_its_approvers_sorted() {
    let registry =
        load(r#"quorum = { required = 2, approvers = ["carol", "alice", "bob"] }"#).unwrap();
    let quorum = registry.get("thing.do").unwrap().quorum.clone().unwrap();
    assert_eq!(quorum.required(), 2);
    assert_eq!(
        quorum.approvers(),
        &[name("alice"), name("bob"), name("carol")]
    );
    assert!(quorum.is_member(&name("bob")));
    assert!(!quorum.is_member(&name("console")));
    assert!(load("").unwrap().get("thing.do").unwrap().quorum.is_none());
}

#[test]
fn refuses_a_required_count_outside_one_to_the_number_of_approvers() {
    assert_eq!(
        refusal(r#"quorum = { required = 0, approvers = ["alice", "bob"] }"#),
        "required = 0 is outside 1..=2 (the number of approvers)"
    );
    assert_eq!(
        refusal(r#"quorum = { required = 3, approvers = ["alice", "bob"] }"#),
        "required = 3 is outside 1..=2 (the number of approvers)"
    );
    assert!(load(r#"quorum = { required = 2, approvers = ["alice", "bob"] }"#).is_ok());
    assert!(load(r#"quorum = { required = 1, approvers = ["alice"] }"#).is_ok());
}

#[test]
fn refuses_no_approvers_a_repeated_one_or_too_many() {
    assert_eq!(
        refusal(r#"quorum = { required = 1, approvers = [] }"#),
        "approvers must name at least one approver"
    );
    assert_eq!(
        refusal(r#"quorum = { required = 1, approvers = ["alice", "bob", "alice"] }"#),
        "approver \"alice\" is listed twice"
    );
    let many: Vec<String> = (0..=MAX_QUORUM_APPROVERS)
        .map(|i| format!("\"a{i}\""))
        .collect();
    assert_eq!(
        refusal(&format!(
            "quorum = {{ required = 1, approvers = [{}] }}",
            many.join(", ")
        )),
        format!(
            "approvers names {} approvers, more than {MAX_QUORUM_APPROVERS}",
            MAX_QUORUM_APPROVERS + 1
        )
    );
}

#[test]
fn refuses_an_approver_that_is_not_an_approver_name() {
    for bad in ["", "Alice", "-alice", "al ice", "al/ice", "a_b"] {
        let reason = refusal(&format!(
            r#"quorum = {{ required = 1, approvers = ["alice", "{bad}"] }}"#
        ));
        assert!(
            reason.starts_with(&format!("approver {bad:?} is not an approver name")),
            "{reason}"
        );
    }
}

#[test]
fn refuses_unknown_keys_and_wrong_types_in_the_quorum() {
    for text in [
        r#"quorum = { required = 1, approvers = ["alice"], extra = 1 }"#,
        r#"quorum = { approvers = ["alice"] }"#,
        r#"quorum = { required = 1 }"#,
        r#"quorum = { required = -1, approvers = ["alice"] }"#,
        r#"quorum = { required = "1", approvers = ["alice"] }"#,
        r#"quorum = 2"#,
    ] {
        let err = load(text).unwrap_err();
        assert!(matches!(&err, RegistryError::Toml(_)), "{text}: {err}");
    }
}

#[test]
fn the_quorum_is_part_of_the_contract_revision_but_not_its_order() {
    let none = revision("");
    let two = revision(r#"quorum = { required = 2, approvers = ["alice", "bob", "carol"] }"#);
    assert_ne!(two, none);
    assert_eq!(
        revision(r#"quorum = { required = 2, approvers = ["carol", "bob", "alice"] }"#),
        two
    );
    for changed in [
        r#"quorum = { required = 3, approvers = ["alice", "bob", "carol"] }"#,
        r#"quorum = { required = 2, approvers = ["alice", "bob"] }"#,
        r#"quorum = { required = 2, approvers = ["alice", "bob", "dave"] }"#,
    ] {
        assert_ne!(revision(changed), two, "{changed}");
    }
}
