//! An operation's premise: which fact about current state the signer reads
//! at proposal, shows the person, binds into the proof, and the ledger reads
//! again inside the consume transaction.
//!
//! Today a premise is a read of one key of the principal's state store:
//! `[operation.premise] namespace = "schedules"`, `key = "<argument>"`, the
//! key being the value of a required string argument. This module owns the
//! definition and its checks; it must not read any state.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::CanonicalArgs;
use crate::definition::is_valid_name;

/// `[operation.premise]` as written in the registry file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PremiseSource {
    /// The state namespace read (a dotted lowercase name, e.g. `schedules`).
    pub namespace: String,
    /// The argument whose value is the key read: a top-level property of
    /// the schema, required, of type string.
    pub key: String,
}

/// The read a proposal's premise makes: the namespace and the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PremiseRead {
    /// The state namespace.
    pub namespace: String,
    /// The key within it (the argument's value).
    pub key: String,
}

impl PremiseSource {
    /// Refuses a namespace that is not a valid name, and a key argument
    /// that the schema does not declare as a required string: a premise
    /// must name exactly one key for every valid set of arguments. The
    /// error is a reason for the operator.
    pub(crate) fn check(&self, schema: &Value) -> Result<(), String> {
        if !is_valid_name(&self.namespace) {
            return Err(format!(
                "namespace {:?} is not a dotted lowercase name",
                self.namespace
            ));
        }
        let declared = schema
            .get("properties")
            .and_then(|p| p.get(&self.key))
            .and_then(|p| p.get("type"))
            == Some(&Value::String("string".into()));
        let required = schema
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|r| r.iter().any(|k| k.as_str() == Some(&self.key)));
        if !(declared && required) {
            return Err(format!(
                "key {:?} must name a required argument of type string",
                self.key
            ));
        }
        Ok(())
    }

    /// The read for these (schema-valid) arguments, or `None` if the key
    /// argument is missing, empty or too long to name a state key (the
    /// schema should already prevent the first).
    pub(crate) fn read_for(&self, args: &CanonicalArgs) -> Option<PremiseRead> {
        let key = args.value().get(&self.key)?.as_str()?;
        let fits = !key.is_empty() && key.len() <= countersign_verifier::MAX_PREMISE_NAME_BYTES;
        fits.then(|| PremiseRead {
            namespace: self.namespace.clone(),
            key: key.to_owned(),
        })
    }
}
