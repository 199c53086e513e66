//! The private keys of the transparency log's formats
//! (`countersign_tlog`, which verifies and holds no private key): the
//! log's note signing key (type 0x01, with the `PRIVATE+KEY+...` text
//! encoding) and a witness's cosigning key (type 0x04). Here, in the
//! signer, because no crate but the signer names a signing key (the
//! heads link no signing code); the tlog crate's tests include this file.
//!
//! Keys are built from a seed the caller supplies (this module draws no
//! randomness), zeroize on drop, and their `Debug` shows the type, name and
//! key ID only.

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signer as _, SigningKey};
use zeroize::Zeroizing;

use countersign_tlog::{
    COSIGNATURE_SIZE, Checkpoint, KeyError, KeyId, KeyName, NoteError, NoteSignature, NoteSigner,
    SignatureType, VerifierKey, cosignature_message,
};

/// The prefix of a signer key string.
const PRIVATE_KEY_PREFIX: &str = "PRIVATE+KEY+";

/// An Ed25519 note signing key (signature type 0x01), such as a log's
/// checkpoint key.
pub struct Ed25519Signer {
    name: KeyName,
    id: KeyId,
    key: SigningKey,
}

impl Ed25519Signer {
    /// The signer for a 32-byte Ed25519 seed.
    pub fn from_seed(name: KeyName, seed: &[u8; 32]) -> Ed25519Signer {
        let key = SigningKey::from_bytes(seed);
        let id = KeyId::compute(
            &name,
            SignatureType::Ed25519,
            key.verifying_key().as_bytes(),
        );
        Ed25519Signer { name, id, key }
    }

    /// The matching verifier key.
    pub fn verifier_key(&self) -> VerifierKey {
        VerifierKey::new(
            self.name.clone(),
            SignatureType::Ed25519,
            self.key.verifying_key(),
        )
    }

    /// The signer key string, `PRIVATE+KEY+<name>+<hex key ID>+<base64(0x01
    /// || seed)>`. A secret: it zeroizes on drop.
    pub fn to_private_key_string(&self) -> Zeroizing<String> {
        let mut material = Zeroizing::new(Vec::with_capacity(33));
        material.push(SignatureType::Ed25519.byte());
        material.extend_from_slice(self.key.as_bytes());
        let encoded = Zeroizing::new(STANDARD.encode(&*material));
        Zeroizing::new(format!(
            "{PRIVATE_KEY_PREFIX}{}+{}+{}",
            self.name, self.id, *encoded
        ))
    }
}

impl FromStr for Ed25519Signer {
    type Err = KeyError;

    /// Parses a signer key string, refusing any type but Ed25519 (0x01) and
    /// a key ID that does not match the name and the derived public key.
    fn from_str(text: &str) -> Result<Ed25519Signer, KeyError> {
        let rest = text
            .strip_prefix(PRIVATE_KEY_PREFIX)
            .ok_or(KeyError::NotASignerKey)?;
        let (name, rest) = rest.split_once('+').ok_or(KeyError::MissingPart)?;
        let (id, material) = rest.split_once('+').ok_or(KeyError::MissingPart)?;
        let name = KeyName::new(name)?;
        let id = KeyId::from_hex(id)?;
        let material = Zeroizing::new(
            STANDARD
                .decode(material)
                .map_err(|_| KeyError::MalformedKeyEncoding)?,
        );
        let (&type_byte, seed) = material.split_first().ok_or(KeyError::EmptyKey)?;
        match SignatureType::from_byte(type_byte)? {
            SignatureType::Ed25519 => {}
            SignatureType::CosignatureV1 => {
                return Err(KeyError::UnsupportedSignatureType(type_byte));
            }
        }
        let seed: &[u8; 32] = seed
            .try_into()
            .map_err(|_| KeyError::WrongKeyLength(seed.len()))?;
        let signer = Ed25519Signer::from_seed(name, seed);
        if signer.id != id {
            return Err(KeyError::KeyIdMismatch);
        }
        Ok(signer)
    }
}

impl NoteSigner for Ed25519Signer {
    fn key_name(&self) -> &KeyName {
        &self.name
    }

    fn key_id(&self) -> KeyId {
        self.id
    }

    fn sign(&self, text: &str) -> Result<Vec<u8>, NoteError> {
        Ok(self.key.sign(text.as_bytes()).to_bytes().to_vec())
    }
}

impl fmt::Debug for Ed25519Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ed25519Signer")
            .field("name", &self.name.as_str())
            .field("key_id", &self.id.to_string())
            .finish_non_exhaustive()
    }
}

/// A witness's Ed25519 cosigning key (signature type 0x04,
/// c2sp.org/tlog-cosignature). Its key must not be used for anything else,
/// nor by another cosigner name.
pub struct Cosigner {
    name: KeyName,
    id: KeyId,
    key: SigningKey,
}

impl Cosigner {
    /// The cosigner for a 32-byte Ed25519 seed.
    pub fn from_seed(name: KeyName, seed: &[u8; 32]) -> Cosigner {
        let key = SigningKey::from_bytes(seed);
        let id = KeyId::compute(
            &name,
            SignatureType::CosignatureV1,
            key.verifying_key().as_bytes(),
        );
        Cosigner { name, id, key }
    }

    /// The matching verifier key (type 0x04).
    pub fn verifier_key(&self) -> VerifierKey {
        VerifierKey::new(
            self.name.clone(),
            SignatureType::CosignatureV1,
            self.key.verifying_key(),
        )
    }

    /// Cosigns a checkpoint at `timestamp` (POSIX seconds, at most 2^63 -
    /// 1): the signature line to append to the checkpoint's note. The caller
    /// must have verified the log's signature and the checkpoint's
    /// consistency with what it saw before.
    pub fn cosign(
        &self,
        checkpoint: &Checkpoint,
        timestamp: u64,
    ) -> Result<NoteSignature, NoteError> {
        let body = checkpoint.to_string();
        let message =
            cosignature_message(timestamp, &body).ok_or(NoteError::TimestampOutOfRange)?;
        let mut signature = Vec::with_capacity(COSIGNATURE_SIZE);
        signature.extend_from_slice(&timestamp.to_be_bytes());
        signature.extend_from_slice(&self.key.sign(&message).to_bytes());
        Ok(NoteSignature::new(self.name.clone(), self.id, signature))
    }
}

impl fmt::Debug for Cosigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cosigner")
            .field("name", &self.name.as_str())
            .field("key_id", &self.id.to_string())
            .finish_non_exhaustive()
    }
}
