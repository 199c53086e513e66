//! The worked examples under `policy/examples/`: each policy set validates
//! against its registry's generated schema, and its test table passes.
#![allow(clippy::unwrap_used)]

mod common;

use common::{
    default_registry, example, gateway_registry, payments_registry, schema_of, valid_set,
};
use countersign_policy::table;

fn run_table(set_file: &str, table_file: &str, registry: &countersign_registry::Registry) {
    let schema = schema_of(registry);
    let set = valid_set(&example(set_file), &schema);
    let outcomes = table::run(&set, &schema, &example(table_file)).unwrap();
    assert!(!outcomes.is_empty());
    for outcome in outcomes {
        assert!(
            outcome.passed,
            "{table_file}: {:?} expected {:?}, got {:?}",
            outcome.name, outcome.expected, outcome.verdict
        );
    }
}

#[test]
fn the_schema_of_the_default_registry_is_generated_and_stable() {
    let registry = default_registry();
    let a = schema_of(&registry);
    let b = schema_of(&registry);
    assert_eq!(a.text(), b.text());
    assert_eq!(a.digest(), b.digest());
    assert_eq!(a.digest().len(), 64);
    let human = a.to_cedarschema().unwrap();
    for expected in [
        "\"agent.shell\"",
        "\"schedule.create\"",
        "entity Session in [Principal, Agent]",
    ] {
        assert!(human.contains(expected), "{expected} in\n{human}");
    }
}

#[test]
fn the_schema_has_an_action_for_every_operation_including_the_gateways() {
    let registry = gateway_registry();
    let schema = schema_of(&registry);
    let actions: Vec<String> = schema
        .cedar()
        .actions()
        .map(|a| a.id().escaped().to_string())
        .collect();
    for op in registry.operations() {
        assert!(actions.contains(&op.name), "{} in {actions:?}", op.name);
    }
    assert!(actions.iter().any(|a| a == "mcp:files/write_file"));
    assert_ne!(schema.digest(), schema_of(&default_registry()).digest());
}

#[test]
fn the_coding_agents_example_validates_and_its_table_passes() {
    run_table(
        "coding-agents.cedar",
        "coding-agents.tests.toml",
        &default_registry(),
    );
}

#[test]
fn the_gateway_example_validates_and_its_table_passes() {
    run_table("gateway.cedar", "gateway.tests.toml", &gateway_registry());
}

#[test]
fn the_payments_example_validates_and_its_table_passes() {
    run_table(
        "payments.cedar",
        "payments.tests.toml",
        &payments_registry(),
    );
}

#[test]
fn the_schema_digest_covers_the_target_the_contract_revision_does_not() {
    let with = payments_registry();
    let text = example("payments.toml").replace("target = \"/payee\"\n", "");
    let without = countersign_registry::Registry::from_toml_str(&text).unwrap();
    let (a, b) = (
        with.get("payment.send").unwrap(),
        without.get("payment.send").unwrap(),
    );
    assert_eq!(a.contract_revision(), b.contract_revision());
    assert_ne!(schema_of(&with).digest(), schema_of(&without).digest());
}
