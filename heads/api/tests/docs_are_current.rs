//! The generated documents are committed: `docs/openapi.json` (the OpenAPI
//! document the API serves for the default registry) and
//! `docs/operations.json` + `docs/operations.md` (the operation-surface
//! manifest), all from the table of data operations. These tests fail when
//! a committed file is stale; `COUNTERSIGN_REGENERATE=1` rewrites them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use countersign_api::openapi::document;
use countersign_registry::Registry;
use countersign_surface::DATA_OPERATIONS;
use countersign_surface::manifest::{manifest, manifest_markdown};

fn registry() -> Registry {
    Registry::from_toml_str(Registry::default_toml()).unwrap()
}

fn check(name: &str, generated: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(name);
    if std::env::var_os("COUNTERSIGN_REGENERATE").is_some() {
        std::fs::write(&path, generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/{name} is stale: run `COUNTERSIGN_REGENERATE=1 cargo test -p countersign-api --test docs_are_current` and commit the result"
    );
}

fn pretty(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).unwrap() + "\n"
}

#[test]
fn the_committed_openapi_document_matches_the_code() {
    check(
        "openapi.json",
        &pretty(&document(DATA_OPERATIONS, &registry())),
    );
}

#[test]
fn the_committed_operation_manifest_matches_the_table() {
    check(
        "operations.json",
        &pretty(&manifest(DATA_OPERATIONS, &registry())),
    );
    check(
        "operations.md",
        &manifest_markdown(DATA_OPERATIONS, &registry()),
    );
}

#[test]
fn the_document_is_openapi_3_1_with_bearer_security_and_no_proof_outside_a_body() {
    let doc = document(DATA_OPERATIONS, &registry());
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    for (route, item) in doc["paths"].as_object().unwrap() {
        assert!(!route.contains("proof"), "{route}");
        for (_, op) in item.as_object().unwrap() {
            for p in op["parameters"].as_array().into_iter().flatten() {
                assert_ne!(p["name"], "proof", "{route}: a proof outside the body");
            }
        }
    }
}
