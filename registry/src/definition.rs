//! Loading operation definitions from the registry TOML: the raw serde
//! structs (unknown keys refused) and the checks that turn one raw entry into
//! an [`Operation`], including its contract revision.
//!
//! Every refusal names the operation and the field. This module must not
//! accept a definition that would make a preview, a schema check or an
//! effect ambiguous.

use std::collections::BTreeSet;

use countersign_verifier::canonical;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::escalation::RawEscalation;
use crate::preview::{Template, is_terminal_unsafe};
use crate::quorum::RawQuorum;
use crate::{Class, Effect, Operation, PremiseSource, Quorum, RegistryError, schema};

/// Hard cap on any proof lifetime, in seconds.
pub(crate) use countersign_verifier::lifetimes::LIFETIME_CAP_SECS;
/// Longest decision window, in seconds (7 days).
pub(crate) const DECISION_WINDOW_CAP_SECS: u64 = 7 * 24 * 60 * 60;
/// Longest description or preview template, in characters.
const MAX_TEXT_CHARS: usize = 500;

/// The whole registry file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFile {
    #[serde(default)]
    pub(crate) operation: Vec<RawOperation>,
}

/// One `[[operation]]` entry as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOperation {
    pub(crate) name: String,
    description: String,
    class: Class,
    replay_safe: bool,
    #[serde(default)]
    require_passkey: bool,
    #[serde(default)]
    quorum: Option<RawQuorum>,
    #[serde(default)]
    lifetime_secs: Option<u64>,
    #[serde(default)]
    decision_window_secs: Option<u64>,
    #[serde(default)]
    escalation: Option<RawEscalation>,
    #[serde(default)]
    premise: Option<PremiseSource>,
    preview: String,
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    unverified_fields: Vec<String>,
    effect: Effect,
    schema: toml::Table,
}

/// `^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`
pub(crate) fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|part| {
            let mut bytes = part.bytes();
            matches!(bytes.next(), Some(b'a'..=b'z'))
                && bytes.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_'))
        })
}

impl RawOperation {
    /// Checks the entry and builds the operation.
    pub(crate) fn build(self, schemas: crate::Schemas) -> Result<Operation, RegistryError> {
        let op = self.name.clone();
        if !is_valid_name(&op) {
            return Err(RegistryError::InvalidName(op));
        }
        let invalid = |field: &str, reason: String| RegistryError::InvalidField {
            operation: op.clone(),
            field: field.to_owned(),
            reason,
        };
        check_text(&self.description).map_err(|r| invalid("description", r))?;
        check_text(&self.preview).map_err(|r| invalid("preview", r))?;
        if let Some(secs) = self.lifetime_secs
            && !(1..=LIFETIME_CAP_SECS).contains(&secs)
        {
            return Err(invalid(
                "lifetime_secs",
                format!("{secs} is outside 1..={LIFETIME_CAP_SECS}"),
            ));
        }
        if let Some(secs) = self.decision_window_secs
            && !(1..=DECISION_WINDOW_CAP_SECS).contains(&secs)
        {
            return Err(invalid(
                "decision_window_secs",
                format!("{secs} is outside 1..={DECISION_WINDOW_CAP_SECS}"),
            ));
        }
        self.effect.check(&op, self.require_passkey)?;

        let bad_schema = |reason: String| RegistryError::BadSchema {
            operation: op.clone(),
            reason,
        };
        let schema = Value::Object(schema::table_to_json(&self.schema).map_err(bad_schema)?);
        let properties = match &schema {
            Value::Object(map) => schema::check_shape(map).map_err(bad_schema)?,
            _ => Vec::new(), // unreachable: built from a table just above
        };
        let validator = std::sync::OnceLock::new();
        if schemas == crate::Schemas::Compiled {
            let compiled = schema::compile(&schema).map_err(bad_schema)?;
            // A new cell: setting it cannot fail.
            let _ = validator.set(Ok(compiled));
        }
        if let Some(premise) = &self.premise {
            premise.check(&schema).map_err(|r| invalid("premise", r))?;
        }
        if let Some(pointer) = &self.target {
            crate::target::check(pointer, &schema).map_err(|r| invalid("target", r))?;
        }

        let mut seen = BTreeSet::new();
        for field in &self.unverified_fields {
            if !properties.contains(field) {
                return Err(RegistryError::UnknownUnverifiedField {
                    operation: op.clone(),
                    field: field.clone(),
                });
            }
            if !seen.insert(field.as_str()) {
                return Err(invalid(
                    "unverified_fields",
                    format!("{field:?} is listed twice"),
                ));
            }
        }

        let template = Template::parse(&self.preview).map_err(|r| invalid("preview", r))?;
        for placeholder in template.placeholders() {
            let reason = if !properties.iter().any(|p| p == placeholder) {
                "is not a property of the schema"
            } else if self.unverified_fields.iter().any(|f| f == placeholder) {
                "names an unverified field; those are shown only in the unverified section"
            } else {
                continue;
            };
            return Err(RegistryError::BadPlaceholder {
                operation: op.clone(),
                placeholder: placeholder.to_owned(),
                reason: reason.to_owned(),
            });
        }

        let quorum = match &self.quorum {
            Some(raw) => Some(raw.build().map_err(|r| invalid("quorum", r))?),
            None => None,
        };
        let escalation = match &self.escalation {
            Some(raw) => Some(
                raw.build(self.decision_window_secs)
                    .map_err(|r| invalid("escalation", r))?,
            ),
            None => None,
        };
        let contract = contract(&self, &schema, quorum.as_ref().map(Quorum::to_json))
            .map_err(|r| invalid("schema", r))?;
        let revision = countersign_verifier::canonical::sha256_hex(contract.as_bytes());
        Ok(Operation {
            name: self.name,
            description: self.description,
            class: self.class,
            schema,
            preview: self.preview,
            effect: self.effect,
            replay_safe: self.replay_safe,
            require_passkey: self.require_passkey,
            quorum,
            lifetime_secs: self.lifetime_secs,
            decision_window_secs: self.decision_window_secs,
            escalation,
            premise: self.premise,
            target: self.target,
            unverified_fields: self.unverified_fields,
            revision,
            contract,
            template,
            validator,
            upstream_schema: false,
            upstream_annotations: None,
        })
    }
}

/// The canonical JSON of the full definition (its SHA-256 hex is the
/// contract revision), with
/// defaults made explicit so that omitting a default changes nothing.
/// `require_passkey`, `quorum` and `premise` are the exceptions: each is in
/// the hashed definition only when set (true, present), so that every
/// operation defined before the key existed keeps its revision (and its
/// outstanding proofs), while setting one, changing it or removing it
/// changes it. `target` is not in it either: it shapes only what an
/// operator's Cedar policy sees as the resource (the policy schema's digest
/// covers it), not what a person approves. `decision_window_secs` is not in it: a proposal's window is
/// fixed when it is proposed and no proof binds it, so changing the
/// window takes no approval back.
fn contract(raw: &RawOperation, schema: &Value, quorum: Option<Value>) -> Result<String, String> {
    let effect = serde_json::to_value(&raw.effect).map_err(|e| e.to_string())?;
    let mut definition = json!({
        "name": raw.name,
        "description": raw.description,
        "class": raw.class,
        "replay_safe": raw.replay_safe,
        "lifetime_secs": raw.lifetime_secs,
        "preview": raw.preview,
        "unverified_fields": raw.unverified_fields,
        "effect": effect,
        "schema": schema,
    });
    if raw.require_passkey {
        definition["require_passkey"] = Value::Bool(true);
    }
    if let Some(premise) = &raw.premise {
        definition["premise"] = serde_json::to_value(premise).map_err(|e| e.to_string())?;
    }
    if let Some(quorum) = quorum {
        definition["quorum"] = quorum;
    }

    canonical::to_canonical(&definition).map_err(|e| e.to_string())
}

/// Descriptions and templates are one line of at most 500 visible characters.
fn check_text(text: &str) -> Result<(), String> {
    if text.trim().is_empty() {
        return Err("must not be empty".into());
    }
    if text.chars().count() > MAX_TEXT_CHARS {
        return Err(format!("is longer than {MAX_TEXT_CHARS} characters"));
    }
    if let Some(c) = text.chars().find(|c| is_terminal_unsafe(*c)) {
        return Err(format!(
            "contains the control or invisible character U+{:04X}",
            u32::from(c)
        ));
    }
    Ok(())
}
