//! Preview templates and the authoritative preview text a person reviews.
//!
//! This module owns the template grammar (`{arg}` placeholders, `{{`/`}}` for
//! literal braces), the preview layout and terminal safety. A preview is
//! rendered only from [`CanonicalArgs`]: every argument value appears as its
//! canonical JSON (strings quoted), and every character that could move the
//! cursor, clear the screen, forge a line or reorder text is shown as a
//! visible `\u{..}` escape. It must not render anything from raw request
//! bytes and must not print a value without passing it through
//! [`terminal_safe`].

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::Value;

use countersign_verifier::Premise;

use crate::escape_table::{ESCAPED, UNICODE_VERSION};
use crate::lookalike::argument_warnings;
use crate::{CanonicalArgs, Operation};

/// How many hex digits of the contract revision the preview header shows.
const SHORT_REVISION: usize = 12;

/// A parsed preview template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Template {
    segments: Vec<Segment>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Text(String),
    Arg(String),
}

impl Template {
    /// Parses `text`; the error is a reason for the operator.
    pub(crate) fn parse(text: &str) -> Result<Template, String> {
        let mut segments = Vec::new();
        let mut literal = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    literal.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    literal.push('}');
                }
                '}' => return Err("has a `}` without `{` (write `}}` for a literal brace)".into()),
                '{' => {
                    let mut name = String::new();
                    loop {
                        match chars.next() {
                            Some('}') => break,
                            Some('{') | None => {
                                return Err(
                                    "has an unclosed `{` (write `{{` for a literal brace)".into()
                                );
                            }
                            Some(c) => name.push(c),
                        }
                    }
                    if name.is_empty() {
                        return Err("has an empty placeholder `{}`".into());
                    }
                    if !literal.is_empty() {
                        segments.push(Segment::Text(std::mem::take(&mut literal)));
                    }
                    segments.push(Segment::Arg(name));
                }
                c => literal.push(c),
            }
        }
        if !literal.is_empty() {
            segments.push(Segment::Text(literal));
        }
        Ok(Template { segments })
    }

    /// The placeholder names, in order of appearance.
    pub(crate) fn placeholders(&self) -> impl Iterator<Item = &str> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Arg(name) => Some(name.as_str()),
            Segment::Text(_) => None,
        })
    }

    pub(crate) fn render(&self, args: &Value) -> String {
        let mut out = String::new();
        for segment in &self.segments {
            match segment {
                Segment::Text(text) => out.push_str(text),
                Segment::Arg(name) => out.push_str(&argument_json(args.get(name))),
            }
        }
        out
    }
}

/// Canonical JSON of one argument value, or `<absent>` (unquoted, so it can
/// never be confused with a string value).
fn argument_json(value: Option<&Value>) -> String {
    match value {
        None => "<absent>".to_owned(),
        // A sub-value of canonical arguments always re-encodes; the fallback
        // only guards against a future change of that invariant.
        Some(v) => countersign_verifier::canonical::to_canonical(v)
            .unwrap_or_else(|_| "<unrenderable>".to_owned()),
    }
}

/// Renders the preview. Layout (lines separated by `\n`, no trailing newline):
///
/// ```text
/// Operation: <name> [<class>] contract <12 hex>
/// Action:    <template with canonical JSON values>
/// Arguments: <exact canonical arguments>
/// Non-ASCII: <argument as JSON> has U+XXXX (<script>), ... [, mixing the scripts A and B]
///   <the rule's scope, the pinned tools, or an agent call's command or diff>
/// Premise:   <namespace> <key as JSON> = <value> (version <n>), read by the signer
///            (or: <argv as JSON> printed <output as JSON>, run by the signer)
/// ---- Model-supplied, unverified ----
/// <field>: <canonical JSON value or <absent>>
/// note: <canonical JSON string or <none>>
/// ```
///
/// The `Premise:` line is there only for an operation that declares one;
/// it says `has no value` for a key that has none. A `Non-ASCII:` line is
/// there for each argument whose value holds any non-ASCII character (see
/// [`crate::lookalike`]), so that text that looks like ASCII never passes
/// for it.
pub(crate) fn render(
    op: &Operation,
    args: &CanonicalArgs,
    premise: Option<&Premise>,
    note: &str,
) -> String {
    let revision = op.contract_revision();
    let short = revision.get(..SHORT_REVISION).unwrap_or(revision);
    let mut out = String::new();
    // `write!` into a String cannot fail.
    let _ = writeln!(
        out,
        "Operation: {} [{}] contract {}",
        terminal_safe(&op.name),
        op.class.as_str(),
        terminal_safe(short)
    );
    let action = op.template().render(args.value());
    let _ = writeln!(out, "Action:    {}", terminal_safe(&action));
    let _ = writeln!(out, "Arguments: {}", terminal_safe(args.text()));
    for warning in argument_warnings(args.value()) {
        let _ = writeln!(out, "Non-ASCII: {}", terminal_safe(&warning.to_string()));
    }
    if matches!(op.effect, crate::Effect::Rule) {
        // The rule exactly as it would be created, from these arguments.
        match crate::rule::RuleDefinition::from_value(args.value().clone()) {
            Ok(rule) => {
                for line in rule.scope_text().lines() {
                    let _ = writeln!(out, "  {line}");
                }
            }
            Err(e) => {
                let _ = writeln!(out, "  <not a rule: {}>", terminal_safe(&e.to_string()));
            }
        }
    }
    if matches!(op.effect, crate::Effect::Pin) {
        // Each definition's digest, as `gateway tools` prints it.
        for line in crate::gateway::pin_preview_lines(args.value()) {
            let _ = writeln!(out, "  {}", terminal_safe(&line));
        }
    }
    if matches!(op.effect, crate::Effect::Hook) {
        // The command, or the diff, as the agent's user would read it.
        for line in crate::effect::hook::preview_lines(args.value()) {
            let _ = writeln!(out, "  {}", terminal_safe(&line));
        }
    }
    if let Some(premise) = premise {
        let _ = writeln!(out, "Premise:   {}", terminal_safe(&premise_text(premise)));
    }
    out.push_str("---- Model-supplied, unverified ----\n");
    for field in &op.unverified_fields {
        let value = argument_json(args.value().get(field));
        let _ = writeln!(out, "{}: {}", terminal_safe(field), terminal_safe(&value));
    }
    let note = if note.is_empty() {
        "<none>".to_owned()
    } else {
        argument_json(Some(&Value::String(note.to_owned())))
    };
    let _ = write!(out, "note: {}", terminal_safe(&note));
    out
}

/// `<namespace> <key as JSON> = <value> (version <n>), read by the signer`,
/// or `... has no value, read by the signer`; for a premise command
/// `<argv as JSON> printed <output as JSON>, run by the signer`.
fn premise_text(premise: &Premise) -> String {
    let premise = match premise {
        Premise::State(p) => p,
        Premise::Command(p) => {
            let argv = Value::Array(p.argv.iter().cloned().map(Value::String).collect());
            return format!(
                "{} printed {}, run by the signer",
                argument_json(Some(&argv)),
                argument_json(Some(&Value::String(p.output.clone())))
            );
        }
    };
    let key = argument_json(Some(&Value::String(premise.key.clone())));
    match &premise.value {
        Some(value) => format!(
            "{} {key} = {} (version {}), read by the signer",
            premise.namespace,
            argument_json(Some(value)),
            premise.version
        ),
        None => format!(
            "{} {key} has no value, read by the signer",
            premise.namespace
        ),
    }
}

/// True for characters a terminal must never receive raw from untrusted
/// text, by Unicode property rather than by a list: every character of
/// General_Category Cc (C0 and C1 controls, DEL), Cf (bidi controls and
/// marks, zero-width joiners, tags, ...), Cs, Co (private use), Cn
/// (unassigned, as of the table's Unicode version), Zl and Zp (line and
/// paragraph separators), and every Default_Ignorable_Code_Point
/// (variation selectors, Hangul fillers, Mongolian free variation
/// selectors, ...). The table is generated from the Unicode data files
/// (`escape_table.rs`, checked by `tests/escape_table_is_current.rs`).
pub fn is_terminal_unsafe(c: char) -> bool {
    let c = u32::from(c);
    ESCAPED
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// The Unicode version of the data the escape rule was generated from.
pub fn escape_table_unicode_version() -> &'static str {
    UNICODE_VERSION
}

/// Returns `text` with every [`is_terminal_unsafe`] character replaced by a
/// visible `\u{..}` escape (lowercase hex), so the text stays on one line and
/// in logical order. Borrows when nothing needs escaping.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_terminal_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_terminal_unsafe(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}
