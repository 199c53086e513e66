//! The strict JSON parser behind [`super::parse`].
//!
//! Owns: RFC 8259 syntax plus the refusals listed on [`CanonicalError`],
//! and, for [`Text::Canonical`], the refusal of every text that is not
//! exactly the RFC 8785 text of the value it holds.
//! Must not: recurse deeper than its caller's limit ([`super::MAX_DEPTH`]), accept a duplicate key, or
//! hand out a number that [`super::to_canonical`] would refuse to write.
//!
//! What canonical text is, as the writer (`writer.rs`) writes it and this
//! parser checks it while reading: no whitespace; an object's keys in
//! strictly increasing order of UTF-16 code units; a string's characters
//! as they are, except `"` and `\` and the control characters, which are
//! escaped as `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, or else `\u00xx`
//! in lowercase hex, and nothing else escaped; a number as the writer
//! writes its value (checked by writing it). The fuzz body
//! `crate::fuzzing::canonical_parse` holds this reading to the writer:
//! canonical text is accepted exactly when writing the value gives it.

use std::ops::Range;

use serde_json::map::Entry;
use serde_json::{Map, Number, Value};

use super::writer::{check_float, write_number};
use super::{CanonicalError, Compare, MAX_SAFE_INTEGER};

/// Which texts a parse accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Text {
    /// Any JSON text, insignificant whitespace included.
    Any,
    /// Only the RFC 8785 text of the value read (see the module doc):
    /// anything else is refused, as [`CanonicalError::NotCanonical`] where
    /// the first difference is not already refused as [`Text::Any`] refuses it.
    Canonical,
}

/// Parses a complete JSON text (already known to be UTF-8), nesting at
/// most `max_depth` levels.
pub(super) fn parse_str(
    text: &str,
    max_depth: usize,
    accept: Text,
) -> Result<Value, CanonicalError> {
    parse_spanning(text, max_depth, accept, None).map(|(value, _)| value)
}

/// [`parse_str`], and where the value of the top-level object's member
/// `member` stands in `text` (`None` if there is no such member).
pub(super) fn parse_spanning(
    text: &str,
    max_depth: usize,
    accept: Text,
    member: Option<&str>,
) -> Result<(Value, Option<Range<usize>>), CanonicalError> {
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        max_depth,
        canonical: accept == Text::Canonical,
        member,
        span: None,
    };
    p.skip_ws()?;
    let value = p.value(0)?;
    p.skip_ws()?;
    if p.pos != p.bytes.len() {
        return Err(CanonicalError::Trailing);
    }
    Ok((value, p.span))
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    max_depth: usize,
    /// [`Text::Canonical`]: refuse what the writer would not have written.
    canonical: bool,
    /// The top-level member whose value's place is wanted, and that place.
    member: Option<&'a str>,
    span: Option<Range<usize>>,
}

impl Parser<'_> {
    fn syntax(&self) -> CanonicalError {
        CanonicalError::Syntax { offset: self.pos }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// Steps over insignificant whitespace; canonical text has none.
    fn skip_ws(&mut self) -> Result<(), CanonicalError> {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            if self.canonical {
                return Err(CanonicalError::NotCanonical);
            }
            self.pos += 1;
        }
        Ok(())
    }

    /// Refuses, in canonical mode, what the writer would have written
    /// otherwise.
    fn canonical_if(&self, written_so: bool) -> Result<(), CanonicalError> {
        if self.canonical && !written_so {
            return Err(CanonicalError::NotCanonical);
        }
        Ok(())
    }

    fn expect(&mut self, byte: u8) -> Result<(), CanonicalError> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.syntax())
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, CanonicalError> {
        match self.peek() {
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => Ok(Value::String(self.string()?)),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.syntax()),
        }
    }

    fn literal(&mut self, word: &str, value: Value) -> Result<Value, CanonicalError> {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.syntax())
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, CanonicalError> {
        if depth > self.max_depth {
            return Err(CanonicalError::TooDeep);
        }
        self.expect(b'{')?;
        let mut map = Map::new();
        // The key before, in canonical mode: each must follow it.
        let mut previous = String::new();
        self.skip_ws()?;
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Value::Object(map));
        }
        loop {
            self.skip_ws()?;
            if self.peek() != Some(b'"') {
                return Err(self.syntax());
            }
            let key = self.string()?;
            if self.canonical {
                if !map.is_empty() && !follows(&key, &previous) {
                    return Err(CanonicalError::NotCanonical);
                }
                previous.clear();
                previous.push_str(&key);
            }
            self.skip_ws()?;
            self.expect(b':')?;
            self.skip_ws()?;
            let start = self.pos;
            let value = self.value(depth)?;
            if depth == 1 && self.member == Some(key.as_str()) {
                self.span = Some(start..self.pos);
            }
            match map.entry(key) {
                Entry::Vacant(slot) => {
                    slot.insert(value);
                }
                Entry::Occupied(taken) => {
                    return Err(CanonicalError::DuplicateKey(taken.key().clone()));
                }
            }
            self.skip_ws()?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(map));
                }
                _ => return Err(self.syntax()),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, CanonicalError> {
        if depth > self.max_depth {
            return Err(CanonicalError::TooDeep);
        }
        self.expect(b'[')?;
        let mut items = Vec::new();
        self.skip_ws()?;
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_ws()?;
            items.push(self.value(depth)?);
            self.skip_ws()?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.syntax()),
            }
        }
    }

    fn string(&mut self) -> Result<String, CanonicalError> {
        self.expect(b'"')?;
        let mut out = String::new();
        loop {
            let start = self.pos;
            while matches!(self.peek(), Some(b) if b != b'"' && b != b'\\' && b >= 0x20) {
                self.pos += 1;
            }
            // The loop stops only on ASCII bytes, so both ends are char boundaries.
            out.push_str(&self.text[start..self.pos]);
            match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    out.push(self.escape()?);
                }
                _ => return Err(self.syntax()),
            }
        }
    }

    /// Decodes one escape; the backslash is already consumed.
    fn escape(&mut self) -> Result<char, CanonicalError> {
        let c = match self.peek() {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => {
                // The writer writes `/` as it is.
                self.canonical_if(false)?;
                '/'
            }
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                self.pos += 1;
                let start = self.pos;
                let c = self.unicode_escape()?;
                // The writer escapes with `\u` only the control characters
                // that have no short escape, in lowercase hex.
                let short = matches!(c, '\u{8}' | '\u{c}' | '\n' | '\r' | '\t');
                let lowercase = !self.bytes[start..self.pos]
                    .iter()
                    .any(u8::is_ascii_uppercase);
                self.canonical_if(c < '\u{20}' && !short && lowercase)?;
                return Ok(c);
            }
            _ => return Err(self.syntax()),
        };
        self.pos += 1;
        Ok(c)
    }

    /// Decodes `XXXX` (after `\u`), pairing surrogates.
    fn unicode_escape(&mut self) -> Result<char, CanonicalError> {
        let first = self.hex4()?;
        let code = match first {
            0xD800..=0xDBFF => {
                if !self.bytes[self.pos..].starts_with(b"\\u") {
                    return Err(CanonicalError::LoneSurrogate);
                }
                self.pos += 2;
                let second = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&second) {
                    return Err(CanonicalError::LoneSurrogate);
                }
                0x10000 + ((u32::from(first) - 0xD800) << 10) + (u32::from(second) - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(CanonicalError::LoneSurrogate),
            _ => u32::from(first),
        };
        char::from_u32(code).ok_or(CanonicalError::LoneSurrogate)
    }

    fn hex4(&mut self) -> Result<u16, CanonicalError> {
        let mut v: u16 = 0;
        for _ in 0..4 {
            let digit = match self.peek() {
                Some(b @ b'0'..=b'9') => b - b'0',
                Some(b @ b'a'..=b'f') => b - b'a' + 10,
                Some(b @ b'A'..=b'F') => b - b'A' + 10,
                _ => return Err(self.syntax()),
            };
            v = (v << 4) | u16::from(digit);
            self.pos += 1;
        }
        Ok(v)
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<Value, CanonicalError> {
        let start = self.pos;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.pos += 1;
        }
        let int_start = self.pos;
        match self.peek() {
            Some(b'0') => {
                self.pos += 1;
                // No leading zeros: `01` is a syntax error, not `0` plus trailing data.
                if matches!(self.peek(), Some(b'0'..=b'9')) {
                    return Err(self.syntax());
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.syntax()),
        }
        let int_end = self.pos;
        let mut is_integer_literal = true;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.syntax());
            }
            is_integer_literal = false;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.syntax());
            }
            is_integer_literal = false;
        }
        let value = if is_integer_literal {
            integer(&self.text[int_start..int_end], negative)?
        } else {
            let value: f64 = self.text[start..self.pos]
                .parse()
                .map_err(|_| CanonicalError::Syntax { offset: start })?;
            number_from_f64(value)?
        };
        if self.canonical
            && let Value::Number(n) = &value
        {
            let mut written = Compare {
                rest: &self.bytes[start..self.pos],
                equal: true,
            };
            write_number(n, &mut written)?;
            self.canonical_if(written.equal && written.rest.is_empty())?;
        }
        Ok(value)
    }
}

/// Whether `key` comes after `previous` in UTF-16 code unit order, the
/// order the writer sorts keys in (for ASCII keys, byte order).
fn follows(key: &str, previous: &str) -> bool {
    if key.is_ascii() && previous.is_ascii() {
        key > previous
    } else {
        key.encode_utf16().cmp(previous.encode_utf16()) == std::cmp::Ordering::Greater
    }
}

/// An integer literal: exact, within ±(2^53 − 1); `-0` becomes `0`.
fn integer(digits: &str, negative: bool) -> Result<Value, CanonicalError> {
    // 2^53 - 1 has 16 digits; longer literals are out of range (and would overflow u64).
    if digits.len() > 16 {
        return Err(CanonicalError::OutOfRange);
    }
    let magnitude: u64 = digits.parse().map_err(|_| CanonicalError::OutOfRange)?;
    if magnitude > MAX_SAFE_INTEGER {
        return Err(CanonicalError::OutOfRange);
    }
    Ok(Value::Number(signed(magnitude, negative)))
}

fn signed(magnitude: u64, negative: bool) -> Number {
    if negative && magnitude != 0 {
        // magnitude <= 2^53 - 1, so the conversion and negation cannot overflow.
        Number::from(-(magnitude as i64))
    } else {
        Number::from(magnitude)
    }
}

/// A number written with a fraction or exponent. Integral values in the safe
/// range are stored as integers so that parsing canonical text round-trips.
fn number_from_f64(value: f64) -> Result<Value, CanonicalError> {
    check_float(value)?;
    if value.fract() == 0.0 && value.abs() <= MAX_SAFE_INTEGER as f64 {
        // Exact: integral and within ±(2^53 - 1).
        return Ok(Value::Number(signed(value.abs() as u64, value < 0.0)));
    }
    Number::from_f64(value)
        .map(Value::Number)
        .ok_or(CanonicalError::NonFinite)
}
