//! Private files: created new with mode 0600, read back only if they are
//! regular files of the current user with no group or other permissions.
//!
//! This module owns the open/stat discipline (no symlink following, checks on
//! the opened descriptor, not on the path); it knows nothing about what the
//! files contain.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use rustix::fs::{Mode, OFlags};
use zeroize::Zeroizing;

use crate::IdentityError;

/// Largest private file [`read_private`] reads (keys, certificates, config).
pub const MAX_PRIVATE_FILE_BYTES: u64 = 1024 * 1024;

/// Creates `path` with mode 0600 and writes `bytes`, failing if anything
/// (including a symlink) is already there. The data is synced before return.
pub fn write_private_new(path: &Path, bytes: &[u8]) -> Result<(), IdentityError> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true) // O_CREAT|O_EXCL: never follows a symlink
        .mode(0o600)
        .open(path)
        .map_err(|e| match e.kind() {
            ErrorKind::AlreadyExists => IdentityError::AlreadyExists(path.to_path_buf()),
            _ => IdentityError::io(path, &e),
        })?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| IdentityError::io(path, &e))
}

/// Read, change and atomically replace the private file `path` under an
/// exclusive `flock` of `lock` (a 0600 file beside it, created if missing,
/// never followed if a symlink). `change` gets the current contents (`None`
/// if there is no file yet) and returns the new contents or its own error;
/// the new file is written beside the old one, synced, and renamed over it,
/// so a reader sees the old or the new contents, never a part. Stores that
/// many processes of one user share (API credentials, console sessions) go
/// through here.
pub fn replace_private_locked<E: From<IdentityError>>(
    path: &Path,
    lock: &Path,
    change: impl FnOnce(Option<&[u8]>) -> Result<Vec<u8>, E>,
) -> Result<(), E> {
    let lock_file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(OFlags::NOFOLLOW.bits() as i32)
        .open(lock)
        .map_err(|e| IdentityError::io(lock, &e))?;
    rustix::fs::flock(&lock_file, rustix::fs::FlockOperation::LockExclusive)
        .map_err(|e| IdentityError::io(lock, &e.into()))?;
    let current = match read_private(path) {
        Ok(bytes) => Some(bytes),
        Err(IdentityError::Missing(_)) => None,
        Err(e) => return Err(e.into()),
    };
    let next = change(current.as_deref().map(Vec::as_slice))?;
    let mut suffix = [0u8; 8];
    getrandom::fill(&mut suffix).map_err(|e| {
        IdentityError::io(path, &std::io::Error::other(format!("no randomness: {e}")))
    })?;
    let name = path
        .file_name()
        .map_or_else(|| "store".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.{}", hex_suffix(suffix)));
    write_private_new(&tmp, &next)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        IdentityError::io(path, &e)
    })?;
    // The lock is released when `lock_file` is dropped here.
    drop(lock_file);
    Ok(())
}

fn hex_suffix(bytes: [u8; 8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads a private file: refuses symlinks, non-regular files, files of
/// another user, modes wider than 0600 and files over
/// [`MAX_PRIVATE_FILE_BYTES`]. The contents are zeroized on drop.
pub fn read_private(path: &Path) -> Result<Zeroizing<Vec<u8>>, IdentityError> {
    let fd = rustix::fs::open(
        path,
        // NONBLOCK: opening a FIFO planted at the path must not hang.
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK,
        Mode::empty(),
    )
    .map_err(|errno| {
        let err = std::io::Error::from(errno);
        if errno == rustix::io::Errno::LOOP {
            IdentityError::Symlink(path.to_path_buf())
        } else if err.kind() == ErrorKind::NotFound {
            IdentityError::Missing(path.to_path_buf())
        } else {
            IdentityError::io(path, &err)
        }
    })?;
    let file = File::from(fd);
    let meta = file.metadata().map_err(|e| IdentityError::io(path, &e))?;
    check_private_file_metadata(path, &meta)?;
    if meta.len() > MAX_PRIVATE_FILE_BYTES {
        return Err(IdentityError::TooLarge(path.to_path_buf()));
    }
    let mut buf = Zeroizing::new(Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0)));
    file.take(MAX_PRIVATE_FILE_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|e| IdentityError::io(path, &e))?;
    if buf.len() as u64 > MAX_PRIVATE_FILE_BYTES {
        return Err(IdentityError::TooLarge(path.to_path_buf()));
    }
    Ok(buf)
}

/// The uid of the current process.
pub(crate) fn current_uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// Checks metadata (taken without following symlinks) of a private file.
pub(crate) fn check_private_file_metadata(
    path: &Path,
    meta: &std::fs::Metadata,
) -> Result<(), IdentityError> {
    if meta.file_type().is_symlink() {
        return Err(IdentityError::Symlink(path.to_path_buf()));
    }
    if !meta.file_type().is_file() {
        return Err(IdentityError::NotAFile(path.to_path_buf()));
    }
    check_owner(path, meta)?;
    let mode = meta.mode() & 0o7777;
    if mode & !0o600 != 0 {
        return Err(IdentityError::FileMode {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

/// Checks metadata (taken without following symlinks) of a private directory.
pub(crate) fn check_private_dir_metadata(
    path: &Path,
    meta: &std::fs::Metadata,
) -> Result<(), IdentityError> {
    if meta.file_type().is_symlink() {
        return Err(IdentityError::Symlink(path.to_path_buf()));
    }
    if !meta.file_type().is_dir() {
        return Err(IdentityError::NotADirectory(path.to_path_buf()));
    }
    check_owner(path, meta)?;
    let mode = meta.mode() & 0o7777;
    if mode != 0o700 {
        return Err(IdentityError::DirMode {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

fn check_owner(path: &Path, meta: &std::fs::Metadata) -> Result<(), IdentityError> {
    let expected = current_uid();
    if meta.uid() != expected {
        return Err(IdentityError::WrongOwner {
            path: path.to_path_buf(),
            owner: meta.uid(),
            expected,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn write_then_read_round_trips_with_mode_0600() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        write_private_new(&path, b"hello").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(read_private(&path).unwrap().as_slice(), b"hello");
    }

    #[test]
    fn write_refuses_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        write_private_new(&path, b"a").unwrap();
        assert_eq!(
            write_private_new(&path, b"b"),
            Err(IdentityError::AlreadyExists(path.clone()))
        );
        assert_eq!(read_private(&path).unwrap().as_slice(), b"a");
    }

    #[test]
    fn write_refuses_dangling_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path().join("target"), &path).unwrap();
        assert_eq!(
            write_private_new(&path, b"x"),
            Err(IdentityError::AlreadyExists(path.clone()))
        );
        assert!(!dir.path().join("target").exists());
    }

    #[test]
    fn read_refuses_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        write_private_new(&target, b"x").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert_eq!(
            read_private(&link),
            Err(IdentityError::Symlink(link.clone()))
        );
    }

    #[test]
    fn read_refuses_group_readable_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        write_private_new(&path, b"x").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert_eq!(
            read_private(&path),
            Err(IdentityError::FileMode {
                path: path.clone(),
                mode: 0o640
            })
        );
    }

    #[test]
    fn read_refuses_missing_file_and_directories() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("absent");
        assert_eq!(
            read_private(&path),
            Err(IdentityError::Missing(path.clone()))
        );
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            read_private(&sub),
            Err(IdentityError::NotAFile(sub.clone()))
        );
    }
}
