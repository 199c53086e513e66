//! Every rule the documentation shows as an example, read as the signer
//! reads it, against commands that write files or run other programs:
//! none may cover any of them. A person copies an example; an example that
//! allows `git log --output=FILE` lets an agent overwrite any file the
//! user can, with nobody asked.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use countersign_registry::rule::{RuleDefinition, SHELL_OPERATION};
use serde_json::{Value, json};

/// Commands that write a file, run another program or change what a
/// program runs (a pager, a diff driver, a helper, its configuration).
const HARMFUL: &[&str] = &[
    "git log --output=/home/u/.bashrc",
    "git log --output /home/u/.bashrc",
    "git log -p --output=/tmp/x",
    "git diff --output=/tmp/x",
    "git diff --ext-diff",
    "git diff --textconv",
    "git log --ext-diff -p",
    "git status --porcelain --ignored -z",
    "git -c core.pager=sh log",
    "git -c 'core.pager=touch /tmp/x' log",
    "git -c diff.external=/tmp/x diff",
    "git -c core.fsmonitor=/tmp/x status",
    "git --config-env=core.pager=X log",
    "git --exec-path=/tmp log",
    "git --git-dir=/tmp/evil status",
    "git -C /tmp/evil status",
    "git --paginate log",
    "git -p log",
    "git log --exec=/tmp/x",
    "git rebase --exec 'touch /tmp/x' HEAD~1",
    "git fetch --upload-pack='touch /tmp/x' origin",
    "git clone --upload-pack='touch /tmp/x' a b",
    "git ls-remote --upload-pack='touch /tmp/x' origin",
    "git grep --open-files-in-pager=/tmp/x foo",
    "git grep -O/tmp/x foo",
    "git difftool --extcmd=/tmp/x",
    "git status; touch /tmp/x",
    "find . -exec touch /tmp/x ;",
    "find . -delete",
    "find . -fprint /tmp/x",
    "sort -o /tmp/x a",
    "sed -i s/a/b/ f",
    "sh -c 'touch /tmp/x'",
    "bash -c 'touch /tmp/x'",
    "python3 -c 'open(\"/tmp/x\",\"w\")'",
    "node -e 1",
    "env touch /tmp/x",
    "xargs touch",
    "npx x",
    "npm run x",
    "make",
    "cargo run",
    "touch ok.txt",
];

/// The Markdown a person reads: the book, the README, SECURITY.md.
fn documents() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.push(root.join("README.md"));
    files.push(root.join("SECURITY.md"));
    files.sort();
    files
}

/// The JSON blocks of a Markdown text.
fn json_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let fence = line.trim_start();
        match &mut current {
            None if fence.starts_with("```json") => current = Some(String::new()),
            Some(_) if fence.starts_with("```") => blocks.extend(current.take()),
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    blocks
}

/// A shell rule around one documented `argv` constraint.
fn shell_rule_with(constraint: Value) -> Value {
    json!({
        "operations": [SHELL_OPERATION],
        "constraints": [constraint],
        "sessions": ["*"], "max_uses": 1, "per_hour": 1,
        "expires_at": "2027-01-01T00:00:00Z",
    })
}

/// Every documented rule, and each documented `argv` constraint as a
/// shell rule, with where it was found.
fn documented_rules() -> Vec<(String, RuleDefinition)> {
    let mut found = Vec::new();
    for file in documents() {
        let text = std::fs::read_to_string(&file).unwrap();
        for block in json_blocks(&text) {
            let Ok(value) = serde_json::from_str::<Value>(&block) else {
                continue;
            };
            let definition = if value.get("operations").is_some() {
                value
            } else if value.get("argv").is_some() {
                shell_rule_with(value)
            } else {
                continue;
            };
            let rule = RuleDefinition::from_value(definition)
                .unwrap_or_else(|e| panic!("{}: {e}:\n{block}", file.display()));
            found.push((format!("{}:\n{block}", file.display()), rule));
        }
    }
    found
}

fn shell_call(command: &str) -> Value {
    json!({"agent": "claude-code", "tool_name": "Bash",
        "tool_input": {"command": command}, "cwd": "/work/project"})
}

#[test]
fn no_documented_rule_covers_a_command_that_writes_files_or_runs_programs() {
    let rules = documented_rules();
    let shell: Vec<_> = rules
        .iter()
        .filter(|(_, r)| r.operations.iter().any(|o| o == SHELL_OPERATION))
        .collect();
    // docs/hooks.md's rule and docs/rules.md's argv example at least.
    assert!(shell.len() >= 2, "{} shell rules found", shell.len());
    for (where_, rule) in &shell {
        for command in HARMFUL {
            assert!(
                !rule.covers(SHELL_OPERATION, "claude-code:s", &shell_call(command)),
                "{where_} covers {command:?}"
            );
        }
    }
}

#[test]
fn the_documented_shell_rules_cover_what_they_say_they_cover() {
    let rules = documented_rules();
    let covers = |command: &str| {
        rules
            .iter()
            .any(|(_, r)| r.covers(SHELL_OPERATION, "claude-code:s", &shell_call(command)))
    };
    for command in ["git status", "git diff", "git log", "git log --oneline"] {
        assert!(covers(command), "{command}");
    }
}
