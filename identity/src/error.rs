//! The one error type of this crate. Every refusal names the path or the
//! value it is about; none carries key material.

use std::path::PathBuf;

use crate::Role;

/// Why a home directory, a private file, the configuration, the PKI or a
/// peer certificate was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    /// Neither `$COUNTERSIGN_HOME` nor `$HOME` is set.
    #[error("cannot find the countersign home: neither COUNTERSIGN_HOME nor HOME is set")]
    NoHome,
    /// The home directory (or `$HOME`) is a relative path.
    #[error("the countersign home must be an absolute path, got {0}")]
    HomeNotAbsolute(PathBuf),
    /// A path under the home directory, or a configured file, is a symbolic link.
    #[error("refusing symbolic link {0}")]
    Symlink(PathBuf),
    /// A directory's mode is not exactly 0700.
    #[error("directory {path} has mode {mode:04o}, expected 0700")]
    DirMode {
        /// The directory.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A file's mode grants more than 0600.
    #[error("file {path} has mode {mode:04o}, expected at most 0600")]
    FileMode {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A path is owned by another user.
    #[error("{path} is owned by uid {owner}, expected uid {expected}")]
    WrongOwner {
        /// The path.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// The current user.
        expected: u32,
    },
    /// A configured file, its directory, or a directory above it can be
    /// written by the group or others (above the file's own directory, only
    /// a sticky directory may be).
    #[error("{path} has mode {mode:04o}: the group or others can write to it")]
    WritableByOthers {
        /// The file or directory (symbolic links on the way resolved).
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A path that must be absolute is relative.
    #[error("{0} is not an absolute path")]
    RelativePath(PathBuf),
    /// A path that must be a directory is something else.
    #[error("{0} is not a directory")]
    NotADirectory(PathBuf),
    /// A path that must be a regular file is something else.
    #[error("{0} is not a regular file")]
    NotAFile(PathBuf),
    /// A required path does not exist (run `countersign init`).
    #[error("{0} does not exist (run `countersign init`)")]
    Missing(PathBuf),
    /// A file that must be created new already exists.
    #[error("{0} already exists")]
    AlreadyExists(PathBuf),
    /// A private file is larger than this crate will read.
    #[error("{0} is too large")]
    TooLarge(PathBuf),
    /// Another input/output failure on a path.
    #[error("{path}: {detail}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The kind of failure.
        kind: std::io::ErrorKind,
        /// The operating system's message.
        detail: String,
    },
    /// The principal file does not hold `pr_` + 32 lowercase hex characters.
    #[error("{0} does not hold a valid principal id")]
    BadPrincipal(PathBuf),
    /// The configuration file is invalid.
    #[error("invalid configuration {path}: {detail}")]
    Config {
        /// The configuration file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// A certificate or key of the PKI could not be made or read.
    #[error("pki: {0}")]
    Pki(String),
    /// Exactly one of a certificate and its key exists.
    #[error("{0} exists without its pair (certificate and key must both exist or neither)")]
    HalfPair(PathBuf),
    /// The peer certificate is not parseable X.509.
    #[error("peer certificate is not valid X.509")]
    PeerCertificate,
    /// The peer certificate has no URI SAN.
    #[error("peer certificate has no countersign URI SAN")]
    NoPeerUri,
    /// The peer certificate has more than one URI SAN.
    #[error("peer certificate has {0} URI SANs, expected exactly one")]
    MultiplePeerUris(usize),
    /// The URI SAN is not `countersign://<role>/<principal>` nor
    /// `countersign://approver/<principal>/<name>` (for example, it has more
    /// segments).
    #[error(
        "peer URI SAN {0:?} is not countersign://<role>/<principal> nor countersign://approver/<principal>/<name>"
    )]
    MalformedPeerUri(String),
    /// The URI SAN names a role that does not exist.
    #[error("peer URI SAN names unknown role {0:?}")]
    UnknownRole(String),
    /// The URI SAN's principal is not `pr_` + 32 lowercase hex.
    #[error("peer URI SAN names invalid principal {0:?}")]
    BadPeerPrincipal(String),
    /// The URI SAN names an approver whose name is not 1 to 32 characters
    /// of `[a-z0-9-]` starting with a letter or digit (or is empty).
    #[error("peer URI SAN names invalid approver name {0:?}")]
    BadApproverName(String),
    /// The URI SAN carries a name, but only an approver certificate may.
    #[error("peer URI SAN names a {0} with a name; only an approver may be named")]
    NameOnNonApprover(Role),
}

impl IdentityError {
    /// Wraps an I/O error with the path it happened on.
    pub(crate) fn io(path: impl Into<PathBuf>, err: &std::io::Error) -> Self {
        IdentityError::Io {
            path: path.into(),
            kind: err.kind(),
            detail: err.to_string(),
        }
    }
}
