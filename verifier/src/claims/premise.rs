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

/// Longest namespace or key a premise names, in bytes.
pub const MAX_PREMISE_NAME_BYTES: usize = 256;

/// A read of one key of the principal's state store, as the signer made it:
/// the namespace and key read, the value found (`None`: no such key) and
/// its version (the ledger's number of the event that last wrote it; 0 when
/// absent, or for a value written before versions were kept).
///
/// Claim form: `"prem": {"key": <string>, "ns": <string>, "value": <JSON or
/// null>, "version": <integer>}`. A value is a JSON object: the state store
/// holds nothing else, so `null` is unambiguous.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Premise {
    /// The state namespace read, e.g. `schedules`.
    pub namespace: String,
    /// The key read within it, e.g. the schedule's name.
    pub key: String,
    /// The value found, or `None` when the key has no value.
    pub value: Option<Value>,
    /// The version of the value found (0 when absent).
    pub version: u64,
}

impl Premise {
    /// The `prem` claim value.
    pub fn claim_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("ns".into(), Value::String(self.namespace.clone()));
        m.insert("key".into(), Value::String(self.key.clone()));
        m.insert("value".into(), self.value.clone().unwrap_or(Value::Null));
        m.insert("version".into(), Value::from(self.version));
        Value::Object(m)
    }

    /// Reads a `prem` claim strictly: exactly the four fields, typed, names
    /// non-empty and at most [`MAX_PREMISE_NAME_BYTES`], a value that is an
    /// object or null, a version that is a safe integer (0 when null).
    pub fn from_claim_value(value: Value) -> Result<Premise, Refusal> {
        let Value::Object(mut m) = value else {
            return Err(Refusal::Malformed);
        };
        if m.len() != 4 {
            return Err(Refusal::Malformed);
        }
        let mut name = |field: &str| match m.remove(field) {
            Some(Value::String(s)) if !s.is_empty() && s.len() <= MAX_PREMISE_NAME_BYTES => Ok(s),
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
        Ok(Premise {
            namespace,
            key,
            value,
            version,
        })
    }

    /// The canonical JSON of the claim value: what the ledger stores with
    /// the proposal and compares at consumption.
    pub fn canonical_text(&self) -> Result<String, crate::canonical::CanonicalError> {
        crate::canonical::to_canonical(&self.claim_value())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    fn premise(value: Option<Value>, version: u64) -> Premise {
        Premise {
            namespace: "schedules".into(),
            key: "nightly".into(),
            value,
            version,
        }
    }

    #[test]
    fn a_premise_reads_back_from_its_claim_value() {
        for p in [
            premise(Some(json!({"state": "active"})), 7),
            premise(None, 0),
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
}
