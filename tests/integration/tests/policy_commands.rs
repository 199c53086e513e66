//! `countersign policy validate|test|schema`, through the `countersign`
//! binary (which runs `countersign-signer policy ...` beside it, so the
//! forwarding of arguments, output and exit codes is what is tested): the
//! worked examples of `policy/examples/` validate against their
//! registries with the file's digest and pass their tables; an unknown
//! argument, a syntax error and a wrong expectation are reported on exact
//! lines with exit 1; a missing file is exit 2 naming it; the schema names
//! every operation; and without the signer's binary the command says
//! where it looked.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use countersign_integration_tests::bin;
use countersign_registry::Registry;
use countersign_registry::gateway::{PINS_FILE, Pins, ToolDefinition};
use serde_json::json;
use sha2::{Digest, Sha256};
use tempfile::TempDir;

/// `policy/examples/<name>`.
fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../policy/examples")
        .join(name)
}

/// Runs the `countersign` binary with `args`, outside any home.
fn countersign(args: &[&str]) -> Output {
    run(&bin("countersign"), args)
}

fn run(program: &Path, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .env_remove("COUNTERSIGN_HOME")
        .env_remove("COUNTERSIGN_SIGNER_BIN")
        .output()
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

/// Asserts the exit code, the whole of stdout and the whole of stderr.
fn assert_output(out: &Output, code: i32, expected_stdout: &str, expected_stderr: &str) {
    let seen = format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        stdout(out),
        stderr(out)
    );
    assert_eq!(out.status.code(), Some(code), "{seen}");
    assert_eq!(stdout(out), expected_stdout, "{seen}");
    assert_eq!(stderr(out), expected_stderr, "{seen}");
}

fn path_str(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A directory holding `registry.toml` with `text`.
fn registry_dir(text: &str) -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("registry.toml");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

/// The default registry.
fn default_registry() -> (TempDir, PathBuf) {
    registry_dir(Registry::default_toml())
}

/// The default registry with the gateway example's upstream beside it, its
/// `read_file(path)` and `write_file(path, content)` pinned.
fn gateway_registry() -> (TempDir, PathBuf) {
    let (dir, path) = default_registry();
    std::fs::copy(example("gateway.toml"), dir.path().join("gateway.toml")).unwrap();
    let mut pins = Pins::empty();
    for (tool, fields) in [
        ("read_file", &["path"][..]),
        ("write_file", &["path", "content"][..]),
    ] {
        let properties: serde_json::Map<_, _> = fields
            .iter()
            .map(|f| (f.to_string(), json!({"type": "string"})))
            .collect();
        let input_schema = json!({"type": "object", "properties": properties, "required": fields});
        let definition = ToolDefinition {
            name: tool.into(),
            description: None,
            input_schema: input_schema.as_object().cloned().unwrap(),
            shown: serde_json::Map::new(),
        };
        pins.pin("files", definition).unwrap();
    }
    std::fs::write(dir.path().join(PINS_FILE), pins.to_text()).unwrap();
    (dir, path)
}

/// The payments example's registry, alone in its directory (beside the
/// examples it would be read with their `gateway.toml`).
fn payments_registry() -> (TempDir, PathBuf) {
    registry_dir(&std::fs::read_to_string(example("payments.toml")).unwrap())
}

/// The three worked examples: name, registry, number of policies.
fn examples() -> Vec<(&'static str, (TempDir, PathBuf), usize)> {
    vec![
        ("coding-agents", default_registry(), 4),
        ("gateway", gateway_registry(), 2),
        ("payments", payments_registry(), 2),
    ]
}

fn sha256_hex(path: &Path) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).unwrap()))
}

/// `countersign policy validate FILE --registry REGISTRY`.
fn validate(file: &Path, registry: &Path) -> Output {
    countersign(&[
        "policy",
        "validate",
        path_str(file),
        "--registry",
        path_str(registry),
    ])
}

/// `countersign policy test TABLE --policies POLICIES --registry REGISTRY`.
fn run_table(table: &Path, policies: &Path, registry: &Path) -> Output {
    countersign(&[
        "policy",
        "test",
        path_str(table),
        "--policies",
        path_str(policies),
        "--registry",
        path_str(registry),
    ])
}

/// `text` validated as the file `name` against the default registry: the
/// file's path as printed, and the outcome.
fn validate_written(name: &str, text: &str) -> (String, Output) {
    let (dir, registry) = default_registry();
    let file = dir.path().join(name);
    std::fs::write(&file, text).unwrap();
    (file.display().to_string(), validate(&file, &registry))
}

/// What `validate` prints for the valid policy set `file` of `n` policies.
fn valid_line(file: &Path, n: usize) -> String {
    format!(
        "{}: valid: {n} policies, digest {}\n",
        file.display(),
        sha256_hex(file)
    )
}

#[test]
fn each_example_validates_against_its_registry_with_the_files_digest() {
    for (name, (_dir, registry), policies) in examples() {
        let file = example(&format!("{name}.cedar"));
        assert_output(
            &validate(&file, &registry),
            0,
            &valid_line(&file, policies),
            "",
        );
    }
}

#[test]
fn the_homes_configured_registry_is_used_without_registry() {
    let scratch = tempfile::tempdir().unwrap();
    // `init` makes the home itself, private.
    let home = scratch.path().join("home");
    let home_arg = path_str(&home);
    let init = countersign(&["--home", home_arg, "init"]);
    assert_eq!(init.status.code(), Some(0), "{}", stderr(&init));
    let file = example("coding-agents.cedar");
    let out = countersign(&["--home", home_arg, "policy", "validate", path_str(&file)]);
    assert_output(&out, 0, &valid_line(&file, 4), "");
    // The payments policy names an operation the default registry lacks.
    let out = countersign(&[
        "policy",
        "--home",
        home_arg,
        "validate",
        path_str(&example("payments.cedar")),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
}

#[test]
fn refuses_a_policy_reading_an_argument_the_schema_lacks() {
    let (name, out) = validate_written(
        "bad.cedar",
        "@id(\"typo\")\npermit (principal, action == Action::\"agent.shell\", resource)\nwhen { context.arguments.no_such_field == \"x\" };\n",
    );
    assert_output(
        &out,
        1,
        &format!(
            "{name}: for policy `typo`, attribute `arguments.no_such_field` in context for Action::\"agent.shell\" not found\n{name}: invalid (1 issue)\n"
        ),
        "",
    );
}

#[test]
fn refuses_a_syntax_error_at_its_line_and_column() {
    let (name, out) = validate_written(
        "broken.cedar",
        "@id(\"ok\")\npermit (principal, action, resource);\n\npermit (principal, action, resource) when { 1 + };\n",
    );
    assert_output(
        &out,
        1,
        &format!("{name}:4:49: unexpected token `}}`\n{name}: invalid (1 issue)\n"),
        "",
    );
}

/// The payments table's second case, passed.
const LARGE_OK: &str =
    "ok   a large payment needs two approvers: require_approval [large-payments-need-two]\n";

#[test]
fn the_examples_tables_pass() {
    for (name, (_dir, registry), _) in examples() {
        let out = run_table(
            &example(&format!("{name}.tests.toml")),
            &example(&format!("{name}.cedar")),
            &registry,
        );
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stdout(&out));
        let text = stdout(&out);
        let lines: Vec<&str> = text.lines().collect();
        let (summary, cases) = lines.split_last().unwrap();
        assert_eq!(*summary, format!("{} cases, 0 failed", cases.len()));
        assert!(cases.iter().all(|l| l.starts_with("ok   ")), "{text}");
    }
    // `--registry` before the subcommand too (a global flag of `policy`).
    let (_dir, registry) = payments_registry();
    let out = countersign(&[
        "policy",
        "--registry",
        path_str(&registry),
        "test",
        path_str(&example("payments.tests.toml")),
        "--policies",
        path_str(&example("payments.cedar")),
    ]);
    let small = "ok   a small payment is permitted: permit [small-payments]\n";
    assert_output(
        &out,
        0,
        &format!("{small}{LARGE_OK}2 cases, 0 failed\n"),
        "",
    );
}

#[test]
fn a_wrong_expectation_fails_on_its_own_line() {
    let (dir, registry) = payments_registry();
    let table = dir.path().join("wrong.tests.toml");
    let text = std::fs::read_to_string(example("payments.tests.toml"))
        .unwrap()
        .replacen("expect = \"permit\"", "expect = \"forbid\"", 1);
    std::fs::write(&table, text).unwrap();
    let out = run_table(&table, &example("payments.cedar"), &registry);
    let small = "FAIL a small payment is permitted: expected forbid [small-payments], got permit [small-payments]\n";
    assert_output(
        &out,
        1,
        &format!("{small}{LARGE_OK}2 cases, 1 failed\n"),
        "",
    );
}

#[test]
fn runs_no_case_against_a_policy_set_that_does_not_validate() {
    let (_dir, registry) = default_registry();
    let policies = example("payments.cedar");
    let out = run_table(&example("payments.tests.toml"), &policies, &registry);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(
        text.ends_with(&format!(
            "{}: invalid (2 issues)\nno case was run: the policy set does not validate\n",
            policies.display()
        )),
        "{text}"
    );
    assert!(!text.contains("ok   "), "{text}");
}

#[test]
fn a_missing_file_is_exit_2_naming_it() {
    let (dir, registry) = default_registry();
    let missing = dir.path().join("missing.cedar");
    let out = validate(&missing, &registry);
    assert_output(
        &out,
        2,
        "",
        &format!(
            "countersign-signer: cannot read {}: No such file or directory (os error 2)\n",
            missing.display()
        ),
    );
    let no_registry = dir.path().join("none.toml");
    let out = countersign(&["policy", "schema", "--registry", path_str(&no_registry)]);
    assert_output(
        &out,
        2,
        "",
        &format!(
            "countersign-signer: cannot read registry file {}: No such file or directory (os error 2)\n",
            no_registry.display()
        ),
    );
}

#[test]
fn the_schema_names_an_action_for_every_operation() {
    let (_dir, registry) = gateway_registry();
    let out = countersign(&["policy", "schema", "--registry", path_str(&registry)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let schema = stdout(&out);
    let loaded = Registry::load(&registry).unwrap();
    for operation in loaded.operations() {
        let line = format!("action \"{}\"", operation.name);
        assert!(
            schema.lines().any(|l| l.trim_start().starts_with(&line)),
            "{line} in\n{schema}"
        );
    }
    assert!(
        schema.contains("action \"mcp:files/write_file\""),
        "{schema}"
    );
    assert!(
        schema.contains("action \"agent.shell\" appliesTo {\n  principal: [Session],\n  resource: [Target, Operation],"),
        "{schema}"
    );
}

#[test]
fn without_the_signers_binary_it_says_where_it_looked() {
    // The `countersign` binary alone in a directory (a hard link: the
    // executable's own path is that directory), with no PATH to search.
    let cli = bin("countersign");
    let alone = tempfile::tempdir_in(cli.parent().unwrap()).unwrap();
    let linked = alone.path().join("countersign");
    std::fs::hard_link(&cli, &linked).unwrap();
    let out = Command::new(&linked)
        .args(["policy", "schema", "--registry", "/nonexistent.toml"])
        .env_remove("COUNTERSIGN_HOME")
        .env_remove("COUNTERSIGN_SIGNER_BIN")
        .env("PATH", "")
        .output()
        .unwrap();
    assert_output(
        &out,
        1,
        "",
        &format!(
            "countersign: policy commands need the countersign-signer binary: countersign-signer was not found next to {} nor on PATH; install both binaries or set COUNTERSIGN_SIGNER_BIN\n",
            linked.display()
        ),
    );
}

#[test]
fn a_rules_scope_is_written_as_cedar_that_validates_or_refused_with_its_reason() {
    let (dir, registry) = payments_registry();
    let rule = dir.path().join("rule.json");
    std::fs::write(
        &rule,
        r#"{"operations":["payment.send"],"constraints":[{"pointer":"/payee","prefix":"acme"},{"pointer":"/amount","range":{"max":100}}],"sessions":["agent-1"],"max_uses":10,"per_hour":5,"expires_at":"2026-06-02T00:00:00Z"}"#,
    )
    .unwrap();
    let args = |rule: &Path| {
        countersign(&[
            "policy",
            "rule-scope",
            path_str(rule),
            "--id",
            "small-acme",
            "--registry",
            path_str(&registry),
        ])
    };
    let policies = "@id(\"small-acme/payment.send\")\npermit (principal, action == Action::\"payment.send\", resource)\nwhen { [Session::\"agent-1\"].contains(principal) && context.arguments[\"payee\"] like \"acme*\" && context.arguments[\"amount\"] <= 100 };\n";
    assert_output(&args(&rule), 0, policies, "");
    // What it wrote validates as a policy set of its own.
    let written = dir.path().join("small-acme.cedar");
    std::fs::write(&written, policies).unwrap();
    assert_eq!(validate(&written, &registry).status.code(), Some(0));

    let tags = dir.path().join("tags.json");
    std::fs::write(
        &tags,
        r#"{"operations":["payment.send"],"constraints":[{"pointer":"/tags","equals":["a"]}],"sessions":["*"],"max_uses":1,"per_hour":1,"expires_at":"2026-06-02T00:00:00Z"}"#,
    )
    .unwrap();
    assert_output(
        &args(&tags),
        1,
        &format!(
            "{}: the rule's scope has no exact Cedar form: /tags of payment.send: equals on an array or object compares its canonical JSON, which Cedar (holding arrays as sets) cannot\n",
            tags.display()
        ),
        "",
    );
}
