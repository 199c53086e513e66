//! A rule's scope translated to Cedar means the same as the rule: for a
//! corpus of rules using every translatable test (and the boundaries of
//! each), and a grid of requests per operation, the rule covers a request
//! exactly when its translation permits it. What has no exact Cedar form
//! is refused with its reason.
#![allow(clippy::unwrap_used)]

mod common;

use common::{default_registry, payments_registry, schema_of, valid_set};
use countersign_policy::{Head, PolicyRequest, Untranslatable, Verdict, rule_scope};
use countersign_registry::rule::RuleDefinition;
use serde_json::{Value, json};

fn rule(operations: &[&str], constraints: Value, sessions: &[&str]) -> RuleDefinition {
    RuleDefinition::from_value(json!({
        "operations": operations,
        "constraints": constraints,
        "sessions": sessions,
        "max_uses": 10,
        "per_hour": 5,
        "expires_at": "2026-06-02T00:00:00Z",
    }))
    .unwrap()
}

fn request<'a>(operation: &'a str, session: &'a str, arguments: &'a Value) -> PolicyRequest<'a> {
    PolicyRequest {
        principal: "pr_0123456789abcdef0123456789abcdef",
        agent: None,
        session,
        operation,
        arguments,
        time_unix: 1_796_558_400,
        head: Head::Cli,
    }
}

/// Payments every rule below is tried on: amounts at and around each
/// bound, each currency, payees with and without the prefixes, with and
/// without tags.
fn payments() -> Vec<Value> {
    let mut out = Vec::new();
    for amount in [1, 9, 10, 11, 99, 100, 101, 999, 1000, 1001, 5000] {
        for currency in ["EUR", "USD"] {
            for payee in ["acme", "ac*me corp", "acm", "Acme", "ac\"me"] {
                out.push(json!({"amount": amount, "currency": currency, "payee": payee}));
                out.push(
                    json!({"amount": amount, "currency": currency, "payee": payee, "tags": ["a"]}),
                );
            }
        }
    }
    out
}

fn schedules() -> Vec<Value> {
    let mut out = Vec::new();
    for name in ["nightly", "nightly-2", "night", "weekly"] {
        out.push(json!({"name": name, "cron": "0 3 * * *"}));
        out.push(json!({"name": name, "cron": "0 3 * * *", "description": "x"}));
        out.push(json!({"name": name, "cron": "0 3 * * *", "description": "y"}));
    }
    out
}

/// Asserts that `rule`'s translation permits exactly what it covers, for
/// each of `arguments` of each of its operations, in two sessions.
fn means_the_same(
    registry: &countersign_registry::Registry,
    rule: &RuleDefinition,
    arguments: &[Value],
) -> usize {
    let schema = schema_of(registry);
    let text = rule_scope("r1", rule, &schema).unwrap();
    let set = valid_set(&text, &schema);
    let mut covered = 0;
    for operation in &rule.operations {
        for session in ["s-1", "s-2"] {
            for args in arguments {
                let verdict = set
                    .evaluate(&schema, &request(operation, session, args))
                    .unwrap();
                let covers = rule.covers(operation, session, args);
                assert_eq!(
                    matches!(verdict, Verdict::Permit { .. }),
                    covers,
                    "{operation} {session} {args}: {verdict:?}\n{text}"
                );
                covered += usize::from(covers);
            }
        }
    }
    covered
}

#[test]
fn every_translatable_payment_rule_means_the_same_in_cedar() {
    let registry = payments_registry();
    let corpus = [
        rule(
            &["payment.send"],
            json!([{"pointer": "/payee", "equals": "acme"}]),
            &["s-1"],
        ),
        rule(
            &["payment.send"],
            json!([{"pointer": "/currency", "one_of": ["EUR", "XYZ", 5]},
                   {"pointer": "/amount", "range": {"min": 10.5, "max": 1000}}]),
            &["*"],
        ),
        rule(
            &["payment.send"],
            json!([{"pointer": "/payee", "prefix": "ac*"}]),
            &["s-1", "s-2"],
        ),
        rule(
            &["payment.send"],
            json!([{"pointer": "/payee", "prefix": "ac\""}]),
            &["*"],
        ),
        rule(
            &["payment.send"],
            json!([{"pointer": "/amount", "range": {"max": 999.9}}]),
            &["*"],
        ),
        rule(
            &["payment.send"],
            json!([{"pointer": "/amount", "range": {"min": 100}}]),
            &["*"],
        ),
        rule(
            &["payment.send"],
            json!([{"pointer": "/amount", "equals": 100.0}]),
            &["*"],
        ),
        rule(
            &["payment.send"],
            json!([{"pointer": "/amount", "equals": "100"}]),
            &["*"],
        ),
        rule(
            &["payment.send"],
            json!([{"pointer": "/payee", "range": {"min": 1}}]),
            &["*"],
        ),
        rule(
            &["payment.send"],
            json!([{"pointer": "/amount", "prefix": "1"}]),
            &["*"],
        ),
        rule(&["payment.send"], json!([]), &["s-2"]),
    ];
    let arguments = payments();
    let covered: Vec<usize> = corpus
        .iter()
        .map(|r| means_the_same(&registry, r, &arguments))
        .collect();
    // Each rule covers something and not everything, except those the
    // rule language can never match (a range on a string, a prefix on an
    // integer, a string equal to an integer).
    assert_eq!(
        covered,
        [44, 120, 88, 88, 320, 240, 40, 0, 0, 0, 220],
        "{covered:?}"
    );
}

#[test]
fn every_translatable_schedule_rule_means_the_same_in_cedar() {
    let registry = default_registry();
    let corpus = [
        rule(
            &["schedule.create"],
            json!([{"pointer": "/name", "prefix": "nightly"}]),
            &["s-1"],
        ),
        rule(
            &["schedule.create"],
            json!([{"pointer": "/description", "equals": "x"}]),
            &["*"],
        ),
        rule(
            &["schedule.create"],
            json!([{"pointer": "/name", "one_of": ["nightly", "weekly"]},
                   {"pointer": "/description", "one_of": ["x", "y"]}]),
            &["*"],
        ),
    ];
    let arguments = schedules();
    let covered: Vec<usize> = corpus
        .iter()
        .map(|r| means_the_same(&registry, r, &arguments))
        .collect();
    assert_eq!(covered, [6, 8, 8], "{covered:?}");
    // Two operations: one policy each, the same test on each.
    let both = rule(
        &["schedule.create", "schedule.activate"],
        json!([{"pointer": "/name", "prefix": "night"}]),
        &["*"],
    );
    let activations: Vec<Value> = ["nightly", "weekly"]
        .iter()
        .map(|n| json!({"name": n}))
        .chain(schedules())
        .collect();
    let schema = schema_of(&registry);
    let text = rule_scope("r2", &both, &schema).unwrap();
    assert_eq!(
        text,
        "@id(\"r2/schedule.create\")\npermit (principal, action == Action::\"schedule.create\", resource)\nwhen { context.arguments[\"name\"] like \"night*\" };\n\
         @id(\"r2/schedule.activate\")\npermit (principal, action == Action::\"schedule.activate\", resource)\nwhen { context.arguments[\"name\"] like \"night*\" };\n"
    );
    let set = valid_set(&text, &schema);
    for operation in &both.operations {
        for args in &activations {
            let Ok(verdict) = set.evaluate(&schema, &request(operation, "s-1", args)) else {
                continue;
            };
            assert_eq!(
                matches!(verdict, Verdict::Permit { .. }),
                both.covers(operation, "s-1", args),
                "{operation} {args}"
            );
        }
    }
}

#[test]
fn what_cedar_cannot_express_exactly_is_refused_with_its_reason() {
    let payments = schema_of(&payments_registry());
    let tags = rule(
        &["payment.send"],
        json!([{"pointer": "/tags", "equals": ["a"]}]),
        &["*"],
    );
    assert_eq!(
        rule_scope("r", &tags, &payments).unwrap_err(),
        Untranslatable(
            "/tags of payment.send: equals on an array or object compares its canonical JSON, which Cedar (holding arrays as sets) cannot".into()
        )
    );
    let element = rule(
        &["payment.send"],
        json!([{"pointer": "/tags/0", "equals": "a"}]),
        &["*"],
    );
    assert_eq!(
        rule_scope("r", &element, &payments).unwrap_err(),
        Untranslatable("/tags/0 of payment.send is not in Cedar's view of its arguments".into())
    );
    let defaults = schema_of(&default_registry());
    let elsewhere = rule(
        &["schedule.create"],
        json!([{"pointer": "/name", "argv": {"program": "git", "args": [], "more_args": true}}]),
        &["*"],
    );
    assert_eq!(
        rule_scope("r", &elsewhere, &defaults)
            .unwrap_err()
            .to_string(),
        "the rule's scope has no exact Cedar form: /name of schedule.create: an argv test has a Cedar form (context.argv) only on agent.shell's /tool_input/command"
    );
    let mut written = json!({
        "operations": ["schedule.create"], "cedar": "permit (principal, action, resource);",
        "sessions": ["*"], "max_uses": 1, "per_hour": 1, "expires_at": "2026-06-02T00:00:00Z",
    });
    let written_rule = RuleDefinition::from_value(written.take()).unwrap();
    assert_eq!(
        rule_scope("r", &written_rule, &defaults)
            .unwrap_err()
            .to_string(),
        "the rule's scope has no exact Cedar form: the rule's scope is already written in Cedar (its `cedar`)"
    );
}

/// Shell commands every shell rule below is tried on: the words each
/// pattern names, in and out of order, quoted, with more or fewer
/// arguments, and what the lexer refuses (operators, expansions, globs,
/// assignments, newlines).
fn commands() -> Vec<Value> {
    let commands = [
        "git status",
        "git 'status'",
        "git \"status\"",
        "git status --short",
        "git status -s",
        "git log -1",
        "git log -5",
        "git log -2",
        "git log -1 --oneline",
        "git log",
        "git",
        "/usr/bin/git status",
        "git push",
        "cargo test",
        "cargo test --workspace",
        "cargo test -p countersign",
        "cargo build",
        "ls",
        "ls -la",
        "git status; rm -rf ~",
        "git status && true",
        "git $(echo status)",
        "git status > /tmp/x",
        "git log -*",
        "GIT_DIR=/tmp git status",
        "git status\nrm -rf ~",
        "'git status'",
        "",
    ];
    let mut out: Vec<Value> = commands
        .iter()
        .map(|c| {
            json!({"agent": "claude-code", "tool_name": "Bash", "cwd": "/srv/app",
                   "tool_input": {"command": c}})
        })
        .collect();
    // No command at all, and one that is not a string.
    out.push(json!({"agent": "codex", "tool_name": "shell", "cwd": "/", "tool_input": {}}));
    out.push(json!({"agent": "codex", "tool_name": "shell", "cwd": "/", "tool_input": {"command": ["git", "status"]}}));
    out
}

#[test]
fn every_shell_rule_means_the_same_in_cedar() {
    let registry = default_registry();
    let argv = |program: &str, args: Value, more: bool| {
        json!({"pointer": "/tool_input/command",
               "argv": {"program": program, "args": args, "more_args": more}})
    };
    let corpus = [
        rule(
            &["agent.shell"],
            json!([argv("git", json!(["status"]), false)]),
            &["*"],
        ),
        rule(
            &["agent.shell"],
            json!([argv("git", json!(["status"]), true)]),
            &["s-1"],
        ),
        rule(
            &["agent.shell"],
            json!([argv("git", json!(["log", {"one_of": ["-1", "-5"]}]), false)]),
            &["*"],
        ),
        rule(
            &["agent.shell"],
            json!([argv("cargo", json!([]), true)]),
            &["*"],
        ),
        rule(
            &["agent.shell"],
            json!([argv("ls", json!([]), false)]),
            &["*"],
        ),
        // Two argv tests: both must hold.
        rule(
            &["agent.shell"],
            json!([
                argv("cargo", json!(["test"]), true),
                argv(
                    "cargo",
                    json!([{"one_of": ["test", "build"]}, "--workspace"]),
                    false
                )
            ]),
            &["*"],
        ),
        // Also a test on the agent (in Cedar's view) and the working directory.
        rule(
            &["agent.shell"],
            json!([argv("git", json!([]), true),
                   {"pointer": "/agent", "equals": "claude-code"},
                   {"pointer": "/cwd", "prefix": "/srv/"}]),
            &["*"],
        ),
        // A shell rule stored before creation checked for argv: it covers
        // no shell call, and its translation permits none.
        rule(
            &["agent.shell"],
            json!([{"pointer": "/tool_input/command", "prefix": "git "}]),
            &["*"],
        ),
        rule(
            &["agent.shell"],
            json!([{"pointer": "/cwd", "prefix": "/"}]),
            &["*"],
        ),
    ];
    let arguments = commands();
    let covered: Vec<usize> = corpus
        .iter()
        .map(|r| means_the_same(&registry, r, &arguments))
        .collect();
    assert_eq!(covered, [6, 5, 4, 8, 2, 2, 24, 0, 0], "{covered:?}");
    let schema = schema_of(&registry);
    assert_eq!(
        rule_scope("r", &corpus[2], &schema).unwrap(),
        "@id(\"r/agent.shell\")\npermit (principal, action == Action::\"agent.shell\", resource)\n\
         when { context has argv && context.argv.count == 3 && context.argv has w0 && context.argv.w0 == \"git\" && \
         context.argv has w1 && context.argv.w1 == \"log\" && context.argv has w2 && [\"-1\", \"-5\"].contains(context.argv.w2) };\n"
    );
}
