//! The size and depth limits apply to what will be signed, at proposal:
//! the canonical form of the arguments (which can be larger than the input:
//! `1e15` is written out in full) and their depth inside the claims (one
//! level below the claims object). At each boundary the largest or deepest
//! proposal accepted is approved, signed, verified and applied; one more is
//! refused at proposal with the reason, and nothing is recorded. Before,
//! such a proposal was accepted and then could never be approved or
//! verified. Both ledger backends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use countersign::CliError;
use countersign_registry::Registry;
use countersign_verifier::claims::{MAX_ARGS_CANONICAL_BYTES, MAX_ARGS_DEPTH};
use support::{Backend, Harness, Person};

/// The default registry plus `demo.any`: `/bin/cat` of any value `v`.
fn registry() -> String {
    format!(
        r#"{}
[[operation]]
name = "demo.any"
description = "Echo any value."
class = "write"
replay_safe = false
preview = "Echo a value"

[operation.effect]
kind = "command"
program = "/bin/cat"
args = []
timeout_secs = 10

[operation.schema]
type = "object"
additionalProperties = false

[operation.schema.properties.v]
"#,
        Registry::default_toml()
    )
}

/// `{"v": [[...[]...]]}`, `depth` levels deep in all (the object is 1).
fn nested(depth: usize) -> String {
    let arrays = depth - 1;
    format!(r#"{{"v":{}{}}}"#, "[".repeat(arrays), "]".repeat(arrays))
}

/// Arguments whose input is under the input limit but whose canonical form
/// is exactly `canonical_bytes` long: 100 numbers `1e15`, each written out
/// as 16 digits, after a padding string.
fn expanding(canonical_bytes: usize) -> String {
    let numbers = 100;
    // {"v":["<pad>",1000000000000000,...]}
    let pad = canonical_bytes - 10 - 17 * numbers;
    let input = format!(
        r#"{{"v":["{}"{}]}}"#,
        "a".repeat(pad),
        ",1e15".repeat(numbers)
    );
    assert!(
        input.len() < 64 * 1024,
        "the input itself is within its limit"
    );
    input
}

/// Propose `args` for `demo.any`, approve it at the terminal and execute it.
async fn applies(h: &Harness, args: &str) {
    let id = h.propose("demo.any", args).await;
    let proof = h.approve_to_file(&id).await;
    let run = h.exec(&id, &proof, &[]).await;
    assert_eq!(run.result, Ok(()), "{}{}", run.stdout, run.stderr);
    assert_eq!(run.json()["applied"], true, "{}", run.stdout);
}

/// Propose `args`: refused at once with `reason`, nothing recorded.
async fn refused_at_proposal(h: &Harness, args: &str, reason: &str) {
    let run = h
        .cli_with(
            &["propose", "demo.any", "--args-file", "-"],
            args,
            Person::NoTerminal,
        )
        .await;
    let Err(CliError::Refused(message)) = &run.result else {
        panic!("{:?} {}", run.result, run.stdout)
    };
    assert!(message.contains(reason), "{message}");
    assert!(h.nothing_pending().await, "a proposal was recorded");
}

async fn limits_apply_to_what_will_be_signed(backend: Backend) {
    let h = Harness::start_on(backend, &registry()).await;

    applies(&h, &nested(MAX_ARGS_DEPTH)).await;
    refused_at_proposal(
        &h,
        &nested(MAX_ARGS_DEPTH + 1),
        &format!(
            "arguments cannot be approved: they nest {} levels deep, more than the {MAX_ARGS_DEPTH} a proof can carry",
            MAX_ARGS_DEPTH + 1
        ),
    )
    .await;

    applies(&h, &expanding(MAX_ARGS_CANONICAL_BYTES)).await;
    refused_at_proposal(
        &h,
        &expanding(MAX_ARGS_CANONICAL_BYTES + 1),
        &format!(
            "arguments cannot be approved: their canonical form is {} bytes, more than the {MAX_ARGS_CANONICAL_BYTES} a proof can carry",
            MAX_ARGS_CANONICAL_BYTES + 1
        ),
    )
    .await;
    assert_eq!(h.effects_run().await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_apply_to_what_will_be_signed_on_sqlite() {
    limits_apply_to_what_will_be_signed(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_apply_to_what_will_be_signed_on_postgres() {
    limits_apply_to_what_will_be_signed(Backend::Postgres).await;
}
