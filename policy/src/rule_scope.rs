//! A person's auto-approval rule's scope written in Cedar (issue 51): the
//! rule language's operations, sessions and argument tests translated to
//! one `permit` per operation, over the same typed view of the arguments
//! the operator's policy sees.
//!
//! This module owns the translation. It must not approximate: a test
//! Cedar cannot express with the same meaning is refused
//! ([`Untranslatable`]), never loosened or narrowed. An `argv` test on a
//! shell call's command becomes a test of `context.argv`, the words of the
//! same lexer (`argv.rs`); an `argv` test anywhere else has no Cedar form,
//! nor has a test on a part of the arguments outside Cedar's view (a
//! `number`, an open object), nor `equals` on an array or object (Cedar
//! holds arrays as sets). What the rule language can never match (a
//! `prefix` on an integer, a `range` on a string, a shell rule that tests
//! the command otherwise than by `argv`) is `false`, as it is there.

use std::fmt::Write as _;

use countersign_registry::rule::argv::{ArgPattern, ArgvPattern};
use countersign_registry::rule::{
    RuleDefinition, SHELL_COMMAND_POINTER, SHELL_OPERATION, Sessions, Test,
};
use serde_json::Value;

use crate::GeneratedSchema;
use crate::argv::{ARGV_ATTRIBUTE, word};
use crate::view::{ArgType, RecordType};

/// Why an `argv` test elsewhere than on a shell call's command has no
/// Cedar form.
const ARGV: &str =
    "an argv test has a Cedar form (context.argv) only on agent.shell's /tool_input/command";

/// Why a rule's scope has no exact Cedar form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the rule's scope has no exact Cedar form: {0}")]
pub struct Untranslatable(pub String);

/// The Cedar policies that permit exactly what `rule` covers: one per
/// operation, `@id("<id>/<operation>")`, in the rule's order. A rule whose
/// scope is already written in Cedar is not translated again.
pub fn rule_scope(
    id: &str,
    rule: &RuleDefinition,
    schema: &GeneratedSchema,
) -> Result<String, Untranslatable> {
    if rule.cedar.is_some() {
        return Err(Untranslatable(
            "the rule's scope is already written in Cedar (its `cedar`)".into(),
        ));
    }
    let mut text = String::new();
    for operation in &rule.operations {
        let view = schema.operations.get(operation).ok_or_else(|| {
            Untranslatable(format!("operation {operation:?} is not in the registry"))
        })?;
        let conditions = if operation == SHELL_OPERATION && !rule.shell_commands_matched_by_argv() {
            // The rule language never covers a shell call with this rule.
            vec!["false".to_owned()]
        } else {
            conditions(rule, operation, &view.arguments)?
        };
        let _ = write!(
            text,
            "@id({})\npermit (principal, action == Action::{}, resource)",
            literal(&format!("{id}/{operation}")),
            literal(operation)
        );
        if conditions.is_empty() {
            text.push_str(";\n");
        } else {
            let _ = write!(text, "\nwhen {{ {} }};\n", conditions.join(" && "));
        }
    }
    Ok(text)
}

/// The conditions of `rule` on a proposal of `operation`: its sessions,
/// then each constraint.
fn conditions(
    rule: &RuleDefinition,
    operation: &str,
    arguments: &RecordType,
) -> Result<Vec<String>, Untranslatable> {
    let mut conditions = Vec::new();
    if let Sessions::Only(sessions) = &rule.sessions {
        let listed: Vec<String> = sessions
            .iter()
            .map(|s| format!("Session::{}", literal(s.as_str())))
            .collect();
        conditions.push(format!("[{}].contains(principal)", listed.join(", ")));
    }
    for constraint in &rule.constraints {
        conditions.push(condition(
            operation,
            arguments,
            &constraint.pointer,
            &constraint.test,
        )?);
    }
    Ok(conditions)
}

/// The Cedar condition of one constraint: the path's presence, then its
/// test.
fn condition(
    operation: &str,
    arguments: &RecordType,
    pointer: &str,
    test: &Test,
) -> Result<String, Untranslatable> {
    if let Test::Argv(pattern) = test {
        return if operation == SHELL_OPERATION && pointer == SHELL_COMMAND_POINTER {
            Ok(argv_condition(pattern))
        } else {
            Err(Untranslatable(format!("{pointer} of {operation}: {ARGV}")))
        };
    }
    let outside = || {
        Untranslatable(format!(
            "{pointer} of {operation} is not in Cedar's view of its arguments"
        ))
    };
    let tokens = pointer
        .strip_prefix('/')
        .ok_or_else(outside)?
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"));
    let mut path = "context.arguments".to_owned();
    let mut present = Vec::new();
    let mut record = Some(arguments);
    let mut leaf = None;
    for token in tokens {
        let attribute = record
            .and_then(|r| r.attributes.get(&token))
            .ok_or_else(outside)?;
        if !attribute.required {
            present.push(format!("{path} has {}", literal(&token)));
        }
        let _ = write!(path, "[{}]", literal(&token));
        record = match &attribute.ty {
            ArgType::Record(r) => Some(r),
            _ => None,
        };
        leaf = Some(&attribute.ty);
    }
    let leaf = leaf.ok_or_else(outside)?;
    let test = test_of(&path, leaf, test)
        .map_err(|why| Untranslatable(format!("{pointer} of {operation}: {why}")))?;
    present.push(test);
    Ok(present.join(" && "))
}

/// An `argv` pattern as a test of `context.argv`: present (the command
/// split), as many words (or at least as many, with `more_args`), and each
/// listed word equal to the pattern's.
fn argv_condition(pattern: &ArgvPattern) -> String {
    let argv = format!("context.{ARGV_ATTRIBUTE}");
    let words = pattern.args().len() + 1;
    let count = if pattern.more_args() { ">=" } else { "==" };
    let mut parts = vec![
        format!("context has {ARGV_ATTRIBUTE}"),
        format!("{argv}.count {count} {words}"),
    ];
    let program = std::iter::once(ArgPattern::Exact(pattern.program().to_owned()));
    for (n, expected) in program.chain(pattern.args().iter().cloned()).enumerate() {
        let w = word(n);
        parts.push(format!("{argv} has {w}"));
        parts.push(match expected {
            ArgPattern::Exact(s) => format!("{argv}.{w} == {}", literal(&s)),
            ArgPattern::OneOf(options) => {
                let listed: Vec<String> = options.iter().map(|o| literal(o)).collect();
                format!("[{}].contains({argv}.{w})", listed.join(", "))
            }
        });
    }
    parts.join(" && ")
}

/// `test` on the value at `path`, of Cedar type `leaf`.
fn test_of(path: &str, leaf: &ArgType, test: &Test) -> Result<String, String> {
    match test {
        Test::Equals(value) => Ok(match value_literal(leaf, value)? {
            Some(v) => format!("{path} == {v}"),
            None => "false".into(),
        }),
        Test::OneOf(values) => {
            let mut listed = Vec::new();
            for value in values {
                if let Some(v) = value_literal(leaf, value)? {
                    listed.push(v);
                }
            }
            Ok(if listed.is_empty() {
                "false".into()
            } else {
                format!("[{}].contains({path})", listed.join(", "))
            })
        }
        Test::Range { min, max } => Ok(match leaf {
            ArgType::Long => range(path, *min, *max),
            _ => "false".into(),
        }),
        Test::Prefix(prefix) => Ok(match leaf {
            ArgType::String => format!("{path} like {}", like_prefix(prefix)),
            _ => "false".into(),
        }),
        // Handled before the path is walked (see `condition`).
        Test::Argv(_) => Err(ARGV.into()),
    }
}

/// The Cedar literal equal to `value` as the rule language compares it
/// (canonical JSON) for a leaf of type `leaf`; `None` when no value of
/// that type can equal it; an error when Cedar cannot compare it exactly.
fn value_literal(leaf: &ArgType, value: &Value) -> Result<Option<String>, String> {
    match (leaf, value) {
        (ArgType::String, Value::String(s)) => Ok(Some(literal(s))),
        (ArgType::Bool, Value::Bool(b)) => Ok(Some(b.to_string())),
        (ArgType::Long, Value::Number(n)) => Ok(whole(n).map(|n| n.to_string())),
        (ArgType::Set(_) | ArgType::Record(_), _) => Err(
            "equals on an array or object compares its canonical JSON, which Cedar (holding arrays as sets) cannot"
                .into(),
        ),
        _ => Ok(None),
    }
}

/// `n` as an integer, when it is one (`1.0` is `1`, as in canonical JSON).
fn whole(n: &serde_json::Number) -> Option<i64> {
    n.as_i64().or_else(|| {
        n.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.2e18)
            .map(|f| f as i64)
    })
}

/// An integer within `[min, max]` (inclusive, either unbounded).
fn range(path: &str, min: Option<f64>, max: Option<f64>) -> String {
    let mut parts = Vec::new();
    if let Some(min) = min {
        let min = min.ceil();
        if min > i64::MAX as f64 {
            return "false".into();
        }
        if min > i64::MIN as f64 {
            parts.push(format!("{path} >= {}", min as i64));
        }
    }
    if let Some(max) = max {
        let max = max.floor();
        if max < i64::MIN as f64 {
            return "false".into();
        }
        if max < i64::MAX as f64 {
            parts.push(format!("{path} <= {}", max as i64));
        }
    }
    if parts.is_empty() {
        // Any integer: the path's presence is the whole test.
        return "true".into();
    }
    parts.join(" && ")
}

/// A Cedar string literal of `s`, exactly.
fn literal(s: &str) -> String {
    escaped(s, false)
}

/// A Cedar `like` pattern matching the strings that start with `prefix`.
fn like_prefix(prefix: &str) -> String {
    let mut pattern = escaped(prefix, true);
    pattern.insert(pattern.len() - 1, '*');
    pattern
}

fn escaped(s: &str, in_like: bool) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '*' if in_like => out.push_str("\\*"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
