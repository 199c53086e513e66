//! Unit tests of rule definitions: strict reading, creation checks, and
//! match and non-match at each constraint's boundary.
#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::*;

const NOW: &str = "2026-06-01T00:00:00Z";

fn now() -> OffsetDateTime {
    timestamp::parse(NOW).unwrap()
}

/// A definition with `constraints`, otherwise valid.
fn with(constraints: Value) -> Value {
    json!({
        "operations": ["schedule.create"],
        "constraints": constraints,
        "sessions": ["agent-1"],
        "max_uses": 10,
        "per_hour": 5,
        "expires_at": "2026-06-02T00:00:00Z",
    })
}

fn rule(constraints: Value) -> RuleDefinition {
    RuleDefinition::from_value(with(constraints)).unwrap()
}

fn covers(rule: &RuleDefinition, args: Value) -> bool {
    rule.covers("schedule.create", "agent-1", &args)
}

fn registry() -> Registry {
    Registry::from_toml_str(Registry::default_toml()).unwrap()
}

#[test]
fn equals_matches_only_the_exact_canonical_value() {
    let r = rule(json!([{"pointer": "/name", "equals": "nightly"}]));
    assert!(covers(&r, json!({"name": "nightly"})));
    for other in [
        json!("nightly "),
        json!("Nightly"),
        json!("nightl"),
        json!(1),
    ] {
        assert!(!covers(&r, json!({ "name": other })), "{other}");
    }
    // Missing is never a match, whatever the test.
    assert!(!covers(&r, json!({"cron": "nightly"})));
    let n = rule(json!([{"pointer": "/n", "equals": 3}]));
    assert!(covers(&n, json!({"n": 3})));
    assert!(covers(&n, json!({"n": 3.0})));
    assert!(!covers(&n, json!({"n": "3"})));
    assert!(!covers(&n, json!({"n": 3.000_000_1})));
    let o = rule(json!([{"pointer": "/o", "equals": {"a": 1, "b": [true]}}]));
    assert!(covers(&o, json!({"o": {"b": [true], "a": 1}})));
    assert!(!covers(&o, json!({"o": {"b": [true], "a": 1, "c": null}})));
}

#[test]
fn one_of_matches_each_listed_value_and_nothing_else() {
    let r = rule(json!([{"pointer": "/name", "one_of": ["a", "b"]}]));
    assert!(covers(&r, json!({"name": "a"})));
    assert!(covers(&r, json!({"name": "b"})));
    assert!(!covers(&r, json!({"name": "c"})));
    assert!(!covers(&r, json!({"name": "ab"})));
    assert!(!covers(&r, json!({"name": ["a"]})));
}

#[test]
fn range_is_inclusive_at_both_bounds_and_numbers_only() {
    let r = rule(json!([{"pointer": "/n", "range": {"min": 1, "max": 10}}]));
    for inside in [json!(1), json!(1.0), json!(5.5), json!(10)] {
        assert!(covers(&r, json!({ "n": inside })), "{inside}");
    }
    for outside in [
        json!(0),
        json!(0.999_999),
        json!(10.000_001),
        json!(11),
        json!(-1),
    ] {
        assert!(!covers(&r, json!({ "n": outside })), "{outside}");
    }
    for not_a_number in [json!("5"), json!(true), json!(null), json!([5])] {
        assert!(!covers(&r, json!({ "n": not_a_number })), "{not_a_number}");
    }
    let at_least = rule(json!([{"pointer": "/n", "range": {"min": -2}}]));
    assert!(covers(&at_least, json!({"n": -2})));
    assert!(covers(&at_least, json!({"n": 9_007_199_254_740_991_u64})));
    assert!(!covers(&at_least, json!({"n": -3})));
    let at_most = rule(json!([{"pointer": "/n", "range": {"max": 0}}]));
    assert!(covers(&at_most, json!({"n": 0})));
    assert!(!covers(&at_most, json!({"n": 1})));
}

#[test]
fn prefix_matches_strings_that_start_with_it_exactly() {
    let r = rule(json!([{"pointer": "/cron", "prefix": "0 3 "}]));
    assert!(covers(&r, json!({"cron": "0 3 "})));
    assert!(covers(&r, json!({"cron": "0 3 * * *"})));
    assert!(!covers(&r, json!({"cron": "0 3"})));
    assert!(!covers(&r, json!({"cron": " 0 3 * * *"})));
    assert!(!covers(&r, json!({"cron": "0 4 * * *"})));
    assert!(!covers(&r, json!({"cron": 3})));
}

#[test]
fn pointers_reach_nested_values_and_escaped_keys() {
    let r = rule(json!([
        {"pointer": "/a/b~1c/0", "equals": "x"},
        {"pointer": "/t~0k", "equals": 1}
    ]));
    assert!(covers(&r, json!({"a": {"b/c": ["x"]}, "t~k": 1})));
    assert!(!covers(&r, json!({"a": {"b/c": ["y"]}, "t~k": 1})));
    assert!(!covers(&r, json!({"a": {"b/c": ["x"]}})));
}

#[test]
fn every_constraint_must_hold() {
    let r = rule(json!([
        {"pointer": "/name", "prefix": "nightly"},
        {"pointer": "/cron", "equals": "0 3 * * *"}
    ]));
    assert!(covers(
        &r,
        json!({"name": "nightly-db", "cron": "0 3 * * *"})
    ));
    assert!(!covers(
        &r,
        json!({"name": "nightly-db", "cron": "0 4 * * *"})
    ));
    assert!(!covers(&r, json!({"name": "weekly", "cron": "0 3 * * *"})));
}

#[test]
fn covers_only_its_operations_and_sessions() {
    let r = rule(json!([]));
    let args = json!({"name": "x"});
    assert!(r.covers("schedule.create", "agent-1", &args));
    assert!(!r.covers("schedule.delete", "agent-1", &args));
    assert!(!r.covers("schedule.create", "agent-2", &args));
    assert!(!r.covers("schedule.create", "agent-1x", &args));
    let mut any = with(json!([]));
    any["sessions"] = json!(["*"]);
    let any = RuleDefinition::from_value(any).unwrap();
    assert_eq!(any.sessions, Sessions::Any);
    assert!(any.covers("schedule.create", "whatever", &args));
}

#[test]
fn refuses_any_other_test_and_malformed_constraints() {
    for bad in [
        json!([{"pointer": "/name", "regex": ".*"}]),
        json!([{"pointer": "/name", "not_equals": "x"}]),
        json!([{"pointer": "/name", "equals": "x", "prefix": "x"}]),
        json!([{"pointer": "/name"}]),
        json!([{"equals": "x"}]),
        json!([{"pointer": "", "equals": {}}]),
        json!([{"pointer": "name", "equals": "x"}]),
        json!([{"pointer": "/a~2", "equals": "x"}]),
        json!([{"pointer": "/n", "range": {}}]),
        json!([{"pointer": "/n", "range": {"min": 2, "max": 1}}]),
        json!([{"pointer": "/n", "range": {"min": "1"}}]),
        json!([{"pointer": "/n", "range": {"min": 1, "step": 1}}]),
        json!([{"pointer": "/n", "one_of": []}]),
        json!([{"pointer": "/n", "one_of": "a"}]),
        json!([{"pointer": "/n", "prefix": ""}]),
        json!([{"pointer": "/n", "prefix": 1}]),
        json!(["/name"]),
        json!({}),
    ] {
        assert!(
            matches!(
                RuleDefinition::from_value(with(bad.clone())),
                Err(RuleError::Malformed(_))
            ),
            "{bad}"
        );
    }
}

#[test]
fn refuses_unknown_missing_and_out_of_bounds_keys() {
    let edits: Vec<fn(&mut Value)> = vec![
        |v| v["approve_everything"] = json!(true),
        |v| drop(v.as_object_mut().unwrap().remove("max_uses")),
        |v| drop(v.as_object_mut().unwrap().remove("constraints")),
        |v| v["max_uses"] = json!(0),
        |v| v["max_uses"] = json!(MAX_RULE_USES + 1),
        |v| v["per_hour"] = json!(0),
        |v| v["per_hour"] = json!(1.5),
        |v| v["operations"] = json!([]),
        |v| v["operations"] = json!(["a", "a"]),
        |v| v["sessions"] = json!(["*", "agent-1"]),
        |v| v["sessions"] = json!(["a b"]),
        |v| v["sessions"] = json!([]),
        |v| v["expires_at"] = json!("2026-06-02"),
        |v| *v = json!([1]),
    ];
    for (i, edit) in edits.iter().enumerate() {
        let mut v = with(json!([]));
        edit(&mut v);
        assert!(
            matches!(RuleDefinition::from_value(v), Err(RuleError::Malformed(_))),
            "edit {i}"
        );
    }
    // Duplicate keys never reach a loose value.
    let dup = br#"{"constraints":[],"expires_at":"2026-06-02T00:00:00Z","max_uses":1,"max_uses":9,"operations":["schedule.create"],"per_hour":1,"sessions":["*"]}"#;
    assert!(matches!(
        RuleDefinition::parse(dup),
        Err(RuleError::Malformed(_))
    ));
}

#[test]
fn creation_checks_operations_passkeys_and_expiry() {
    let registry = registry();
    let r = rule(json!([]));
    assert_eq!(r.check_creatable(&registry, false, now()), Ok(()));
    // A registry-wide passkey requirement: no rule may approve anything.
    assert!(matches!(
        r.check_creatable(&registry, true, now()),
        Err(RuleError::NotCoverable(_, _))
    ));
    let mut v = with(json!([]));
    v["operations"] = json!(["schedule.create", "nope.nothing"]);
    assert_eq!(
        RuleDefinition::from_value(v)
            .unwrap()
            .check_creatable(&registry, false, now()),
        Err(RuleError::UnknownOperation("nope.nothing".into()))
    );
    // Expiry: after now, at most 90 days away, to the second.
    for (expires, ok) in [
        ("2026-06-01T00:00:00Z", false),
        ("2026-06-01T00:00:01Z", true),
        ("2026-08-30T00:00:00Z", true),
        ("2026-08-30T00:00:01Z", false),
    ] {
        let mut v = with(json!([]));
        v["expires_at"] = json!(expires);
        let got = RuleDefinition::from_value(v)
            .unwrap()
            .check_creatable(&registry, false, now());
        assert_eq!(got.is_ok(), ok, "{expires}: {got:?}");
    }
}

#[test]
fn no_rule_approves_rule_creation_a_passkey_or_a_quorum_operation() {
    assert!(not_coverable(RULE_CREATE, false, false, false).is_some());
    assert!(not_coverable("schedule.create", true, false, false).is_some());
    assert_eq!(
        not_coverable("schedule.create", false, true, false),
        Some("the operation requires a quorum of named approvers")
    );
    assert!(not_coverable("schedule.create", false, false, true).is_some());
    assert_eq!(not_coverable("schedule.create", false, false, false), None);
}

#[test]
fn the_canonical_text_is_what_is_hashed_and_the_scope_shows_everything() {
    let r = rule(json!([
        {"pointer": "/name", "equals": "nightly"},
        {"pointer": "/n", "range": {"min": 1, "max": 10}},
        {"pointer": "/cron", "prefix": "0 3\u{202e} "}
    ]));
    assert_eq!(
        r.sha256_hex(),
        canonical::sha256_hex(r.canonical().as_bytes())
    );
    assert_eq!(RuleDefinition::parse(r.canonical().as_bytes()).unwrap(), r);
    let scope = r.scope_text();
    for part in [
        "WITHOUT asking a person",
        "Operations: schedule.create",
        "/name equals \"nightly\"",
        "/n is a number from 1 to 10 (inclusive)",
        "/cron is a string starting with \"0 3\\u{202e} \"",
        "Sessions:   agent-1",
        "at most 10 in total, at most 5 per hour",
        "Expires:    2026-06-02T00:00:00Z",
    ] {
        assert!(scope.contains(part), "{part:?} in\n{scope}");
    }
    assert!(!scope.contains('\u{202e}'));
}

/// A rule for `agent.shell`-like arguments: one argv constraint at
/// `/tool_input/command`.
fn shell_rule(argv: Value) -> RuleDefinition {
    rule(json!([{"pointer": "/tool_input/command", "argv": argv}]))
}

fn shell(command: Value) -> Value {
    json!({"tool_name": "Bash", "tool_input": {"command": command}})
}

#[test]
fn argv_covers_exactly_the_command_words_and_never_a_prefix() {
    let r = shell_rule(json!({"program": "git", "args": ["status"], "more_args": false}));
    for same in [
        "git status",
        "  git\tstatus ",
        "git 'status'",
        "'git' \"status\"",
    ] {
        assert!(covers(&r, shell(json!(same))), "{same:?}");
    }
    for other in [
        "git status;rm -rf /",
        "git status; rm -rf ~",
        "git status && curl x",
        "git status || curl x",
        "git status | sh",
        "git status > /etc/passwd",
        "git status\nrm -rf /",
        "git status #c",
        "git status *",
        "git $(rm -rf /)",
        "git `id`",
        "FOO=1 git status",
        "git\u{a0}status",
        "git status --short",
        "git",
        "/usr/bin/git status",
        "git statuses",
        "git stat",
        "git st\\atus",
        "",
    ] {
        assert!(!covers(&r, shell(json!(other))), "{other:?}");
    }
    // Not a string, or missing: never a match.
    for not_a_command in [
        json!(["git", "status"]),
        json!(null),
        json!({"argv": "git status"}),
    ] {
        assert!(!covers(&r, shell(not_a_command.clone())), "{not_a_command}");
    }
    assert!(!covers(&r, json!({"tool_input": {}})));
}

#[test]
fn argv_with_more_args_allows_only_further_plain_words() {
    let r = shell_rule(json!({
        "program": "git",
        "args": [{"one_of": ["log", "diff"]}],
        "more_args": true
    }));
    for covered in ["git log", "git diff --stat", "git log --oneline -n 5 'a b'"] {
        assert!(covers(&r, shell(json!(covered))), "{covered:?}");
    }
    for refused in [
        "git show",
        "git",
        "git log; rm -rf /",
        "git log | sh",
        "git log $(id)",
        "git diff > out",
        "git log HEAD~1",
    ] {
        assert!(!covers(&r, shell(json!(refused))), "{refused:?}");
    }
}

#[test]
fn refuses_malformed_argv_constraints_with_their_reason() {
    for (argv, reason) in [
        (
            json!("git status"),
            "argv must be an object with program, args and more_args",
        ),
        (
            json!({"program": "git", "args": []}),
            "argv needs more_args",
        ),
        (
            json!({"program": "git status", "args": [], "more_args": false}),
            "argv program must be a command name or an absolute path: 1 to 1024 bytes, no whitespace, control characters or '='",
        ),
        (
            json!({"program": "git", "args": [], "more_args": false, "strict": true}),
            "unknown argv key \"strict\"",
        ),
    ] {
        assert_eq!(
            RuleDefinition::from_value(with(json!([{"pointer": "/c", "argv": argv.clone()}]))),
            Err(RuleError::Malformed(reason.to_owned())),
            "{argv}"
        );
    }
    // argv is one test: not alongside another.
    assert_eq!(
        RuleDefinition::from_value(with(json!([{
            "pointer": "/c",
            "argv": {"program": "git", "args": [], "more_args": false},
            "prefix": "git"
        }]))),
        Err(RuleError::Malformed(
            "each constraint has exactly one test: equals, one_of, range, prefix or argv"
                .to_owned()
        ))
    );
}

#[test]
fn the_scope_shows_an_argv_constraint_word_by_word() {
    let r = rule(json!([
        {"pointer": "/tool_input/command",
         "argv": {"program": "git", "args": ["status"], "more_args": false}},
        {"pointer": "/tool_input/command",
         "argv": {"program": "/usr/bin/git", "args": [{"one_of": ["log", "a b"]}], "more_args": true}},
        {"pointer": "/tool_input/command",
         "argv": {"program": "git", "args": ["\u{202e}x", "\u{1b}[2J"], "more_args": false}}
    ]));
    let scope = r.scope_text();
    for line in [
        "Arguments:  /tool_input/command is exactly the plain shell command: git status\n",
        "            /tool_input/command is the plain shell command: /usr/bin/git (one of: log | \"a b\") (then ANY further arguments)\n",
        "            /tool_input/command is exactly the plain shell command: git \"\\u{202e}x\" \"\\u001b[2J\"\n",
    ] {
        assert!(scope.contains(line), "{line:?} in\n{scope}");
    }
    assert!(!scope.contains('\u{202e}') && !scope.contains('\u{1b}'));
}

#[test]
fn a_model_may_propose_an_argv_rule_through_the_rule_create_schema() {
    let registry = registry();
    let op = registry.get(RULE_CREATE).unwrap();
    let definition = |argv: Value| {
        serde_json::to_vec(&with(
            json!([{"pointer": "/tool_input/command", "argv": argv}]),
        ))
        .unwrap()
    };
    for good in [
        json!({"program": "git", "args": ["status"], "more_args": false}),
        json!({"program": "/usr/bin/git", "args": [{"one_of": ["log", "diff"]}, "-1"], "more_args": true}),
        json!({"program": "ls", "args": [], "more_args": false}),
    ] {
        let args = op.validate_arguments(&definition(good.clone())).unwrap();
        assert!(
            RuleDefinition::from_value(args.value().clone()).is_ok(),
            "{good}"
        );
    }
    for bad in [
        json!({"program": "git", "args": ["status"]}),
        json!({"program": "git", "args": ["status"], "more_args": false, "x": 1}),
        json!({"program": "", "args": [], "more_args": false}),
        json!({"program": "git status", "args": [], "more_args": false}),
        json!({"program": "git", "args": "status", "more_args": false}),
        json!({"program": "git", "args": [1], "more_args": false}),
        json!({"program": "git", "args": [{"one_of": []}], "more_args": false}),
        json!({"program": "git", "args": [{"one_of": ["a"], "x": 1}], "more_args": false}),
        json!({"program": "git", "args": vec!["x"; argv::MAX_ARGV_ARGS + 1], "more_args": false}),
        json!({"program": "git", "args": [], "more_args": "no"}),
    ] {
        assert!(
            matches!(
                op.validate_arguments(&definition(bad.clone())),
                Err(crate::ArgumentsError::Schema(_))
            ),
            "{bad}"
        );
        // The definition parser refuses each of them as well.
        assert!(
            RuleDefinition::from_value(serde_json::from_slice(&definition(bad.clone())).unwrap())
                .is_err(),
            "{bad}"
        );
    }
}

/// A definition for `agent.shell` with `constraints`, otherwise valid.
fn agent_shell_rule(constraints: Value) -> RuleDefinition {
    let mut v = with(constraints);
    v["operations"] = json!(["agent.shell"]);
    v["sessions"] = json!(["*"]);
    RuleDefinition::from_value(v).unwrap()
}

fn shell_args(command: &str) -> Value {
    json!({"agent": "claude-code", "tool_name": "Bash", "tool_input": {"command": command}, "cwd": "/w"})
}

#[test]
fn refuses_a_shell_rule_whose_command_test_is_not_argv_and_it_covers_nothing() {
    let registry = registry();
    let prefix = "prefix is a string test, and a shell command is never matched by a string prefix";
    let text = "equals and one_of compare the command's text, not the words a shell runs";
    for (constraints, why) in [
        (
            json!([{"pointer": "/tool_input/command", "prefix": "touch ok.txt"}]),
            prefix,
        ),
        (
            json!([{"pointer": "/tool_input/command", "equals": "git status"}]),
            text,
        ),
        (
            json!([{"pointer": "/tool_input/command", "one_of": ["git status"]}]),
            text,
        ),
        (
            json!([
                {"pointer": "/tool_input/command", "argv": {"program": "touch", "args": ["ok.txt"], "more_args": false}},
                {"pointer": "/tool_input/command", "prefix": "touch"},
            ]),
            prefix,
        ),
        (
            json!([{"pointer": "/tool_name", "equals": "Bash"}]),
            "without an argv test on it, the rule would cover every command",
        ),
    ] {
        let r = agent_shell_rule(constraints.clone());
        assert_eq!(
            r.check_creatable(&registry, false, now()),
            Err(RuleError::ShellNeedsArgv(why)),
            "{constraints}"
        );
        assert_eq!(
            RuleError::ShellNeedsArgv(why).to_string(),
            format!(
                "a rule for agent.shell must match /tool_input/command with argv, and argv only: {why}"
            )
        );
        // Stored before the check existed: it approves no shell call.
        for command in ["touch ok.txt; touch y", "touch ok.txt", "git status"] {
            assert!(
                !r.covers("agent.shell", "s", &shell_args(command)),
                "{constraints} {command}"
            );
        }
    }
    let argv = agent_shell_rule(json!([
        {"pointer": "/tool_input/command", "argv": {"program": "touch", "args": ["ok.txt"], "more_args": false}},
    ]));
    assert_eq!(argv.check_creatable(&registry, false, now()), Ok(()));
    assert!(argv.covers("agent.shell", "s", &shell_args("touch ok.txt")));
    assert!(!argv.covers("agent.shell", "s", &shell_args("touch ok.txt; touch y")));
}

#[test]
fn a_cedar_scope_is_read_strictly_and_never_covers_here() {
    let cedar = "permit (principal, action, resource);";
    let mut written = with(json!([]));
    written["cedar"] = json!(cedar);
    written.as_object_mut().unwrap().remove("constraints");
    let r = RuleDefinition::from_value(written.clone()).unwrap();
    assert_eq!(r.cedar.as_deref(), Some(cedar));
    assert!(r.constraints.is_empty());
    // This crate cannot evaluate Cedar: it never covers on its own.
    assert!(!covers(&r, json!({"name": "nightly"})));
    assert!(r.covers_besides_cedar("schedule.create", "agent-1", &json!({"name": "nightly"})));
    assert!(!r.covers_besides_cedar("schedule.create", "agent-2", &json!({"name": "nightly"})));
    r.check_creatable(&registry(), false, now()).unwrap();
    // The person reads the policies, verbatim and terminal-safe.
    let scope = r.scope_text();
    assert!(
        scope.contains("Cedar:      only what these policies permit"),
        "{scope}"
    );
    assert!(scope.contains(&format!("  | {cedar}\n")), "{scope}");
    assert!(!scope.contains("ANY arguments"), "{scope}");
    // Without `cedar`, `constraints` is required; `cedar` is a non-empty string.
    let mut neither = written.clone();
    neither.as_object_mut().unwrap().remove("cedar");
    for (definition, why) in [
        (neither, "constraints is required"),
        (
            json!({"cedar": 1}),
            "cedar must be the non-empty text of Cedar policies",
        ),
        (
            json!({"cedar": "  "}),
            "cedar must be the non-empty text of Cedar policies",
        ),
    ] {
        let mut definition = definition;
        if definition.get("operations").is_none() {
            let mut full = written.clone();
            full["cedar"] = definition["cedar"].clone();
            definition = full;
        }
        assert_eq!(
            RuleDefinition::from_value(definition).unwrap_err(),
            RuleError::Malformed(why.into())
        );
    }
}

#[test]
fn a_shell_rule_with_a_cedar_scope_still_refuses_string_tests_on_the_command() {
    let mut shell = with(json!([]));
    shell["operations"] = json!(["agent.shell"]);
    shell["cedar"] = json!("permit (principal, action, resource);");
    // The Cedar scope stands in for the argv test (the signer checks it
    // names the program) ...
    let r = RuleDefinition::from_value(shell.clone()).unwrap();
    r.check_creatable(&registry(), false, now()).unwrap();
    assert!(r.shell_commands_matched_by_argv());
    // ... but a string test on the command is refused as before.
    shell["constraints"] = json!([{"pointer": "/tool_input/command", "prefix": "git "}]);
    let r = RuleDefinition::from_value(shell).unwrap();
    assert!(matches!(
        r.check_creatable(&registry(), false, now()),
        Err(RuleError::ShellNeedsArgv(_))
    ));
    assert!(!r.shell_commands_matched_by_argv());
}
