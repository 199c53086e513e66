//! What the CLI really exposes, read from its clap definition, for the
//! parity gate.
//!
//! For each data operation the table names a command; this finds that
//! command in clap, maps its arguments to parameter names (`<id>` is
//! `proposal_id`, `--args-file` is `arguments`, `--proof-file` is `proof`,
//! ...), and asks clap itself which of them are required (by parsing a
//! minimal command line and adding what clap reports missing). An argument
//! with no mapping becomes a parameter under its own name, so a new flag
//! shows up as a schema difference. Types come from the table: the CLI
//! parses each argument into exactly that JSON value (a file of JSON for
//! `arguments`, text for the rest, an integer for `limit`).
//!
//! Every leaf command that is neither a data operation nor in
//! [`countersign_surface::NON_DATA`] is reported too, so the gate fails on it.

use clap::CommandFactory;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use countersign_registry::Registry;
use countersign_surface::NON_DATA;
use countersign_surface::operations::{
    DATA_OPERATIONS, DataOperation, Exposure, Head, ParamSchema,
};
use serde_json::{Map, Value, json};

use crate::Cli;

/// What each argument id means as a parameter; `None`: not a parameter
/// (it selects the registry operation or the execution mode, or it is
/// transport context: the session, the home, the output format).
const ARGUMENTS: &[(&str, Option<&str>)] = &[
    ("id", Some("proposal_id")),
    ("args_file", Some("arguments")),
    ("note", Some("note")),
    ("status", Some("status")),
    ("limit", Some("limit")),
    ("proof_file", Some("proof")),
    ("operation", None),
    ("handoff", None),
    ("session", None),
    ("home", None),
    ("json", None),
    ("help", None),
    ("version", None),
];

/// A placeholder value for an argument when asking clap what is required.
fn sample(id: &str, registry_op: Option<&str>) -> String {
    match id {
        "id" => "prop_00000000000000000000000000000000".into(),
        "operation" => registry_op.unwrap_or("op").into(),
        "limit" => "1".into(),
        _ => "-".into(),
    }
}

/// The subcommand path named by a table entry (`countersign exec <id> ...`
/// is `["exec"]`) and the flags it names.
fn command_words(text: &str) -> (Vec<&str>, Vec<&str>) {
    let words: Vec<&str> = text.split_whitespace().skip(1).collect();
    let path = words
        .iter()
        .take_while(|w| !w.starts_with('<') && !w.starts_with('-') && !w.starts_with('['))
        .copied()
        .collect();
    let flags = words
        .iter()
        .filter_map(|w| w.trim_start_matches('[').strip_prefix("--"))
        .map(|w| w.trim_end_matches(']'))
        .collect();
    (path, flags)
}

fn find<'a>(root: &'a clap::Command, path: &[&str]) -> Option<&'a clap::Command> {
    path.iter()
        .try_fold(root, |cmd, name| cmd.find_subcommand(name))
}

/// The exposure of one table entry (for one registry operation, for `propose`).
fn exposure(
    root: &clap::Command,
    op: &DataOperation,
    text: &str,
    registry: &Registry,
    registry_op: Option<&str>,
) -> Option<Exposure> {
    let (path, flags) = command_words(text);
    let cmd = find(root, &path)?;
    // A boolean flag the entry names selects a mode: arguments that
    // conflict with it are not part of this operation.
    let mode: Vec<&clap::Arg> = cmd
        .get_arguments()
        .filter(|a| !a.get_action().takes_values())
        .filter(|a| a.get_long().is_some_and(|l| flags.contains(&l)))
        .collect();
    let conflicts = |a: &clap::Arg, b: &clap::Arg| {
        cmd.get_arg_conflicts_with(a)
            .iter()
            .any(|c| c.get_id() == b.get_id())
    };
    let excluded: Vec<String> = cmd
        .get_arguments()
        .filter(|a| mode.iter().any(|m| conflicts(a, m) || conflicts(m, a)))
        .map(|a| a.get_id().to_string())
        .collect();
    let arguments: Vec<&clap::Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_global_set() && !excluded.contains(&a.get_id().to_string()))
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
        .collect();
    let required = required_by_clap(root, cmd, &path, &mode, registry_op);
    let table = op.params.schema(registry_op.and_then(|r| registry.get(r)));
    let table_props = table["properties"].as_object().cloned().unwrap_or_default();
    let mut props = Map::new();
    let mut req = Vec::new();
    for arg in arguments {
        let id = arg.get_id().as_str();
        let param = match ARGUMENTS.iter().find(|(a, _)| *a == id) {
            Some((_, Some(param))) => *param,
            Some((_, None)) => continue,
            None => id,
        };
        props.insert(
            param.to_string(),
            table_props.get(param).cloned().unwrap_or(json!({})),
        );
        if required.iter().any(|r| r == id) {
            req.push(param.to_string());
        }
    }
    req.sort();
    let mut params = json!({"type": "object", "additionalProperties": false, "properties": props});
    if !req.is_empty() {
        params["required"] = json!(req);
    }
    Some(Exposure {
        operation: match registry_op {
            Some(r) => format!("{}:{r}", op.name),
            None => op.name.to_string(),
        },
        head: Head::Cli,
        entry: match registry_op {
            Some(r) => text.replace("<operation>", r),
            None => text.to_string(),
        },
        class: op.class,
        params,
        result: (op.result)(),
    })
}

/// The ids of the arguments clap requires for this command in this mode.
fn required_by_clap(
    root: &clap::Command,
    cmd: &clap::Command,
    path: &[&str],
    mode: &[&clap::Arg],
    registry_op: Option<&str>,
) -> Vec<String> {
    let mut required = Vec::new();
    let mut argv: Vec<String> = std::iter::once("countersign".to_string())
        .chain(path.iter().map(|s| s.to_string()))
        .collect();
    for positional in cmd.get_positionals() {
        if positional.is_required_set() {
            required.push(positional.get_id().to_string());
        }
        argv.push(sample(positional.get_id().as_str(), registry_op));
    }
    for m in mode {
        if let Some(long) = m.get_long() {
            argv.push(format!("--{long}"));
        }
    }
    for _ in 0..8 {
        let error = match root.clone().try_get_matches_from(&argv) {
            Ok(_) => break,
            Err(e) if e.kind() == ErrorKind::MissingRequiredArgument => e,
            Err(_) => break,
        };
        let missing: Vec<String> = match error.get(ContextKind::InvalidArg) {
            Some(ContextValue::Strings(names)) => names.clone(),
            Some(ContextValue::String(name)) => vec![name.clone()],
            _ => break,
        };
        let mut progressed = false;
        for shown in missing {
            let Some(arg) = cmd.get_arguments().find(|a| {
                a.get_long()
                    .is_some_and(|l| shown.starts_with(&format!("--{l}")))
            }) else {
                continue;
            };
            required.push(arg.get_id().to_string());
            argv.push(format!("--{}", arg.get_long().unwrap_or_default()));
            if arg.get_action().takes_values() {
                argv.push(sample(arg.get_id().as_str(), registry_op));
            }
            progressed = true;
        }
        if !progressed {
            break;
        }
    }
    required
}

/// Every leaf command of `cmd`, as word paths.
fn leaves(cmd: &clap::Command, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let subs: Vec<&clap::Command> = cmd
        .get_subcommands()
        .filter(|s| s.get_name() != "help")
        .collect();
    if subs.is_empty() {
        out.push(prefix);
        return;
    }
    for sub in subs {
        let mut path = prefix.clone();
        path.push(sub.get_name().to_string());
        leaves(sub, path, out);
    }
}

/// What the CLI exposes for `registry`.
pub fn exposures(registry: &Registry) -> Vec<Exposure> {
    exposures_of(Cli::command(), registry)
}

/// What a CLI defined by `root` exposes (tests pass a modified command).
pub fn exposures_of(mut root: clap::Command, registry: &Registry) -> Vec<Exposure> {
    root.build();
    let mut out = Vec::new();
    let mut covered: Vec<Vec<&str>> = Vec::new();
    for op in DATA_OPERATIONS {
        let Some(text) = op.entries.cli() else {
            continue;
        };
        covered.push(command_words(text).0);
        match op.params {
            ParamSchema::Propose => {
                for reg in registry.proposable() {
                    out.extend(exposure(&root, op, text, registry, Some(&reg.name)));
                }
            }
            ParamSchema::Fixed(_) => out.extend(exposure(&root, op, text, registry, None)),
        }
    }
    for entry in NON_DATA {
        if let Some(text) = entry.entries.cli() {
            covered.push(command_words(text).0);
        }
    }
    let mut all = Vec::new();
    leaves(&root, Vec::new(), &mut all);
    for path in all {
        if !covered.iter().any(|c| *c == path) {
            let entry = format!("countersign {}", path.join(" "));
            out.push(Exposure {
                operation: format!("cli:{}", path.join(" ")),
                head: Head::Cli,
                entry,
                class: countersign_registry::Class::Write,
                params: Value::Null,
                result: Value::Null,
            });
        }
    }
    out
}
