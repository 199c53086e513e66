//! One decision: building the Cedar request from a proposal and evaluating
//! a policy set, with 7 policies (the coding-agents example and three
//! more) and with 200 generated ones of the same kinds (forbidden shell
//! commands, edits needing approval, permitted reads, schedules), against
//! the default registry's schema. The request is a shell command no
//! policy matches, so every condition is evaluated. The request alone
//! (context, entities, Cedar's check of it against the schema) is
//! measured too, as the share of a decision no policy count changes.
//! The sets are in `sets/mod.rs`, which the load tool shares.
#![allow(clippy::unwrap_used, missing_docs)]

use countersign_policy::{Head, PolicyRequest, PolicySet, Verdict, schema};
use countersign_registry::Registry;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

mod sets;

fn bench(c: &mut Criterion) {
    let registry = Registry::from_toml_str(Registry::default_toml()).unwrap();
    let schema = schema(&registry).unwrap();
    let args = json!({
        "agent": "claude-code",
        "tool_name": "Bash",
        "cwd": "/srv/app",
        "tool_input": { "command": "cargo test --workspace" },
    });
    let request = PolicyRequest {
        principal: "pr_0123456789abcdef0123456789abcdef",
        agent: Some("claude-code"),
        session: "s-1",
        operation: "agent.shell",
        arguments: &args,
        time_unix: 1_796_558_400,
        head: Head::Hook,
    };
    c.bench_function("policy request only (no policies evaluated)", |b| {
        b.iter(|| std::hint::black_box(&request).to_cedar(&schema).unwrap());
    });
    for (name, text) in [
        ("7 policies", sets::example()),
        ("200 policies", sets::generated(200)),
    ] {
        let set = PolicySet::parse(&text).unwrap();
        set.validate(&schema).unwrap();
        assert_eq!(
            set.evaluate(&schema, &request).unwrap(),
            Verdict::PersonDecides
        );
        c.bench_function(&format!("policy evaluate, {name}"), |b| {
            b.iter(|| {
                set.evaluate(&schema, std::hint::black_box(&request))
                    .unwrap()
            });
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
