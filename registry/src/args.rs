//! Canonical arguments: the one form in which arguments are stored, hashed,
//! signed over and previewed. This module owns the invariant that `text` is
//! exactly the RFC 8785 encoding of `value` and `sha256` its hash; it must
//! not build a `CanonicalArgs` from anything else.

use countersign_verifier::canonical;
use countersign_verifier::claims::check_signable_args;
use serde_json::Value;

use crate::ArgumentsError;

/// A JSON object in canonical form with its SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanonicalArgs {
    text: String,
    value: Value,
    sha256: String,
}

impl CanonicalArgs {
    /// Builds from a parsed object (the caller has checked it is one).
    pub(crate) fn from_value(value: Value) -> Result<CanonicalArgs, ArgumentsError> {
        let text = canonical::to_canonical(&value)?;
        check_signable_args(&value, &text)?;
        let sha256 = canonical::sha256_hex(text.as_bytes());
        Ok(CanonicalArgs {
            text,
            value,
            sha256,
        })
    }

    /// Re-parses stored canonical text (e.g. from the ledger), refusing text
    /// that is not an object or not exactly canonical. It does not check any
    /// operation's schema.
    pub fn from_stored(text: &str) -> Result<CanonicalArgs, ArgumentsError> {
        let value = canonical::parse(text.as_bytes(), canonical::MAX_ARGS_BYTES)?;
        if !value.is_object() {
            return Err(ArgumentsError::NotAnObject);
        }
        let args = CanonicalArgs::from_value(value)?;
        if args.text != text {
            return Err(ArgumentsError::NotCanonical);
        }
        Ok(args)
    }

    /// The canonical JSON text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The parsed value (always an object).
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// Lowercase hex SHA-256 of [`CanonicalArgs::text`].
    pub fn sha256_hex(&self) -> &str {
        &self.sha256
    }
}
