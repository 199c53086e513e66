//! `countersign rules suggest`: rules a person may want, read from the
//! history of agent calls people approved one by one. It proposes; it
//! never creates: a suggestion is a definition to save and pass to `rules
//! create`, where the person reads its exact scope and confirms it.
//!
//! A suggestion grants what people approved and no more:
//! - shell calls (`agent.shell`) become `argv` tests of exactly the approved
//!   command lines, never with further arguments: calls of one program and
//!   first word, of one length, and identical from their first option on,
//!   form one test whose other positions are each one of the approved
//!   words. An interpreter or runner (`sh`, `python3`, `env`, `find`,
//!   `npm`, `make`, `git -c`, ... see [`runs_other_programs`]) is never
//!   grouped: each approved line is its own suggestion. A command with
//!   shell syntax the test cannot see through is never suggested.
//! - reads and web calls are grouped by their tool and the value of their
//!   path, URL or query: one of the approved values, or, with `--prefix P`
//!   typed by the person, any value starting with P. Other tools (MCP,
//!   anything else) by their whole input: one of the approved inputs.
//!   Never by tool name alone.
//! - edits are never suggested: no two diffs are alike.
//!
//! Each suggestion prints the widest call it would allow.
//!
//! Owns: how approved calls are grouped into suggestions.
//! Must not: create or revise a rule, or count a call a rule approved.

use std::collections::BTreeMap;

use countersign_proto::v1::{ListProposalsRequest, ProposalStatus, ProposalView};
use countersign_registry::rule::{SHELL_COMMAND_POINTER, SHELL_OPERATION, argv};
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
    /// Those calls (commands, or tool and input), each with its count.
    pub(crate) examples: BTreeMap<String, usize>,
    /// The widest call the rule would allow, as a person reads it.
    pub(crate) widest: String,
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
    let found = suggestions(&applied, min, args.prefix.as_deref(), &expires_at);
    if json {
        let items: Vec<Value> = found
            .iter()
            .map(|s| json!({"count": s.count, "examples": s.examples, "widest": s.widest, "definition": s.definition}))
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
        text.push_str(&format!(
            "widest call it allows: {}\n",
            countersign_registry::terminal_safe(&s.widest)
        ));
        text.push_str(&format!("rule: {}\n\n", s.definition));
    }
    text.push_str(
        "None was created. To create one, save its line after \"rule: \" to a file and run `countersign rules create --file FILE`: you confirm its exact scope at the terminal.\n",
    );
    write_text(io.out, &text)
}

/// The most values one suggestion lists (a rule's `one_of` limit); the
/// most approved are kept.
const MAX_VALUES: usize = countersign_registry::rule::MAX_ONE_OF;

/// Programs that run other programs or code given in their arguments
/// (shells, interpreters, runners, wrappers), or write or execute what an
/// argument names: each approved line of one is its own suggestion, never
/// grouped with another. Compared with the program's file name.
const RUNNERS: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "mksh",
    "fish",
    "csh",
    "tcsh",
    "busybox",
    "node",
    "nodejs",
    "deno",
    "bun",
    "bunx",
    "perl",
    "ruby",
    "irb",
    "php",
    "lua",
    "luajit",
    "Rscript",
    "osascript",
    "pwsh",
    "tclsh",
    "expect",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "sed",
    "env",
    "xargs",
    "parallel",
    "find",
    "fd",
    "npx",
    "pnpx",
    "npm",
    "pnpm",
    "yarn",
    "make",
    "gmake",
    "cargo",
    "go",
    "just",
    "rake",
    "gradle",
    "mvn",
    "sudo",
    "doas",
    "su",
    "nohup",
    "timeout",
    "nice",
    "ionice",
    "stdbuf",
    "chroot",
    "unshare",
    "setsid",
    "watch",
    "strace",
    "ltrace",
    "gdb",
    "exec",
    "eval",
    "source",
    ".",
    "command",
    "builtin",
    "ssh",
    "docker",
    "podman",
    "kubectl",
    "vi",
    "vim",
    "nvim",
    "emacs",
    "ed",
    "ex",
    "less",
    "more",
    "man",
];

/// Whether `argv` runs a program or code it names (see [`RUNNERS`]):
/// also `python*`, `pypy*`, `perl*`, `ruby*`, `lua*` of any version, and
/// `git` with options that set its configuration or helper programs
/// (`-c`, `--config-env`, `--exec-path`).
pub(crate) fn runs_other_programs(argv: &[String]) -> bool {
    let Some((program, args)) = argv.split_first() else {
        return true;
    };
    let name = program.rsplit('/').next().unwrap_or(program);
    let versioned = ["python", "pypy", "perl", "ruby", "lua", "node", "php"]
        .iter()
        .any(|p| name.starts_with(p));
    let git_runs = name == "git"
        && args.iter().any(|a| {
            a == "-c"
                || a.starts_with("--config-env")
                || a.starts_with("--exec-path")
                || (a.starts_with("-c") && !a.starts_with("--"))
        });
    RUNNERS.contains(&name) || versioned || git_runs
}

/// A group of approved calls one rule would cover.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum GroupKey {
    /// Shell commands of one program and first word, one length, equal
    /// from `fixed_from` on (their first option, or every word of a
    /// runner's command).
    Shell {
        program: String,
        first: Option<String>,
        len: usize,
        fixed_from: usize,
        tail: Vec<String>,
    },
    /// One tool's calls whose value at `pointer` is one of the approved
    /// ones, or starts with `prefix`.
    Value {
        operation: String,
        tool: String,
        pointer: String,
        prefix: Option<String>,
    },
}

/// One approved call: its group and what it contributes.
struct Approved {
    key: GroupKey,
    /// How the call is shown.
    example: String,
    /// The words of a shell command, or the value at the group's pointer.
    value: Value,
}

/// The suggestions from `applied` proposals: the groups of agent calls a
/// person approved at least `min` times, most approved first. `prefix` is
/// the one a person typed for paths and URLs.
pub(crate) fn suggestions(
    applied: &[ProposalView],
    min: usize,
    prefix: Option<&str>,
    expires_at: &str,
) -> Vec<Suggestion> {
    // group -> (value -> (example, count))
    let mut groups: BTreeMap<GroupKey, BTreeMap<String, (Value, String, usize)>> = BTreeMap::new();
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
        let Some(call) = approved(&view.operation, &arguments, prefix) else {
            continue;
        };
        let slot = groups
            .entry(call.key)
            .or_default()
            .entry(call.value.to_string())
            .or_insert((call.value, call.example, 0));
        slot.2 += 1;
    }
    let mut found: Vec<Suggestion> = groups
        .into_iter()
        .filter_map(|(key, values)| suggestion(key, values, expires_at))
        .filter(|s| s.count >= min)
        .collect();
    found.sort_by_key(|s| std::cmp::Reverse(s.count));
    found
}

/// The group of one approved call, or `None` if no rule should be
/// suggested for it.
fn approved(operation: &str, arguments: &Value, prefix: Option<&str>) -> Option<Approved> {
    let tool = arguments.get("tool_name")?.as_str()?;
    if operation == SHELL_OPERATION {
        let command = arguments.pointer(SHELL_COMMAND_POINTER)?.as_str()?;
        // Shell syntax the argv test cannot see through, or words no argv
        // pattern can name (a relative program path, too many or too long
        // arguments): never suggested.
        let words = argv::split(command).ok()?;
        let program = words.first()?;
        if (program.contains('/') && !program.starts_with('/'))
            || words.len() > argv::MAX_ARGV_ARGS + 1
            || words.iter().any(|w| w.len() > argv::MAX_ARGV_WORD_BYTES)
        {
            return None;
        }
        let fixed_from = if runs_other_programs(&words) {
            0
        } else {
            words
                .iter()
                .skip(1)
                .position(|w| w.starts_with('-'))
                .map_or(words.len(), |i| i + 1)
                .max(2)
                .min(words.len())
        };
        let key = GroupKey::Shell {
            program: words.first()?.clone(),
            first: words.get(1).cloned(),
            len: words.len(),
            fixed_from,
            tail: words.get(fixed_from..)?.to_vec(),
        };
        return Some(Approved {
            key,
            example: command.to_owned(),
            value: json!(words),
        });
    }
    let (pointer, value) = match field_of(operation, arguments) {
        Some((pointer, value)) => (pointer, value),
        None => ("/tool_input", arguments.get("tool_input")?.clone()),
    };
    let typed = prefix.filter(|p| value.as_str().is_some_and(|v| v.starts_with(p)));
    let shown = match &value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    Some(Approved {
        key: GroupKey::Value {
            operation: operation.to_owned(),
            tool: tool.to_owned(),
            pointer: pointer.to_owned(),
            prefix: typed.map(str::to_owned),
        },
        example: format!("{tool} {shown}"),
        value,
    })
}

/// The path, URL or query a read or web call is about, when its input
/// has one: its other fields only shape what is read (`offset`, `limit`,
/// a fetch's `prompt`), so a rule on this one is what the person
/// approved. Other tools' inputs are matched whole.
fn field_of(operation: &str, arguments: &Value) -> Option<(&'static str, Value)> {
    if !matches!(operation, "agent.read" | "agent.web") {
        return None;
    }
    [
        "/tool_input/url",
        "/tool_input/file_path",
        "/tool_input/notebook_path",
        "/tool_input/absolute_path",
        "/tool_input/path",
        "/tool_input/query",
    ]
    .into_iter()
    .find_map(|p| {
        let v = arguments.pointer(p)?;
        v.is_string().then(|| (p, v.clone()))
    })
    .filter(|_| {
        // A read with a pattern (Glob, Grep) reads what the pattern
        // finds: only its whole input is what was approved.
        arguments.pointer("/tool_input/pattern").is_none()
    })
}

/// The rule for one group: its constraint and the widest call it allows.
fn suggestion(
    key: GroupKey,
    values: BTreeMap<String, (Value, String, usize)>,
    expires_at: &str,
) -> Option<Suggestion> {
    let mut values: Vec<(Value, String, usize)> = values.into_values().collect();
    values.sort_by_key(|v| std::cmp::Reverse(v.2));
    values.truncate(MAX_VALUES);
    let count = values.iter().map(|v| v.2).sum();
    let examples = values.iter().map(|v| (v.1.clone(), v.2)).collect();
    let (operation, constraints, widest) = match key {
        GroupKey::Shell { program, len, .. } => {
            let (constraint, widest) = shell_constraint(&program, len, &values)?;
            (SHELL_OPERATION.to_owned(), vec![constraint], widest)
        }
        GroupKey::Value {
            operation,
            tool,
            pointer,
            prefix,
        } => {
            let tool_is = json!({"pointer": "/tool_name", "equals": tool});
            let (constraint, widest) = match prefix {
                Some(p) => (
                    json!({"pointer": pointer, "prefix": p}),
                    format!("{tool} with {pointer} ANY string starting with {p:?}"),
                ),
                None => {
                    let list: Vec<Value> = values.iter().map(|v| v.0.clone()).collect();
                    let widest = format!(
                        "{tool} with {pointer} exactly one of the {} approved value(s)",
                        list.len()
                    );
                    (json!({"pointer": pointer, "one_of": list}), widest)
                }
            };
            (operation, vec![tool_is, constraint], widest)
        }
    };
    Some(Suggestion {
        count,
        examples,
        widest,
        definition: json!({
            "operations": [operation],
            "constraints": constraints,
            "sessions": ["*"],
            "max_uses": MAX_USES,
            "per_hour": PER_HOUR,
            "expires_at": expires_at,
        }),
    })
}

/// The `argv` test of a shell group of `len` words: each position the
/// approved word, or one of them where they differ; never further
/// arguments. The widest call: every combination of those words.
fn shell_constraint(
    program: &str,
    len: usize,
    values: &[(Value, String, usize)],
) -> Option<(Value, String)> {
    let lines: Vec<Vec<&str>> = values
        .iter()
        .map(|v| {
            v.0.as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default()
        })
        .collect();
    let mut args = Vec::new();
    let mut shown = vec![program.to_owned()];
    let mut combinations: usize = 1;
    for i in 1..len {
        let mut words: Vec<&str> = lines.iter().filter_map(|l| l.get(i).copied()).collect();
        words.sort_unstable();
        words.dedup();
        combinations = combinations.saturating_mul(words.len());
        match words.as_slice() {
            [] => return None,
            [one] => {
                args.push(json!(one));
                shown.push((*one).to_owned());
            }
            many => {
                args.push(json!({"one_of": many}));
                shown.push(format!("(one of: {})", many.join(" | ")));
            }
        }
    }
    let constraint = json!({
        "pointer": SHELL_COMMAND_POINTER,
        "argv": {"program": program, "args": args, "more_args": false},
    });
    let widest = format!(
        "exactly {} (no further arguments; {combinations} command line(s), {} approved)",
        shown.join(" "),
        lines.len()
    );
    Some((constraint, widest))
}

#[cfg(test)]
mod tests;
