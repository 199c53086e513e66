//! An operation's premise: which fact about current state the signer
//! establishes at proposal, shows the person, binds into the proof, and the
//! ledger establishes again inside the consume transaction.
//!
//! Two kinds, written as `[operation.premise]`:
//! - a read of one key of the principal's state store: `namespace =
//!   "schedules"`, `key = "<argument>"`, the key being the value of a
//!   required string argument;
//! - a premise command: `program = "/absolute/path"`, `args = [...]`, run
//!   without a shell with the canonical arguments on stdin; its standard
//!   output is the value.
//!
//! This module owns the definition and its checks; it must not read any
//! state or run anything.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::CanonicalArgs;
use crate::definition::is_valid_name;
use countersign_verifier::{MAX_PREMISE_ARGV, MAX_PREMISE_NAME_BYTES};

/// `[operation.premise]` as written in the registry file: exactly one of
/// the two forms, checked when the registry loads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawPremise", untagged)]
pub enum PremiseSource {
    /// A read of one key of the principal's state store.
    State {
        /// The state namespace read (a dotted lowercase name, e.g. `schedules`).
        namespace: String,
        /// The argument whose value is the key read: a top-level property of
        /// the schema, required, of type string.
        key: String,
    },
    /// A premise command: its standard output is the premise.
    Command {
        /// Absolute path of the program.
        program: String,
        /// Fixed arguments (never from the proposal).
        args: Vec<String>,
    },
}

/// Every field either form may have, for the messages of [`TryFrom`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPremise {
    namespace: Option<String>,
    key: Option<String>,
    program: Option<String>,
    args: Option<Vec<String>>,
}

impl TryFrom<RawPremise> for PremiseSource {
    type Error = String;

    fn try_from(raw: RawPremise) -> Result<Self, String> {
        match raw {
            RawPremise {
                namespace: Some(namespace),
                key: Some(key),
                program: None,
                args: None,
            } => Ok(PremiseSource::State { namespace, key }),
            RawPremise {
                namespace: None,
                key: None,
                program: Some(program),
                args,
            } => Ok(PremiseSource::Command {
                program,
                args: args.unwrap_or_default(),
            }),
            _ => Err(
                "a premise is either `namespace` and `key` (a state read) or `program` and optional `args` (a premise command)"
                    .to_owned(),
            ),
        }
    }
}

/// What a proposal's premise establishes: the read, or the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PremiseRead {
    /// Read this key of the principal's state store.
    State {
        /// The state namespace.
        namespace: String,
        /// The key within it (the argument's value).
        key: String,
    },
    /// Run this program with these arguments, the canonical arguments on
    /// stdin; its output is the premise.
    Command {
        /// The program (absolute) and its fixed arguments.
        argv: Vec<String>,
    },
}

impl PremiseSource {
    /// Refuses a state read whose namespace is not a valid name or whose
    /// key argument the schema does not declare as a required string (it
    /// must name exactly one key for every valid set of arguments), and a
    /// command whose program is not an absolute path or whose argv is too
    /// long for a proof. The error is a reason for the operator.
    pub(crate) fn check(&self, schema: &Value) -> Result<(), String> {
        match self {
            PremiseSource::State { namespace, key } => check_state(namespace, key, schema),
            PremiseSource::Command { program, args } => check_command(program, args),
        }
    }

    /// The read for these (schema-valid) arguments, or `Err` with the key
    /// argument's name if a state read's key argument is missing, empty or
    /// too long to name a state key (the schema should already prevent the
    /// first).
    pub(crate) fn read_for(&self, args: &CanonicalArgs) -> Result<PremiseRead, &str> {
        match self {
            PremiseSource::State { namespace, key } => {
                let value = args.value().get(key).and_then(Value::as_str);
                match value {
                    Some(v) if !v.is_empty() && v.len() <= MAX_PREMISE_NAME_BYTES => {
                        Ok(PremiseRead::State {
                            namespace: namespace.clone(),
                            key: v.to_owned(),
                        })
                    }
                    _ => Err(key),
                }
            }
            PremiseSource::Command { program, args } => Ok(PremiseRead::Command {
                argv: std::iter::once(program).chain(args).cloned().collect(),
            }),
        }
    }
}

fn check_state(namespace: &str, key: &str, schema: &Value) -> Result<(), String> {
    if !is_valid_name(namespace) {
        return Err(format!(
            "namespace {namespace:?} is not a dotted lowercase name"
        ));
    }
    let declared = schema
        .get("properties")
        .and_then(|p| p.get(key))
        .and_then(|p| p.get("type"))
        == Some(&Value::String("string".into()));
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|r| r.iter().any(|k| k.as_str() == Some(key)));
    if !(declared && required) {
        return Err(format!(
            "key {key:?} must name a required argument of type string"
        ));
    }
    Ok(())
}

fn check_command(program: &str, args: &[String]) -> Result<(), String> {
    if !program.starts_with('/') {
        return Err(format!("program {program:?} is not an absolute path"));
    }
    if args.len() + 1 > MAX_PREMISE_ARGV {
        return Err(format!(
            "a premise command has at most {} arguments",
            MAX_PREMISE_ARGV - 1
        ));
    }
    let too_long = std::iter::once(program)
        .chain(args.iter().map(String::as_str))
        .find(|a| a.len() > MAX_PREMISE_NAME_BYTES);
    if let Some(long) = too_long {
        return Err(format!(
            "{long:?} is longer than {MAX_PREMISE_NAME_BYTES} bytes"
        ));
    }
    Ok(())
}
