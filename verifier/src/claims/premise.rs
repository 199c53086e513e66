//! A premise in a proof: the optional `prem` claim.
//!
//! Owns: the [`Premise`] type (a fact about current state that the signer
//! read itself, showed the person and bound into the proof) and its strict
//! reading from and writing to a claim value. Must not: read the state (the
//! signer does at proposal and decision, the ledger again inside the
//! consume transaction) or decide which operations have one (the registry).

use serde_json::{Map, Value};

use crate::canonical::MAX_SAFE_INTEGER;
use crate::refusal::Refusal;

/// Longest namespace or key a state premise names, and longest element of
/// a premise command's argv, in bytes.
pub const MAX_PREMISE_NAME_BYTES: usize = 256;
/// Most elements of a premise command's argv (program and arguments).
pub const MAX_PREMISE_ARGV: usize = 32;
/// Longest output of a premise command, in bytes: a premise is a fact a
/// person reads in a preview, not a document.
pub const MAX_PREMISE_OUTPUT_BYTES: usize = 4096;

/// A fact about current state that the signer established itself, showed
/// the person and bound into the proof, and that the ledger establishes
/// again inside the consume transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Premise {
    /// A read of one key of the principal's state store.
    State(StatePremise),
    /// The output of the operation's premise command.
    Command(CommandPremise),
}

/// A read of one key of the principal's state store, as the signer made it:
/// the namespace and key read, the value found (`None`: no such key) and
/// its version (the ledger's number of the event that last wrote it; 0 when
/// absent, or for a value written before versions were kept).
///
/// Claim form: `"prem": {"key": <string>, "ns": <string>, "value": <JSON or
/// null>, "version": <integer>}`. A value is a JSON object: the state store
/// holds nothing else, so `null` is unambiguous.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatePremise {
    /// The state namespace read, e.g. `schedules`.
    pub namespace: String,
    /// The key read within it, e.g. the schedule's name.
    pub key: String,
    /// The value found, or `None` when the key has no value.
    pub value: Option<Value>,
    /// The version of the value found (0 when absent).
    pub version: u64,
}

/// What the operation's premise command printed: the program and its fixed
/// arguments as the registry names them, and its whole standard output
/// (the canonical arguments were its standard input).
///
/// Claim form: `"prem": {"argv": [<absolute program>, <argument>...],
/// "out": <string>}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandPremise {
    /// The program (an absolute path) and its fixed arguments.
    pub argv: Vec<String>,
    /// Its standard output, at most [`MAX_PREMISE_OUTPUT_BYTES`].
    pub output: String,
}

impl Premise {
    /// The `prem` claim value.
    pub fn claim_value(&self) -> Value {
        let mut m = Map::new();
        match self {
            Premise::State(p) => {
                m.insert("ns".into(), Value::String(p.namespace.clone()));
                m.insert("key".into(), Value::String(p.key.clone()));
                m.insert("value".into(), p.value.clone().unwrap_or(Value::Null));
                m.insert("version".into(), Value::from(p.version));
            }
            Premise::Command(p) => {
                let argv = p.argv.iter().cloned().map(Value::String).collect();
                m.insert("argv".into(), Value::Array(argv));
                m.insert("out".into(), Value::String(p.output.clone()));
            }
        }
        Value::Object(m)
    }

    /// Reads a `prem` claim strictly: a command premise (exactly `argv`
    /// and `out`) when it has `argv`, else a state premise (exactly its
    /// four fields). See [`StatePremise`] and [`CommandPremise`].
    pub fn from_claim_value(value: Value) -> Result<Premise, Refusal> {
        let Value::Object(m) = value else {
            return Err(Refusal::Malformed);
        };
        if m.contains_key("argv") {
            CommandPremise::from_claim(m).map(Premise::Command)
        } else {
            StatePremise::from_claim(m).map(Premise::State)
        }
    }

    /// The canonical JSON of the claim value: what the ledger stores with
    /// the proposal and compares at consumption.
    pub fn canonical_text(&self) -> Result<String, crate::canonical::CanonicalError> {
        crate::canonical::to_canonical(&self.claim_value())
    }
}

impl StatePremise {
    /// Exactly the four fields, typed, names non-empty and at most
    /// [`MAX_PREMISE_NAME_BYTES`], a value that is an object or null, a
    /// version that is a safe integer (0 when null).
    fn from_claim(mut m: Map<String, Value>) -> Result<StatePremise, Refusal> {
        if m.len() != 4 {
            return Err(Refusal::Malformed);
        }
        let mut name = |field: &str| match m.remove(field) {
            Some(Value::String(s)) if name_fits(&s) => Ok(s),
            _ => Err(Refusal::Malformed),
        };
        let namespace = name("ns")?;
        let key = name("key")?;
        let value = match m.remove("value") {
            Some(Value::Null) => None,
            Some(v @ Value::Object(_)) => Some(v),
            _ => return Err(Refusal::Malformed),
        };
        let version = m
            .remove("version")
            .and_then(|v| v.as_u64())
            .filter(|v| *v <= MAX_SAFE_INTEGER)
            .ok_or(Refusal::Malformed)?;
        if value.is_none() && version != 0 {
            return Err(Refusal::Malformed);
        }
        Ok(StatePremise {
            namespace,
            key,
            value,
            version,
        })
    }
}

impl CommandPremise {
    /// Exactly `argv` (1 to [`MAX_PREMISE_ARGV`] strings, each at most
    /// [`MAX_PREMISE_NAME_BYTES`], the first an absolute path) and `out` (a
    /// string of at most [`MAX_PREMISE_OUTPUT_BYTES`]).
    fn from_claim(mut m: Map<String, Value>) -> Result<CommandPremise, Refusal> {
        if m.len() != 2 {
            return Err(Refusal::Malformed);
        }
        let Some(Value::Array(items)) = m.remove("argv") else {
            return Err(Refusal::Malformed);
        };
        let argv = items
            .into_iter()
            .map(|v| match v {
                Value::String(s) if s.len() <= MAX_PREMISE_NAME_BYTES => Ok(s),
                _ => Err(Refusal::Malformed),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let program_ok = argv.first().is_some_and(|p| p.starts_with('/'));
        if !program_ok || argv.len() > MAX_PREMISE_ARGV {
            return Err(Refusal::Malformed);
        }
        let output = match m.remove("out") {
            Some(Value::String(s)) if s.len() <= MAX_PREMISE_OUTPUT_BYTES => s,
            _ => return Err(Refusal::Malformed),
        };
        Ok(CommandPremise { argv, output })
    }
}

/// A namespace or key: non-empty, at most [`MAX_PREMISE_NAME_BYTES`].
fn name_fits(s: &str) -> bool {
    !s.is_empty() && s.len() <= MAX_PREMISE_NAME_BYTES
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    fn premise(value: Option<Value>, version: u64) -> Premise {
        Premise::State(StatePremise {
            namespace: "schedules".into(),
            key: "nightly".into(),
            value,
            version,
        })
    }

    fn command(output: &str) -> Premise {
        Premise::Command(CommandPremise {
            argv: vec!["/usr/local/bin/deployed-version".into(), "--short".into()],
            output: output.into(),
        })
    }

    #[test]
    fn a_premise_reads_back_from_its_claim_value() {
        for p in [
            premise(Some(json!({"state": "active"})), 7),
            premise(None, 0),
            command("v1.4.2\n"),
            command(""),
        ] {
            assert_eq!(Premise::from_claim_value(p.claim_value()).unwrap(), p);
        }
    }

    #[test]
    fn refuses_a_premise_claim_that_is_not_exactly_well_formed() {
        let good = premise(Some(json!({"state": "active"})), 7).claim_value();
        let with = |field: &str, v: Value| {
            let mut m = good.as_object().unwrap().clone();
            m.insert(field.into(), v);
            Value::Object(m)
        };
        let without = |field: &str| {
            let mut m = good.as_object().unwrap().clone();
            m.remove(field);
            Value::Object(m)
        };
        for bad in [
            json!(null),
            json!("schedules/nightly"),
            without("version"),
            with("extra", json!(1)),
            with("ns", json!("")),
            with("key", json!(3)),
            with("value", json!("active")),
            with("version", json!(-1)),
            with("version", json!(1.5)),
            with("version", json!(MAX_SAFE_INTEGER + 1)),
            // An absent value has version 0.
            premise(None, 3).claim_value(),
        ] {
            assert_eq!(
                Premise::from_claim_value(bad.clone()),
                Err(Refusal::Malformed),
                "{bad}"
            );
        }
    }

    #[test]
    fn refuses_a_command_premise_claim_that_is_not_exactly_well_formed() {
        let good = command("v1.4.2\n").claim_value();
        let with = |field: &str, v: Value| {
            let mut m = good.as_object().unwrap().clone();
            m.insert(field.into(), v);
            Value::Object(m)
        };
        let mut without_out = good.as_object().unwrap().clone();
        without_out.remove("out");
        let long_argv: Vec<Value> = std::iter::once(json!("/bin/echo"))
            .chain((0..MAX_PREMISE_ARGV).map(|i| json!(i.to_string())))
            .collect();
        for bad in [
            Value::Object(without_out),
            with("extra", json!(1)),
            with("ns", json!("schedules")),
            with("argv", json!([])),
            with("argv", json!("/bin/echo")),
            with("argv", json!(["echo", "hi"])),
            with("argv", json!(["/bin/echo", 3])),
            with(
                "argv",
                json!(["/bin/echo", "x".repeat(MAX_PREMISE_NAME_BYTES + 1)]),
            ),
            with("argv", Value::Array(long_argv)),
            with("out", json!(null)),
            with("out", json!({"v": 1})),
            with("out", json!("x".repeat(MAX_PREMISE_OUTPUT_BYTES + 1))),
        ] {
            assert_eq!(
                Premise::from_claim_value(bad.clone()),
                Err(Refusal::Malformed),
                "{bad}"
            );
        }
        let longest = command(&"x".repeat(MAX_PREMISE_OUTPUT_BYTES));
        assert_eq!(
            Premise::from_claim_value(longest.claim_value()).unwrap(),
            longest
        );
    }
}
