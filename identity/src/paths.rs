//! Files the configuration names (the operation registry, a SQLite ledger
//! file, a PKCS#11 module): the checks every process runs on them before use, wherever they
//! are, inside the home or outside it.
//!
//! The home's own files are checked by [`crate::Home::check`]; a configured
//! path may point anywhere, and whoever can write the registry chooses what
//! effects run, whoever can write the ledger rewrites the audit trail. So a
//! configured file is accepted only if nobody but the user (and root) can
//! change it or anything on the way to it:
//!
//! - the file is not a symbolic link, is a regular file (or does not exist
//!   yet), and is owned by the user (the registry may also be root's); a
//!   PKCS#11 module must exist, may be root's, and may be a link, which is
//!   followed and checked like the path it names;
//! - the directory that holds it and every directory above it, up to `/`,
//!   is owned by the user or root; symbolic links on the way are followed,
//!   must be owned by the user or root too, and the directories they lead
//!   through are checked the same way;
//! - the directory that holds the file is writable by its owner only; a
//!   directory above it may be writable by others only with the sticky bit
//!   (as `/tmp`): then nobody else can rename or replace the entry we go
//!   through, which is the user's or root's. The file's own directory gets
//!   no such exception, because a file that does not exist yet (a new
//!   ledger, its `-wal`, `-shm` and `.lock`) could be planted there by
//!   anyone.
//!
//! Group-writable counts as writable by others (as OpenSSH's `StrictModes`).
//! Only the user and root can change any of this afterwards, so a check at
//! the start of each process holds for its lifetime against other users.
//! This module does not read or open the files.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use crate::IdentityError;
use crate::files::{check_private_file_metadata, current_uid};

/// Symbolic links followed on the way to one configured file, at most (as
/// Linux's `MAXSYMLINKS`).
const MAX_SYMLINKS: usize = 40;

/// Permission bits that let the group or others write.
const WRITABLE_BY_OTHERS: u32 = 0o022;

/// The sticky bit: only an entry's owner may rename or remove it.
const STICKY: u32 = 0o1000;

/// What a configured file holds, which decides how private it must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfiguredFile {
    /// The operation registry. It decides which programs run, so nobody else
    /// may write it; it holds no secret, so others may read it, and it may
    /// be root's (a registry an administrator maintains).
    Registry,
    /// A SQLite ledger file. As strict as the home's files: owned by the
    /// user, mode at most 0600, and so are SQLite's `-wal`, `-shm` and
    /// `-journal` and the writers' `.lock` beside it, if they exist. The
    /// audit trail holds every proposal's arguments and results, so it is
    /// not for others to read; the ledger creates these files 0600 itself.
    /// A ledger shared by several users belongs on PostgreSQL.
    SqliteLedger,
    /// A PKCS#11 module (a shared library the signer loads into its own
    /// process: whoever can change it runs code beside the signing key).
    /// It must exist and be a regular file owned by the user or root and
    /// writable by nobody else, as every directory on the way. Unlike the
    /// registry, a symbolic link as the last component is followed
    /// (distributions install modules as links), and the link and its
    /// target are checked the same way.
    Pkcs11Module,
    /// A Cedar policy set (`[policy] cedar`, `cedar_log_only`). It decides
    /// what is refused and what a rule may approve, so it is held as the
    /// registry is: nobody else may write it; root's is fine.
    PolicySet,
}

/// The files beside a SQLite ledger that SQLite and the writers' queue create.
const LEDGER_COMPANIONS: [&str; 4] = ["-wal", "-shm", "-journal", ".lock"];

/// Refuses `path` (absolute) unless it is safe to use as `kind`, as the
/// module documentation describes. A file that does not exist yet is
/// accepted when its directory is safe (the ledger creates its file). Every
/// refusal names the real path (symbolic links on the way resolved) of what
/// is wrong.
pub fn check_configured_file(path: &Path, kind: ConfiguredFile) -> Result<(), IdentityError> {
    if !path.is_absolute() {
        return Err(IdentityError::RelativePath(path.to_path_buf()));
    }
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(IdentityError::NotAFile(path.to_path_buf()));
    };
    let dir = resolve_safe_dir(parent)?;
    let file = dir.join(name);
    match kind {
        ConfiguredFile::Registry | ConfiguredFile::PolicySet => check_registry_file(&file),
        ConfiguredFile::Pkcs11Module => check_module_file(file, 0),
        ConfiguredFile::SqliteLedger => {
            check_private_if_present(&file)?;
            for suffix in LEDGER_COMPANIONS {
                let mut companion = OsString::from(name);
                companion.push(suffix);
                check_private_if_present(&dir.join(companion))?;
            }
            Ok(())
        }
    }
}

fn check_registry_file(file: &Path) -> Result<(), IdentityError> {
    let Some(meta) = metadata_if_present(file)? else {
        return Ok(());
    };
    if meta.file_type().is_symlink() {
        return Err(IdentityError::Symlink(file.to_path_buf()));
    }
    if !meta.file_type().is_file() {
        return Err(IdentityError::NotAFile(file.to_path_buf()));
    }
    check_owner_user_or_root(file, &meta)?;
    check_not_writable_by_others(file, &meta)
}

/// `file` (its directory already checked) exists and is a regular file of
/// the user or root that nobody else can write; a symbolic link of the
/// user or root is followed, its target checked from `/` again.
fn check_module_file(file: PathBuf, links: usize) -> Result<(), IdentityError> {
    let meta = lstat(&file)?;
    if meta.file_type().is_symlink() {
        check_owner_user_or_root(&file, &meta)?;
        if links >= MAX_SYMLINKS {
            return Err(IdentityError::io(
                &file,
                &std::io::Error::from(rustix::io::Errno::LOOP),
            ));
        }
        let target = std::fs::read_link(&file).map_err(|e| IdentityError::io(&file, &e))?;
        // A relative target is relative to the link's (checked) directory.
        let target = match file.parent() {
            Some(dir) => dir.join(target),
            None => target,
        };
        let (Some(parent), Some(name)) = (target.parent(), target.file_name()) else {
            return Err(IdentityError::NotAFile(target));
        };
        let dir = resolve_safe_dir(parent)?;
        return check_module_file(dir.join(name), links + 1);
    }
    if !meta.file_type().is_file() {
        return Err(IdentityError::NotAFile(file));
    }
    check_owner_user_or_root(&file, &meta)?;
    check_not_writable_by_others(&file, &meta)
}

fn check_private_if_present(file: &Path) -> Result<(), IdentityError> {
    match metadata_if_present(file)? {
        Some(meta) => check_private_file_metadata(file, &meta),
        None => Ok(()),
    }
}

/// Walks `dir` from `/`, one entry at a time, following symbolic links, and
/// returns its real path once every directory on the way and `dir` itself
/// passed the checks.
fn resolve_safe_dir(dir: &Path) -> Result<PathBuf, IdentityError> {
    let mut real = PathBuf::from("/");
    check_ancestor(&real, &lstat(&real)?)?;
    let mut pending: VecDeque<OsString> = VecDeque::new();
    push_front_components(&mut pending, &mut real, dir);
    let mut links = 0;
    while let Some(name) = pending.pop_front() {
        if name == ".." {
            // `real` has no links and every prefix of it was checked already.
            real.pop();
            continue;
        }
        let next = real.join(&name);
        let meta = lstat(&next)?;
        if meta.file_type().is_symlink() {
            // Only whoever may replace the link could repoint it: its
            // directory was checked; in a sticky one that is its owner.
            check_owner_user_or_root(&next, &meta)?;
            links += 1;
            if links > MAX_SYMLINKS {
                return Err(IdentityError::io(
                    &next,
                    &std::io::Error::from(rustix::io::Errno::LOOP),
                ));
            }
            let target = std::fs::read_link(&next).map_err(|e| IdentityError::io(&next, &e))?;
            push_front_components(&mut pending, &mut real, &target);
            continue;
        }
        if !meta.file_type().is_dir() {
            return Err(IdentityError::NotADirectory(next));
        }
        check_ancestor(&next, &meta)?;
        real = next;
    }
    // The directory that holds the file: no sticky exception (see the module doc).
    check_not_writable_by_others(&real, &lstat(&real)?)?;
    Ok(real)
}

/// Puts the components of `path` before what is still to be walked; an
/// absolute `path` restarts the walk at `/` (already checked).
fn push_front_components(pending: &mut VecDeque<OsString>, real: &mut PathBuf, path: &Path) {
    let mut names: Vec<OsString> = Vec::new();
    for component in path.components() {
        match component {
            Component::RootDir | Component::Prefix(_) => {
                *real = PathBuf::from("/");
                names.clear();
            }
            Component::CurDir => {}
            Component::ParentDir => names.push(OsString::from("..")),
            Component::Normal(name) => names.push(name.to_os_string()),
        }
    }
    for name in names.into_iter().rev() {
        pending.push_front(name);
    }
}

/// A directory on the way: the user's or root's, and writable by nobody
/// else unless sticky.
fn check_ancestor(dir: &Path, meta: &std::fs::Metadata) -> Result<(), IdentityError> {
    check_owner_user_or_root(dir, meta)?;
    if meta.mode() & STICKY != 0 {
        return Ok(());
    }
    check_not_writable_by_others(dir, meta)
}

fn check_owner_user_or_root(path: &Path, meta: &std::fs::Metadata) -> Result<(), IdentityError> {
    let expected = current_uid();
    if meta.uid() != expected && meta.uid() != 0 {
        return Err(IdentityError::WrongOwner {
            path: path.to_path_buf(),
            owner: meta.uid(),
            expected,
        });
    }
    Ok(())
}

fn check_not_writable_by_others(
    path: &Path,
    meta: &std::fs::Metadata,
) -> Result<(), IdentityError> {
    let mode = meta.mode() & 0o7777;
    if mode & WRITABLE_BY_OTHERS != 0 {
        return Err(IdentityError::WritableByOthers {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

fn lstat(path: &Path) -> Result<std::fs::Metadata, IdentityError> {
    std::fs::symlink_metadata(path).map_err(|e| IdentityError::io(path, &e))
}

fn metadata_if_present(path: &Path) -> Result<Option<std::fs::Metadata>, IdentityError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => Ok(Some(meta)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(IdentityError::io(path, &e)),
    }
}

/// The file a `sqlite://` ledger URL opens, exactly as the ledger reads it
/// (`countersign_ledger::Ledger::open` takes everything after `sqlite://`
/// as an absolute path); `None` for any other URL, which opens no file.
pub(crate) fn sqlite_ledger_file(url: &str) -> Option<&Path> {
    let path = Path::new(OsStr::new(url.strip_prefix("sqlite://")?));
    path.is_absolute().then_some(path)
}
