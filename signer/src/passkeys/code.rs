//! Enrolment codes: how every passkey is enrolled, through the signer's
//! own administrative path, one approver at a time.
//!
//! `countersign-signer passkeys enrolment-code --approver NAME` (or
//! `--unnamed` for the approver certificate without a name), run as the
//! signer's OS user, draws 128 random bits, prints them once as the code
//! and keeps only their SHA-256, the approver and an expiry in
//! `signer/passkey-enrolment-code.<NAME>` (`.-unnamed` for the unnamed
//! certificate; 0600, in the signer's private directory: in the hardened
//! installation nobody but the signer's user can read or replace it). Enrol
//! accepts a code once, and only from the approver certificate it was drawn
//! for: the first attempt of that approver, right or wrong, spends it, so
//! it cannot be guessed online, and a code presented through another
//! approver's certificate has leaked and is spent as well. Must not: keep
//! the code itself, accept an expired one, or accept one approver's code
//! from another approver.

use std::path::{Path, PathBuf};

use countersign_identity::files::replace_private_locked;
use countersign_identity::{ApproverName, IdentityError};
use sha2::{Digest, Sha256};
use time::{Duration, OffsetDateTime};

use crate::error::RpcError;

/// How long an enrolment code is accepted after it was printed.
pub const CODE_LIFETIME: Duration = Duration::minutes(30);
const FILE: &str = "passkey-enrolment-code";
/// The file suffix of the unnamed approver certificate's code: `-` cannot
/// start an approver name, so no name has this file.
const UNNAMED: &str = "-unnamed";

/// The enrolment code files of a signer directory.
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
    /// The code files in `signer_dir`.
    pub fn in_dir(signer_dir: &Path) -> EnrolmentCodes {
        EnrolmentCodes {
            dir: signer_dir.to_path_buf(),
        }
    }

    /// The code file of `approver` (`None`: the unnamed approver
    /// certificate) and its lock.
    fn paths(&self, approver: Option<&ApproverName>) -> (PathBuf, PathBuf) {
        let suffix = approver.map_or(UNNAMED, ApproverName::as_str);
        (
            self.dir.join(format!("{FILE}.{suffix}")),
            self.dir.join(format!(".{FILE}.{suffix}.lock")),
        )
    }

    /// Makes a new code for `approver` (replacing any earlier one of that
    /// approver) and returns it with its expiry. The caller shows it to the
    /// administrator and keeps it nowhere.
    pub fn issue(
        &self,
        approver: Option<&ApproverName>,
        now: OffsetDateTime,
    ) -> Result<(String, OffsetDateTime), CodeError> {
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
            "approver": approver.map_or("", ApproverName::as_str),
            "expires_at": expires_at.unix_timestamp(),
        });
        let (file, lock) = self.paths(approver);
        replace_private_locked::<CodeError>(&file, &lock, |_| Ok(record.to_string().into_bytes()))?;
        Ok((code, expires_at))
    }

    /// Spends `approver`'s code: `Ok` if `code` is the current one drawn for
    /// `approver` and not expired. Whatever the answer, that approver has
    /// no code left afterwards; other approvers' codes are untouched.
    pub(crate) fn spend(
        &self,
        approver: Option<&ApproverName>,
        code: &str,
        now: OffsetDateTime,
    ) -> Result<(), RpcError> {
        let mut accepted = false;
        let (file, lock) = self.paths(approver);
        let name = approver.map_or("", ApproverName::as_str);
        replace_private_locked::<IdentityError>(&file, &lock, |current| {
            let stored: Option<serde_json::Value> =
                current.and_then(|bytes| serde_json::from_slice(bytes).ok());
            if let Some(stored) = stored {
                let expires = stored["expires_at"].as_i64().unwrap_or(i64::MIN);
                accepted = stored["sha256"].as_str() == Some(digest(code.trim()).as_str())
                    && stored["approver"].as_str() == Some(name)
                    && now.unix_timestamp() < expires;
            }
            Ok(b"{}".to_vec())
        })
        .map_err(|e| RpcError::Internal(format!("enrolment code: {e}")))?;
        if accepted {
            Ok(())
        } else {
            self.burn_if_another_approvers(approver, code);
            Err(RpcError::EnrolmentCodeRefused)
        }
    }

    /// A refused `code` that is another approver's current code has leaked
    /// to the wrong certificate: spend that one too, so it is never
    /// accepted afterwards. Best effort (a file that cannot be read or
    /// rewritten is logged and left).
    fn burn_if_another_approvers(&self, approver: Option<&ApproverName>, code: &str) {
        let own = self.paths(approver).0;
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let wanted = digest(code.trim());
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(suffix) = name
                .to_str()
                .and_then(|n| n.strip_prefix(FILE))
                .and_then(|n| n.strip_prefix('.'))
            else {
                continue;
            };
            let other = match suffix {
                UNNAMED => None,
                named => match ApproverName::parse(named) {
                    Ok(name) => Some(name),
                    Err(_) => continue,
                },
            };
            let (file, lock) = self.paths(other.as_ref());
            if file == own {
                continue;
            }
            let burnt = replace_private_locked::<IdentityError>(&file, &lock, |current| {
                let stored: Option<serde_json::Value> =
                    current.and_then(|bytes| serde_json::from_slice(bytes).ok());
                match stored {
                    Some(stored) if stored["sha256"].as_str() == Some(wanted.as_str()) => {
                        tracing::warn!(
                            code_of = suffix,
                            "an enrolment code was presented by another approver's certificate; spent"
                        );
                        Ok(b"{}".to_vec())
                    }
                    _ => Ok(current
                        .map(<[u8]>::to_vec)
                        .unwrap_or_else(|| b"{}".to_vec())),
                }
            });
            if let Err(e) = burnt {
                tracing::warn!(file = %file.display(), "enrolment code not checked: {e}");
            }
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
        let alice = ApproverName::parse("alice").unwrap();
        let me = Some(&alice);
        let now = OffsetDateTime::now_utc();
        assert_eq!(
            codes.spend(me, "x", now).unwrap_err(),
            RpcError::EnrolmentCodeRefused
        );
        let (code, expires) = codes.issue(me, now).unwrap();
        assert_eq!(expires, now.replace_nanosecond(0).unwrap() + CODE_LIFETIME);
        assert_eq!(code.len(), 39, "{code}");
        let text = std::fs::read_to_string(dir.path().join(format!("{FILE}.alice"))).unwrap();
        assert!(!text.contains(&code), "only the hash is kept");
        codes.spend(me, &code, now).unwrap();
        assert_eq!(
            codes.spend(me, &code, now).unwrap_err(),
            RpcError::EnrolmentCodeRefused
        );

        let (code, _) = codes.issue(me, now).unwrap();
        assert!(codes.spend(me, "0000", now).is_err());
        assert!(
            codes.spend(me, &code, now).is_err(),
            "the wrong guess spent it"
        );

        let (code, _) = codes.issue(me, now).unwrap();
        assert!(
            codes.spend(me, &code, now + CODE_LIFETIME).is_err(),
            "expired"
        );
    }

    #[test]
    fn refuses_one_approvers_code_from_another_approver() {
        let dir = tempfile::tempdir().unwrap();
        let codes = EnrolmentCodes::in_dir(dir.path());
        let (alice, bob) = (
            ApproverName::parse("alice").unwrap(),
            ApproverName::parse("bob").unwrap(),
        );
        let now = OffsetDateTime::now_utc();
        let (for_alice, _) = codes.issue(Some(&alice), now).unwrap();
        let (for_bob, _) = codes.issue(Some(&bob), now).unwrap();
        assert_eq!(
            codes.spend(Some(&bob), &for_alice, now).unwrap_err(),
            RpcError::EnrolmentCodeRefused
        );
        assert_eq!(
            codes.spend(Some(&bob), &for_bob, now).unwrap_err(),
            RpcError::EnrolmentCodeRefused,
            "bob's attempt with alice's code spent bob's"
        );
        let (for_unnamed, _) = codes.issue(None, now).unwrap();
        assert_eq!(
            codes.spend(None, &for_alice, now).unwrap_err(),
            RpcError::EnrolmentCodeRefused
        );
        assert!(codes.spend(None, &for_unnamed, now).is_err(), "spent");
        // A code presented by another approver's certificate has leaked:
        // it is spent for its own approver too.
        assert_eq!(
            codes.spend(Some(&alice), &for_alice, now).unwrap_err(),
            RpcError::EnrolmentCodeRefused
        );
        // A wrong guess by another approver spends nothing of alice's.
        let (for_alice, _) = codes.issue(Some(&alice), now).unwrap();
        assert!(codes.spend(Some(&bob), "0000-0000", now).is_err());
        codes.spend(Some(&alice), &for_alice, now).unwrap();
        let (for_unnamed, _) = codes.issue(None, now).unwrap();
        assert_eq!(
            codes.spend(Some(&alice), &for_unnamed, now).unwrap_err(),
            RpcError::EnrolmentCodeRefused
        );
        assert_eq!(
            codes.spend(None, &for_unnamed, now).unwrap_err(),
            RpcError::EnrolmentCodeRefused,
            "the unnamed certificate's code leaked to alice: spent"
        );
    }
}
