//! The enrolment code: how the first passkey of an installation is
//! enrolled, through the signer's own administrative path.
//!
//! `countersign-signer passkeys enrolment-code`, run as the signer's OS
//! user, draws 128 random bits, prints them once as the code and keeps only
//! their SHA-256 and an expiry in `signer/passkey-enrolment-code` (0600, in
//! the signer's private directory: in the hardened installation nobody but
//! the signer's user can read or replace it). Enrol accepts the code once:
//! the first attempt, right or wrong, spends it, so it cannot be guessed
//! online. Must not: keep the code itself, or accept an expired one.

use std::path::{Path, PathBuf};

use countersign_identity::IdentityError;
use countersign_identity::files::replace_private_locked;
use sha2::{Digest, Sha256};
use time::{Duration, OffsetDateTime};

use crate::error::RpcError;

/// How long an enrolment code is accepted after it was printed.
pub const CODE_LIFETIME: Duration = Duration::minutes(30);
const FILE: &str = "passkey-enrolment-code";
const LOCK: &str = ".passkey-enrolment-code.lock";

/// The enrolment code file of a signer directory.
#[derive(Debug, Clone)]
pub struct EnrolmentCodes {
    dir: PathBuf,
}

/// Why a code could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CodeError {
    /// The file could not be written.
    #[error(transparent)]
    Identity(#[from] IdentityError),
    /// No randomness.
    #[error("no randomness: {0}")]
    Random(String),
}

impl EnrolmentCodes {
    /// The code file in `signer_dir`.
    pub fn in_dir(signer_dir: &Path) -> EnrolmentCodes {
        EnrolmentCodes {
            dir: signer_dir.to_path_buf(),
        }
    }

    /// Makes a new code (replacing any earlier one) and returns it with its
    /// expiry. The caller shows it to the administrator and keeps it nowhere.
    pub fn issue(&self, now: OffsetDateTime) -> Result<(String, OffsetDateTime), CodeError> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| CodeError::Random(e.to_string()))?;
        let code = hex::encode(bytes)
            .as_bytes()
            .chunks(4)
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect::<Vec<_>>()
            .join("-");
        // Whole seconds, as every time the signer shows.
        let expires_at = now.replace_nanosecond(0).unwrap_or(now) + CODE_LIFETIME;
        let record = serde_json::json!({
            "sha256": digest(&code),
            "expires_at": expires_at.unix_timestamp(),
        });
        replace_private_locked::<CodeError>(&self.dir.join(FILE), &self.dir.join(LOCK), |_| {
            Ok(record.to_string().into_bytes())
        })?;
        Ok((code, expires_at))
    }

    /// Spends the code: `Ok` if `code` is the current one and not expired.
    /// Whatever the answer, no code is left afterwards.
    pub(crate) fn spend(&self, code: &str, now: OffsetDateTime) -> Result<(), RpcError> {
        let mut accepted = false;
        replace_private_locked::<IdentityError>(
            &self.dir.join(FILE),
            &self.dir.join(LOCK),
            |current| {
                let stored: Option<serde_json::Value> =
                    current.and_then(|bytes| serde_json::from_slice(bytes).ok());
                if let Some(stored) = stored {
                    let expires = stored["expires_at"].as_i64().unwrap_or(i64::MIN);
                    accepted = stored["sha256"].as_str() == Some(digest(code.trim()).as_str())
                        && now.unix_timestamp() < expires;
                }
                Ok(b"{}".to_vec())
            },
        )
        .map_err(|e| RpcError::Internal(format!("enrolment code: {e}")))?;
        if accepted {
            Ok(())
        } else {
            Err(RpcError::EnrolmentCodeRefused)
        }
    }
}

fn digest(code: &str) -> String {
    hex::encode(Sha256::digest(code.as_bytes()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_code_is_accepted_once_and_a_wrong_guess_spends_it() {
        let dir = tempfile::tempdir().unwrap();
        let codes = EnrolmentCodes::in_dir(dir.path());
        let now = OffsetDateTime::now_utc();
        assert_eq!(
            codes.spend("x", now).unwrap_err(),
            RpcError::EnrolmentCodeRefused
        );
        let (code, expires) = codes.issue(now).unwrap();
        assert_eq!(expires, now.replace_nanosecond(0).unwrap() + CODE_LIFETIME);
        assert_eq!(code.len(), 39, "{code}");
        let text = std::fs::read_to_string(dir.path().join(FILE)).unwrap();
        assert!(!text.contains(&code), "only the hash is kept");
        codes.spend(&code, now).unwrap();
        assert_eq!(
            codes.spend(&code, now).unwrap_err(),
            RpcError::EnrolmentCodeRefused
        );

        let (code, _) = codes.issue(now).unwrap();
        assert!(codes.spend("0000", now).is_err());
        assert!(codes.spend(&code, now).is_err(), "the wrong guess spent it");

        let (code, _) = codes.issue(now).unwrap();
        assert!(codes.spend(&code, now + CODE_LIFETIME).is_err(), "expired");
    }
}
