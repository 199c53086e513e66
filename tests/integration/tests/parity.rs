//! The parity gate over the heads that exist in this build: the CLI (read
//! from its clap definition), the HTTP API (read from its OpenAPI document,
//! which a test in `api_http.rs` checks against the live router) and MCP
//! (read from the tool list it advertises).
//! It fails when a data operation lacks a head without an exception and a
//! reason, when schemas or classes differ, or when a head exposes something
//! that is not in the table, and these tests show each failure happens.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use countersign_api::openapi::{document, exposures_from_document};
use countersign_registry::{Class, Registry};
use countersign_surface::operations::{
    DATA_OPERATIONS, DataOperation, Entries, Entry, Exposure, Head, ParamSchema,
};
use countersign_surface::{ParityError, check_parity};
use serde_json::json;

fn registry() -> Registry {
    Registry::from_toml_str(Registry::default_toml()).unwrap()
}

/// The heads wired into the gate, and what they expose.
fn heads_and_exposures(registry: &Registry) -> (Vec<Head>, Vec<Exposure>) {
    // Every head of the build, each read from what it really serves.
    let heads = Head::ALL.to_vec();
    let mut exposures = countersign::exposures(registry);
    exposures.extend(countersign_api::exposures(registry));
    exposures.extend(countersign_mcp::exposures(registry));
    (heads, exposures)
}

#[test]
fn every_head_exposes_every_data_operation_with_the_tables_schemas() {
    let registry = registry();
    let (heads, exposures) = heads_and_exposures(&registry);
    if let Err(errors) = check_parity(DATA_OPERATIONS, &registry, &heads, &exposures) {
        panic!(
            "parity gate failed:\n{}",
            errors
                .iter()
                .map(|e| format!("  {e}\n"))
                .collect::<String>()
        );
    }
    // Every registry operation a caller may propose can be proposed on
    // both heads (the agent operations only by a coding agent's hook).
    for op in registry.proposable() {
        for head in &heads {
            assert!(
                exposures
                    .iter()
                    .any(|x| x.head == *head && x.operation == format!("propose:{}", op.name)),
                "{head} cannot propose {}",
                op.name
            );
        }
    }
}

#[test]
fn an_api_only_operation_in_a_temporary_table_fails_the_gate() {
    let registry = registry();
    let mut table: Vec<DataOperation> = DATA_OPERATIONS.to_vec();
    table.push(DataOperation {
        name: "export_ledger",
        description: "Everything in the ledger (API only).",
        class: Class::Read,
        entries: Entries(&[Entry::Api("GET", "/v1/export")]),
        params: ParamSchema::Fixed(
            || json!({"type": "object", "additionalProperties": false, "properties": {}}),
        ),
        result: || json!({"type": "object"}),
        exceptions: &[],
    });
    // The API's exposures come from the document generated for that table.
    let mut exposures = countersign::exposures(&registry);
    exposures.extend(exposures_from_document(&document(&table, &registry)));
    exposures.extend(countersign_mcp::exposures(&registry));
    assert!(exposures.iter().any(|x| x.entry == "GET /v1/export"));
    let errors = check_parity(&table, &registry, &Head::ALL, &exposures).unwrap_err();
    let missing = |head| ParityError::Missing {
        operation: "export_ledger".into(),
        head,
    };
    assert_eq!(errors, vec![missing(Head::Cli), missing(Head::Mcp)]);
}

#[test]
fn an_exception_without_a_reason_fails_the_gate() {
    let registry = registry();
    let mut table: Vec<DataOperation> = DATA_OPERATIONS.to_vec();
    let get_result = table.iter_mut().find(|o| o.name == "get_result").unwrap();
    get_result.entries = Entries(&[
        Entry::Api("GET", "/v1/proposals/{proposal_id}/result"),
        Entry::Mcp("get_result"),
    ]);
    get_result.exceptions = &[countersign_surface::Exception {
        head: Head::Cli,
        reason: "",
    }];
    let mut exposures: Vec<Exposure> = countersign::exposures(&registry)
        .into_iter()
        .filter(|x| x.operation != "get_result")
        .collect();
    exposures.extend(countersign_api::exposures(&registry));
    let errors = check_parity(&table, &registry, &[Head::Cli, Head::Api], &exposures).unwrap_err();
    assert_eq!(
        errors,
        vec![ParityError::ExceptionWithoutReason {
            operation: "get_result".into(),
            head: Head::Cli
        }]
    );
}

/// The gate's errors for the real CLI and an API described by `doc`.
fn errors_with_api_document(registry: &Registry, doc: &serde_json::Value) -> Vec<ParityError> {
    let mut exposures = countersign::exposures(registry);
    exposures.extend(exposures_from_document(doc));
    check_parity(
        DATA_OPERATIONS,
        registry,
        &[Head::Cli, Head::Api],
        &exposures,
    )
    .unwrap_err()
}

#[test]
fn a_route_outside_the_table_fails_the_gate() {
    let registry = registry();
    let mut doc = document(DATA_OPERATIONS, &registry);
    doc["paths"]["/v1/dump"] = json!({"get": {
        "x-countersign-operation": "dump", "x-countersign-class": "read",
        "parameters": [], "responses": {"200": {"content": {"application/json": {"schema": {}}}}}
    }});
    let errors = errors_with_api_document(&registry, &doc);
    assert!(
        matches!(&errors[..], [ParityError::NotInTable { head, entry, .. }] if *head == Head::Api && entry == "GET /v1/dump"),
        "{errors:?}"
    );
}

#[test]
fn a_parameter_schema_that_drifts_on_one_head_fails_the_gate() {
    let registry = registry();
    let mut doc = document(DATA_OPERATIONS, &registry);
    doc["paths"]["/v1/proposals"]["get"]["parameters"][0]["schema"] = json!({"type": "string"});
    let errors = errors_with_api_document(&registry, &doc);
    assert!(
        matches!(&errors[..], [ParityError::ParamsDiffer { operation, head, .. }] if operation == "list_proposals" && *head == Head::Api),
        "{errors:?}"
    );
}

#[test]
fn the_cli_reports_what_clap_requires() {
    let registry = registry();
    let exposures = countersign::exposures(&registry);
    let find = |op: &str| exposures.iter().find(|x| x.operation == op).unwrap();
    assert_eq!(
        find("execute_with_proof").params["required"],
        json!(["proof", "proposal_id"])
    );
    assert_eq!(find("execute").params["required"], json!(["proposal_id"]));
    assert_eq!(
        find("propose:schedule.create").params["required"],
        json!(["arguments"])
    );
    assert!(find("list_proposals").params.get("required").is_none());
}

#[test]
fn a_cli_command_outside_the_table_fails_the_gate() {
    use clap::CommandFactory;
    let registry = registry();
    let cli = countersign::Cli::command()
        .subcommand(clap::Command::new("export").about("dump everything"));
    let mut exposures = countersign::exposures_of(cli, &registry);
    exposures.extend(countersign_api::exposures(&registry));
    let errors = check_parity(
        DATA_OPERATIONS,
        &registry,
        &[Head::Cli, Head::Api],
        &exposures,
    )
    .unwrap_err();
    assert!(
        matches!(&errors[..], [ParityError::NotInTable { head, entry, .. }] if *head == Head::Cli && entry == "countersign export"),
        "{errors:?}"
    );
}
