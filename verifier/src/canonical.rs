//! Canonical JSON: the strict parser and the RFC 8785 (JCS) serializer.
//!
//! Owns: turning untrusted bytes into a [`serde_json::Value`] while refusing
//! everything that could make two readers disagree about the value
//! (duplicate keys, numbers that are not exactly representable, lone
//! surrogates, excessive nesting or size, invalid UTF-8, trailing data), and
//! writing a value back as RFC 8785 text (keys sorted by UTF-16 code units,
//! no whitespace, JCS string escaping, ECMAScript number form via `ryu-js`),
//! or comparing or hashing that text as it is written.
//!
//! Must not: depend on `serde_json`'s parser (it silently keeps the last of
//! duplicate keys) or on its map order (we sort ourselves), and must not
//! accept a number whose meaning depends on the reader's integer width.

mod parser;
mod writer;

use std::fmt;

use sha2::{Digest, Sha256};

/// Maximum nesting depth of arrays and objects (the top-level value counts as depth 1).
pub const MAX_DEPTH: usize = 32;
/// Maximum size of an operation's arguments document, in bytes.
pub const MAX_ARGS_BYTES: usize = 64 * 1024;
/// Largest integer magnitude accepted: 2^53 - 1 (every integer up to it is exact in f64).
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Why a document was refused by the strict parser or could not be serialized canonically.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanonicalError {
    /// An object repeats a key (the key is reported).
    #[error("duplicate object key {0:?}")]
    DuplicateKey(String),
    /// A number overflows to infinity (e.g. `1e400`) or is NaN.
    #[error("number is not finite")]
    NonFinite,
    /// An integer outside ±(2^53 − 1), which not every reader represents exactly.
    #[error("integer outside ±(2^53 - 1)")]
    OutOfRange,
    /// A `\uD800`-style escape without its pair.
    #[error("lone UTF-16 surrogate escape")]
    LoneSurrogate,
    /// Arrays/objects nested deeper than [`MAX_DEPTH`].
    #[error("nesting deeper than {MAX_DEPTH}")]
    TooDeep,
    /// The input is larger than the caller's limit.
    #[error("input larger than {limit} bytes")]
    TooLarge {
        /// The limit that was exceeded, in bytes.
        limit: usize,
    },
    /// The input is not valid UTF-8.
    #[error("input is not valid UTF-8")]
    InvalidUtf8,
    /// Any other JSON syntax error, at a byte offset.
    #[error("JSON syntax error at byte {offset}")]
    Syntax {
        /// Byte offset of the first offending byte.
        offset: usize,
    },
    /// A complete value is followed by more non-whitespace data.
    #[error("trailing data after the JSON value")]
    Trailing,
    /// A timestamp to be written has a fractional second or a year outside 0000..=9999.
    #[error("timestamp cannot be written as YYYY-MM-DDTHH:MM:SSZ")]
    Timestamp,
    /// JSON that is not the RFC 8785 text of its value (whitespace, key
    /// order, an escape or a number written otherwise), where only that is
    /// accepted ([`parse_canonical`]).
    #[error("not the canonical (RFC 8785) text of its value")]
    NotCanonical,
}

/// Strictly parses `input` (at most `limit` bytes) into a JSON value.
///
/// Insignificant whitespace is accepted; use [`is_canonical_text`] when the
/// input must itself be canonical.
pub fn parse(input: &[u8], limit: usize) -> Result<serde_json::Value, CanonicalError> {
    parse_enclosing(input, limit, 0)
}

/// Strictly parses `input` (at most `limit` bytes), a document that encloses
/// another `envelope` levels down (a protocol frame around an operation's
/// arguments): it may nest [`MAX_DEPTH`] + `envelope` levels, so that the
/// enclosed document gets the same depth limit as on its own. Everything
/// else is refused exactly as [`parse`] refuses it.
pub fn parse_enclosing(
    input: &[u8],
    limit: usize,
    envelope: usize,
) -> Result<serde_json::Value, CanonicalError> {
    let text = bounded_text(input, limit)?;
    parser::parse_str(text, MAX_DEPTH.saturating_add(envelope), parser::Text::Any)
}

/// Strictly parses `input` (at most `limit` bytes), which must be exactly
/// the RFC 8785 text of the value it holds: the value exactly when
/// [`parse`] accepts `input` and [`is_canonical_text`] finds it canonical,
/// checked as it is read, in one pass. A text that [`parse`] refuses is
/// refused here too, with the refusal of whichever problem comes first in
/// the text; one that is JSON but not canonical as
/// [`CanonicalError::NotCanonical`].
pub fn parse_canonical(input: &[u8], limit: usize) -> Result<serde_json::Value, CanonicalError> {
    let text = bounded_text(input, limit)?;
    parser::parse_str(text, MAX_DEPTH, parser::Text::Canonical)
}

/// [`parse_canonical`], and the bytes of `input` that are the value of the
/// top-level object's member `member` (`None` if there is none). As
/// `input` is canonical text, so are they: the RFC 8785 text of that
/// value, as [`to_canonical`] would write it.
pub fn parse_canonical_member<'a>(
    input: &'a [u8],
    limit: usize,
    member: &str,
) -> Result<(serde_json::Value, Option<&'a [u8]>), CanonicalError> {
    let text = bounded_text(input, limit)?;
    let (value, span) =
        parser::parse_spanning(text, MAX_DEPTH, parser::Text::Canonical, Some(member))?;
    Ok((value, span.and_then(|span| input.get(span))))
}

/// `input` as text, if it is at most `limit` bytes of UTF-8.
fn bounded_text(input: &[u8], limit: usize) -> Result<&str, CanonicalError> {
    if input.len() > limit {
        return Err(CanonicalError::TooLarge { limit });
    }
    std::str::from_utf8(input).map_err(|_| CanonicalError::InvalidUtf8)
}

/// Returns the RFC 8785 text of `value`.
///
/// Errors on integers outside ±(2^53 − 1) and on non-finite numbers, so that
/// nothing is written that [`parse`] would refuse.
pub fn to_canonical(value: &serde_json::Value) -> Result<String, CanonicalError> {
    let mut out = String::new();
    writer::write_value(value, &mut out, 1)?;
    Ok(out)
}

/// Whether `text` is exactly the RFC 8785 text of `value`, as
/// `to_canonical(value)? == text` says, without writing the text: it is
/// compared as it is written. Errors where [`to_canonical`] would.
pub fn is_canonical_text(value: &serde_json::Value, text: &[u8]) -> Result<bool, CanonicalError> {
    let mut out = Compare {
        rest: text,
        equal: true,
    };
    writer::write_value(value, &mut out, 1)?;
    Ok(out.equal && out.rest.is_empty())
}

/// Lowercase hex SHA-256 of the RFC 8785 text of `value`, hashed as it is
/// written. Errors where [`to_canonical`] would.
pub fn canonical_sha256_hex(value: &serde_json::Value) -> Result<String, CanonicalError> {
    let mut out = Hashing(Sha256::new());
    writer::write_value(value, &mut out, 1)?;
    Ok(hex::encode(out.0.finalize()))
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Canonical text compared with `rest` as it is written.
struct Compare<'a> {
    rest: &'a [u8],
    equal: bool,
}

impl fmt::Write for Compare<'_> {
    fn write_str(&mut self, written: &str) -> fmt::Result {
        match self.rest.strip_prefix(written.as_bytes()) {
            Some(rest) if self.equal => self.rest = rest,
            _ => self.equal = false,
        }
        Ok(())
    }
}

impl writer::Out for Compare<'_> {}

/// Canonical text hashed as it is written.
struct Hashing(Sha256);

impl fmt::Write for Hashing {
    fn write_str(&mut self, written: &str) -> fmt::Result {
        self.0.update(written.as_bytes());
        Ok(())
    }
}

impl writer::Out for Hashing {}

#[cfg(test)]
mod canonical_text_tests;
#[cfg(test)]
mod tests;
