//! What `rules suggest` proposes for a history of approved calls: exactly
//! the approved lines and values, and what each would allow at most.
#![allow(clippy::unwrap_used)]

use countersign_registry::rule::RuleDefinition;

use super::*;

const EXPIRES: &str = "2027-01-01T00:00:00Z";

fn applied(operation: &str, arguments: Value, provenance: &str) -> ProposalView {
    ProposalView {
        operation: operation.into(),
        arguments_json: arguments.to_string(),
        provenance: provenance.into(),
        ..Default::default()
    }
}

fn shell(command: &str) -> ProposalView {
    applied("agent.shell", shell_args(command), "human:cert:pr_x")
}

fn shell_args(command: &str) -> Value {
    json!({"agent": "claude-code", "tool_name": "Bash", "tool_input": {"command": command}, "cwd": "/w"})
}

fn fetch(url: &str) -> ProposalView {
    applied("agent.web", fetch_args(url), "human:cert:pr_x")
}

fn fetch_args(url: &str) -> Value {
    json!({"agent": "claude-code", "tool_name": "WebFetch", "tool_input": {"url": url, "prompt": "summarize"}, "cwd": "/w"})
}

/// Every suggestion's rule, parsed as the signer would.
fn rules_of(found: &[Suggestion]) -> Vec<RuleDefinition> {
    found
        .iter()
        .map(|s| RuleDefinition::from_value(s.definition.clone()).unwrap())
        .collect()
}

fn covered(rules: &[RuleDefinition], operation: &str, args: &Value) -> bool {
    rules
        .iter()
        .any(|r| r.covers(operation, "claude-code:s", args))
}

#[test]
fn approved_commands_become_their_exact_words_and_shell_syntax_is_never_suggested() {
    let history = vec![
        shell("git status"),
        shell("git status"),
        shell("git status -s"),
        shell("npm test"),
        shell("git status; rm -rf x"),
        shell("git status; rm -rf x"),
        shell("FOO=1 npm test"),
        // No argv pattern names these: a relative program path, more
        // arguments than a pattern holds.
        shell("./gradlew build"),
        shell(&format!("echo{}", " x".repeat(40))),
        applied("agent.shell", shell_args("npm test"), "rule:rule_1@1"),
        applied(
            "agent.edit",
            json!({"tool_name": "Edit", "tool_input": {}, "diff": ""}),
            "human:cert:pr_x",
        ),
    ];
    let found = suggestions(&history, 1, None, EXPIRES);
    let summary: Vec<(usize, Value, &str)> = found
        .iter()
        .map(|s| {
            (
                s.count,
                s.definition["constraints"][0].clone(),
                s.widest.as_str(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                2,
                json!({"pointer": "/tool_input/command", "argv": {"program": "git", "args": ["status"], "more_args": false}}),
                "exactly git status (no further arguments; 1 command line(s), 1 approved)"
            ),
            (
                1,
                json!({"pointer": "/tool_input/command", "argv": {"program": "git", "args": ["status", "-s"], "more_args": false}}),
                "exactly git status -s (no further arguments; 1 command line(s), 1 approved)"
            ),
            (
                1,
                json!({"pointer": "/tool_input/command", "argv": {"program": "npm", "args": ["test"], "more_args": false}}),
                "exactly npm test (no further arguments; 1 command line(s), 1 approved)"
            ),
        ]
    );
    assert_eq!(found[0].examples["git status"], 2);
    assert_eq!(found[0].definition["sessions"], json!(["*"]));
    // The threshold.
    assert_eq!(suggestions(&history, 2, None, EXPIRES).len(), 1);
    let rules = rules_of(&found);
    assert!(!covered(
        &rules,
        "agent.shell",
        &shell_args("git status --porcelain")
    ));
    assert!(!covered(
        &rules,
        "agent.shell",
        &shell_args("npm test -- --x")
    ));
}

#[test]
fn an_interpreter_or_runner_is_suggested_line_by_line_and_never_widened() {
    let history = vec![
        shell("python3 -c 'print(1)'"),
        shell("python3 -c 'print(2)'"),
        shell("python3 -c 'print(3)'"),
        shell("npm run build"),
        shell("npm run lint"),
        shell("find . -name x"),
        shell("find . -name y"),
        shell("git -c core.pager=cat log"),
        shell("env A=1 ls"),
        shell("sh -c ls"),
    ];
    let found = suggestions(&history, 1, None, EXPIRES);
    assert_eq!(found.len(), 10, "{found:#?}");
    for s in &found {
        assert_eq!(s.count, 1, "{s:?}");
        assert_eq!(s.definition["constraints"][0]["argv"]["more_args"], false);
        assert!(
            s.definition["constraints"][0]["argv"]["args"]
                .as_array()
                .unwrap()
                .iter()
                .all(Value::is_string),
            "{s:?}"
        );
        assert!(
            s.widest
                .ends_with("(no further arguments; 1 command line(s), 1 approved)")
        );
    }
    let rules = rules_of(&found);
    for command in [
        "python3 -c 'import os; os.system(\"x\")'",
        "python3 -c 'print(1)' extra",
        "npm run deploy",
        "find . -name x -delete",
        "find . -name z",
        "git -c core.pager=sh log",
        "env A=1 rm",
        "sh -c 'rm -rf x'",
    ] {
        assert!(
            !covered(&rules, "agent.shell", &shell_args(command)),
            "{command}"
        );
    }
}

#[test]
fn other_commands_group_by_position_only_before_their_first_option() {
    let history = vec![
        shell("ls src"),
        shell("ls docs"),
        shell("grep -r foo src"),
        shell("grep -r bar src"),
        shell("git log --output=/tmp/x"),
    ];
    let found = suggestions(&history, 1, None, EXPIRES);
    let constraints: Vec<Value> = found
        .iter()
        .map(|s| s.definition["constraints"][0]["argv"].clone())
        .collect();
    // `ls src` and `ls docs`: their first words differ, two rules; after
    // an option, never grouped.
    assert!(constraints.contains(&json!({"program": "ls", "args": ["src"], "more_args": false})));
    assert!(constraints.contains(&json!({"program": "ls", "args": ["docs"], "more_args": false})));
    assert!(
        constraints.contains(
            &json!({"program": "grep", "args": ["-r", "foo", "src"], "more_args": false})
        )
    );
    assert!(
        constraints.contains(
            &json!({"program": "grep", "args": ["-r", "bar", "src"], "more_args": false})
        )
    );
    let rules = rules_of(&found);
    for command in [
        "grep -r foo /etc",
        "grep -r bar src --include=x",
        "git log --output=/tmp/y",
        "ls src docs",
    ] {
        assert!(
            !covered(&rules, "agent.shell", &shell_args(command)),
            "{command}"
        );
    }
}

#[test]
fn approved_words_at_one_position_are_one_of_them_and_the_widest_counts_the_lines() {
    let history = vec![shell("cat a.txt b.txt"), shell("cat c.txt d.txt")];
    let found = suggestions(&history, 1, None, EXPIRES);
    assert_eq!(found.len(), 2, "{found:#?}");
    let history = vec![shell("git show a1 b1"), shell("git show a2 b2")];
    let found = suggestions(&history, 1, None, EXPIRES);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(
        found[0].definition["constraints"][0]["argv"],
        json!({"program": "git", "args": ["show", {"one_of": ["a1", "a2"]}, {"one_of": ["b1", "b2"]}], "more_args": false})
    );
    assert_eq!(
        found[0].widest,
        "exactly git show (one of: a1 | a2) (one of: b1 | b2) (no further arguments; 4 command line(s), 2 approved)"
    );
}

#[test]
fn web_fetches_are_grouped_by_their_approved_urls_never_by_tool_name_alone() {
    let history = vec![
        fetch("https://docs.rs/serde"),
        fetch("https://docs.rs/tokio"),
        fetch("https://docs.rs/serde"),
    ];
    let found = suggestions(&history, 3, None, EXPIRES);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(
        found[0].definition["constraints"],
        json!([
            {"pointer": "/tool_name", "equals": "WebFetch"},
            {"pointer": "/tool_input/url", "one_of": ["https://docs.rs/serde", "https://docs.rs/tokio"]},
        ])
    );
    assert_eq!(
        found[0].widest,
        "WebFetch with /tool_input/url exactly one of the 2 approved value(s)"
    );
    let rules = rules_of(&found);
    assert!(covered(
        &rules,
        "agent.web",
        &fetch_args("https://docs.rs/tokio")
    ));
    assert!(!covered(
        &rules,
        "agent.web",
        &fetch_args("https://evil.example/x")
    ));
    assert!(!covered(
        &rules,
        "agent.web",
        &fetch_args("https://docs.rs/other")
    ));

    // A prefix the person typed: any URL starting with it, said so.
    let found = suggestions(&history, 3, Some("https://docs.rs/"), EXPIRES);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(
        found[0].definition["constraints"][1],
        json!({"pointer": "/tool_input/url", "prefix": "https://docs.rs/"})
    );
    assert_eq!(
        found[0].widest,
        "WebFetch with /tool_input/url ANY string starting with \"https://docs.rs/\""
    );
    let rules = rules_of(&found);
    assert!(covered(
        &rules,
        "agent.web",
        &fetch_args("https://docs.rs/other")
    ));
    assert!(!covered(
        &rules,
        "agent.web",
        &fetch_args("https://evil.example/x")
    ));
}

#[test]
fn other_tools_are_grouped_by_their_whole_approved_input() {
    let mcp = |input: Value| {
        applied(
            "agent.mcp",
            json!({"agent": "claude-code", "tool_name": "mcp__fs__write_file", "tool_input": input, "cwd": "/w"}),
            "human:cert:pr_x",
        )
    };
    let history = vec![
        mcp(json!({"path": "/w/a", "content": "x"})),
        mcp(json!({"path": "/w/a", "content": "x"})),
    ];
    let found = suggestions(&history, 1, Some("/w"), EXPIRES);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(
        found[0].definition["constraints"][1],
        json!({"pointer": "/tool_input", "one_of": [{"path": "/w/a", "content": "x"}]})
    );
    let rules = rules_of(&found);
    let other = json!({"agent": "claude-code", "tool_name": "mcp__fs__write_file",
        "tool_input": {"path": "/w/a", "content": "evil"}, "cwd": "/w"});
    assert!(!covered(&rules, "agent.mcp", &other));
}
