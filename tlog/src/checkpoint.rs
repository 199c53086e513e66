//! C2SP transparency log checkpoints (c2sp.org/tlog-checkpoint): the note
//! body `origin\nsize\nbase64(root)\n[extension lines]`, parsed strictly and
//! formatted canonically, and the opening of a signed checkpoint note into a
//! [`VerifiedCheckpoint`].
//!
//! Witness policy (how many cosignatures suffice) is the caller's: this
//! module reports which trusted keys cosigned, and when.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use crate::hash::Hash;
use crate::keys::VerifierKey;
use crate::note::{Note, NoteError, TrustedKeys, VerifiedNote, VerifiedSignature, check_text};

/// Why a checkpoint was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CheckpointError {
    /// The note around the checkpoint was refused.
    #[error(transparent)]
    Note(#[from] NoteError),
    /// The body is not valid note text (it must end in a newline and hold
    /// no control character but newline).
    #[error("the checkpoint body is not valid note text")]
    NotNoteText,
    /// Fewer than the three mandatory lines.
    #[error("a checkpoint has at least three lines")]
    TooFewLines,
    /// The origin line is empty.
    #[error("the origin line is empty")]
    EmptyOrigin,
    /// The tree size is not a decimal `u64` without sign or leading zeros.
    #[error("the tree size is not a canonical decimal number")]
    MalformedSize,
    /// The root hash is not canonical base64 of 32 bytes.
    #[error("the root hash is not canonical base64 of 32 bytes")]
    MalformedRootHash,
    /// An extension line is empty.
    #[error("an extension line is empty")]
    EmptyExtensionLine,
    /// The origin is not the one expected for this log.
    #[error("unexpected origin {got:?}, expected {expected:?}")]
    OriginMismatch {
        /// The expected origin.
        expected: String,
        /// The checkpoint's origin.
        got: String,
    },
    /// The note verified, but not under the log's key.
    #[error("the checkpoint is not signed by the log's key")]
    NotSignedByLog,
}

/// A checkpoint: the log's origin, tree size, root hash and extension lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    origin: String,
    size: u64,
    root: Hash,
    extensions: Vec<String>,
}

impl Checkpoint {
    /// A checkpoint without extension lines. The origin must be one
    /// non-empty line of note text.
    pub fn new(origin: &str, size: u64, root: Hash) -> Result<Checkpoint, CheckpointError> {
        Checkpoint::with_extensions(origin, size, root, Vec::new())
    }

    /// A checkpoint with extension lines (not recommended by the spec: log
    /// monitors cannot audit them), each one non-empty line.
    pub fn with_extensions(
        origin: &str,
        size: u64,
        root: Hash,
        extensions: Vec<String>,
    ) -> Result<Checkpoint, CheckpointError> {
        if origin.contains('\n') || extensions.iter().any(|line| line.contains('\n')) {
            return Err(CheckpointError::NotNoteText);
        }
        let checkpoint = Checkpoint {
            origin: origin.to_owned(),
            size,
            root,
            extensions,
        };
        // Reparsing the body applies every other rule of `parse`.
        checkpoint.to_string().parse::<Checkpoint>()?;
        Ok(checkpoint)
    }

    /// The log's origin.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The number of leaves.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The RFC 6962 root hash.
    pub fn root(&self) -> &Hash {
        &self.root
    }

    /// The extension lines, without their newlines.
    pub fn extensions(&self) -> &[String] {
        &self.extensions
    }
}

impl FromStr for Checkpoint {
    type Err = CheckpointError;

    /// Parses a checkpoint note body (the note text, final newline
    /// included).
    fn from_str(text: &str) -> Result<Checkpoint, CheckpointError> {
        check_text(text).map_err(|_| CheckpointError::NotNoteText)?;
        let body = text
            .strip_suffix('\n')
            .ok_or(CheckpointError::NotNoteText)?;
        let mut lines = body.split('\n');
        let (Some(origin), Some(size), Some(root)) = (lines.next(), lines.next(), lines.next())
        else {
            return Err(CheckpointError::TooFewLines);
        };
        if origin.is_empty() {
            return Err(CheckpointError::EmptyOrigin);
        }
        let size = parse_size(size)?;
        let root = Hash::from_base64(root).ok_or(CheckpointError::MalformedRootHash)?;
        let extensions: Vec<String> = lines.map(str::to_owned).collect();
        if extensions.iter().any(String::is_empty) {
            return Err(CheckpointError::EmptyExtensionLine);
        }
        Ok(Checkpoint {
            origin: origin.to_owned(),
            size,
            root,
            extensions,
        })
    }
}

impl fmt::Display for Checkpoint {
    /// The note body, ending in a newline.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            self.root.to_base64()
        )?;
        for line in &self.extensions {
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}

/// ASCII decimal, no sign, no leading zeros (except `0` itself).
fn parse_size(text: &str) -> Result<u64, CheckpointError> {
    parse_decimal(text).ok_or(CheckpointError::MalformedSize)
}

/// A canonical ASCII decimal `u64`: digits only, no leading zeros (except
/// `0` itself).
pub(crate) fn parse_decimal(text: &str) -> Option<u64> {
    let canonical = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    if canonical { text.parse().ok() } else { None }
}

/// A checkpoint whose note verified under the log's key, with the
/// cosignatures of any trusted witnesses; only [`open_checkpoint`] builds
/// one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedCheckpoint {
    checkpoint: Checkpoint,
    note: VerifiedNote,
    log_key: VerifierKey,
}

impl VerifiedCheckpoint {
    /// The checkpoint.
    pub fn checkpoint(&self) -> &Checkpoint {
        &self.checkpoint
    }

    /// The verified note.
    pub fn note(&self) -> &VerifiedNote {
        &self.note
    }

    /// The verified signatures of trusted witnesses (every verified
    /// signature but the log's).
    pub fn witness_signatures(&self) -> impl Iterator<Item = &VerifiedSignature> {
        self.note
            .verified()
            .iter()
            .filter(|signature| !signature.is_by(&self.log_key))
    }

    /// The verified signature of one witness, if it cosigned.
    pub fn cosigned_by(&self, witness: &VerifierKey) -> Option<&VerifiedSignature> {
        self.note.signed_by(witness)
    }
}

/// Opens a signed checkpoint note: parses the note and the checkpoint body
/// strictly, checks the origin, verifies every signature from the log key or
/// a witness key (one failing refuses all), and requires the log's.
pub fn open_checkpoint(
    note: &[u8],
    origin: &str,
    log_key: &VerifierKey,
    witness_keys: &[VerifierKey],
) -> Result<VerifiedCheckpoint, CheckpointError> {
    verify_checkpoint(&Note::parse(note)?, origin, log_key, witness_keys)
}

/// [`open_checkpoint`] for a note already parsed.
pub fn verify_checkpoint(
    note: &Note,
    origin: &str,
    log_key: &VerifierKey,
    witness_keys: &[VerifierKey],
) -> Result<VerifiedCheckpoint, CheckpointError> {
    let checkpoint: Checkpoint = note.text().parse()?;
    if checkpoint.origin != origin {
        return Err(CheckpointError::OriginMismatch {
            expected: origin.to_owned(),
            got: checkpoint.origin,
        });
    }
    let keys =
        TrustedKeys::new(std::iter::once(log_key.clone()).chain(witness_keys.iter().cloned()))?;
    let verified = note.verify(&keys).map_err(|error| match error {
        NoteError::NoKnownSignature => CheckpointError::NotSignedByLog,
        other => CheckpointError::Note(other),
    })?;
    if verified.signed_by(log_key).is_none() {
        return Err(CheckpointError::NotSignedByLog);
    }
    Ok(VerifiedCheckpoint {
        checkpoint,
        note: verified,
        log_key: log_key.clone(),
    })
}
