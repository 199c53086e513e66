//! The published key set: the verifying keys a signer publishes, in the JSON
//! form a receiver pins (`countersign keys export`) and reads back
//! (`countersign verify --keys`, the receivers under `tests/receivers`).
//!
//! ```json
//! {"issuer":"countersign-signer","keys":[{"id":"k4.pid.…","paserk":"k4.public.…","status":"active"}],"version":1}
//! ```
//!
//! Owns: that format, version 1, written in canonical JSON and read with the
//! strict parser (exactly the known fields, no duplicate keys, each id the
//! PASERK `k4.pid` of its key). Must not: hold private keys, or trust a key
//! whose status is not `active` (a retired key's proofs are refused as
//! signed by an unknown key).

use std::collections::BTreeSet;

use ed25519_dalek::VerifyingKey;
use serde_json::{Map, Value};

use crate::canonical::{self, CanonicalError};
use crate::claims::ISSUER;
use crate::keys::{KeyRing, key_id, parse_paserk_public, paserk_public};

/// The only key set format version written and read.
pub const KEY_SET_VERSION: u64 = 1;
/// Largest key set file read, in bytes.
pub const MAX_KEY_SET_BYTES: usize = 64 * 1024;

/// Whether a published key verifies proofs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyStatus {
    /// The signer signs with it; its proofs verify.
    Active,
    /// Replaced by a rotation: the signer no longer signs with it, but the
    /// proofs it signed before still verify until it is retired.
    Verifying,
    /// Retired: its proofs are refused.
    Retired,
}

impl KeyStatus {
    /// The status as written in the key set.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyStatus::Active => "active",
            KeyStatus::Verifying => "verifying",
            KeyStatus::Retired => "retired",
        }
    }

    /// The status named `text` (as written by [`KeyStatus::as_str`]).
    pub fn parse(text: &str) -> Option<KeyStatus> {
        match text {
            "active" => Some(KeyStatus::Active),
            "verifying" => Some(KeyStatus::Verifying),
            "retired" => Some(KeyStatus::Retired),
            _ => None,
        }
    }
}

/// One key of a key set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedKey {
    /// The verifying key.
    pub key: VerifyingKey,
    /// Its status.
    pub status: KeyStatus,
}

impl PublishedKey {
    /// A key with `status` from the 32 bytes the signer publishes, or
    /// `None` if they are not an Ed25519 public key.
    pub fn from_bytes(bytes: &[u8], status: KeyStatus) -> Option<PublishedKey> {
        let bytes: [u8; 32] = bytes.try_into().ok()?;
        let key = VerifyingKey::from_bytes(&bytes).ok()?;
        Some(PublishedKey { key, status })
    }

    /// Its PASERK `k4.pid` id.
    pub fn id(&self) -> String {
        key_id(&self.key)
    }
}

/// Why a key set file was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeySetError {
    /// Not strict JSON, or larger than [`MAX_KEY_SET_BYTES`].
    #[error("the key set is not strict JSON: {0}")]
    Json(CanonicalError),
    /// A `version` other than [`KEY_SET_VERSION`].
    #[error("the key set's version is not {KEY_SET_VERSION}")]
    UnknownVersion,
    /// An `issuer` other than the one every proof names.
    #[error("the key set's issuer is not {ISSUER}")]
    WrongIssuer,
    /// Missing, unknown or mistyped fields.
    #[error("the key set is malformed: {0}")]
    Malformed(&'static str),
    /// A `paserk` that is not a `k4.public` Ed25519 key.
    #[error("a key of the key set is not a k4.public PASERK")]
    BadKey,
    /// An `id` that is not the `k4.pid` of its key.
    #[error("a key id of the key set does not match its key")]
    IdMismatch,
    /// The same key twice.
    #[error("the key set lists a key twice")]
    DuplicateKey,
    /// No key with status `active`.
    #[error("the key set has no active key")]
    NoActiveKey,
}

/// The verifying keys a signer publishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySet {
    keys: Vec<PublishedKey>,
}

impl KeySet {
    /// A key set of `keys`, in the given order.
    pub fn new(keys: Vec<PublishedKey>) -> Self {
        Self { keys }
    }

    /// The keys, in file order.
    pub fn keys(&self) -> &[PublishedKey] {
        &self.keys
    }

    /// The ring of the keys whose proofs verify: active and verifying.
    pub fn active_ring(&self) -> KeyRing {
        KeyRing::from_keys(
            self.keys
                .iter()
                .filter(|k| matches!(k.status, KeyStatus::Active | KeyStatus::Verifying))
                .map(|k| k.key),
        )
    }

    /// The key set as canonical JSON (no trailing newline).
    pub fn to_json(&self) -> Result<String, CanonicalError> {
        let keys = self
            .keys
            .iter()
            .map(|k| {
                let mut m = Map::new();
                m.insert("id".into(), Value::String(key_id(&k.key)));
                m.insert("paserk".into(), Value::String(paserk_public(&k.key)));
                m.insert("status".into(), Value::String(k.status.as_str().into()));
                Value::Object(m)
            })
            .collect();
        let mut m = Map::new();
        m.insert("version".into(), Value::from(KEY_SET_VERSION));
        m.insert("issuer".into(), Value::String(ISSUER.into()));
        m.insert("keys".into(), Value::Array(keys));
        canonical::to_canonical(&Value::Object(m))
    }

    /// Reads a key set file strictly (whitespace between tokens is allowed).
    pub fn parse(bytes: &[u8]) -> Result<KeySet, KeySetError> {
        let value = canonical::parse(bytes, MAX_KEY_SET_BYTES).map_err(KeySetError::Json)?;
        let Value::Object(mut top) = value else {
            return Err(KeySetError::Malformed("not an object"));
        };
        if top.len() != 3 {
            return Err(KeySetError::Malformed("expected version, issuer and keys"));
        }
        match top.remove("version") {
            Some(v) if v.as_u64() == Some(KEY_SET_VERSION) => {}
            Some(_) => return Err(KeySetError::UnknownVersion),
            None => return Err(KeySetError::Malformed("no version")),
        }
        match top.remove("issuer") {
            Some(Value::String(s)) if s == ISSUER => {}
            Some(_) => return Err(KeySetError::WrongIssuer),
            None => return Err(KeySetError::Malformed("no issuer")),
        }
        let Some(Value::Array(entries)) = top.remove("keys") else {
            return Err(KeySetError::Malformed("keys is not an array"));
        };
        let mut seen = BTreeSet::new();
        let mut keys = Vec::with_capacity(entries.len());
        for entry in entries {
            let key = read_entry(entry)?;
            if !seen.insert(key.key.to_bytes()) {
                return Err(KeySetError::DuplicateKey);
            }
            keys.push(key);
        }
        if !keys.iter().any(|k| k.status == KeyStatus::Active) {
            return Err(KeySetError::NoActiveKey);
        }
        Ok(KeySet { keys })
    }
}

fn read_entry(entry: Value) -> Result<PublishedKey, KeySetError> {
    let Value::Object(mut m) = entry else {
        return Err(KeySetError::Malformed("a key is not an object"));
    };
    if m.len() != 3 {
        return Err(KeySetError::Malformed(
            "a key has other fields than id, paserk and status",
        ));
    }
    let mut text = |field: &'static str| match m.remove(field) {
        Some(Value::String(s)) => Ok(s),
        _ => Err(KeySetError::Malformed(field)),
    };
    let id = text("id")?;
    let paserk = text("paserk")?;
    let status = text("status")?;
    let key = parse_paserk_public(&paserk).ok_or(KeySetError::BadKey)?;
    if key_id(&key) != id {
        return Err(KeySetError::IdMismatch);
    }
    let status = KeyStatus::parse(&status).ok_or(KeySetError::Malformed("status"))?;
    Ok(PublishedKey { key, status })
}
