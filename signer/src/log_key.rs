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
//! Rotation of the log key is not implemented yet: a new key would start a
//! new log (a new origin).

use std::path::Path;

use countersign_identity::IdentityError;
use countersign_identity::files::{read_private, write_private_new};
use countersign_tlog::{
    Checkpoint, KeyError as NoteKeyError, KeyName, Note, NoteError, VerifierKey, sign_note,
};
use zeroize::Zeroizing;

use crate::note_keys::Ed25519Signer;

/// The log key's file, in the signer directory.
pub const LOG_KEY_FILE: &str = "log.key";

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

/// The log's signing key.
#[derive(Debug)]
pub struct LogKey {
    signer: Ed25519Signer,
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
            Ok(()) => Ok((LogKey { signer }, true)),
            // Another process created it meanwhile: use that one.
            Err(_) if path.symlink_metadata().is_ok() => Ok((LogKey::load(&path, &origin)?, false)),
            Err(e) => Err(e.into()),
        }
    }

    /// Loads the key file at `path`, whose key must be named `origin`.
    pub fn load(path: &Path, origin: &str) -> Result<LogKey, LogKeyError> {
        let bytes = read_private(path)?;
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| LogKeyError::Format(NoteKeyError::NotASignerKey))?;
        let signer: Ed25519Signer = text.parse().map_err(LogKeyError::Format)?;
        let found = signer.verifier_key().name().as_str().to_owned();
        if found != origin {
            return Err(LogKeyError::OtherOrigin {
                expected: origin.to_owned(),
                found,
            });
        }
        Ok(LogKey { signer })
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
}
