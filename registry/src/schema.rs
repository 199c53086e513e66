//! The arguments schema of an operation: conversion from the TOML table to
//! JSON, the shape rules every schema must follow (a closed object whose
//! top-level arguments are all named properties), offline compilation with
//! draft 2020-12, and validation errors as short, masked, escaped lines.
//!
//! It must not fetch anything (no remote or file `$ref`) and must not echo
//! argument values in errors (values are masked; property names escaped).

use jsonschema::{Draft, Validator};
use serde_json::{Map, Number, Value};

use crate::preview::terminal_safe;

/// The only `$schema` a registry schema may declare.
const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";
/// At most this many schema errors are reported for one proposal.
const MAX_REPORTED_ERRORS: usize = 4;
/// Each reported error line is cut to this many characters.
const MAX_ERROR_CHARS: usize = 160;

/// Converts a TOML value to JSON. TOML datetimes and non-finite floats have
/// no JSON equivalent and are refused; the error is a reason.
pub(crate) fn toml_to_json(value: &toml::Value) -> Result<Value, String> {
    Ok(match value {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::Number(Number::from(*i)),
        toml::Value::Float(f) => Value::Number(
            Number::from_f64(*f).ok_or_else(|| format!("non-finite number {f} is not JSON"))?,
        ),
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => return Err(format!("TOML datetime {d} is not JSON")),
        toml::Value::Array(items) => {
            Value::Array(items.iter().map(toml_to_json).collect::<Result<_, _>>()?)
        }
        toml::Value::Table(table) => Value::Object(table_to_json(table)?),
    })
}

/// Converts a TOML table to a JSON object (see [`toml_to_json`]).
pub(crate) fn table_to_json(table: &toml::Table) -> Result<Map<String, Value>, String> {
    table
        .iter()
        .map(|(k, v)| Ok((k.clone(), toml_to_json(v)?)))
        .collect()
}

/// Checks the top-level shape and returns the top-level property names.
/// The error is a reason.
pub(crate) fn check_shape(schema: &Map<String, Value>) -> Result<Vec<String>, String> {
    match schema.get("$schema") {
        None => {}
        Some(Value::String(s)) if s == DRAFT_2020_12 => {}
        Some(_) => return Err(format!("`$schema` must be absent or {DRAFT_2020_12:?}")),
    }
    if schema.get("type") != Some(&Value::String("object".into())) {
        return Err("must have `type = \"object\"`".into());
    }
    if schema.get("additionalProperties") != Some(&Value::Bool(false)) {
        return Err("must have `additionalProperties = false`".into());
    }
    if schema.contains_key("patternProperties") {
        return Err("must not use top-level `patternProperties`; name every argument".into());
    }
    match schema.get("properties") {
        None => Ok(Vec::new()),
        Some(Value::Object(props)) => Ok(props.keys().cloned().collect()),
        Some(_) => Err("`properties` must be a table".into()),
    }
}

/// Compiles a schema for draft 2020-12 with format assertions on, unknown
/// formats refused, and no retrieval of external references.
pub(crate) fn compile(schema: &Value) -> Result<Validator, String> {
    jsonschema::options()
        .with_draft(Draft::Draft202012)
        .offline()
        .should_validate_formats(true)
        .should_ignore_unknown_formats(false)
        .build(schema)
        .map_err(|e| {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() { "/".to_owned() } else { at };
            one_line(&format!("does not compile (at {at}): {}", e.masked()))
        })
}

/// Compiles an upstream MCP tool's input schema: in the draft its
/// `$schema` names (2020-12 when absent), format assertions on for the
/// formats known here and the others ignored (the upstream checks its own),
/// no retrieval of external references.
pub(crate) fn compile_upstream(schema: &Value) -> Result<Validator, String> {
    let draft = match schema.get("$schema").and_then(Value::as_str) {
        Some(s) if s.contains("draft-04") => Draft::Draft4,
        Some(s) if s.contains("draft-06") => Draft::Draft6,
        Some(s) if s.contains("draft-07") => Draft::Draft7,
        Some(s) if s.contains("2019-09") => Draft::Draft201909,
        _ => Draft::Draft202012,
    };
    jsonschema::options()
        .with_draft(draft)
        .offline()
        .should_validate_formats(true)
        .should_ignore_unknown_formats(true)
        .build(schema)
        .map_err(|e| {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() { "/".to_owned() } else { at };
            one_line(&format!("does not compile (at {at}): {}", e.masked()))
        })
}

/// Validates `instance`; on failure returns up to four lines of
/// `<instance path>: <masked message>` (values masked, escaped, bounded),
/// then `and N more`. Heads use it for their own parameter schemas.
pub fn errors(validator: &Validator, instance: &Value) -> Vec<String> {
    let mut lines = Vec::new();
    let mut total = 0usize;
    for error in validator.iter_errors(instance) {
        total += 1;
        if lines.len() < MAX_REPORTED_ERRORS {
            let path = error.instance_path().to_string();
            let path = if path.is_empty() {
                "/".to_owned()
            } else {
                path
            };
            lines.push(one_line(&format!("{path}: {}", error.masked())));
        }
    }
    if total > lines.len() {
        lines.push(format!("and {} more", total - lines.len()));
    }
    lines
}

/// Escapes terminal-unsafe characters and bounds the length.
fn one_line(text: &str) -> String {
    let safe = terminal_safe(text);
    if safe.chars().count() <= MAX_ERROR_CHARS {
        return safe.into_owned();
    }
    let mut cut: String = safe.chars().take(MAX_ERROR_CHARS).collect();
    cut.push('…');
    cut
}
