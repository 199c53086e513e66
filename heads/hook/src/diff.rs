//! Bounded unified diffs of what an edit will do to a file.
//!
//! Owns: reading the one file an edit names (bounded; a missing file is an
//! empty old side), the diff itself (`similar`'s Myers, with a deadline so
//! a hostile pair of texts cannot stall the hook), and cutting a diff to
//! [`MAX_DIFF_BYTES`] with a note. A diff that cannot be computed (a string
//! the edit looks for is not in the file, an unreadable file) is a clear
//! sentence in place of the diff: the call still goes to a person, who sees
//! why there is no diff.
//!
//! A diff shows the lines an edit removes: a write over a file of secrets
//! puts those secrets in the proposal, before the approvers and in the
//! ledger. The agent could read the file itself (a hook is no boundary
//! against it); the head wiring this in decides what a proposal may carry.
//!
//! Must not: write anything, or follow anything but the edit's own path.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::path::{Display, Path, PathBuf};
use std::time::Duration;

use similar::{Algorithm, TextDiff};

use crate::edit::{self, EditPlan};

/// The largest diff a proposal carries, in bytes (32 KiB, note included).
/// Half of an operation's arguments bound
/// (`countersign_verifier::canonical::MAX_ARGS_BYTES`, 64 KiB), so that a
/// diff alone cannot push a small edit's arguments past what the signer
/// accepts.
pub const MAX_DIFF_BYTES: usize = 32 * 1024;

/// The largest file read for a diff, in bytes (4 MiB).
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// How long the diff algorithm may search for a minimal diff before it
/// settles for a coarser one (still a correct diff).
const DIFF_DEADLINE: Duration = Duration::from_secs(1);

/// Room kept at the end of a cut diff for the note.
const NOTE_ROOM: usize = 96;

/// Lines of context around each change.
const CONTEXT_LINES: usize = 3;

/// The unified diff from `old` to `new`, with `old_label` and `new_label`
/// in its header, cut to [`MAX_DIFF_BYTES`].
pub fn unified(old_label: &str, new_label: &str, old: &str, new: &str) -> String {
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .timeout(DIFF_DEADLINE)
        .diff_lines(old, new);
    let text = diff
        .unified_diff()
        .context_radius(CONTEXT_LINES)
        .header(old_label, new_label)
        .to_string();
    bounded(text)
}

/// `text` if it is at most [`MAX_DIFF_BYTES`], else its beginning (cut at a
/// line end where there is one) and a note saying how much was kept.
pub fn bounded(text: String) -> String {
    if text.len() <= MAX_DIFF_BYTES {
        return text;
    }
    let mut end = MAX_DIFF_BYTES - NOTE_ROOM;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if let Some(line_end) = text[..end].rfind('\n') {
        end = line_end + 1;
    }
    let mut kept = text[..end].to_string();
    if !kept.is_empty() && !kept.ends_with('\n') {
        kept.push('\n');
    }
    kept.push_str(&format!(
        "[countersign: diff cut to its first {end} of {} bytes]\n",
        text.len()
    ));
    kept
}

/// The diff an edit plan will make, relative paths taken from `cwd`.
pub(crate) fn of_edit(plan: &EditPlan, cwd: &Path) -> String {
    match plan {
        EditPlan::Write { path, content } => match read_old(&resolve(cwd, path)) {
            Ok(old) => file_diff(path, old.as_deref(), content),
            Err(reason) => no_diff(&reason),
        },
        EditPlan::Replace { path, edits } => {
            let old = match read_old(&resolve(cwd, path)) {
                Ok(old) => old,
                Err(reason) => return no_diff(&reason),
            };
            match edit::apply(old.as_deref().unwrap_or(""), edits) {
                Ok(new) => file_diff(path, old.as_deref(), &new),
                Err(reason) => no_diff(&format!("{reason} ({path})")),
            }
        }
        EditPlan::Patch { text } => bounded(text.clone()),
        EditPlan::Malformed(reason) => no_diff(reason),
    }
}

/// The sentence in place of a diff that could not be computed.
fn no_diff(reason: &str) -> String {
    bounded(format!("countersign could not compute the diff: {reason}"))
}

/// The diff of one file, `old` being `None` when it does not exist yet.
fn file_diff(path: &str, old: Option<&str>, new: &str) -> String {
    if old == Some(new) {
        return format!("(no changes to {path})");
    }
    let old_label = if old.is_some() { path } else { "/dev/null" };
    unified(old_label, path, old.unwrap_or(""), new)
}

/// `path`, taken from `cwd` when relative.
fn resolve(cwd: &Path, path: &str) -> PathBuf {
    cwd.join(path)
}

/// The file's text, `None` if it does not exist, or why it cannot be read.
///
/// Only a regular file is read: it is opened without blocking and checked
/// again once open, so that a FIFO or a device (even one swapped in after
/// the first check) cannot hold the hook until the agent's timeout, which
/// most agents take for "go ahead".
fn read_old(path: &Path) -> Result<Option<String>, String> {
    let shown = path.display();
    let unreadable = |error: io::Error| format!("{shown} cannot be read: {}", error.kind());
    match std::fs::metadata(path) {
        Ok(meta) => check_regular(&meta, &shown)?,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(unreadable(error)),
    }
    let file = open_nonblocking(path).map_err(unreadable)?;
    check_regular(&file.metadata().map_err(unreadable)?, &shown)?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| format!("{shown} cannot be read: {}", error.kind()))?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > MAX_FILE_BYTES {
        return Err(too_large(&shown));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| format!("{shown} is not UTF-8 text"))
}

/// Refuses anything but a regular file of at most [`MAX_FILE_BYTES`].
fn check_regular(meta: &Metadata, shown: &Display<'_>) -> Result<(), String> {
    if meta.is_dir() {
        Err(format!("{shown} is a directory"))
    } else if !meta.is_file() {
        Err(format!("{shown} is not a regular file"))
    } else if meta.len() > MAX_FILE_BYTES {
        Err(too_large(shown))
    } else {
        Ok(())
    }
}

/// Why a file is not read.
fn too_large(shown: &Display<'_>) -> String {
    format!("{shown} is larger than {MAX_FILE_BYTES} bytes")
}

/// Opens `path` for reading without blocking on a FIFO.
#[cfg(unix)]
fn open_nonblocking(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let nonblock = i32::try_from(rustix::fs::OFlags::NONBLOCK.bits())
        .map_err(|_| io::Error::from(io::ErrorKind::Unsupported))?;
    OpenOptions::new()
        .read(true)
        .custom_flags(nonblock)
        .open(path)
}

/// Opens `path` for reading (no FIFOs to block on here).
#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> io::Result<File> {
    File::open(path)
}
