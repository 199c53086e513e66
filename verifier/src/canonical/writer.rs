//! The RFC 8785 serializer behind [`super::to_canonical`],
//! [`super::is_canonical_text`] and [`super::canonical_sha256_hex`].
//!
//! Owns: key order (UTF-16 code units), JCS string escaping and ECMAScript
//! number text. Must not: write any number that [`super::parse`] would refuse.

use std::fmt;

use serde_json::{Number, Value};

use super::{CanonicalError, MAX_DEPTH, MAX_SAFE_INTEGER};

/// The smallest magnitude ECMAScript writes in exponent form.
const EXPONENT_FORM_FROM: f64 = 1e21;

/// Refuses what canonical text cannot carry unambiguously: non-finite values,
/// and integral values beyond ±(2^53 − 1) that ECMAScript would write as a
/// plain digit string (from 1e21 on it writes `1e+21`, which every reader
/// treats as a float).
pub(super) fn check_float(value: f64) -> Result<(), CanonicalError> {
    if !value.is_finite() {
        return Err(CanonicalError::NonFinite);
    }
    let magnitude = value.abs();
    if value.fract() == 0.0 && magnitude > MAX_SAFE_INTEGER as f64 && magnitude < EXPONENT_FORM_FROM
    {
        return Err(CanonicalError::OutOfRange);
    }
    Ok(())
}

/// Where canonical text goes: a `String`, or a sink that compares or hashes
/// it as it is written (see [`super::is_canonical_text`]). Writing to one
/// never fails; a sink that compares records a difference and goes on.
pub(super) trait Out: fmt::Write {
    fn put(&mut self, text: &str) {
        let _ = self.write_str(text);
    }
}

impl Out for String {}

pub(super) fn write_value<W: Out>(
    value: &Value,
    out: &mut W,
    depth: usize,
) -> Result<(), CanonicalError> {
    match value {
        Value::Null => out.put("null"),
        Value::Bool(true) => out.put("true"),
        Value::Bool(false) => out.put("false"),
        Value::Number(n) => write_number(n, out)?,
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            if depth > MAX_DEPTH {
                return Err(CanonicalError::TooDeep);
            }
            out.put("[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.put(",");
                }
                write_value(item, out, depth + 1)?;
            }
            out.put("]");
        }
        Value::Object(map) => {
            if depth > MAX_DEPTH {
                return Err(CanonicalError::TooDeep);
            }
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            // Sorted only if not already in UTF-16 order, which for ASCII
            // keys is byte order (the order of serde_json's default map).
            let in_order = entries.iter().all(|(key, _)| key.is_ascii())
                && entries.is_sorted_by(|a, b| a.0 < b.0);
            if !in_order {
                entries.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            }
            out.put("{");
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.put(",");
                }
                write_string(key, out);
                out.put(":");
                write_value(item, out, depth + 1)?;
            }
            out.put("}");
        }
    }
    Ok(())
}

pub(super) fn write_number<W: Out>(n: &Number, out: &mut W) -> Result<(), CanonicalError> {
    if let Some(i) = n.as_i64() {
        if i.unsigned_abs() > MAX_SAFE_INTEGER {
            return Err(CanonicalError::OutOfRange);
        }
        // Within ±(2^53 - 1) the decimal form is the ECMAScript form.
        let _ = write!(out, "{i}");
    } else if let Some(u) = n.as_u64() {
        if u > MAX_SAFE_INTEGER {
            return Err(CanonicalError::OutOfRange);
        }
        let _ = write!(out, "{u}");
    } else {
        let f = n.as_f64().ok_or(CanonicalError::NonFinite)?;
        check_float(f)?;
        if f == 0.0 {
            // -0 is written as 0 (ECMAScript Number::toString).
            out.put("0");
        } else {
            out.put(ryu_js::Buffer::new().format_finite(f));
        }
    }
    Ok(())
}

/// JCS string escaping. Only ASCII bytes are ever escaped, so the text
/// between two of them is copied as one slice (a byte below 0x80 is never
/// part of a multi-byte UTF-8 sequence).
fn write_string<W: Out>(s: &str, out: &mut W) {
    out.put("\"");
    let mut copied = 0;
    for (i, byte) in s.bytes().enumerate() {
        let escape = match byte {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            0x08 => Some("\\b"),
            0x0c => Some("\\f"),
            b'\n' => Some("\\n"),
            b'\r' => Some("\\r"),
            b'\t' => Some("\\t"),
            0x00..=0x1f => None,
            _ => continue,
        };
        out.put(&s[copied..i]);
        copied = i + 1;
        match escape {
            Some(short) => out.put(short),
            None => {
                let _ = write!(out, "\\u{byte:04x}");
            }
        }
    }
    out.put(&s[copied..]);
    out.put("\"");
}
