//! One registered operation: its definition as loaded, its contract revision,
//! its compiled schema and parsed preview template, and the two things done
//! with proposed arguments (validate them into [`CanonicalArgs`], render the
//! preview from them).
//!
//! An `Operation` can only be built by loading a registry (`definition.rs`),
//! so its revision, validator and template always match its fields. This
//! module must not accept arguments without schema validation.

use std::fmt;
use std::path::PathBuf;
use std::sync::OnceLock;

use countersign_verifier::canonical;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::preview::{self, Template};
use crate::{ArgumentsError, CanonicalArgs, PremiseRead, PremiseSource, Quorum, schema};
use countersign_verifier::Premise;

/// Read operations observe; write operations change state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    /// Observes state only.
    Read,
    /// Changes state.
    Write,
}

impl Class {
    /// `"read"` or `"write"`, as written in the registry file.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Read => "read",
            Class::Write => "write",
        }
    }
}

/// What applying an operation does. Matched exhaustively wherever it is
/// acted on: a new kind does not compile until each head decides, before
/// consuming a proof, to run it or refuse it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Effect {
    /// A built-in effect over the ledger's state store; `name` names
    /// a [`crate::BuiltinEffect`] and equals the operation's name.
    Builtin {
        /// The builtin effect's name.
        name: String,
    },
    /// A fixed program run without a shell, canonical arguments on stdin.
    Command {
        /// Absolute path of the program.
        program: PathBuf,
        /// Fixed arguments passed to the program (never from the proposal).
        #[serde(default)]
        args: Vec<String>,
        /// Seconds before the program is killed, 1..=300.
        timeout_secs: u64,
    },
    /// An HTTP POST of the canonical arguments to a fixed URL, with the
    /// proof, the nonce and the proposal id in headers.
    Webhook {
        /// `https://` URL, or `http://` to a loopback IP address (never a
        /// name such as `localhost`) when `allow_plain_http_loopback` is set. Checked by [`crate::WebhookUrl::parse`].
        url: String,
        /// Seconds for the whole exchange (connect to response), 1..=300.
        timeout_secs: u64,
        /// Response statuses that mean applied (each 200..=299).
        #[serde(default = "default_accept_status")]
        accept_status: Vec<u16>,
        /// Absolute path of a PEM bundle of the CAs trusted for the
        /// receiver's certificate; required for `https`, refused for `http`.
        #[serde(default)]
        trust_roots: Option<PathBuf>,
        /// Permits an `http://` URL, and only to a loopback IP address.
        #[serde(default)]
        allow_plain_http_loopback: bool,
    },
    /// `rule.create` only: the arguments are an auto-approval rule
    /// definition, and a person's approval of the proposal creates the rule
    /// in the signer. No proof is issued and no head ever applies it.
    Rule,
}

/// The statuses a webhook accepts when the registry names none.
pub const DEFAULT_ACCEPT_STATUS: [u16; 4] = [200, 201, 202, 204];

fn default_accept_status() -> Vec<u16> {
    DEFAULT_ACCEPT_STATUS.to_vec()
}

/// A registered operation. Fields are the definition from the registry file;
/// the contract revision, compiled schema and template are derived at load.
pub struct Operation {
    /// Dotted lowercase name, e.g. `schedule.create`.
    pub name: String,
    /// One-line human description.
    pub description: String,
    /// Read or write.
    pub class: Class,
    /// JSON Schema (draft 2020-12) of the arguments: a closed object.
    pub schema: Value,
    /// Preview template with `{arg}` placeholders.
    pub preview: String,
    /// What applying the operation does.
    pub effect: Effect,
    /// Whether an interrupted application may be replayed with the same
    /// idempotency key.
    pub replay_safe: bool,
    /// Whether executing requires a proof whose signer checked a passkey
    /// assertion with user verification (`amr` containing `passkey-uv`);
    /// `require_passkey` in the registry file, false when absent.
    pub require_passkey: bool,
    /// The quorum of named approvers whose approvals the signer needs
    /// before it issues a proof (`quorum` in the registry file), or `None`
    /// for a decision by any one approver of the principal.
    pub quorum: Option<Quorum>,
    /// Requested proof lifetime in seconds (1..=1800), else the policy default.
    pub lifetime_secs: Option<u64>,
    /// The fact about current state a proposal of this operation is
    /// approved under (`[operation.premise]`), if any.
    pub premise: Option<PremiseSource>,
    /// Free-text argument names, shown as model-supplied and unverified.
    pub unverified_fields: Vec<String>,
    pub(crate) revision: String,
    pub(crate) template: Template,
    /// The compiled schema: at load ([`crate::Schemas::Compiled`]), or on
    /// the first validation ([`crate::Schemas::OnFirstUse`]); a schema that
    /// does not compile is kept as its reason.
    pub(crate) validator: OnceLock<Result<jsonschema::Validator, String>>,
}

impl fmt::Debug for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Operation")
            .field("name", &self.name)
            .field("class", &self.class)
            .field("effect", &self.effect)
            .field("replay_safe", &self.replay_safe)
            .field("require_passkey", &self.require_passkey)
            .field("quorum", &self.quorum)
            .field("lifetime_secs", &self.lifetime_secs)
            .field("premise", &self.premise)
            .field("contract_revision", &self.revision)
            .finish_non_exhaustive()
    }
}

impl Operation {
    /// SHA-256 hex of the canonical JSON of the full definition.
    pub fn contract_revision(&self) -> &str {
        &self.revision
    }

    /// Whether a proof for this operation must carry passkey assurance
    /// (`amr` containing `passkey-uv`, see
    /// `countersign_verifier::Claims::passkey_verified`): a head refuses
    /// one without it as `passkey_required`, before consuming anything.
    pub fn requires_passkey(&self) -> bool {
        self.require_passkey
    }

    /// The read (or command) these arguments' premise makes, if the operation
    /// declares one (`Ok(None)` if not); `PremiseKey` if one is declared
    /// and these arguments name no usable key.
    pub fn premise_read(
        &self,
        args: &CanonicalArgs,
    ) -> Result<Option<PremiseRead>, ArgumentsError> {
        match &self.premise {
            None => Ok(None),
            Some(source) => source
                .read_for(args)
                .map(Some)
                .map_err(|key| ArgumentsError::PremiseKey(key.to_owned())),
        }
    }

    pub(crate) fn template(&self) -> &Template {
        &self.template
    }

    /// Strictly parses `json` (at most 64 KiB), requires an object that
    /// matches the schema, and returns its canonical form and hash.
    pub fn validate_arguments(&self, json: &[u8]) -> Result<CanonicalArgs, ArgumentsError> {
        let value = canonical::parse(json, canonical::MAX_ARGS_BYTES)?;
        if !value.is_object() {
            return Err(ArgumentsError::NotAnObject);
        }
        let validator = self
            .validator
            .get_or_init(|| schema::compile(&self.schema))
            .as_ref()
            .map_err(|reason| ArgumentsError::Schema(vec![format!("the schema {reason}")]))?;
        let errors = schema::errors(validator, &value);
        if !errors.is_empty() {
            return Err(ArgumentsError::Schema(errors));
        }
        CanonicalArgs::from_value(value)
    }

    /// Renders the authoritative preview from canonical arguments, the
    /// premise the signer read (for an operation that declares one) and
    /// the proposer's note (model-supplied). See the crate docs for the
    /// layout.
    pub fn render_preview(
        &self,
        args: &CanonicalArgs,
        premise: Option<&Premise>,
        note: &str,
    ) -> String {
        preview::render(self, args, premise, note)
    }
}
