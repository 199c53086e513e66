//! Parsing a policy set (syntax errors with their position, ids,
//! annotations, templates, the digest) and validating it strictly against
//! a generated schema.
#![allow(clippy::unwrap_used)]

mod common;

use common::{default_registry, payments_registry, schema_of};
use countersign_policy::{ParseError, PolicySet, SyntaxError, ValidationIssue};

fn annotation_error(text: &str) -> (String, String) {
    match PolicySet::parse(text) {
        Err(ParseError::Annotation { policy, reason }) => (policy, reason),
        other => panic!("expected an annotation error, got {other:?}"),
    }
}

#[test]
fn refuses_text_that_is_not_cedar_with_the_line_and_column() {
    let text = "permit (principal, action, resource);\n\npermit (principal action, resource);\n";
    let Err(ParseError::Syntax(errors)) = PolicySet::parse(text) else {
        panic!("expected a syntax error");
    };
    let SyntaxError {
        line,
        column,
        message,
    } = &errors[0];
    assert_eq!((*line, *column), (3, 19), "{message}");
    assert!(message.contains("unexpected token"), "{message}");
}

#[test]
fn refuses_two_policies_with_one_id() {
    let text = r#"@id("a") permit (principal, action, resource);
        @id("a") forbid (principal, action, resource);"#;
    assert_eq!(
        PolicySet::parse(text).unwrap_err(),
        ParseError::DuplicateId("a".into())
    );
}

#[test]
fn refuses_an_id_equal_to_another_policys_generated_id() {
    let text = r#"permit (principal, action, resource);
        @id("policy0") forbid (principal, action, resource);"#;
    assert_eq!(
        PolicySet::parse(text).unwrap_err(),
        ParseError::DuplicateId("policy0".into())
    );
}

#[test]
fn refuses_templates() {
    let text = "permit (principal == ?principal, action, resource);";
    assert!(matches!(
        PolicySet::parse(text).unwrap_err(),
        ParseError::Template(_)
    ));
}

#[test]
fn refuses_malformed_approval_annotations_naming_the_policy() {
    let cases = [
        (
            r#"@id("p") @require_approval forbid (principal, action, resource);"#,
            "@require_approval is for a permit: a forbid is never approved",
        ),
        (
            r#"@id("p") @require_approval("yes") permit (principal, action, resource);"#,
            "@require_approval takes no value",
        ),
        (
            r#"@id("p") @quorum("2") @approvers("alice,bob") permit (principal, action, resource);"#,
            "@quorum and @approvers need @require_approval",
        ),
        (
            r#"@id("p") @require_approval @quorum("2") permit (principal, action, resource);"#,
            "@quorum needs @approvers: a quorum of whom?",
        ),
        (
            r#"@id("p") @require_approval @quorum("3") @approvers("alice,bob") permit (principal, action, resource);"#,
            "@quorum(\"3\") must be a whole number from 1 to 2 (the number of @approvers)",
        ),
        (
            r#"@id("p") @require_approval @quorum("0") @approvers("alice,bob") permit (principal, action, resource);"#,
            "@quorum(\"0\") must be a whole number from 1 to 2 (the number of @approvers)",
        ),
        (
            r#"@id("p") @require_approval @quorum("+1") @approvers("alice,bob") permit (principal, action, resource);"#,
            "@quorum(\"+1\") must be a whole number from 1 to 2 (the number of @approvers)",
        ),
        (
            r#"@id("p") @require_approval @approvers("alice,Bob") permit (principal, action, resource);"#,
            "@approvers: \"Bob\" is not an approver name (1 to 32 of a-z, 0-9 and -, not starting with -)",
        ),
        (
            r#"@id("p") @require_approval @approvers("alice,alice") permit (principal, action, resource);"#,
            "@approvers: \"alice\" is listed twice",
        ),
    ];
    for (text, reason) in cases {
        assert_eq!(
            annotation_error(text),
            ("p".into(), reason.into()),
            "{text}"
        );
    }
}

#[test]
fn the_digest_is_of_the_exact_text() {
    let a = PolicySet::parse("permit (principal, action, resource);").unwrap();
    let b = PolicySet::parse("permit (principal, action, resource);").unwrap();
    let c = PolicySet::parse("permit (principal, action, resource); ").unwrap();
    assert_eq!(a.digest(), b.digest());
    assert_ne!(a.digest(), c.digest());
    assert_eq!(a.digest().len(), 64);
}

#[test]
fn refuses_a_policy_set_naming_an_unknown_action() {
    let schema = schema_of(&default_registry());
    let set = PolicySet::parse(
        r#"@id("typo") permit (principal, action == Action::"schedule.creat", resource);"#,
    )
    .unwrap();
    let issues = set.validate(&schema).unwrap_err();
    assert_eq!(issues.len(), 1, "{issues:?}");
    let ValidationIssue { policy, message } = &issues[0];
    assert_eq!(policy, "typo");
    assert!(message.contains("schedule.creat"), "{message}");
}

#[test]
fn refuses_a_policy_set_reading_a_misspelt_attribute() {
    let schema = schema_of(&payments_registry());
    let set = PolicySet::parse(
        r#"@id("amout") forbid (principal, action == Action::"payment.send", resource)
        when { context.arguments.amout > 5 };"#,
    )
    .unwrap();
    let issues = set.validate(&schema).unwrap_err();
    assert_eq!(issues[0].policy, "amout");
    assert!(issues[0].message.contains("amout"), "{}", issues[0].message);
}

#[test]
fn refuses_reading_an_optional_argument_without_has_and_the_target_without_is() {
    let schema = schema_of(&payments_registry());
    let set = PolicySet::parse(
        r#"@id("tags") forbid (principal, action == Action::"payment.send", resource)
        when { context.arguments.tags.contains("x") };"#,
    )
    .unwrap();
    assert_eq!(set.validate(&schema).unwrap_err()[0].policy, "tags");
    let set = PolicySet::parse(
        r#"@id("target") forbid (principal, action == Action::"payment.send", resource)
        when { resource.value == "acme" };"#,
    )
    .unwrap();
    assert_eq!(set.validate(&schema).unwrap_err()[0].policy, "target");
    let set = PolicySet::parse(
        r#"@id("guarded") forbid (principal, action == Action::"payment.send", resource is Target)
        when { resource.value == "acme" || (context.arguments has tags && context.arguments.tags.contains("x")) };"#,
    )
    .unwrap();
    assert_eq!(set.validate(&schema), Ok(()));
}

#[test]
fn arguments_cedar_cannot_type_are_not_in_its_view() {
    // tool_input is an open object: not in the schema, so not readable.
    let schema = schema_of(&default_registry());
    let set = PolicySet::parse(
        r#"@id("input") forbid (principal, action == Action::"agent.shell", resource)
        when { context.arguments has tool_input };"#,
    )
    .unwrap();
    // Cedar's validator accepts the test (records are closed, `has` of an
    // undeclared attribute is simply false), and it is never true.
    assert_eq!(set.validate(&schema), Ok(()));
    let args = common::agent_args("Bash", serde_json::json!({"command": "ls"}));
    assert_eq!(
        set.evaluate(&schema, &common::request("agent.shell", &args))
            .unwrap(),
        countersign_policy::Verdict::PersonDecides
    );
}
