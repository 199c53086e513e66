//! The test table runner: passing and failing cases, and strict parsing
//! with errors that name the case.
#![allow(clippy::unwrap_used)]

mod common;

use common::{payments_registry, schema_of, valid_set};
use countersign_policy::table::{self, TableError};
use countersign_policy::{Verdict, VerdictKind};

const CASE: &str = r#"
[[case]]
name = "NAME"
principal = "pr_0123456789abcdef0123456789abcdef"
session = "s-1"
operation = "payment.send"
head = "api"
time = "2026-12-06T12:00:00Z"
arguments = { amount = AMOUNT, currency = "EUR", payee = "acme" }
expect = "EXPECT"
"#;

fn case(name: &str, amount: &str, expect: &str) -> String {
    CASE.replace("NAME", name)
        .replace("AMOUNT", amount)
        .replace("EXPECT", expect)
}

fn run(text: &str) -> Result<Vec<table::CaseOutcome>, TableError> {
    let schema = schema_of(&payments_registry());
    let set = valid_set(&common::example("payments.cedar"), &schema);
    table::run(&set, &schema, text)
}

#[test]
fn reports_each_case_with_its_verdict_policies_and_pass_or_fail() {
    let text = case("small", "5", "permit")
        + &case("large, expected wrongly", "5000", "permit")
        + &case("large", "5000", "require_approval");
    let outcomes = run(&text).unwrap();
    assert_eq!(outcomes.len(), 3);
    assert!(outcomes[0].passed);
    assert_eq!(outcomes[0].policies(), ["small-payments"]);
    assert!(!outcomes[1].passed);
    assert_eq!(outcomes[1].expected, VerdictKind::Permit);
    assert_eq!(outcomes[1].verdict.kind(), VerdictKind::RequireApproval);
    assert!(outcomes[2].passed);
    assert!(matches!(
        outcomes[2].verdict,
        Verdict::RequireApproval {
            quorum: Some(_),
            ..
        }
    ));
}

#[test]
fn a_case_listing_other_determining_policies_fails() {
    let text = case("small", "5", "permit") + "expect_policies = [\"large-payments-need-two\"]\n";
    assert!(!run(&text).unwrap()[0].passed);
    let text = case("small", "5", "permit") + "expect_policies = [\"small-payments\"]\n";
    assert!(run(&text).unwrap()[0].passed);
}

#[test]
fn refuses_unknown_keys_and_unknown_verdicts() {
    let text = case("small", "5", "permit") + "extra = 1\n";
    assert!(matches!(run(&text), Err(TableError::Toml(e)) if e.contains("extra")));
    let text = case("small", "5", "allow");
    assert!(matches!(run(&text), Err(TableError::Toml(e)) if e.contains("allow")));
    assert_eq!(run(""), Err(TableError::NoCases));
}

#[test]
fn refuses_a_malformed_case_naming_it() {
    let bad_head = case("bad head", "5", "permit").replace("\"api\"", "\"web\"");
    assert_eq!(
        run(&bad_head),
        Err(TableError::Case {
            case: "bad head".into(),
            reason: "head \"web\" is not one of cli, api, mcp, console, hook, gateway".into()
        })
    );
    let bad_time = case("bad time", "5", "permit").replace("2026-12-06T12:00:00Z", "yesterday");
    assert!(matches!(run(&bad_time), Err(TableError::Case { case, .. }) if case == "bad time"));
    let twice = case("same", "5", "permit") + &case("same", "6", "permit");
    assert_eq!(
        run(&twice),
        Err(TableError::Case {
            case: "same".into(),
            reason: "another case has this name".into()
        })
    );
    let fraction = case("fraction", "5.5", "permit");
    assert!(matches!(
        run(&fraction),
        Err(TableError::Case { case, reason }) if case == "fraction" && reason.contains("/amount")
    ));
}
