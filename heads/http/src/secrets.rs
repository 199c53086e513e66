//! The one secret store skeleton of the HTTP heads: API bearer tokens
//! ([`crate::tokens`]) and the console's pairing codes, session cookies and
//! page keys are each a [`Secret`] minted here and kept in a
//! [`PrivateStore`] only as its SHA-256.
//!
//! A secret is `<prefix><id>_<secret>`: a versioned prefix saying what it
//! is (`cs1_` an API token, `cp1_` a pairing code, ...), a random 64-bit id
//! (16 hex digits, for listing and revoking, not secret) and 256 random
//! bits (base64url). A store is one private JSON file in the home (0600,
//! read back with the owner/mode/symlink checks of every private file,
//! changed under an exclusive lock and replaced atomically), so the
//! process that serves and the command that lists or revokes share it.
//!
//! Must not: log, print or store a secret (it is handed once, to where it
//! goes); compare hashes in variable time.

use std::fmt;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_identity::IdentityError;
use countersign_identity::files::{read_private, replace_private_locked};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use time::OffsetDateTime;
use zeroize::Zeroizing;

/// Why a store could not be used: the message names the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The file is unsafe, unreadable, unwritable or corrupt.
    #[error("{0}")]
    File(String),
    /// The system's random source failed.
    #[error("no randomness: {0}")]
    Random(String),
}

impl From<IdentityError> for StoreError {
    fn from(e: IdentityError) -> Self {
        StoreError::File(e.to_string())
    }
}

/// A secret credential: no `Display`; a `Debug` that shows only its id;
/// zeroized on drop.
pub struct Secret {
    text: Zeroizing<String>,
    id: String,
}

impl Secret {
    /// The secret text, for the one place it goes (a file, a link, a cookie).
    pub fn expose_secret(&self) -> &str {
        &self.text
    }

    /// Its id (not secret).
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({})", self.id)
    }
}

/// A freshly minted secret and what a store keeps of it.
#[derive(Debug)]
pub struct Minted {
    /// The secret, handed out once.
    pub secret: Secret,
    /// Its SHA-256 (hex), which the store keeps.
    pub sha256: String,
}

/// A new secret with `prefix`.
pub fn mint(prefix: &str) -> Result<Minted, StoreError> {
    let mut id = [0u8; 8];
    let mut secret = Zeroizing::new([0u8; 32]);
    getrandom::fill(&mut id).map_err(|e| StoreError::Random(e.to_string()))?;
    getrandom::fill(secret.as_mut()).map_err(|e| StoreError::Random(e.to_string()))?;
    let id = hex::encode(id);
    let text = Zeroizing::new(format!(
        "{prefix}{id}_{}",
        URL_SAFE_NO_PAD.encode(secret.as_ref())
    ));
    let sha256 = hash(&text);
    Ok(Minted {
        secret: Secret { text, id },
        sha256,
    })
}

/// The id of `text` if it is a well-formed secret with `prefix`.
pub fn id_of<'a>(prefix: &str, text: &'a str) -> Option<&'a str> {
    let (id, secret) = text.strip_prefix(prefix)?.split_once('_')?;
    let id_ok = id.len() == 16 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let secret_ok = secret.len() == 43
        && secret
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    (id_ok && secret_ok).then_some(id)
}

/// Whether `presented` hashes to `sha256` (hex), in constant time.
pub fn matches(presented: &str, sha256: &str) -> bool {
    bool::from(hash(presented).as_bytes().ct_eq(sha256.as_bytes()))
}

fn hash(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// Whether a stored credential can be used at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CredentialStatus {
    /// Neither expired nor revoked.
    Active,
    /// Past its expiry.
    Expired,
    /// Revoked (before or after its expiry).
    Revoked,
}

impl CredentialStatus {
    /// The status at `now` of a credential expiring at `expires_at` (RFC
    /// 3339; unreadable is expired) and revoked at `revoked_at`, if it was.
    pub fn at(expires_at: &str, revoked_at: Option<&str>, now: OffsetDateTime) -> Self {
        if revoked_at.is_some() {
            CredentialStatus::Revoked
        } else if parse_time(expires_at).is_none_or(|t| t <= now) {
            CredentialStatus::Expired
        } else {
            CredentialStatus::Active
        }
    }

    /// `active`, `expired` or `revoked`, as listings print it.
    pub fn name(self) -> &'static str {
        match self {
            CredentialStatus::Active => "active",
            CredentialStatus::Expired => "expired",
            CredentialStatus::Revoked => "revoked",
        }
    }
}

impl Serialize for CredentialStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl fmt::Display for CredentialStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ`, as every time countersign prints.
pub fn rfc3339(t: OffsetDateTime) -> String {
    // Cannot fail for years 0..=9999, which a credential's times are.
    countersign_verifier::timestamp::format_whole_seconds(t).unwrap_or_default()
}

/// An RFC 3339 time a store wrote; `None` if it is not one.
pub fn parse_time(text: &str) -> Option<OffsetDateTime> {
    countersign_verifier::timestamp::parse(text).ok()
}

/// One private JSON file holding a store's records (`F`; a missing file
/// reads as `F::default()`).
#[derive(Debug, Clone)]
pub struct PrivateStore {
    path: PathBuf,
    lock: PathBuf,
}

impl PrivateStore {
    /// The store `file` in `home_root`, locked through `.<file stem>.lock`.
    pub fn in_home(home_root: &Path, file: &str) -> Self {
        let stem = file.strip_suffix(".json").unwrap_or(file);
        Self {
            path: home_root.join(file),
            lock: home_root.join(format!(".{stem}.lock")),
        }
    }

    /// The file as it is now.
    pub fn load<F: DeserializeOwned + Default>(&self) -> Result<F, StoreError> {
        match read_private(&self.path) {
            Ok(bytes) => self.decode(&bytes),
            Err(IdentityError::Missing(_)) => Ok(F::default()),
            Err(e) => Err(e.into()),
        }
    }

    /// Read, `change` and atomically replace the file under the store's
    /// exclusive lock; nothing is written if `change` fails.
    pub fn update<F, E>(&self, change: impl FnOnce(&mut F) -> Result<(), E>) -> Result<(), E>
    where
        F: Serialize + DeserializeOwned + Default,
        E: From<StoreError> + From<IdentityError>,
    {
        replace_private_locked(&self.path, &self.lock, |current| {
            let mut file = match current {
                Some(bytes) => self.decode(bytes)?,
                None => F::default(),
            };
            change(&mut file)?;
            serde_json::to_vec_pretty(&file)
                .map_err(|e| E::from(StoreError::File(format!("encode: {e}"))))
        })
    }

    fn decode<F: DeserializeOwned>(&self, bytes: &[u8]) -> Result<F, StoreError> {
        serde_json::from_slice(bytes)
            .map_err(|e| StoreError::File(format!("{}: {e}", self.path.display())))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_minted_secret_parses_back_to_its_id_and_matches_only_its_hash() {
        let minted = mint("cx1_").unwrap();
        let text = minted.secret.expose_secret();
        assert_eq!(id_of("cx1_", text), Some(minted.secret.id()));
        assert_eq!(id_of("cs1_", text), None);
        assert!(matches(text, &minted.sha256));
        let other = mint("cx1_").unwrap();
        assert!(!matches(other.secret.expose_secret(), &minted.sha256));
        assert!(!format!("{:?}", minted.secret).contains(text));
        assert!(!minted.sha256.contains(text));
    }

    #[test]
    fn a_secret_of_the_wrong_shape_has_no_id() {
        let text = mint("cx1_").unwrap().secret.expose_secret().to_owned();
        for bad in [
            &text[..text.len() - 1],
            &format!("{text}A"),
            &text.replacen('_', "-", 2),
            &text.to_uppercase(),
            "",
        ] {
            assert_eq!(id_of("cx1_", bad), None, "{bad}");
        }
    }

    #[test]
    fn a_credential_is_revoked_before_it_is_expired() {
        let now = OffsetDateTime::now_utc();
        let later = rfc3339(now + time::Duration::hours(1));
        let earlier = rfc3339(now - time::Duration::hours(1));
        assert_eq!(
            CredentialStatus::at(&later, None, now),
            CredentialStatus::Active
        );
        assert_eq!(
            CredentialStatus::at(&earlier, None, now),
            CredentialStatus::Expired
        );
        assert_eq!(
            CredentialStatus::at(&earlier, Some(&later), now),
            CredentialStatus::Revoked
        );
        assert_eq!(
            CredentialStatus::at("not a time", None, now),
            CredentialStatus::Expired
        );
    }
}
