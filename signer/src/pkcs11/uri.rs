//! The `pkcs11:` URI that names a token key: the subset of RFC 7512 the
//! signer understands, parsed strictly (an attribute it does not know is
//! refused, not ignored).
//!
//! ```text
//! pkcs11:token=LABEL;object=LABEL;id=%01%02?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:/etc/countersign/pin
//! ```
//!
//! Path attributes: `token` (the token label, required), `object` (the key
//! label) and `id` (the key's `CKA_ID`, percent-encoded bytes); at least one
//! of `object` and `id`; `type=private` is accepted. Query attributes:
//! `module-path` (absolute path of the PKCS#11 module, required) and
//! `pin-source=file:/absolute/path` (required): the PIN is read from that
//! file, which must be 0600 and owned by the signer's user. `pin-value` is
//! refused: a PIN never appears in a URI, the key index or a log. Values are
//! percent-decoded. What the index stores is [`Pkcs11Uri`]'s canonical text,
//! which holds no secret.

use std::fmt;
use std::path::PathBuf;

use crate::key::KeyError;

/// The URI scheme.
const SCHEME: &str = "pkcs11:";

/// A parsed `pkcs11:` URI naming one Ed25519 private key on one token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pkcs11Uri {
    /// The token label (`CK_TOKEN_INFO.label`, without its padding).
    pub token: String,
    /// The key label (`CKA_LABEL`), if named.
    pub object: Option<String>,
    /// The key id (`CKA_ID`), if named.
    pub id: Option<Vec<u8>>,
    /// The PKCS#11 module to load.
    pub module_path: PathBuf,
    /// The file holding the user PIN.
    pub pin_source: PathBuf,
}

fn refused(why: impl Into<String>) -> KeyError {
    KeyError::Pkcs11Uri(why.into())
}

impl Pkcs11Uri {
    /// Parses `text`; see the module documentation for what is accepted.
    pub fn parse(text: &str) -> Result<Pkcs11Uri, KeyError> {
        let rest = text
            .strip_prefix(SCHEME)
            .ok_or_else(|| refused("it does not start with pkcs11:"))?;
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (mut token, mut object, mut id) = (None, None, None);
        for attr in path.split(';').filter(|a| !a.is_empty()) {
            let (name, value) = attr
                .split_once('=')
                .ok_or_else(|| refused(format!("path attribute {attr:?} has no value")))?;
            let bytes = decode(value)?;
            let slot = match name {
                "token" => &mut token,
                "object" => &mut object,
                "id" => &mut id,
                "type" if bytes == b"private" => continue,
                "type" => return Err(refused("only type=private names a signing key")),
                other => {
                    return Err(refused(format!(
                        "path attribute {other:?} is not supported (token, object, id, type)"
                    )));
                }
            };
            if slot.replace(bytes).is_some() {
                return Err(refused(format!("{name} is given twice")));
            }
        }
        let (mut module_path, mut pin_source) = (None, None);
        for attr in query.split('&').filter(|a| !a.is_empty()) {
            let (name, value) = attr
                .split_once('=')
                .ok_or_else(|| refused(format!("query attribute {attr:?} has no value")))?;
            let slot = match name {
                "module-path" => &mut module_path,
                "pin-source" => &mut pin_source,
                "pin-value" => {
                    return Err(refused(
                        "pin-value is refused: put the PIN in a 0600 file and name it with pin-source=file:/path",
                    ));
                }
                other => {
                    return Err(refused(format!(
                        "query attribute {other:?} is not supported (module-path, pin-source)"
                    )));
                }
            };
            if slot.replace(utf8(name, decode(value)?)?).is_some() {
                return Err(refused(format!("{name} is given twice")));
            }
        }
        let token = utf8("token", token.ok_or_else(|| refused("token= is required"))?)?;
        let object = object.map(|o| utf8("object", o)).transpose()?;
        if object.is_none() && id.is_none() {
            return Err(refused("object= or id= is required"));
        }
        let module_path =
            PathBuf::from(module_path.ok_or_else(|| refused("module-path= is required"))?);
        if !module_path.is_absolute() {
            return Err(refused("module-path must be an absolute path"));
        }
        let pin_source = pin_source.ok_or_else(|| refused("pin-source=file:/path is required"))?;
        let pin_path = pin_source
            .strip_prefix("file://")
            .or_else(|| pin_source.strip_prefix("file:"))
            .ok_or_else(|| refused("pin-source must be a file: URI"))?;
        let pin_source = PathBuf::from(pin_path);
        if !pin_source.is_absolute() {
            return Err(refused("pin-source must name an absolute path"));
        }
        Ok(Pkcs11Uri {
            token,
            object,
            id,
            module_path,
            pin_source,
        })
    }

    /// The same URI naming the key id `id` too.
    pub(crate) fn with_id(&self, id: Vec<u8>) -> Pkcs11Uri {
        Pkcs11Uri {
            id: Some(id),
            ..self.clone()
        }
    }

    /// How the key is named, for messages: `object "x" id 0102`.
    pub(crate) fn key_name(&self) -> String {
        let mut name = String::new();
        if let Some(object) = &self.object {
            name.push_str(&format!("object {object:?}"));
        }
        if let Some(id) = &self.id {
            if !name.is_empty() {
                name.push(' ');
            }
            name.push_str(&format!("id {}", hex::encode(id)));
        }
        name
    }
}

/// The canonical text: the attributes in a fixed order, `id` as `%XX` bytes.
impl fmt::Display for Pkcs11Uri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SCHEME}token={}", encode(self.token.as_bytes()))?;
        if let Some(object) = &self.object {
            write!(f, ";object={}", encode(object.as_bytes()))?;
        }
        if let Some(id) = &self.id {
            f.write_str(";id=")?;
            for b in id {
                write!(f, "%{b:02X}")?;
            }
        }
        write!(
            f,
            "?module-path={}&pin-source=file:{}",
            encode(self.module_path.as_os_str().as_encoded_bytes()),
            encode(self.pin_source.as_os_str().as_encoded_bytes())
        )
    }
}

fn utf8(name: &str, bytes: Vec<u8>) -> Result<String, KeyError> {
    String::from_utf8(bytes).map_err(|_| refused(format!("{name} is not UTF-8")))
}

/// RFC 3986 percent-decoding; a `%` not followed by two hex digits is refused.
fn decode(value: &str) -> Result<Vec<u8>, KeyError> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let pair = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| refused("a percent escape is not %XX"))?;
            out.push(pair);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(out)
}

/// Percent-encodes all but unreserved characters and `/` (paths stay readable).
fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const MODULE: &str = "module-path=/usr/lib/softhsm/libsofthsm2.so";

    #[test]
    fn parses_and_prints_the_canonical_form() {
        let text = format!(
            "pkcs11:token=count%20ersign;object=proof;type=private;id=%01%ff?{MODULE}&pin-source=file:/run/pin"
        );
        let uri = Pkcs11Uri::parse(&text).unwrap();
        assert_eq!(uri.token, "count ersign");
        assert_eq!(uri.object.as_deref(), Some("proof"));
        assert_eq!(uri.id.as_deref(), Some(&[1u8, 255][..]));
        assert_eq!(uri.pin_source, PathBuf::from("/run/pin"));
        let canonical = uri.to_string();
        assert_eq!(
            canonical,
            format!(
                "pkcs11:token=count%20ersign;object=proof;id=%01%FF?{MODULE}&pin-source=file:/run/pin"
            )
        );
        assert_eq!(Pkcs11Uri::parse(&canonical).unwrap(), uri);
    }

    #[test]
    fn refuses_a_pin_in_the_uri_and_unknown_attributes() {
        let cases = [
            (
                format!("pkcs11:token=t;object=o?{MODULE}&pin-value=1234"),
                "pin-value is refused: put the PIN in a 0600 file and name it with pin-source=file:/path",
            ),
            (
                format!("pkcs11:token=t;object=o;slot-id=1?{MODULE}&pin-source=file:/p"),
                "path attribute \"slot-id\" is not supported (token, object, id, type)",
            ),
            (
                format!("pkcs11:object=o?{MODULE}&pin-source=file:/p"),
                "token= is required",
            ),
            (
                format!("pkcs11:token=t?{MODULE}&pin-source=file:/p"),
                "object= or id= is required",
            ),
            (
                "pkcs11:token=t;object=o?module-path=lib.so&pin-source=file:/p".to_owned(),
                "module-path must be an absolute path",
            ),
            (
                format!("pkcs11:token=t;object=o?{MODULE}&pin-source=/p"),
                "pin-source must be a file: URI",
            ),
            (
                format!("pkcs11:token=t;token=u;object=o?{MODULE}&pin-source=file:/p"),
                "token is given twice",
            ),
            (
                format!("pkcs11:token=t%2;object=o?{MODULE}&pin-source=file:/p"),
                "a percent escape is not %XX",
            ),
            ("file:token=t".to_owned(), "it does not start with pkcs11:"),
        ];
        for (text, why) in cases {
            assert_eq!(
                Pkcs11Uri::parse(&text).unwrap_err(),
                KeyError::Pkcs11Uri(why.to_owned()),
                "{text}"
            );
        }
    }
}
