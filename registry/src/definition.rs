//! Loading operation definitions from the registry TOML: the raw serde
//! structs (unknown keys refused) and the checks that turn one raw entry into
//! an [`Operation`], including its contract revision.
//!
//! Every refusal names the operation and the field. This module must not
//! accept a definition that would make a preview, a schema check or an
//! effect ambiguous.

use std::collections::BTreeSet;
use std::path::Path;

use countersign_verifier::canonical;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::preview::{Template, is_terminal_unsafe};
use crate::quorum::RawQuorum;
use crate::{
    BuiltinEffect, Class, Effect, Operation, PremiseSource, Quorum, RegistryError, WebhookUrl,
    schema,
};

/// Hard cap on any proof lifetime, in seconds.
pub(crate) use countersign_verifier::lifetimes::LIFETIME_CAP_SECS;
/// Bounds of a command or webhook effect's timeout, in seconds.
const COMMAND_TIMEOUT_SECS: std::ops::RangeInclusive<u64> = 1..=300;
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
    premise: Option<PremiseSource>,
    preview: String,
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
        self.check_effect()?;

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
        let revision = revision(&self, &schema, quorum.as_ref().map(Quorum::to_json))
            .map_err(|r| invalid("schema", r))?;
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
            premise: self.premise,
            unverified_fields: self.unverified_fields,
            revision,
            template,
            validator,
        })
    }

    fn check_effect(&self) -> Result<(), RegistryError> {
        let op = &self.name;
        let invalid_rule = |reason: &str| RegistryError::InvalidField {
            operation: op.clone(),
            field: "effect.kind".to_owned(),
            reason: reason.to_owned(),
        };
        if (op == crate::rule::RULE_CREATE) != matches!(self.effect, Effect::Rule) {
            return Err(invalid_rule(
                "the effect kind \"rule\" backs exactly the operation rule.create",
            ));
        }
        match &self.effect {
            // Rules never cover an operation that requires a passkey, and
            // an installation that requires one for every approval refuses
            // every rule: a passkey on rule.create itself would add nothing
            // the signer could honour without storing its assertion.
            Effect::Rule if self.require_passkey => Err(invalid_rule(
                "rule.create cannot require a passkey (see docs/rules.md)",
            )),
            Effect::Rule => Ok(()),
            Effect::Builtin { name } => {
                let reason = if name.parse::<BuiltinEffect>().is_err() {
                    format!(
                        "{name:?} is not a builtin (known: {})",
                        BuiltinEffect::known()
                    )
                } else if name != op {
                    format!("builtin {name:?} may only back the operation of the same name")
                } else {
                    return Ok(());
                };
                Err(RegistryError::UnknownBuiltin {
                    operation: op.clone(),
                    reason,
                })
            }
            Effect::Command {
                program,
                args,
                timeout_secs,
            } => {
                if !program.is_absolute() {
                    return Err(RegistryError::RelativeProgram {
                        operation: op.clone(),
                        program: program.display().to_string(),
                    });
                }
                let invalid = |field: &str, reason: String| RegistryError::InvalidField {
                    operation: op.clone(),
                    field: field.to_owned(),
                    reason,
                };
                if program.as_os_str().as_encoded_bytes().contains(&0) {
                    return Err(invalid("effect.program", "contains a NUL byte".into()));
                }
                if args.iter().any(|a| a.contains('\0')) {
                    return Err(invalid(
                        "effect.args",
                        "an argument contains a NUL byte".into(),
                    ));
                }
                if !COMMAND_TIMEOUT_SECS.contains(timeout_secs) {
                    return Err(invalid(
                        "effect.timeout_secs",
                        format!("{timeout_secs} is outside 1..=300"),
                    ));
                }
                Ok(())
            }
            Effect::Webhook {
                url,
                timeout_secs,
                accept_status,
                trust_roots,
                allow_plain_http_loopback,
            } => check_webhook(
                url,
                *timeout_secs,
                accept_status,
                trust_roots.as_deref(),
                *allow_plain_http_loopback,
            )
            .map_err(|(field, reason)| RegistryError::InvalidField {
                operation: op.clone(),
                field: format!("effect.{field}"),
                reason,
            }),
        }
    }
}

/// SHA-256 hex of the canonical JSON of the full definition, with
/// defaults made explicit so that omitting a default changes nothing.
/// `require_passkey`, `quorum` and `premise` are the exceptions: each is in
/// the hashed definition only when set (true, present), so that every
/// operation defined before the key existed keeps its revision (and its
/// outstanding proofs), while setting one, changing it or removing it
/// changes it.
fn revision(raw: &RawOperation, schema: &Value, quorum: Option<Value>) -> Result<String, String> {
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
    canonical::canonical_sha256_hex(&definition).map_err(|e| e.to_string())
}

/// The checks of a `webhook` effect; the error names the field (under
/// `effect.`) and the reason.
fn check_webhook(
    url: &str,
    timeout_secs: u64,
    accept_status: &[u16],
    trust_roots: Option<&Path>,
    allow_plain_http_loopback: bool,
) -> Result<(), (&'static str, String)> {
    let parsed = WebhookUrl::parse(url).map_err(|r| ("url", r))?;
    if parsed.is_https() {
        if allow_plain_http_loopback {
            return Err((
                "allow_plain_http_loopback",
                "applies only to an http:// URL; remove it for https".into(),
            ));
        }
        let Some(roots) = trust_roots else {
            return Err((
                "trust_roots",
                "is required for an https URL: the absolute path of a PEM bundle of the receiver's CAs (no system roots are built in)".into(),
            ));
        };
        if !roots.is_absolute() {
            return Err(("trust_roots", format!("{roots:?} is not an absolute path")));
        }
        if roots.as_os_str().as_encoded_bytes().contains(&0) {
            return Err(("trust_roots", "contains a NUL byte".into()));
        }
    } else {
        if !allow_plain_http_loopback {
            return Err((
                "url",
                "plain http:// is refused; use https://, or set allow_plain_http_loopback = true for a loopback receiver".into(),
            ));
        }
        if let Some(reason) = parsed.plain_http_refusal() {
            return Err(("url", reason));
        }
        if trust_roots.is_some() {
            return Err(("trust_roots", "applies only to an https URL".into()));
        }
    }
    if !COMMAND_TIMEOUT_SECS.contains(&timeout_secs) {
        return Err(("timeout_secs", format!("{timeout_secs} is outside 1..=300")));
    }
    if accept_status.is_empty() {
        return Err(("accept_status", "must name at least one status".into()));
    }
    let mut seen = BTreeSet::new();
    for status in accept_status {
        if !(200..=299).contains(status) {
            return Err(("accept_status", format!("{status} is outside 200..=299")));
        }
        if !seen.insert(*status) {
            return Err(("accept_status", format!("{status} is listed twice")));
        }
    }
    Ok(())
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
