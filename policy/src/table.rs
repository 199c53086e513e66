//! A table of requests run against a policy set, for the CI of a policy
//! repository (`countersign policy test FILE`): each case's verdict, the
//! policies that determined it, and whether it is the one expected.
//!
//! This module owns the table's format, parsed strictly (unknown keys
//! refused, every error naming its case). It must not read files or the
//! clock: the caller passes the text, each case its own time.
//!
//! ```toml
//! [[case]]
//! name = "rm -rf is forbidden"          # unique in the table
//! principal = "pr_0123"
//! agent = "claude-code"                 # optional
//! session = "s-1"
//! operation = "agent.shell"
//! head = "hook"                         # cli, api, mcp, console, hook, gateway
//! time = "2026-12-06T12:00:00Z"         # an RFC 3339 string
//! arguments = { agent = "claude-code", tool_name = "Bash", cwd = "/src", tool_input = { command = "rm -rf /" } }
//! expect = "forbid"                     # forbid, require_approval, permit, person
//! expect_policies = ["no-rm-rf"]        # optional: exactly the determining policies
//! ```
//!
//! `arguments` is a TOML table, converted to JSON (TOML datetimes have no
//! JSON form and are refused; integers stay integers, floats are JSON
//! numbers).

use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::{Map, Number, Value};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::{GeneratedSchema, Head, PolicyRequest, PolicySet, Verdict, VerdictKind};

/// Why a table could not be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// The text is not a table of cases (malformed TOML, an unknown or
    /// missing key).
    #[error("test table: {0}")]
    Toml(String),
    /// The table has no case.
    #[error("test table has no [[case]]")]
    NoCases,
    /// A case is malformed or its request was refused.
    #[error("case {case:?}: {reason}")]
    Case {
        /// The case's name.
        case: String,
        /// What is wrong.
        reason: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    #[serde(default)]
    case: Vec<RawCase>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    name: String,
    principal: String,
    #[serde(default)]
    agent: Option<String>,
    session: String,
    operation: String,
    head: String,
    time: String,
    arguments: toml::Table,
    expect: VerdictKind,
    #[serde(default)]
    expect_policies: Option<Vec<String>>,
}

/// One case's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseOutcome {
    /// The case's name.
    pub name: String,
    /// The verdict.
    pub verdict: Verdict,
    /// The verdict the case expects.
    pub expected: VerdictKind,
    /// The determining policies the case expects (its `expect_policies`,
    /// sorted), when it names them.
    pub expected_policies: Option<Vec<String>>,
    /// Whether the verdict is the expected kind (and, when the case lists
    /// `expect_policies`, determined by exactly those policies).
    pub passed: bool,
}

impl CaseOutcome {
    /// The policies that determined the verdict.
    pub fn policies(&self) -> &[String] {
        self.verdict.policies()
    }
}

/// Runs every case of the table `text` against `set` under `schema`, in
/// the order written.
pub fn run(
    set: &PolicySet,
    schema: &GeneratedSchema,
    text: &str,
) -> Result<Vec<CaseOutcome>, TableError> {
    let table: RawTable = toml::from_str(text).map_err(|e| TableError::Toml(e.to_string()))?;
    if table.case.is_empty() {
        return Err(TableError::NoCases);
    }
    let mut names = BTreeSet::new();
    let mut outcomes = Vec::with_capacity(table.case.len());
    for case in table.case {
        let fail = |reason: String| TableError::Case {
            case: case.name.clone(),
            reason,
        };
        if !names.insert(case.name.clone()) {
            return Err(fail("another case has this name".into()));
        }
        let head = Head::parse(&case.head).ok_or_else(|| {
            fail(format!(
                "head {:?} is not one of cli, api, mcp, console, hook, gateway",
                case.head
            ))
        })?;
        let time = OffsetDateTime::parse(&case.time, &Rfc3339)
            .map_err(|e| fail(format!("time {:?} is not RFC 3339: {e}", case.time)))?;
        let arguments = Value::Object(table_to_json(&case.arguments).map_err(fail)?);
        let request = PolicyRequest {
            principal: &case.principal,
            agent: case.agent.as_deref(),
            session: &case.session,
            operation: &case.operation,
            arguments: &arguments,
            time_unix: time.unix_timestamp(),
            head,
        };
        let verdict = set
            .evaluate(schema, &request)
            .map_err(|e| fail(e.to_string()))?;
        let expected_policies = case.expect_policies.map(|mut expected| {
            expected.sort();
            expected
        });
        let policies_match = expected_policies
            .as_ref()
            .is_none_or(|expected| expected == verdict.policies());
        outcomes.push(CaseOutcome {
            passed: verdict.kind() == case.expect && policies_match,
            name: case.name,
            verdict,
            expected: case.expect,
            expected_policies,
        });
    }
    Ok(outcomes)
}

fn toml_to_json(value: &toml::Value) -> Result<Value, String> {
    Ok(match value {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::Number(Number::from(*i)),
        toml::Value::Float(f) => Value::Number(
            Number::from_f64(*f).ok_or_else(|| format!("the number {f} has no JSON form"))?,
        ),
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => {
            return Err(format!(
                "the TOML datetime {d} in arguments has no JSON form: write it as a string"
            ));
        }
        toml::Value::Array(items) => {
            Value::Array(items.iter().map(toml_to_json).collect::<Result<_, _>>()?)
        }
        toml::Value::Table(table) => Value::Object(table_to_json(table)?),
    })
}

fn table_to_json(table: &toml::Table) -> Result<Map<String, Value>, String> {
    table
        .iter()
        .map(|(k, v)| Ok((k.clone(), toml_to_json(v)?)))
        .collect()
}
