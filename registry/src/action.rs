//! What a proposal would do, as structured data: the one place each effect
//! kind says, from the canonical arguments, what a person decides on. Every
//! approver interface leads with it (the CLI's approval, the console's
//! card, the pending lists, the MCP and API results), so the action is
//! never a line parsed out of the preview text.
//!
//! Owns: [`Action`] (a one-line summary and the parts, in the order shown)
//! for each effect kind, and which values in it are model-supplied.
//!
//! Must not: escape or render. Values are kept raw; every interface passes
//! them through its own escaping (the terminal's [`crate::terminal_safe`],
//! the console's HTML escaping and marks), exactly as for the preview.

use serde_json::Value;

use crate::{CanonicalArgs, Effect, Operation};

/// How a part's text is to be read, so an interface can mark its syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// Plain text.
    Text,
    /// A shell command line, run by a shell as it stands.
    Shell,
    /// A unified diff.
    Diff,
    /// Canonical JSON.
    Json,
    /// A URL.
    Url,
}

impl Syntax {
    /// The name the signer's view uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Syntax::Text => "text",
            Syntax::Shell => "shell",
            Syntax::Diff => "diff",
            Syntax::Json => "json",
            Syntax::Url => "url",
        }
    }
}

/// One labelled part of an action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionPart {
    /// What it is ("Command", "Diff", "URL", an argument's name, ...).
    pub label: String,
    /// The value, raw (not escaped).
    pub text: String,
    /// How to read it.
    pub syntax: Syntax,
    /// Whether the model supplied it as a description that nothing checks
    /// (a note-like field), rather than as what runs.
    pub model_supplied: bool,
}

/// What approving a proposal does, for a person to read first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    /// One line: the command, the tool and its path, the request, or the
    /// operation's own summary. Raw: interfaces escape it.
    pub summary: String,
    /// The parts, in the order shown.
    pub parts: Vec<ActionPart>,
}

/// Arguments a tool call's summary names after the tool, the first present.
const PATH_LIKE: [&str; 10] = [
    "path",
    "file_path",
    "filePath",
    "notebook_path",
    "url",
    "uri",
    "source",
    "destination",
    "pattern",
    "query",
];

/// A coding agent's tool input fields that the model writes about the call
/// (shown, marked as model-supplied, never as what runs).
const AGENT_DESCRIPTIONS: [&str; 2] = ["description", "reason"];

impl Operation {
    /// The action approving `args` of this operation would carry out.
    pub fn action(&self, args: &CanonicalArgs) -> Action {
        let value = args.value();
        let mut action = match &self.effect {
            Effect::Hook => agent_call(value),
            Effect::Mcp(tool) => {
                let mut call = tool_call(&tool.upstream, &tool.tool, value);
                if let Some(annotations) = &self.upstream_annotations {
                    call.parts.push(part(
                        "Annotations (the upstream's claim, unverified)",
                        &shown(annotations),
                        Syntax::Json,
                    ));
                }
                call
            }
            Effect::Webhook(webhook) => Action {
                summary: format!("POST {}", webhook.url),
                parts: vec![
                    part("Method", "POST", Syntax::Text),
                    part("URL", &webhook.url, Syntax::Url),
                    part("Body", args.text(), Syntax::Json),
                ],
            },
            Effect::Command(command) => {
                let mut argv = vec![command.program.display().to_string()];
                argv.extend(command.args.iter().cloned());
                Action {
                    summary: self.template().render(value),
                    parts: vec![
                        part("Summary", &self.template().render(value), Syntax::Text),
                        part("Program", &argv.join(" "), Syntax::Text),
                        part("Standard input", args.text(), Syntax::Json),
                    ],
                }
            }
            Effect::Rule => {
                let scope = match crate::rule::RuleDefinition::from_value(value.clone()) {
                    Ok(rule) => rule.scope_text(),
                    Err(e) => format!("<not a rule: {e}>"),
                };
                Action {
                    summary: self.template().render(value),
                    parts: vec![part("Rule", &scope, Syntax::Text)],
                }
            }
            Effect::Pin => Action {
                summary: self.template().render(value),
                parts: vec![part(
                    "Tools",
                    &crate::gateway::pin_preview_lines(value).join("\n"),
                    Syntax::Text,
                )],
            },
            Effect::Builtin(_) => Action {
                summary: self.template().render(value),
                parts: vec![part(
                    "Summary",
                    &self.template().render(value),
                    Syntax::Text,
                )],
            },
        };
        for field in &self.unverified_fields {
            if let Some(v) = value.get(field) {
                action.parts.push(ActionPart {
                    label: field.clone(),
                    text: shown(v),
                    syntax: Syntax::Json,
                    model_supplied: true,
                });
            }
        }
        action
    }
}

/// A coding agent's tool call: the command of a shell call, an edit's
/// file and diff, or any other tool's name and each input field.
fn agent_call(value: &Value) -> Action {
    let tool = value.get("tool_name").and_then(Value::as_str).unwrap_or("");
    let cwd = value.get("cwd").and_then(Value::as_str).unwrap_or("");
    let input = value.get("tool_input").and_then(Value::as_object);
    let field = |name: &str| input.and_then(|i| i.get(name)).and_then(Value::as_str);
    let mut parts = Vec::new();
    let summary = if let Some(diff) = value.get("diff").and_then(Value::as_str) {
        let path = PATH_LIKE.iter().find_map(|k| field(k)).unwrap_or("");
        parts.push(part("File", path, Syntax::Text));
        parts.push(part("Diff", diff, Syntax::Diff));
        format!("{tool} {path}")
    } else if let Some(command) = field("command") {
        parts.push(part("Command", command, Syntax::Shell));
        command.to_owned()
    } else {
        parts.push(part("Tool", tool, Syntax::Text));
        for (name, v) in sorted(input) {
            if !AGENT_DESCRIPTIONS.contains(&name.as_str()) {
                parts.push(argument(name, v));
            }
        }
        match PATH_LIKE.iter().find_map(|k| field(k)) {
            Some(target) => format!("{tool} {target}"),
            None => tool.to_owned(),
        }
    };
    parts.push(part("In", cwd, Syntax::Text));
    for name in AGENT_DESCRIPTIONS {
        if let Some(v) = input.and_then(|i| i.get(name)) {
            parts.push(ActionPart {
                label: name.to_owned(),
                text: shown(v),
                syntax: Syntax::Json,
                model_supplied: true,
            });
        }
    }
    Action { summary, parts }
}

/// A gated call of an upstream MCP server's tool: the upstream, the tool
/// and every argument.
fn tool_call(upstream: &str, tool: &str, value: &Value) -> Action {
    let mut parts = vec![
        part("Upstream", upstream, Syntax::Text),
        part("Tool", tool, Syntax::Text),
    ];
    for (name, v) in sorted(value.as_object()) {
        parts.push(argument(name, v));
    }
    let target = PATH_LIKE
        .iter()
        .find_map(|k| value.get(*k).and_then(Value::as_str));
    let summary = match target {
        Some(target) => format!("{upstream} {tool} {target}"),
        None => format!("{upstream} {tool}"),
    };
    Action { summary, parts }
}

/// An object's members sorted by name, whatever order the map keeps: a
/// build that links Cedar (countersign-policy) turns on serde_json's
/// `preserve_order` for every crate in it, and the parts' order must not
/// depend on that.
fn sorted(object: Option<&serde_json::Map<String, Value>>) -> Vec<(&String, &Value)> {
    let mut members: Vec<_> = object.into_iter().flatten().collect();
    members.sort_by(|a, b| a.0.cmp(b.0));
    members
}

/// One named argument: a string as it is, anything else as canonical JSON.
fn argument(name: &str, value: &Value) -> ActionPart {
    match value {
        Value::String(s) => part(name, s, Syntax::Text),
        other => part(name, &shown(other), Syntax::Json),
    }
}

fn part(label: &str, text: &str, syntax: Syntax) -> ActionPart {
    ActionPart {
        label: label.to_owned(),
        text: text.to_owned(),
        syntax,
        model_supplied: false,
    }
}

/// Canonical JSON of a value (a sub-value of canonical arguments always
/// encodes).
fn shown(value: &Value) -> String {
    countersign_verifier::canonical::to_canonical(value).unwrap_or_default()
}

#[cfg(test)]
#[path = "action_tests.rs"]
mod tests;
