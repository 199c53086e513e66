//! The secret files an upstream names (`stdio.secret_env`, `http.bearer_file`):
//! read only if each is a regular file (not a symlink) of the gateway's own
//! user with no group or other permission bits, through the project's one
//! private-file reader.
//!
//! This module owns that check and the trailing-newline trim. It must not
//! put a secret's content into an error, a log line or a `Debug` output:
//! errors name the file and the fix (`chmod 600`), never what it holds.

use std::path::Path;

use zeroize::Zeroizing;

/// The value of the secret file at `path`, its one trailing newline (`\n`
/// or `\r\n`) trimmed. The error names the file and how to fix it.
pub(crate) fn read_secret(path: &Path) -> Result<Zeroizing<String>, String> {
    let refuse = |why: String| {
        format!(
            "secret file {}: {why}; it must be a regular file of this user, mode 0600 \
             (`chmod 600 {}`)",
            path.display(),
            path.display()
        )
    };
    let bytes =
        countersign_identity::files::read_private(path).map_err(|e| refuse(e.to_string()))?;
    let text = std::str::from_utf8(&bytes).map_err(|_| refuse("is not UTF-8".into()))?;
    let text = text
        .strip_suffix('\n')
        .map(|t| t.strip_suffix('\r').unwrap_or(t))
        .unwrap_or(text);
    if text.contains('\0') {
        return Err(refuse("holds a NUL byte".into()));
    }
    Ok(Zeroizing::new(text.to_owned()))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn file_with(mode: u32, content: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let path = dir.path().join("secret");
        std::fs::write(&path, content).unwrap_or_else(|e| panic!("write: {e}"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
            .unwrap_or_else(|e| panic!("chmod: {e}"));
        (dir, path)
    }

    #[test]
    fn reads_a_private_file_and_trims_one_trailing_newline() {
        let (_dir, path) = file_with(0o600, "s3cret\n\n");
        let value = read_secret(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(value.as_str(), "s3cret\n");
        let (_dir, path) = file_with(0o400, "token\r\n");
        assert_eq!(
            read_secret(&path)
                .unwrap_or_else(|e| panic!("{e}"))
                .as_str(),
            "token"
        );
    }

    #[test]
    fn refuses_a_file_others_can_read_naming_it_and_not_its_content() {
        let (_dir, path) = file_with(0o644, "do-not-print-me");
        let error = read_secret(&path)
            .err()
            .unwrap_or_else(|| panic!("accepted 0644"));
        assert!(error.contains(&path.display().to_string()), "{error}");
        assert!(error.contains("chmod 600"), "{error}");
        assert!(!error.contains("do-not-print-me"), "{error}");
    }

    #[test]
    fn refuses_a_symlink_to_a_private_file() {
        let (dir, path) = file_with(0o600, "value");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap_or_else(|e| panic!("symlink: {e}"));
        let error = read_secret(&link)
            .err()
            .unwrap_or_else(|| panic!("followed a symlink"));
        assert!(error.contains("symbolic link"), "{error}");
    }
}
