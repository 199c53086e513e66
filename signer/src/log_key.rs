//! The log key: the Ed25519 key that signs the transparency log's
//! checkpoints (C2SP signed notes, see `countersign_tlog`), separate from
//! the proof key so that neither can be made to sign for the other.
//!
//! Owns: the file `signer/log.key` beside the proof key, holding the C2SP
//! signer key string `PRIVATE+KEY+<origin>+<key id>+<base64(0x01 ||
//! seed)>`, created new with mode 0600 at `keygen` or first start and read
//! back only if it is a regular, non-symlinked file of this user with no
//! group or other bits (the proof key's checks,
//! `countersign_identity::files`). The key's name is the log's origin,
//! `countersign/<principal>`: the home's principal is drawn at random when
//! the home is made and never changes, so the origin is stable and names
//! this installation's log alone. A key file naming another origin is
//! refused. Must not: print, log or return the seed; `Debug` shows the
//! name and key id only (`Ed25519Signer`'s), and the key zeroizes on drop.
//!
//! Rotation ([`rotate`], `countersign-signer log-key rotate`) keeps the
//! origin and the log: the retiring key's verifier key is appended to
//! `signer/log-keys-retired` (public keys, one per line, never removed) and
//! a new key replaces `log.key`, each file replaced atomically. The signer
//! reads both at start, signs with the new key from then on (each new
//! checkpoint is still checked consistent with the last, whoever signed
//! it) and publishes the retired keys beside the current one, so the
//! checkpoints they signed still verify.

use std::path::Path;

use countersign_identity::IdentityError;
use countersign_identity::files::{read_private, replace_private_locked, write_private_new};
use countersign_tlog::{
    Checkpoint, KeyError as NoteKeyError, KeyName, Note, NoteError, VerifierKey, sign_note,
};
use zeroize::Zeroizing;

use crate::note_keys::Ed25519Signer;

/// The log key's file, in the signer directory.
pub const LOG_KEY_FILE: &str = "log.key";

/// The retired log keys' verifier keys, one per line, in the signer
/// directory.
pub const RETIRED_LOG_KEYS_FILE: &str = "log-keys-retired";

/// Why the log key could not be created or loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogKeyError {
    /// The operating system's random source failed.
    #[error("cannot obtain random bytes for a new log key")]
    Random,
    /// The file was refused or could not be read or written (symlink, mode
    /// wider than 0600, another owner, I/O).
    #[error("log key file: {0}")]
    File(#[from] IdentityError),
    /// The file does not hold exactly one C2SP Ed25519 signer key string.
    #[error("log key file does not hold a valid signer key: {0}")]
    Format(NoteKeyError),
    /// A line of the retired keys' file is not a verifier key.
    #[error("{RETIRED_LOG_KEYS_FILE} line {line} is not a verifier key: {error}")]
    Retired {
        /// The 1-based line number.
        line: usize,
        /// Why it was refused.
        error: NoteKeyError,
    },
    /// There is no log key to rotate.
    #[error("there is no log key to rotate (run `countersign-signer keygen` first)")]
    NoKey,
    /// Another process replaced the log key during the rotation.
    #[error("the log key changed during the rotation; nothing more was done, run it again")]
    Raced,
    /// The key's name is not this installation's log origin.
    #[error("the log key is for origin {found:?}, not {expected:?}")]
    OtherOrigin {
        /// The origin this home's log has.
        expected: String,
        /// The key's name.
        found: String,
    },
}

/// The origin of the log of the installation whose principal is
/// `principal`.
pub fn origin_of(principal: &str) -> String {
    format!("countersign/{principal}")
}

/// The log's signing key, and the verifier keys of those it replaced.
#[derive(Debug)]
pub struct LogKey {
    signer: Ed25519Signer,
    retired: Vec<VerifierKey>,
}

impl LogKey {
    /// Loads `signer_dir/log.key`, or creates it (0600) if it does not
    /// exist; true when it was created.
    pub fn open(signer_dir: &Path, principal: &str) -> Result<(LogKey, bool), LogKeyError> {
        let path = signer_dir.join(LOG_KEY_FILE);
        let origin = origin_of(principal);
        if path.symlink_metadata().is_ok() {
            return Ok((LogKey::load(&path, &origin)?, false));
        }
        let name = KeyName::new(&origin).map_err(LogKeyError::Format)?;
        let mut seed = Zeroizing::new([0u8; 32]);
        getrandom::fill(seed.as_mut_slice()).map_err(|_| LogKeyError::Random)?;
        let signer = Ed25519Signer::from_seed(name, &seed);
        match write_private_new(&path, signer.to_private_key_string().as_bytes()) {
            Ok(()) => Ok((
                LogKey {
                    signer,
                    retired: retired(signer_dir, &origin)?,
                },
                true,
            )),
            // Another process created it meanwhile: use that one.
            Err(_) if path.symlink_metadata().is_ok() => Ok((LogKey::load(&path, &origin)?, false)),
            Err(e) => Err(e.into()),
        }
    }

    /// Loads the key file at `path`, whose key must be named `origin`, and
    /// the retired keys listed beside it.
    pub fn load(path: &Path, origin: &str) -> Result<LogKey, LogKeyError> {
        let signer = signer_at(path, origin)?;
        let dir = path.parent().unwrap_or_else(|| Path::new("."));
        Ok(LogKey {
            signer,
            retired: retired(dir, origin)?,
        })
    }

    /// The verifier keys of the log keys this one replaced, oldest first:
    /// published so that the checkpoints they signed still verify.
    pub fn retired(&self) -> &[VerifierKey] {
        &self.retired
    }

    /// The log's origin (the key's name).
    pub fn origin(&self) -> String {
        self.signer.verifier_key().name().as_str().to_owned()
    }

    /// The public key, as the C2SP verifier key string
    /// `<origin>+<key id>+<base64>` when displayed.
    pub fn verifier_key(&self) -> VerifierKey {
        self.signer.verifier_key()
    }

    /// The signed note of `checkpoint`. Only `log_checkpoint.rs` calls
    /// this, after checking the tree consistent with the last checkpoint.
    pub(crate) fn sign(&self, checkpoint: &Checkpoint) -> Result<Note, NoteError> {
        sign_note(&checkpoint.to_string(), &[&self.signer])
    }
}

/// The signer key in the file at `path`, which must be named `origin`.
fn signer_at(path: &Path, origin: &str) -> Result<Ed25519Signer, LogKeyError> {
    let bytes = read_private(path)?;
    signer_of(&bytes, origin)
}

fn signer_of(bytes: &[u8], origin: &str) -> Result<Ed25519Signer, LogKeyError> {
    let text =
        std::str::from_utf8(bytes).map_err(|_| LogKeyError::Format(NoteKeyError::NotASignerKey))?;
    let signer: Ed25519Signer = text.parse().map_err(LogKeyError::Format)?;
    let found = signer.verifier_key().name().as_str().to_owned();
    if found != origin {
        return Err(LogKeyError::OtherOrigin {
            expected: origin.to_owned(),
            found,
        });
    }
    Ok(signer)
}

/// The retired keys listed in `signer_dir`, each named `origin` (none if
/// the file does not exist).
pub fn retired(signer_dir: &Path, origin: &str) -> Result<Vec<VerifierKey>, LogKeyError> {
    match read_private(&signer_dir.join(RETIRED_LOG_KEYS_FILE)) {
        Ok(bytes) => parse_retired(&bytes, origin),
        Err(IdentityError::Missing(_)) => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

fn parse_retired(bytes: &[u8], origin: &str) -> Result<Vec<VerifierKey>, LogKeyError> {
    let text = std::str::from_utf8(bytes).map_err(|_| LogKeyError::Retired {
        line: 1,
        error: NoteKeyError::MalformedKeyEncoding,
    })?;
    let mut keys = Vec::new();
    for (index, line) in text.lines().enumerate().filter(|(_, l)| !l.is_empty()) {
        let key: VerifierKey = line.parse().map_err(|error| LogKeyError::Retired {
            line: index + 1,
            error,
        })?;
        if key.name().as_str() != origin {
            return Err(LogKeyError::OtherOrigin {
                expected: origin.to_owned(),
                found: key.name().as_str().to_owned(),
            });
        }
        keys.push(key);
    }
    Ok(keys)
}

/// Rotates the log key of `signer_dir` (whose principal is `principal`):
/// the current key's verifier key joins the retired ones, then a new key
/// replaces it. Returns the retired and the new verifier keys. Takes
/// effect at the signer's next start.
pub fn rotate(
    signer_dir: &Path,
    principal: &str,
) -> Result<(VerifierKey, VerifierKey), LogKeyError> {
    let path = signer_dir.join(LOG_KEY_FILE);
    let origin = origin_of(principal);
    if path.symlink_metadata().is_err() {
        return Err(LogKeyError::NoKey);
    }
    let old = signer_at(&path, &origin)?.verifier_key();
    replace_private_locked(
        &signer_dir.join(RETIRED_LOG_KEYS_FILE),
        &signer_dir.join(format!("{RETIRED_LOG_KEYS_FILE}.lock")),
        |current| -> Result<Vec<u8>, LogKeyError> {
            let listed = current.map_or(Ok(Vec::new()), |b| parse_retired(b, &origin))?;
            let mut text = listed.iter().map(|k| format!("{k}\n")).collect::<String>();
            if !listed.contains(&old) {
                text.push_str(&format!("{old}\n"));
            }
            Ok(text.into_bytes())
        },
    )?;
    let name = KeyName::new(&origin).map_err(LogKeyError::Format)?;
    let mut seed = Zeroizing::new([0u8; 32]);
    getrandom::fill(seed.as_mut_slice()).map_err(|_| LogKeyError::Random)?;
    let new = Ed25519Signer::from_seed(name, &seed);
    replace_private_locked(
        &path,
        &signer_dir.join(format!("{LOG_KEY_FILE}.lock")),
        |current| -> Result<Vec<u8>, LogKeyError> {
            let current = current.ok_or(LogKeyError::Raced)?;
            if signer_of(current, &origin)?.verifier_key() != old {
                return Err(LogKeyError::Raced);
            }
            Ok(new.to_private_key_string().as_bytes().to_vec())
        },
    )?;
    Ok((old, new.verifier_key()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const PRINCIPAL: &str = "pr_0123456789abcdef0123456789abcdef";

    #[test]
    fn creates_once_then_loads_the_same_key() {
        let dir = tempfile::tempdir().unwrap();
        let (created, new) = LogKey::open(dir.path(), PRINCIPAL).unwrap();
        assert!(new);
        let (loaded, new) = LogKey::open(dir.path(), PRINCIPAL).unwrap();
        assert!(!new);
        assert_eq!(created.verifier_key(), loaded.verifier_key());
        assert_eq!(loaded.origin(), format!("countersign/{PRINCIPAL}"));
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(dir.path().join(LOG_KEY_FILE))
                .unwrap()
                .permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        let shown = format!("{loaded:?}");
        assert!(
            shown.contains(&loaded.verifier_key().id().to_string()),
            "{shown}"
        );
        assert!(!shown.contains("PRIVATE"), "{shown}");
    }

    #[test]
    fn refuses_a_key_of_another_origin() {
        let dir = tempfile::tempdir().unwrap();
        LogKey::open(dir.path(), PRINCIPAL).unwrap();
        let other = "pr_ffffffffffffffffffffffffffffffff";
        assert_eq!(
            LogKey::open(dir.path(), other).unwrap_err(),
            LogKeyError::OtherOrigin {
                expected: origin_of(other),
                found: origin_of(PRINCIPAL),
            }
        );
    }

    #[test]
    fn refuses_a_file_readable_by_others_a_symlink_or_not_a_key() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_KEY_FILE);
        LogKey::open(dir.path(), PRINCIPAL).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(
            LogKey::open(dir.path(), PRINCIPAL).unwrap_err(),
            LogKeyError::File(IdentityError::FileMode {
                path: path.clone(),
                mode: 0o644
            })
        );
        std::fs::rename(&path, dir.path().join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), &path).unwrap();
        assert_eq!(
            LogKey::open(dir.path(), PRINCIPAL).unwrap_err(),
            LogKeyError::File(IdentityError::Symlink(path.clone()))
        );
        std::fs::remove_file(&path).unwrap();
        write_private_new(&path, b"k4.secret.nope").unwrap();
        assert_eq!(
            LogKey::open(dir.path(), PRINCIPAL).unwrap_err(),
            LogKeyError::Format(NoteKeyError::NotASignerKey)
        );
    }

    #[test]
    fn rotation_keeps_the_origin_retires_the_old_key_and_refuses_without_one() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            rotate(dir.path(), PRINCIPAL).unwrap_err(),
            LogKeyError::NoKey
        );
        let (first, _) = LogKey::open(dir.path(), PRINCIPAL).unwrap();
        assert!(first.retired().is_empty());
        let (old, new) = rotate(dir.path(), PRINCIPAL).unwrap();
        assert_eq!(old, first.verifier_key());
        assert_ne!(new.id(), old.id());
        assert_eq!(new.name(), old.name());
        let (second, created) = LogKey::open(dir.path(), PRINCIPAL).unwrap();
        assert!(!created);
        assert_eq!(second.verifier_key(), new);
        assert_eq!(second.retired(), std::slice::from_ref(&old));
        let (_, newest) = rotate(dir.path(), PRINCIPAL).unwrap();
        let (third, _) = LogKey::open(dir.path(), PRINCIPAL).unwrap();
        assert_eq!(third.verifier_key(), newest);
        assert_eq!(third.retired(), [old, new]);
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(dir.path().join(RETIRED_LOG_KEYS_FILE))
                .unwrap()
                .permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        // A retired list naming another log is refused.
        let other = "pr_ffffffffffffffffffffffffffffffff";
        assert_eq!(
            retired(dir.path(), &origin_of(other)).unwrap_err(),
            LogKeyError::OtherOrigin {
                expected: origin_of(other),
                found: origin_of(PRINCIPAL),
            }
        );
    }
}
