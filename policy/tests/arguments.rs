//! Arguments Cedar cannot hold exactly are refused, never approximated;
//! what it holds exactly reaches the policy unchanged.
#![allow(clippy::unwrap_used)]

mod common;

use common::{payments_registry, request, schema_of, valid_set};
use countersign_policy::{RequestError, Verdict};
use serde_json::{Value, json};

fn evaluate(args: &Value) -> Result<Verdict, RequestError> {
    let schema = schema_of(&payments_registry());
    let set = valid_set(&common::example("payments.cedar"), &schema);
    set.evaluate(&schema, &request("payment.send", args))
}

fn refusal(args: Value) -> (String, String) {
    match evaluate(&args) {
        Err(RequestError::NotRepresentable { pointer, reason }) => (pointer, reason),
        other => panic!("expected NotRepresentable for {args}, got {other:?}"),
    }
}

fn payment(amount: Value) -> Value {
    json!({ "amount": amount, "currency": "EUR", "payee": "acme" })
}

#[test]
fn refuses_an_integer_beyond_cedars_64_bit_long() {
    let two_to_the_64: Value = serde_json::from_str("18446744073709551616").unwrap();
    let (pointer, reason) = refusal(payment(two_to_the_64));
    assert_eq!(pointer, "/amount");
    assert!(reason.contains("beyond 2^53"), "{reason}");
    let (pointer, reason) = refusal(payment(json!(u64::MAX)));
    assert_eq!(pointer, "/amount");
    assert!(reason.contains("9223372036854775807"), "{reason}");
    let (_, reason) = refusal(payment(json!(1e300)));
    assert!(reason.contains("beyond 2^53"), "{reason}");
}

#[test]
fn refuses_a_fraction_where_an_integer_is_typed() {
    let (pointer, reason) = refusal(payment(json!(999.5)));
    assert_eq!(pointer, "/amount");
    assert_eq!(
        reason,
        "a number with a fraction where an integer is typed: Cedar would round it"
    );
}

#[test]
fn a_whole_number_written_as_a_float_is_that_integer() {
    assert!(matches!(
        evaluate(&payment(json!(10.0))),
        Ok(Verdict::Permit { .. })
    ));
    assert!(matches!(
        evaluate(&payment(json!(1e3))),
        Ok(Verdict::RequireApproval { .. })
    ));
}

#[test]
fn refuses_an_array_whose_items_would_collapse_in_a_set() {
    let mut args = payment(json!(5));
    args["tags"] = json!(["rent", "rent"]);
    assert_eq!(
        refusal(args),
        (
            "/tags/1".into(),
            "a duplicate item: Cedar holds an array as a set, which would collapse it".into()
        )
    );
}

#[test]
fn refuses_a_value_of_another_type_than_the_schemas() {
    assert_eq!(
        refusal(payment(json!("5"))),
        ("/amount".into(), "expected an integer".into())
    );
    assert_eq!(
        refusal(json!({ "currency": "EUR", "payee": "acme" })),
        ("/amount".into(), "a required argument is missing".into())
    );
    assert_eq!(
        refusal(json!([1])),
        ("/".into(), "expected an object".into())
    );
}

#[test]
fn a_string_with_nul_and_any_unicode_reaches_the_policy_exactly() {
    let schema = schema_of(&payments_registry());
    let set = valid_set(
        r#"@id("exact") forbid (principal, action, resource is Target)
        when { resource.value == "a\0b\u{202E}" && context.arguments has tags && context.arguments.tags.contains("\u{1F600}") };"#,
        &schema,
    );
    let mut args = payment(json!(5));
    args["payee"] = json!("a\u{0}b\u{202E}");
    args["tags"] = json!(["\u{1F600}", "x"]);
    assert_eq!(
        set.evaluate(&schema, &request("payment.send", &args))
            .unwrap(),
        Verdict::Forbid {
            policies: vec!["exact".into()]
        }
    );
}

#[test]
fn an_integer_within_range_reaches_the_policy_exactly() {
    let schema = schema_of(&payments_registry());
    let set = valid_set(
        r#"@id("max") forbid (principal, action, resource)
        when { context.arguments.amount == 9223372036854775807 };"#,
        &schema,
    );
    let args = payment(json!(i64::MAX));
    assert!(matches!(
        set.evaluate(&schema, &request("payment.send", &args))
            .unwrap(),
        Verdict::Forbid { .. }
    ));
    let args = payment(json!(i64::MAX - 1));
    assert_eq!(
        set.evaluate(&schema, &request("payment.send", &args))
            .unwrap(),
        Verdict::PersonDecides
    );
}
