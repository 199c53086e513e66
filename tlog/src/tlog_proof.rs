//! C2SP tlog-proofs (c2sp.org/tlog-proof): the offline-verifiable text
//! bundling a leaf index, its inclusion proof and a (cosigned) checkpoint,
//! parsed strictly, formatted canonically, and verified into a
//! [`VerifiedTlogProof`].
//!
//! Computing the leaf hash is the application's (step 1 of the spec's
//! verification); the `extra` data is unauthenticated and only carried.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use thiserror::Error;

use crate::checkpoint::{CheckpointError, VerifiedCheckpoint, parse_decimal, verify_checkpoint};
use crate::hash::Hash;
use crate::keys::VerifierKey;
use crate::note::Note;
use crate::proof::{ProofError, verify_inclusion};

/// The first line of every tlog-proof.
pub const TLOG_PROOF_HEADER: &str = "c2sp.org/tlog-proof@v1";

/// The most inclusion proof hashes a tree of at most 2^64 leaves needs.
const MAX_PROOF_HASHES: usize = 64;

/// Why a tlog-proof was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TlogProofError {
    /// The proof is not valid UTF-8.
    #[error("the proof is not valid UTF-8")]
    NotUtf8,
    /// The first line is not `c2sp.org/tlog-proof@v1`.
    #[error("the first line is not {TLOG_PROOF_HEADER}")]
    BadHeader,
    /// The `extra` line is not canonical base64.
    #[error("the extra line is not canonical base64")]
    MalformedExtra,
    /// The `index` line is missing or is not a canonical decimal `u64`.
    #[error("the index line is missing or malformed")]
    MalformedIndex,
    /// An inclusion proof line is not canonical base64 of 32 bytes.
    #[error("inclusion proof line {line} is not a base64 hash")]
    MalformedProofHash {
        /// The line's 1-based position among the proof lines.
        line: usize,
    },
    /// More inclusion proof lines than any tree needs.
    #[error("more than {MAX_PROOF_HASHES} inclusion proof lines")]
    TooManyProofHashes,
    /// The text ends before the blank line and the checkpoint.
    #[error("the proof ends before its checkpoint")]
    MissingCheckpoint,
    /// The checkpoint was refused.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The inclusion proof does not lead to the checkpoint's root.
    #[error(transparent)]
    Inclusion(#[from] ProofError),
}

/// A parsed, unverified tlog-proof.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlogProof {
    extra: Option<Vec<u8>>,
    index: u64,
    inclusion_proof: Vec<Hash>,
    checkpoint: Note,
}

impl TlogProof {
    /// A proof from its parts; `checkpoint` is the signed checkpoint note.
    pub fn new(
        extra: Option<Vec<u8>>,
        index: u64,
        inclusion_proof: Vec<Hash>,
        checkpoint: Note,
    ) -> TlogProof {
        TlogProof {
            extra,
            index,
            inclusion_proof,
            checkpoint,
        }
    }

    /// Parses a tlog-proof strictly.
    pub fn parse(bytes: &[u8]) -> Result<TlogProof, TlogProofError> {
        let text = std::str::from_utf8(bytes).map_err(|_| TlogProofError::NotUtf8)?;
        let mut rest = text;
        let mut next_line = || -> Option<&str> {
            let (line, after) = rest.split_once('\n')?;
            rest = after;
            Some(line)
        };
        if next_line() != Some(TLOG_PROOF_HEADER) {
            return Err(TlogProofError::BadHeader);
        }
        let mut line = next_line().ok_or(TlogProofError::MalformedIndex)?;
        let extra = match line.strip_prefix("extra ") {
            Some(encoded) => {
                let extra = STANDARD
                    .decode(encoded)
                    .map_err(|_| TlogProofError::MalformedExtra)?;
                line = next_line().ok_or(TlogProofError::MalformedIndex)?;
                Some(extra)
            }
            None => None,
        };
        let index = line
            .strip_prefix("index ")
            .and_then(parse_decimal)
            .ok_or(TlogProofError::MalformedIndex)?;
        let mut inclusion_proof = Vec::new();
        loop {
            let line = next_line().ok_or(TlogProofError::MissingCheckpoint)?;
            if line.is_empty() {
                break;
            }
            if inclusion_proof.len() == MAX_PROOF_HASHES {
                return Err(TlogProofError::TooManyProofHashes);
            }
            let hash = Hash::from_base64(line).ok_or(TlogProofError::MalformedProofHash {
                line: inclusion_proof.len() + 1,
            })?;
            inclusion_proof.push(hash);
        }
        Ok(TlogProof {
            extra,
            index,
            inclusion_proof,
            checkpoint: Note::parse(rest.as_bytes()).map_err(CheckpointError::Note)?,
        })
    }

    /// The unauthenticated extra data, if any.
    pub fn extra(&self) -> Option<&[u8]> {
        self.extra.as_deref()
    }

    /// The leaf index.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// The inclusion proof, from the leaf's sibling up.
    pub fn inclusion_proof(&self) -> &[Hash] {
        &self.inclusion_proof
    }

    /// The signed checkpoint note (its text is not yet verified).
    pub fn checkpoint(&self) -> &Note {
        &self.checkpoint
    }

    /// Verifies the proof for the leaf with hash `leaf_hash`: the checkpoint
    /// must be for `origin`, signed by `log_key` (and every signature from
    /// a trusted witness must verify), and the inclusion proof must lead from
    /// the leaf at the index to the checkpoint's root. Witness policy is
    /// applied by the caller on the result.
    pub fn verify(
        &self,
        leaf_hash: &Hash,
        origin: &str,
        log_key: &VerifierKey,
        witness_keys: &[VerifierKey],
    ) -> Result<VerifiedTlogProof, TlogProofError> {
        let checkpoint = verify_checkpoint(&self.checkpoint, origin, log_key, witness_keys)?;
        let tree = checkpoint.checkpoint();
        verify_inclusion(
            leaf_hash,
            self.index,
            tree.size(),
            &self.inclusion_proof,
            tree.root(),
        )?;
        Ok(VerifiedTlogProof {
            leaf_hash: *leaf_hash,
            index: self.index,
            checkpoint,
        })
    }
}

impl fmt::Display for TlogProof {
    /// The tlog-proof text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{TLOG_PROOF_HEADER}")?;
        if let Some(extra) = &self.extra {
            writeln!(f, "extra {}", STANDARD.encode(extra))?;
        }
        writeln!(f, "index {}", self.index)?;
        for hash in &self.inclusion_proof {
            writeln!(f, "{}", hash.to_base64())?;
        }
        write!(f, "\n{}", self.checkpoint)
    }
}

/// A leaf proven included in a checkpoint signed by the log; only
/// [`TlogProof::verify`] builds one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedTlogProof {
    leaf_hash: Hash,
    index: u64,
    checkpoint: VerifiedCheckpoint,
}

impl VerifiedTlogProof {
    /// The leaf hash proven included.
    pub fn leaf_hash(&self) -> &Hash {
        &self.leaf_hash
    }

    /// Its index in the log.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// The verified checkpoint, with its witnesses' cosignatures.
    pub fn checkpoint(&self) -> &VerifiedCheckpoint {
        &self.checkpoint
    }
}
