//! Public key material of C2SP signed notes (c2sp.org/signed-note): key
//! names, key IDs, signature types, and verifier keys ("vkeys") with their
//! text encoding `<name>+<hex key ID>+<base64(type || public key)>`.
//!
//! This module holds public keys only and checks single signatures; private
//! keys live in the signer crate (`countersign_signer::note_keys`), note
//! parsing in [`crate::note`].

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signature, VerifyingKey};
use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::cosignature::{COSIGNATURE_SIZE, cosignature_message};

/// Why a key name, verifier key or signer key string was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum KeyError {
    /// The key name is empty, or contains a Unicode space, a plus sign or a
    /// control character.
    #[error("invalid key name")]
    InvalidName,
    /// The key string does not have its `+`-separated parts.
    #[error("the key string is missing a part")]
    MissingPart,
    /// A signer key string does not start with `PRIVATE+KEY+`.
    #[error("a signer key must start with PRIVATE+KEY+")]
    NotASignerKey,
    /// The key ID is not 8 lowercase hex digits.
    #[error("the key ID is not 8 lowercase hex digits")]
    MalformedKeyId,
    /// The key material is not canonical, padded standard base64.
    #[error("the key material is not canonical base64")]
    MalformedKeyEncoding,
    /// The key material is empty.
    #[error("the key material is empty")]
    EmptyKey,
    /// The signature type byte is not one this crate implements.
    #[error("unsupported signature type 0x{0:02x}")]
    UnsupportedSignatureType(u8),
    /// The key is not 32 bytes.
    #[error("an Ed25519 key is 32 bytes, not {0}")]
    WrongKeyLength(usize),
    /// The public key bytes are not a valid Ed25519 point.
    #[error("the public key is not a valid Ed25519 point")]
    InvalidPublicKey,
    /// The key ID in the string is not the one the name and key define.
    #[error("the key ID does not match the key name and key")]
    KeyIdMismatch,
}

/// A key name: non-empty, without Unicode spaces, plus signs or control
/// characters (c2sp.org/signed-note). Usually a schema-less URL.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyName(String);

impl KeyName {
    /// Checks a key name.
    pub fn new(name: &str) -> Result<KeyName, KeyError> {
        let valid = !name.is_empty()
            && !name
                .chars()
                .any(|c| c.is_whitespace() || c == '+' || c.is_control());
        if valid {
            Ok(KeyName(name.to_owned()))
        } else {
            Err(KeyError::InvalidName)
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for KeyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A 4-byte key ID, shown as 8 lowercase hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId(pub [u8; 4]);

impl KeyId {
    /// The recommended key ID: the first four bytes of
    /// `SHA-256(name || 0x0A || signature type || public key)`.
    pub fn compute(name: &KeyName, signature_type: SignatureType, public_key: &[u8]) -> KeyId {
        let mut hasher = Sha256::new();
        hasher.update(name.as_str().as_bytes());
        hasher.update([b'\n', signature_type.byte()]);
        hasher.update(public_key);
        let digest = hasher.finalize();
        KeyId([digest[0], digest[1], digest[2], digest[3]])
    }

    /// Parses exactly 8 lowercase hex digits.
    pub fn from_hex(text: &str) -> Result<KeyId, KeyError> {
        let lowercase_hex = text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if text.len() != 8 || !lowercase_hex {
            return Err(KeyError::MalformedKeyId);
        }
        let mut id = [0u8; 4];
        hex::decode_to_slice(text, &mut id).map_err(|_| KeyError::MalformedKeyId)?;
        Ok(KeyId(id))
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

/// The signature types this crate implements (c2sp.org/signed-note
/// "Signature types").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SignatureType {
    /// `0x01`: Ed25519 over the note text.
    Ed25519,
    /// `0x04`: timestamped Ed25519 checkpoint cosignatures
    /// (c2sp.org/tlog-cosignature).
    CosignatureV1,
}

impl SignatureType {
    /// The identifier byte.
    pub fn byte(self) -> u8 {
        match self {
            SignatureType::Ed25519 => 0x01,
            SignatureType::CosignatureV1 => 0x04,
        }
    }

    /// The type for an identifier byte.
    pub fn from_byte(byte: u8) -> Result<SignatureType, KeyError> {
        match byte {
            0x01 => Ok(SignatureType::Ed25519),
            0x04 => Ok(SignatureType::CosignatureV1),
            other => Err(KeyError::UnsupportedSignatureType(other)),
        }
    }
}

/// A verifier key: name, key ID, signature type and Ed25519 public key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifierKey {
    name: KeyName,
    id: KeyId,
    signature_type: SignatureType,
    key: VerifyingKey,
}

impl VerifierKey {
    /// A verifier key with the recommended key ID.
    pub fn new(name: KeyName, signature_type: SignatureType, key: VerifyingKey) -> VerifierKey {
        let id = KeyId::compute(&name, signature_type, key.as_bytes());
        VerifierKey {
            name,
            id,
            signature_type,
            key,
        }
    }

    /// The key name.
    pub fn name(&self) -> &KeyName {
        &self.name
    }

    /// The key ID.
    pub fn id(&self) -> KeyId {
        self.id
    }

    /// The signature type.
    pub fn signature_type(&self) -> SignatureType {
        self.signature_type
    }

    /// The Ed25519 public key.
    pub fn public_key(&self) -> &VerifyingKey {
        &self.key
    }

    /// Checks one signature (the bytes after the key ID) over a note text.
    /// For a cosignature, returns its timestamp. `None` for any failure:
    /// wrong length, timestamp above 2^63 - 1, or a signature that does not
    /// verify (Ed25519 `verify_strict`).
    pub(crate) fn check(&self, text: &str, signature: &[u8]) -> Option<Option<u64>> {
        match self.signature_type {
            SignatureType::Ed25519 => {
                let signature = Signature::from_slice(signature).ok()?;
                self.key.verify_strict(text.as_bytes(), &signature).ok()?;
                Some(None)
            }
            SignatureType::CosignatureV1 => {
                if signature.len() != COSIGNATURE_SIZE {
                    return None;
                }
                let (timestamp, signature) = signature.split_at(8);
                let timestamp = u64::from_be_bytes(timestamp.try_into().ok()?);
                let message = cosignature_message(timestamp, text)?;
                let signature = Signature::from_slice(signature).ok()?;
                self.key.verify_strict(&message, &signature).ok()?;
                Some(Some(timestamp))
            }
        }
    }
}

impl FromStr for VerifierKey {
    type Err = KeyError;

    /// Parses `<name>+<hex key ID>+<base64(type || public key)>`, refusing a
    /// key ID that does not match.
    fn from_str(text: &str) -> Result<VerifierKey, KeyError> {
        let (name, rest) = text.split_once('+').ok_or(KeyError::MissingPart)?;
        let (id, material) = rest.split_once('+').ok_or(KeyError::MissingPart)?;
        let name = KeyName::new(name)?;
        let id = KeyId::from_hex(id)?;
        let material = STANDARD
            .decode(material)
            .map_err(|_| KeyError::MalformedKeyEncoding)?;
        let (signature_type, key) = split_key_material(&material)?;
        let key = VerifyingKey::from_bytes(&key).map_err(|_| KeyError::InvalidPublicKey)?;
        let parsed = VerifierKey::new(name, signature_type, key);
        if parsed.id != id {
            return Err(KeyError::KeyIdMismatch);
        }
        Ok(parsed)
    }
}

impl fmt::Display for VerifierKey {
    /// `<name>+<hex key ID>+<base64(type || public key)>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut material = Vec::with_capacity(33);
        material.push(self.signature_type.byte());
        material.extend_from_slice(self.key.as_bytes());
        write!(f, "{}+{}+{}", self.name, self.id, STANDARD.encode(material))
    }
}

/// Splits `type || 32-byte key`, for verifier and signer keys alike.
pub(crate) fn split_key_material(material: &[u8]) -> Result<(SignatureType, [u8; 32]), KeyError> {
    let (&type_byte, key) = material.split_first().ok_or(KeyError::EmptyKey)?;
    let signature_type = SignatureType::from_byte(type_byte)?;
    let key: [u8; 32] = key
        .try_into()
        .map_err(|_| KeyError::WrongKeyLength(key.len()))?;
    Ok((signature_type, key))
}
