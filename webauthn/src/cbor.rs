//! A strict reader for the part of CBOR (RFC 8949) that WebAuthn uses: the
//! attestation object, COSE keys and extension maps.
//!
//! Owns: turning untrusted bytes into a borrowed [`Value`] while refusing
//! everything a second reader might see differently: indefinite lengths,
//! non-shortest integer and length encodings (CTAP2 canonical form), tags,
//! floats and other simple values than `false`/`true`/`null`, invalid UTF-8,
//! duplicate map keys and nesting deeper than [`MAX_DEPTH`].
//!
//! Must not: allocate from a length the input claims (a count is checked
//! against the bytes left before anything is kept), or panic on any input.

use super::WebAuthnError;

/// Deepest nesting accepted; the attestation object needs three levels.
const MAX_DEPTH: usize = 8;

/// One decoded data item, borrowing byte and text strings from the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value<'a> {
    /// Major type 0.
    Unsigned(u64),
    /// Major type 1: the value is `-1 - n`.
    Negative(u64),
    /// Major type 2.
    Bytes(&'a [u8]),
    /// Major type 3.
    Text(&'a str),
    /// Major type 4.
    Array(Vec<Value<'a>>),
    /// Major type 5, in the order of the input.
    Map(Vec<(Value<'a>, Value<'a>)>),
    /// Simple values 20 and 21.
    Bool(bool),
    /// Simple value 22.
    Null,
}

impl<'a> Value<'a> {
    /// The value as an `i64`, if it is an integer that fits.
    pub(crate) fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Unsigned(n) => i64::try_from(n).ok(),
            Value::Negative(n) => i64::try_from(n).ok().map(|n| -1 - n),
            _ => None,
        }
    }

    /// The entries, if the value is a map.
    pub(crate) fn as_map(&self) -> Option<&[(Value<'a>, Value<'a>)]> {
        match self {
            Value::Map(entries) => Some(entries),
            _ => None,
        }
    }
}

fn malformed(what: &'static str) -> WebAuthnError {
    WebAuthnError::Malformed(what)
}

/// Reads one data item from the start of `input`; returns it and the number
/// of bytes it took. What follows is the caller's.
pub(crate) fn read_prefix(input: &[u8]) -> Result<(Value<'_>, usize), WebAuthnError> {
    let mut reader = Reader { input, pos: 0 };
    let value = reader.value(1)?;
    Ok((value, reader.pos))
}

/// Reads exactly one data item that fills `input`.
pub(crate) fn read_exact(input: &[u8]) -> Result<Value<'_>, WebAuthnError> {
    let (value, used) = read_prefix(input)?;
    if used != input.len() {
        return Err(malformed("trailing bytes after a CBOR item"));
    }
    Ok(value)
}

struct Reader<'a> {
    input: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn remaining(&self) -> usize {
        self.input.len().saturating_sub(self.pos)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], WebAuthnError> {
        let end = self
            .pos
            .checked_add(n)
            .ok_or_else(|| malformed("CBOR length overflows"))?;
        let bytes = self
            .input
            .get(self.pos..end)
            .ok_or_else(|| malformed("CBOR item is truncated"))?;
        self.pos = end;
        Ok(bytes)
    }

    fn byte(&mut self) -> Result<u8, WebAuthnError> {
        let [byte] = *self.take(1)? else {
            return Err(malformed("CBOR item is truncated"));
        };
        Ok(byte)
    }

    /// The argument of an initial byte's additional information, refusing
    /// indefinite lengths, reserved values and non-shortest encodings.
    fn argument(&mut self, info: u8) -> Result<u64, WebAuthnError> {
        let (width, min) = match info {
            0..=23 => return Ok(u64::from(info)),
            24 => (1, 24),
            25 => (2, 1 << 8),
            26 => (4, 1 << 16),
            27 => (8, 1 << 32),
            31 => return Err(malformed("indefinite-length CBOR item")),
            _ => return Err(malformed("reserved CBOR additional information")),
        };
        let n = self
            .take(width)?
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
        if n < min {
            return Err(malformed("CBOR argument not in shortest form"));
        }
        Ok(n)
    }

    /// A length or count that must fit in what is left of the input, at
    /// `unit` bytes per element at least.
    fn length(&mut self, info: u8, unit: usize) -> Result<usize, WebAuthnError> {
        let n = self.argument(info)?;
        let n = usize::try_from(n).map_err(|_| malformed("CBOR length too large"))?;
        if n.saturating_mul(unit) > self.remaining() {
            return Err(malformed("CBOR item is truncated"));
        }
        Ok(n)
    }

    fn value(&mut self, depth: usize) -> Result<Value<'a>, WebAuthnError> {
        if depth > MAX_DEPTH {
            return Err(malformed("CBOR nested too deeply"));
        }
        let initial = self.byte()?;
        let (major, info) = (initial >> 5, initial & 0x1f);
        match major {
            0 => Ok(Value::Unsigned(self.argument(info)?)),
            1 => Ok(Value::Negative(self.argument(info)?)),
            2 => {
                let n = self.length(info, 1)?;
                Ok(Value::Bytes(self.take(n)?))
            }
            3 => {
                let n = self.length(info, 1)?;
                let text = std::str::from_utf8(self.take(n)?)
                    .map_err(|_| malformed("CBOR text is not UTF-8"))?;
                Ok(Value::Text(text))
            }
            4 => {
                let n = self.length(info, 1)?;
                let mut items = Vec::new();
                for _ in 0..n {
                    items.push(self.value(depth + 1)?);
                }
                Ok(Value::Array(items))
            }
            5 => {
                let n = self.length(info, 2)?;
                let mut entries: Vec<(Value<'a>, Value<'a>)> = Vec::new();
                for _ in 0..n {
                    let key = self.value(depth + 1)?;
                    if entries.iter().any(|(k, _)| *k == key) {
                        return Err(malformed("duplicate CBOR map key"));
                    }
                    let value = self.value(depth + 1)?;
                    entries.push((key, value));
                }
                Ok(Value::Map(entries))
            }
            6 => Err(malformed("CBOR tags are not accepted")),
            _ => match info {
                20 => Ok(Value::Bool(false)),
                21 => Ok(Value::Bool(true)),
                22 => Ok(Value::Null),
                _ => Err(malformed("CBOR float or simple value not accepted")),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn reads_nested_map_with_every_accepted_kind() {
        // {1: 2, -1: h'aa', "t": [true, false, null], 24: "x"}
        let input = [
            0xa4, 0x01, 0x02, 0x20, 0x41, 0xaa, 0x61, b't', 0x83, 0xf5, 0xf4, 0xf6, 0x18, 24, 0x61,
            b'x',
        ];
        let value = read_exact(&input).unwrap();
        let map = value.as_map().unwrap();
        assert_eq!(map.len(), 4);
        assert_eq!(map[1].0.as_i64(), Some(-1));
        assert_eq!(map[1].1, Value::Bytes(&[0xaa]));
        assert_eq!(map[3].0.as_i64(), Some(24));
    }

    #[test]
    fn refuses_what_a_second_reader_might_read_differently() {
        let cases: &[(&[u8], &str)] = &[
            (&[0x18, 0x05], "CBOR argument not in shortest form"),
            (&[0x5f, 0x41, 0x00, 0xff], "indefinite-length CBOR item"),
            (&[0xc2, 0x41, 0x00], "CBOR tags are not accepted"),
            (
                &[0xf9, 0x3c, 0x00],
                "CBOR float or simple value not accepted",
            ),
            (&[0xa2, 0x01, 0x00, 0x01, 0x00], "duplicate CBOR map key"),
            (&[0x62, 0xff, 0xfe], "CBOR text is not UTF-8"),
            (&[0x01, 0x01], "trailing bytes after a CBOR item"),
            (
                &[0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
                "CBOR item is truncated",
            ),
            (&[0x1c], "reserved CBOR additional information"),
        ];
        for (input, why) in cases {
            assert_eq!(
                read_exact(input),
                Err(WebAuthnError::Malformed(why)),
                "{input:02x?}"
            );
        }
    }

    #[test]
    fn refuses_nesting_deeper_than_the_limit() {
        let deep = [0x81u8; MAX_DEPTH];
        let mut input = deep.to_vec();
        input.push(0x00);
        assert_eq!(
            read_exact(&input),
            Err(WebAuthnError::Malformed("CBOR nested too deeply"))
        );
        assert!(read_exact(&input[1..]).is_ok());
    }
}
