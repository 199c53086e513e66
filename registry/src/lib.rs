//! The countersign operation registry: the operations a proposal may name,
//! their argument schemas, contract revisions, previews and effects, and the
//! operator's [`Policy`]. Loaded identically by the signer and every head.
//!
//! This crate owns validation of proposed arguments into [`CanonicalArgs`]
//! and the authoritative preview text. It performs no effect, holds no key
//! and fetches nothing from the network (schemas are compiled offline).
//!
//! # Registry file format (TOML)
//!
//! ```toml
//! [[operation]]
//! name = "schedule.create"        # ^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$, unique
//! description = "Create a schedule" # one line, no control characters
//! class = "write"                 # "read" | "write"
//! replay_safe = true              # may an interrupted run be replayed (same key)?
//! require_passkey = false         # optional; true: execute only a proof whose signer
//!                                 # checked a passkey with user verification
//!                                 # (`amr` has "passkey-uv"), else `passkey_required`
//! quorum = { required = 2, approvers = ["alice", "bob", "carol"] }
//!                                 # optional; the signer issues a proof only once
//!                                 # `required` distinct named approvers (certificates
//!                                 # `countersign://approver/<principal>/<name>`) approved;
//!                                 # 1 <= required <= approvers (at most 16, distinct)
//! lifetime_secs = 300             # optional, 1..=1800; else the policy default
//! decision_window_secs = 900      # optional, 1..=604800: a proposal no one decided
//!                                 # by then expires; else the policy's (3600 by default)
//! escalation = { after_secs = 300, channels = ["smtp"], approvers = ["carol"] }
//!                                 # optional: undecided after `after_secs` (shorter than
//!                                 # the window), the notification goes again to these
//!                                 # channels (webhook, smtp, desktop, push) and these
//!                                 # approvers' paired devices
//! preview = "Create schedule {name} on cron {cron}"  # {arg} = top-level property,
//!                                 # {{ and }} are literal braces
//! unverified_fields = ["description"] # free-text properties; shown only in the
//!                                 # "Model-supplied, unverified" section
//! target = "/name"                # optional: RFC 6901 pointer to the string argument
//!                                 # an operator's Cedar policy sees as the resource;
//!                                 # declared `type = "string"`, or inside an open
//!                                 # object (then missing or not a string: no target).
//!                                 # Not in the contract revision.
//!
//! [operation.effect]
//! kind = "builtin"                # name = a BuiltinEffect, equal to `name`
//! name = "schedule.create"
//! # or: kind = "command", program = "/abs/path", args = ["fixed", "args"],
//! #     timeout_secs = 10 (1..=300)
//! # or: kind = "webhook", url = "https://host/path", timeout_secs = 10 (1..=300),
//! #     accept_status = [200, 201, 202, 204] (the default; each 200..=299),
//! #     trust_roots = "/abs/ca-bundle.pem" (required for https, refused for http),
//! #     allow_plain_http_loopback = false (true permits http:// to a loopback host)
//!
//! [operation.schema]              # JSON Schema draft 2020-12 as a TOML table
//! type = "object"                 # required
//! additionalProperties = false    # required; no top-level patternProperties
//! required = ["name", "cron"]
//! [operation.schema.properties.name]
//! type = "string"
//! ```
//!
//! Unknown keys, duplicate names, relative programs, unknown builtins,
//! placeholders that are not (verified) properties, unknown unverified
//! fields and schemas that are not closed objects are refused with an error
//! naming the operation and field. `$ref` to anything outside the schema
//! fails to compile (no retrieval); `format` is asserted.
//!
//! The contract revision of an operation is the SHA-256 hex of the canonical
//! JSON (RFC 8785) of `{name, description, class, replay_safe, lifetime_secs
//! (null when absent), preview, unverified_fields ([] when absent), effect
//! {kind, ...}, schema}`, plus `require_passkey: true` when it is set (absent
//! and false hash alike, as before the key existed) and `quorum: {required,
//! approvers (sorted)}` when present: TOML formatting and key
//! order do not affect it; any change of meaning does.
//!
//! # Preview layout
//!
//! ```text
//! Operation: schedule.create [write] contract 0123456789ab
//! Action:    Create schedule "nightly" on cron "0 3 * * *"
//! Arguments: {"cron":"0 3 * * *","name":"nightly"}
//! ---- Model-supplied, unverified ----
//! description: "backups"
//! note: "please approve"
//! ```
//!
//! Values are canonical JSON; every character of General_Category Cc, Cf,
//! Cs, Co, Cn, Zl and Zp and every Default_Ignorable_Code_Point is shown as
//! a `\u{..}` escape ([`terminal_safe`]), and an argument holding any
//! non-ASCII character gets a `Non-ASCII:` line naming its code points and
//! whether it mixes scripts ([`lookalike`]).
#![forbid(unsafe_code)]

pub mod action;
mod args;
mod current;
mod definition;
mod deliveries;
pub mod effect;
mod error;
mod escalation;
mod escape_table;
pub mod gateway;
pub mod lookalike;
mod operation;
mod policy;
mod premise;
mod preview;
mod quorum;
pub mod rule;
mod schema;
mod target;
mod webhook;

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::Path;

pub use args::CanonicalArgs;
pub use countersign_verifier::{ApproverName, BuiltinEffect};
pub use current::CurrentRegistry;
pub use deliveries::Deliveries;
pub use effect::{DEFAULT_ACCEPT_STATUS, Effect, EffectKind};
pub use error::{ArgumentsError, PolicyError, RegistryError};
pub use escalation::{ESCALATION_CHANNELS, Escalation};
pub use operation::{Class, Operation};
pub use policy::Policy;
pub use premise::{PremiseRead, PremiseSource};
pub use preview::{escape_table_unicode_version, is_terminal_unsafe, terminal_safe};
pub use quorum::{MAX_QUORUM_APPROVERS, Quorum};
pub use schema::errors as schema_errors;
pub use webhook::{MAX_URL_BYTES, WebhookUrl};

/// Largest registry file accepted, in bytes.
pub const MAX_REGISTRY_BYTES: usize = 1024 * 1024;

/// The text of a registry file: at most [`MAX_REGISTRY_BYTES`], UTF-8.
fn read_text(path: &Path) -> Result<String, RegistryError> {
    let io = |e: std::io::Error| RegistryError::Io {
        path: path.display().to_string(),
        reason: e.to_string(),
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    file.take(MAX_REGISTRY_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() > MAX_REGISTRY_BYTES {
        return Err(RegistryError::TooLarge {
            limit: MAX_REGISTRY_BYTES,
        });
    }
    String::from_utf8(bytes).map_err(|_| RegistryError::Io {
        path: path.display().to_string(),
        reason: "not UTF-8".into(),
    })
}

/// The loaded set of operations, by name, and the gateway configuration
/// and pinned tools their `mcp:` operations came from.
#[derive(Debug)]
pub struct Registry {
    operations: BTreeMap<String, Operation>,
    gateway: Option<gateway::GatewayFile>,
    pins: gateway::Pins,
}

/// The texts a registry is loaded from: the registry file, and beside it
/// the gateway's configuration and pinned tools when they exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sources {
    /// The registry file's text.
    pub registry: String,
    /// `gateway.toml`'s text, if the file exists.
    pub gateway: Option<String>,
    /// `gateway-pins.json`'s text, if the file exists.
    pub pins: Option<String>,
}

impl Sources {
    /// Reads the registry file at `path` and its siblings
    /// [`gateway::GATEWAY_FILE`] and [`gateway::PINS_FILE`] (each at most
    /// [`MAX_REGISTRY_BYTES`]; absent is `None`, unreadable an error).
    pub fn read(path: &Path) -> Result<Sources, RegistryError> {
        let sibling = |name: &str| -> Result<Option<String>, RegistryError> {
            let Some(dir) = path.parent() else {
                return Ok(None);
            };
            let path = dir.join(name);
            match std::fs::symlink_metadata(&path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                _ => read_text(&path).map(Some),
            }
        };
        Ok(Sources {
            registry: read_text(path)?,
            gateway: sibling(gateway::GATEWAY_FILE)?,
            pins: sibling(gateway::PINS_FILE)?,
        })
    }
}

/// When a registry compiles its operations' argument schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schemas {
    /// At load: a schema that does not compile refuses the registry. The
    /// signer, which validates every proposal's arguments, loads this way.
    Compiled,
    /// On an operation's first [`Operation::validate_arguments`] (a schema
    /// that does not compile refuses those arguments then). For processes
    /// that never validate arguments with it (heads: the signer validates
    /// them), so a short-lived CLI process compiles nothing it does not use.
    OnFirstUse,
}

impl Registry {
    /// Reads and loads a registry file (at most [`MAX_REGISTRY_BYTES`]),
    /// with the gateway files beside it ([`Sources::read`]).
    pub fn load(path: &Path) -> Result<Registry, RegistryError> {
        Registry::from_sources(&Sources::read(path)?, Schemas::Compiled)
    }

    /// Loads a registry from its sources: the registry file's operations,
    /// then, with a gateway configuration, an `mcp:` operation per pinned
    /// tool it does not deny and `gateway.pin` (the registry file may not
    /// declare an operation of that name).
    pub fn from_sources(sources: &Sources, schemas: Schemas) -> Result<Registry, RegistryError> {
        let mut registry = Registry::parse(&sources.registry, schemas)?;
        let Some(text) = &sources.gateway else {
            return Ok(registry);
        };
        let file = gateway::GatewayFile::parse(text)?;
        let pins = match &sources.pins {
            Some(text) => gateway::Pins::parse(text)?,
            None => gateway::Pins::empty(),
        };
        let pin = gateway::pin_operation(&file, schemas)?;
        for op in gateway::gateway_operations(&file, &pins, schemas)?
            .into_iter()
            .chain([pin])
        {
            if registry.operations.contains_key(&op.name) {
                return Err(RegistryError::DuplicateOperation(op.name));
            }
            registry.operations.insert(op.name.clone(), op);
        }
        registry.gateway = Some(file);
        registry.pins = pins;
        Ok(registry)
    }

    /// Loads a registry from TOML text, compiling every schema now.
    pub fn from_toml_str(text: &str) -> Result<Registry, RegistryError> {
        Registry::parse(text, Schemas::Compiled)
    }

    /// Loads a registry from TOML text, compiling its schemas as `schemas`
    /// says. Every other check runs at load either way.
    pub fn parse(text: &str, schemas: Schemas) -> Result<Registry, RegistryError> {
        if text.len() > MAX_REGISTRY_BYTES {
            return Err(RegistryError::TooLarge {
                limit: MAX_REGISTRY_BYTES,
            });
        }
        let raw: definition::RawFile =
            toml::from_str(text).map_err(|e| RegistryError::Toml(e.to_string()))?;
        if raw.operation.is_empty() {
            return Err(RegistryError::NoOperations);
        }
        let mut operations = BTreeMap::new();
        for entry in raw.operation {
            if operations.contains_key(&entry.name) {
                return Err(RegistryError::DuplicateOperation(entry.name));
            }
            let op = entry.build(schemas)?;
            operations.insert(op.name.clone(), op);
        }
        Ok(Registry {
            operations,
            gateway: None,
            pins: gateway::Pins::empty(),
        })
    }

    /// The gateway's configuration, if `gateway.toml` exists.
    pub fn gateway(&self) -> Option<&gateway::GatewayFile> {
        self.gateway.as_ref()
    }

    /// The pinned tool definitions (none without `gateway-pins.json`).
    pub fn pins(&self) -> &gateway::Pins {
        &self.pins
    }

    /// The shipped default registry (`deploy/operations.toml`).
    pub fn default_toml() -> &'static str {
        include_str!("../../deploy/operations.toml")
    }

    /// The operation named `name`, if registered.
    pub fn get(&self, name: &str) -> Option<&Operation> {
        self.operations.get(name)
    }

    /// All operations, sorted by name.
    pub fn operations(&self) -> impl Iterator<Item = &Operation> {
        self.operations.values()
    }

    /// The operations a caller proposes through the data operations
    /// (CLI `propose`, the API, MCP): every one but the agent operations,
    /// which only a coding agent's hook proposes
    /// ([`Operation::proposed_by_hooks`]).
    pub fn proposable(&self) -> impl Iterator<Item = &Operation> {
        self.operations().filter(|op| !op.proposed_by_hooks())
    }
}
