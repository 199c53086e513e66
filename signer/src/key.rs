//! The proof-signing key: the only module that touches `ed25519_dalek::SigningKey`.
//!
//! Owns: generating the Ed25519 key, storing it as a PASERK `k4.secret`
//! string in a private file (via `countersign_identity::files`: created new
//! with mode 0600; read back only if it is a regular, non-symlinked file of
//! this user with no group/other bits), and producing raw signatures for
//! `issue.rs`. Must not: print, log, serialize or return the secret bytes;
//! `Debug` shows the algorithm and key id only; the key is zeroized on drop.
//!
//! Signing goes through one crate-private trait, `ProofSigner`, with two
//! implementations: the file key here and the PKCS#11 token key of
//! `pkcs11/`. `keystore.rs` decides which key is active.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_identity::IdentityError;
use countersign_identity::files::{read_private, write_private_new};
use countersign_verifier::key_id;
use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};
use zeroize::Zeroizing;

/// PASERK prefix of a v4 secret key (the 64-byte Ed25519 keypair).
pub const SECRET_PREFIX: &str = "k4.secret.";
/// Length of a `k4.secret.` PASERK string: prefix plus 86 base64url chars (64 bytes).
const SECRET_PASERK_LEN: usize = SECRET_PREFIX.len() + 86;

/// Why the signing key could not be created or loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The operating system's random source failed.
    #[error("cannot obtain random bytes for a new signing key")]
    Random,
    /// The key file was refused or could not be read/written (symlink, mode wider than 0600, other owner, I/O).
    #[error("signing key file: {0}")]
    File(#[from] IdentityError),
    /// The key file does not hold exactly one valid `k4.secret.` PASERK string.
    #[error("signing key file does not hold a valid k4.secret PASERK key")]
    Format,
    /// The `pkcs11:` URI is not one the signer accepts (see `pkcs11::Pkcs11Uri`).
    #[error("pkcs11 URI refused: {0}")]
    Pkcs11Uri(String),
    /// The PKCS#11 module was not loaded: it, or a directory on the way to
    /// it, could be changed by someone other than the signer's user and
    /// root (the registry's checks, `ConfiguredFile::Pkcs11Module`).
    #[error("PKCS#11 module {0} not loaded: {1}")]
    Pkcs11ModuleRefused(PathBuf, String),
    /// The PKCS#11 module could not be loaded or initialized.
    #[error("PKCS#11 module {0}: {1}")]
    Pkcs11Module(PathBuf, String),
    /// No token with this label is present.
    #[error(
        "no PKCS#11 token labelled {0:?} is present (is it plugged in, and is module-path right?)"
    )]
    TokenNotFound(String),
    /// The token refused the PIN from the pin-source file (the return value's name).
    #[error("token {0:?} refused the PIN from the pin-source file ({1})")]
    TokenLogin(String, String),
    /// The token holds no Ed25519 private key with this label/id.
    #[error("token {0:?} holds no Ed25519 private key with {1}")]
    TokenKeyNotFound(String, String),
    /// A key generation would reuse a label or id the token already has.
    #[error("token {0:?} already holds a private key with the label or id of {1}")]
    TokenKeyExists(String, String),
    /// The token's key is not the key the key index records.
    #[error("the key on token {0:?} is not the key the key index records")]
    TokenKeyMismatch(String),
    /// A PKCS#11 call failed (the call and its return value's name).
    #[error("token {0:?}: {1}")]
    Token(String, String),
}

/// What signs proofs: an Ed25519 key named by its PASERK `k4.pid` id.
///
/// Crate-private so that no other crate can sign arbitrary bytes with a
/// key it holds; `issue.rs` is the only caller of [`ProofSigner::sign`].
pub(crate) trait ProofSigner: Send + Sync + std::fmt::Debug {
    /// The PASERK `k4.pid` id of the verifying key (what proof footers name).
    fn key_id(&self) -> &str;
    /// The public half, for verifiers.
    fn verifying_key(&self) -> VerifyingKey;
    /// Ed25519 signature over `message`. A key held in a device may fail.
    fn sign(&self, message: &[u8]) -> Result<[u8; 64], KeyError>;
}

impl ProofSigner for ProofKey {
    fn key_id(&self) -> &str {
        ProofKey::key_id(self)
    }

    fn verifying_key(&self) -> VerifyingKey {
        ProofKey::verifying_key(self)
    }

    fn sign(&self, message: &[u8]) -> Result<[u8; 64], KeyError> {
        Ok(ProofKey::sign(self, message))
    }
}

/// The Ed25519 key that signs proofs, held in a private file.
pub struct ProofKey {
    signing: SigningKey,
    key_id: String,
}

impl std::fmt::Debug for ProofKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ProofKey(Ed25519 {})", self.key_id)
    }
}

impl ProofKey {
    fn from_signing_key(signing: SigningKey) -> Self {
        let key_id = key_id(&signing.verifying_key());
        Self { signing, key_id }
    }

    /// A new key from 32 bytes of operating-system randomness.
    pub fn generate() -> Result<Self, KeyError> {
        let mut seed = Zeroizing::new([0u8; 32]);
        getrandom::fill(seed.as_mut_slice()).map_err(|_| KeyError::Random)?;
        Ok(Self::from_signing_key(SigningKey::from_bytes(&seed)))
    }

    /// A key derived from a fixed seed. Deterministic: for test vectors and
    /// tests only, never for a key that signs real approvals.
    pub fn from_seed(seed: &[u8; 32]) -> Self {
        Self::from_signing_key(SigningKey::from_bytes(seed))
    }

    /// Generates a new key and stores it at `path` (which must not exist yet), mode 0600.
    pub fn create_file(path: &Path) -> Result<Self, KeyError> {
        let key = Self::generate()?;
        key.write_new_file(path)?;
        Ok(key)
    }

    /// Stores this key at `path` (which must not exist yet) as `k4.secret.<b64url(keypair)>`, mode 0600.
    pub fn write_new_file(&self, path: &Path) -> Result<(), KeyError> {
        let keypair = Zeroizing::new(self.signing.to_keypair_bytes());
        let mut text = Zeroizing::new(String::with_capacity(SECRET_PASERK_LEN));
        text.push_str(SECRET_PREFIX);
        URL_SAFE_NO_PAD.encode_string(keypair.as_slice(), &mut text);
        write_private_new(path, text.as_bytes())?;
        Ok(())
    }

    /// Loads a key file written by [`Self::write_new_file`], refusing symlinks,
    /// modes wider than 0600, files of another user and any content other than
    /// exactly one `k4.secret.` PASERK string whose public half matches its secret half.
    pub fn load_file(path: &Path) -> Result<Self, KeyError> {
        let bytes = read_private(path)?;
        Self::from_paserk(&bytes)
    }

    fn from_paserk(text: &[u8]) -> Result<Self, KeyError> {
        if text.len() != SECRET_PASERK_LEN {
            return Err(KeyError::Format);
        }
        let encoded = text
            .strip_prefix(SECRET_PREFIX.as_bytes())
            .ok_or(KeyError::Format)?;
        let mut keypair = Zeroizing::new([0u8; 64]);
        let written = URL_SAFE_NO_PAD
            .decode_slice(encoded, keypair.as_mut_slice())
            .map_err(|_| KeyError::Format)?;
        if written != 64 {
            return Err(KeyError::Format);
        }
        // Refuses a keypair whose public half is not derived from its secret half.
        let signing = SigningKey::from_keypair_bytes(&keypair).map_err(|_| KeyError::Format)?;
        Ok(Self::from_signing_key(signing))
    }

    /// The PASERK `k4.pid` id of the verifying key (what proof footers name).
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The public half, for verifiers.
    pub fn verifying_key(&self) -> VerifyingKey {
        self.signing.verifying_key()
    }

    /// Ed25519 signature over `message` (deterministic). Only `issue.rs` calls this.
    pub(crate) fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.signing.sign(message).to_bytes()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn debug_shows_only_algorithm_and_key_id() {
        let key = ProofKey::from_seed(&[1u8; 32]);
        let shown = format!("{key:?}");
        assert_eq!(shown, format!("ProofKey(Ed25519 {})", key.key_id()));
        assert!(key.key_id().starts_with("k4.pid."));
    }

    #[test]
    fn paserk_parsing_is_strict() {
        let key = ProofKey::from_seed(&[2u8; 32]);
        let good = format!(
            "{SECRET_PREFIX}{}",
            URL_SAFE_NO_PAD.encode(key.signing.to_keypair_bytes())
        );
        assert_eq!(
            ProofKey::from_paserk(good.as_bytes()).unwrap().key_id(),
            key.key_id()
        );
        for bad in [
            format!("{good}\n"),
            good.replacen("k4.secret.", "k3.secret.", 1),
            good.replacen("k4.secret.", "k4.public.", 1),
            format!("{}_", &good[..good.len() - 1]),
            String::new(),
        ] {
            assert_eq!(
                ProofKey::from_paserk(bad.as_bytes()).unwrap_err(),
                KeyError::Format
            );
        }
        // Public half of another key: refused.
        let mut pair = key.signing.to_keypair_bytes();
        pair[32..].copy_from_slice(ProofKey::from_seed(&[3u8; 32]).verifying_key().as_bytes());
        let mixed = format!("{SECRET_PREFIX}{}", URL_SAFE_NO_PAD.encode(pair));
        assert_eq!(
            ProofKey::from_paserk(mixed.as_bytes()).unwrap_err(),
            KeyError::Format
        );
    }
}
