//! Error types of the registry: one enum for loading a registry file, one for
//! validating proposed arguments, one for policy values. This module owns the
//! wording of those errors; it must not include secrets or unescaped
//! model-supplied text (argument values are masked or escaped before they get
//! here).

use countersign_verifier::canonical::CanonicalError;
use countersign_verifier::claims::UnsignableArgs;

/// Why a registry file was refused. Every variant that concerns one operation
/// names it, and the field at fault, so an operator can fix the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// The file could not be read.
    #[error("cannot read registry file {path}: {reason}")]
    Io {
        /// The path that was read.
        path: String,
        /// The operating system's reason.
        reason: String,
    },
    /// The file is larger than [`crate::MAX_REGISTRY_BYTES`].
    #[error("registry file is larger than {limit} bytes")]
    TooLarge {
        /// The size limit in bytes.
        limit: usize,
    },
    /// The TOML is malformed or has an unknown or missing key.
    #[error("registry TOML: {0}")]
    Toml(String),
    /// The file defines no operation.
    #[error("registry defines no operation")]
    NoOperations,
    /// Two operations share a name.
    #[error("operation `{0}` is defined more than once")]
    DuplicateOperation(String),
    /// An operation name does not match `^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`.
    #[error("operation name {0:?} must match ^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)*$")]
    InvalidName(String),
    /// A `command` effect names a program by a relative path.
    #[error("operation `{operation}`: field `effect.program`: {program:?} is not an absolute path")]
    RelativeProgram {
        /// The operation at fault.
        operation: String,
        /// The program as written.
        program: String,
    },
    /// A `builtin` effect names no known builtin (or not the operation's own).
    #[error("operation `{operation}`: field `effect.name`: {reason}")]
    UnknownBuiltin {
        /// The operation at fault.
        operation: String,
        /// What is wrong with the builtin name.
        reason: String,
    },
    /// The preview template names a placeholder that is not a schema property
    /// (or names an unverified field, which belongs in the unverified section).
    #[error("operation `{operation}`: field `preview`: placeholder {{{placeholder}}} {reason}")]
    BadPlaceholder {
        /// The operation at fault.
        operation: String,
        /// The placeholder name.
        placeholder: String,
        /// What is wrong with it.
        reason: String,
    },
    /// `unverified_fields` names something that is not a schema property.
    #[error(
        "operation `{operation}`: field `unverified_fields`: {field:?} is not a property of the schema"
    )]
    UnknownUnverifiedField {
        /// The operation at fault.
        operation: String,
        /// The unknown field name.
        field: String,
    },
    /// The schema is not a closed object schema, is invalid JSON Schema, or
    /// cannot be compiled offline.
    #[error("operation `{operation}`: field `schema`: {reason}")]
    BadSchema {
        /// The operation at fault.
        operation: String,
        /// What is wrong with the schema.
        reason: String,
    },
    /// The gateway's configuration or its pinned tools are refused.
    #[error("gateway: {0}")]
    Gateway(String),
    /// Any other field with an out-of-range or malformed value.
    #[error("operation `{operation}`: field `{field}`: {reason}")]
    InvalidField {
        /// The operation at fault.
        operation: String,
        /// The field at fault (dotted path).
        field: String,
        /// What is wrong with the value.
        reason: String,
    },
}

/// Why proposed (or stored) arguments were refused. `Display` is one line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ArgumentsError {
    /// The bytes are not strict JSON within the limits of the canonical parser.
    #[error("arguments are not acceptable JSON: {0}")]
    Json(#[from] CanonicalError),
    /// The arguments are valid JSON but not an object.
    #[error("arguments must be a JSON object")]
    NotAnObject,
    /// The arguments do not match the operation's schema. Each entry is
    /// `<instance path>: <message>` with values masked and escaped.
    #[error("arguments do not match the schema: {}", .0.join("; "))]
    Schema(Vec<String>),
    /// Stored argument text is not in canonical form.
    #[error("stored arguments are not canonical JSON")]
    NotCanonical,
    /// Valid arguments that no proof could carry, refused at proposal so
    /// that nothing is accepted that can never be approved or verified.
    #[error("arguments cannot be approved: {0}")]
    Unsignable(#[from] UnsignableArgs),
    /// The operation's premise is keyed by this argument, and its value
    /// names no state key (empty, or longer than 256 bytes).
    #[error(
        "argument `{0}` names the state this operation's premise reads: it must be 1 to 256 bytes"
    )]
    PremiseKey(String),
}

/// Why policy values were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The audience is empty, longer than 256 bytes, or not printable ASCII
    /// without spaces.
    #[error("policy audience must be 1..=256 printable ASCII characters without spaces")]
    BadAudience,
    /// A lifetime is 0 or above the hard cap.
    #[error("policy field `{field}`: {value} is outside 1..={cap} seconds")]
    LifetimeOutOfRange {
        /// The field at fault.
        field: &'static str,
        /// The value given.
        value: u64,
        /// The hard cap.
        cap: u64,
    },
    /// The default lifetime exceeds the maximum.
    #[error("policy default_lifetime_secs ({default}) exceeds max_lifetime_secs ({max})")]
    DefaultAboveMax {
        /// The default lifetime.
        default: u64,
        /// The maximum lifetime.
        max: u64,
    },
    /// The decision window is 0 or above its cap.
    #[error("policy decision_window_secs: {value} is outside 1..={cap} seconds")]
    DecisionWindowOutOfRange {
        /// The value given.
        value: u64,
        /// The cap (7 days).
        cap: u64,
    },
}
