//! `countersign rules suggest`: rules a person may want, read from the
//! history of agent calls people approved one by one. It proposes; it
//! never creates: a suggestion is a definition to save and pass to `rules
//! create`, where the person reads its exact scope and confirms it.
//!
//! Owns: how approved calls are grouped into suggestions. Shell calls
//! (`agent.shell`) are grouped by program and first word, as the rule's
//! `argv` test matches them (a command with shell syntax the test cannot
//! see through is never suggested); reads, web, MCP and other tools by
//! their tool name. Edits are never suggested: no two diffs are alike, and
//! a rule over a tool name would cover every edit.
//! Must not: create or revise a rule, or count a call a rule approved.

use std::collections::BTreeMap;

use countersign_proto::v1::{ListProposalsRequest, ProposalStatus, ProposalView};
use countersign_registry::rule::argv;
use serde_json::{Value, json};

use crate::Io;
use crate::args::RuleSuggestArgs;
use crate::context::Context;
use crate::error::CliError;
use crate::output::{write_json, write_text};

/// How many of the newest applied proposals are read.
const HISTORY: u32 = 500;

/// The budget a suggested rule starts with; the person can change it
/// before creating it.
const MAX_USES: u64 = 1000;
const PER_HOUR: u64 = 100;
const VALID_DAYS: i64 = 30;

/// One suggested rule: what it would have covered, and its definition.
#[derive(Debug, PartialEq)]
pub(crate) struct Suggestion {
    /// How many approved calls it covers.
    pub(crate) count: usize,
    /// Those calls (commands or tool names), each with its count.
    pub(crate) examples: BTreeMap<String, usize>,
    /// The rule definition, for `rules create --file`.
    pub(crate) definition: Value,
}

/// `countersign rules suggest [--min N]`
pub(crate) async fn suggest(
    ctx: &Context,
    args: RuleSuggestArgs,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let mut approver = ctx.approver().await?;
    let applied = approver
        .list_proposals(ListProposalsRequest {
            status: ProposalStatus::Applied.into(),
            limit: HISTORY,
        })
        .await?
        .into_inner()
        .proposals;
    let expires = time::OffsetDateTime::now_utc() + time::Duration::days(VALID_DAYS);
    let expires_at =
        countersign_verifier::timestamp::format_whole_seconds(expires).map_err(CliError::error)?;
    let min = usize::try_from(args.min).unwrap_or(usize::MAX);
    let found = suggestions(&applied, min, &expires_at);
    if json {
        let items: Vec<Value> = found
            .iter()
            .map(|s| json!({"count": s.count, "examples": s.examples, "definition": s.definition}))
            .collect();
        return write_json(io.out, &items);
    }
    if found.is_empty() {
        return write_text(
            io.out,
            &format!(
                "no suggestion: no agent call a person approved was asked {} times or more\n",
                args.min
            ),
        );
    }
    let mut text = String::new();
    for s in &found {
        text.push_str(&format!("approved {} times by a person:\n", s.count));
        for (example, n) in &s.examples {
            text.push_str(&format!(
                "  {}  ({n})\n",
                countersign_registry::terminal_safe(example)
            ));
        }
        text.push_str(&format!("rule: {}\n\n", s.definition));
    }
    text.push_str(
        "None was created. To create one, save its line after \"rule: \" to a file and run `countersign rules create --file FILE`: you confirm its exact scope at the terminal.\n",
    );
    write_text(io.out, &text)
}

/// The suggestions from `applied` proposals: the groups of agent calls a
/// person approved at least `min` times, most approved first.
pub(crate) fn suggestions(
    applied: &[ProposalView],
    min: usize,
    expires_at: &str,
) -> Vec<Suggestion> {
    // (operation, group key) -> (pattern, examples)
    let mut groups: BTreeMap<(String, String), (Value, BTreeMap<String, usize>)> = BTreeMap::new();
    for view in applied {
        // A rule's own approvals teach nothing about what people approve.
        if view.provenance.starts_with("rule:") || view.operation == "agent.edit" {
            continue;
        }
        if !view.operation.starts_with("agent.") {
            continue;
        }
        let Ok(arguments) = serde_json::from_str::<Value>(&view.arguments_json) else {
            continue;
        };
        let Some((key, example, constraint)) = group_of(&view.operation, &arguments) else {
            continue;
        };
        let entry = groups
            .entry((view.operation.clone(), key))
            .or_insert_with(|| (constraint.clone(), BTreeMap::new()));
        widen(&mut entry.0, &constraint);
        *entry.1.entry(example).or_default() += 1;
    }
    let mut found: Vec<Suggestion> = groups
        .into_iter()
        .map(|((operation, _), (constraint, examples))| Suggestion {
            count: examples.values().sum(),
            definition: json!({
                "operations": [operation],
                "constraints": [constraint],
                "sessions": ["*"],
                "max_uses": MAX_USES,
                "per_hour": PER_HOUR,
                "expires_at": expires_at,
            }),
            examples,
        })
        .filter(|s| s.count >= min)
        .collect();
    found.sort_by_key(|s| std::cmp::Reverse(s.count));
    found
}

/// The group of one approved call: its key, how it is shown, and the
/// constraint a rule for its group has (so far).
fn group_of(operation: &str, arguments: &Value) -> Option<(String, String, Value)> {
    let tool = arguments.get("tool_name")?.as_str()?;
    if operation != "agent.shell" {
        let constraint = json!({"pointer": "/tool_name", "equals": tool});
        return Some((tool.to_owned(), tool.to_owned(), constraint));
    }
    let command = arguments.pointer("/tool_input/command")?.as_str()?;
    // Shell syntax the argv test cannot see through: never suggested.
    let words = argv::split(command).ok()?;
    let (program, rest) = words.split_first()?;
    let (first, more) = match rest.split_first() {
        Some((first, more)) => (vec![json!(first)], !more.is_empty()),
        None => (Vec::new(), false),
    };
    let key = format!("{program} {}", rest.first().map_or("", String::as_str));
    let constraint = json!({
        "pointer": "/tool_input/command",
        "argv": {"program": program, "args": first, "more_args": more},
    });
    Some((key, command.to_owned(), constraint))
}

/// A group's constraint, widened to cover `other` too: a shell group
/// takes more arguments once any of its calls had them.
fn widen(constraint: &mut Value, other: &Value) {
    if other.pointer("/argv/more_args") == Some(&Value::Bool(true))
        && let Some(more) = constraint.pointer_mut("/argv/more_args")
    {
        *more = Value::Bool(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(operation: &str, arguments: Value, provenance: &str) -> ProposalView {
        ProposalView {
            operation: operation.into(),
            arguments_json: arguments.to_string(),
            provenance: provenance.into(),
            ..Default::default()
        }
    }

    fn shell(command: &str) -> ProposalView {
        let arguments = json!({"agent": "claude-code", "tool_name": "Bash", "tool_input": {"command": command}, "cwd": "/w"});
        applied("agent.shell", arguments, "human:cert:pr_x")
    }

    #[test]
    fn approved_commands_are_grouped_by_program_and_first_word_and_shell_syntax_is_never_suggested()
    {
        let history = vec![
            shell("git status"),
            shell("git status"),
            shell("git status -s"),
            shell("npm test"),
            shell("git status; rm -rf x"),
            shell("git status; rm -rf x"),
            shell("git status; rm -rf x"),
            shell("FOO=1 npm test"),
            applied(
                "agent.shell",
                json!({"tool_name": "Bash", "tool_input": {"command": "npm test"}}),
                "rule:rule_1@1",
            ),
            applied(
                "agent.read",
                json!({"tool_name": "Read", "tool_input": {"file_path": "a"}}),
                "human:cert:pr_x",
            ),
            applied(
                "agent.edit",
                json!({"tool_name": "Edit", "tool_input": {}, "diff": ""}),
                "human:cert:pr_x",
            ),
        ];
        let found = suggestions(&history, 1, "2027-01-01T00:00:00Z");
        let summary: Vec<(usize, Value)> = found
            .iter()
            .map(|s| (s.count, s.definition["constraints"][0].clone()))
            .collect();
        assert_eq!(
            summary,
            [
                (
                    3,
                    json!({"pointer": "/tool_input/command", "argv": {"program": "git", "args": ["status"], "more_args": true}})
                ),
                (1, json!({"pointer": "/tool_name", "equals": "Read"})),
                (
                    1,
                    json!({"pointer": "/tool_input/command", "argv": {"program": "npm", "args": ["test"], "more_args": false}})
                ),
            ]
        );
        assert_eq!(found[0].examples["git status"], 2);
        assert_eq!(found[0].definition["sessions"], json!(["*"]));
        // The threshold.
        assert_eq!(suggestions(&history, 2, "2027-01-01T00:00:00Z").len(), 1);
    }
}
