//! Key ids and the verifier's key ring.
//!
//! Owns: the PASERK `k4.pid` id of an Ed25519 public key and the map from
//! ids to trusted verifying keys. Must not: hold or derive any private key.

use std::collections::BTreeMap;

use blake2::Blake2b;
use blake2::digest::Digest;
use blake2::digest::consts::U33;
use ed25519_dalek::VerifyingKey;

use crate::paseto::b64url;

/// PASERK prefix of a v4 public key id.
pub const PID_PREFIX: &str = "k4.pid.";
/// PASERK prefix of a serialized v4 public key.
pub const PUBLIC_PREFIX: &str = "k4.public.";

/// The PASERK `k4.public.<b64url(pk)>` serialization of a verifying key.
pub fn paserk_public(key: &VerifyingKey) -> String {
    format!("{PUBLIC_PREFIX}{}", b64url(key.as_bytes()))
}

/// The verifying key a PASERK `k4.public.<b64url(pk)>` string encodes:
/// strict base64url of exactly 32 bytes that are a valid Ed25519 point.
pub fn parse_paserk_public(text: &str) -> Option<VerifyingKey> {
    let bytes = crate::paseto::b64url_decode(text.strip_prefix(PUBLIC_PREFIX)?)?;
    let bytes: [u8; 32] = bytes.try_into().ok()?;
    VerifyingKey::from_bytes(&bytes).ok()
}

/// The PASERK id of a verifying key:
/// `"k4.pid." + b64url(BLAKE2b-264("k4.pid." + "k4.public." + b64url(pk)))`.
pub fn key_id(key: &VerifyingKey) -> String {
    let mut hasher = Blake2b::<U33>::new();
    hasher.update(PID_PREFIX.as_bytes());
    hasher.update(paserk_public(key).as_bytes());
    format!("{PID_PREFIX}{}", b64url(&hasher.finalize()))
}

/// The verifying keys a verifier trusts, by key id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyRing {
    keys: BTreeMap<String, VerifyingKey>,
}

impl KeyRing {
    /// An empty ring (verifies nothing).
    pub fn new() -> Self {
        Self::default()
    }

    /// A ring holding `keys`.
    pub fn from_keys(keys: impl IntoIterator<Item = VerifyingKey>) -> Self {
        let mut ring = Self::new();
        for key in keys {
            ring.insert(key);
        }
        ring
    }

    /// Trusts `key`; returns its key id.
    pub fn insert(&mut self, key: VerifyingKey) -> String {
        let kid = key_id(&key);
        self.keys.insert(kid.clone(), key);
        kid
    }

    /// The key with this id, if trusted.
    pub fn get(&self, kid: &str) -> Option<&VerifyingKey> {
        self.keys.get(kid)
    }

    /// Ids of all trusted keys, sorted.
    pub fn key_ids(&self) -> impl Iterator<Item = &str> {
        self.keys.keys().map(String::as_str)
    }

    /// Number of trusted keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no key is trusted.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}
