//! Where the `countersign-signer` binary is, for the commands that run it
//! as its own process: `init` (keygen), `up` (serve) and `policy` (the
//! Cedar checks, linked into the signer's binary only). This module only
//! finds the file; it must not run it.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::error::CliError;

/// The signer binary's file name.
const SIGNER: &str = "countersign-signer";

/// The signer binary: `$COUNTERSIGN_SIGNER_BIN` (absolute), else the
/// `countersign-signer` next to this executable, else, when `on_path`,
/// the first one in a directory of `$PATH`. The error names where it
/// looked.
pub(crate) fn signer_binary(on_path: bool) -> Result<PathBuf, CliError> {
    if let Some(path) = std::env::var_os("COUNTERSIGN_SIGNER_BIN").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        if !path.is_absolute() {
            return Err(CliError::Error(
                "COUNTERSIGN_SIGNER_BIN must be an absolute path".to_string(),
            ));
        }
        return Ok(path);
    }
    let exe = std::env::current_exe().map_err(CliError::error)?;
    let sibling = exe.with_file_name(SIGNER);
    if sibling.is_file() {
        return Ok(sibling);
    }
    if on_path && let Some(found) = on_search_path(std::env::var_os("PATH").as_deref()) {
        return Ok(found);
    }
    let nor_path = if on_path { " nor on PATH" } else { "" };
    Err(CliError::Error(format!(
        "{SIGNER} was not found next to {}{nor_path}; install both binaries or set COUNTERSIGN_SIGNER_BIN",
        exe.display()
    )))
}

/// The first `countersign-signer` file in a directory of `path` (a
/// `$PATH` value); relative directories are skipped.
fn on_search_path(path: Option<&OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(SIGNER))
        .find(|candidate| Path::is_file(candidate))
}
