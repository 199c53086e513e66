//! RFC 6962 section 2.1 hashing: the `Hash` type, leaf and node hashes with
//! their domain-separation prefixes, and the Merkle Tree Hash of a list of
//! leaf hashes.
//!
//! This module owns the two hash prefixes (0x00 for leaves, 0x01 for interior
//! nodes); nothing else in the crate feeds SHA-256 with tree data.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};

/// The size of a SHA-256 hash in bytes.
pub const HASH_SIZE: usize = 32;

/// A SHA-256 hash: a leaf hash, an interior node hash or a tree root.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Hash(pub [u8; HASH_SIZE]);

impl Hash {
    /// The Merkle Tree Hash of the empty tree, SHA-256 of the empty string
    /// (RFC 6962 section 2.1: `MTH({}) = SHA-256()`).
    pub const EMPTY_ROOT: Hash = Hash([
        0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9,
        0x24, 0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52,
        0xb8, 0x55,
    ]);

    /// The hash's bytes.
    pub fn as_bytes(&self) -> &[u8; HASH_SIZE] {
        &self.0
    }

    /// A hash from exactly 32 bytes; `None` for any other length.
    pub fn from_slice(bytes: &[u8]) -> Option<Hash> {
        <[u8; HASH_SIZE]>::try_from(bytes).ok().map(Hash)
    }

    /// The standard base64 encoding (RFC 4648 section 4, padded), as in
    /// checkpoints and tlog-proofs.
    pub fn to_base64(&self) -> String {
        STANDARD.encode(self.0)
    }

    /// Decodes a standard, padded, canonical base64 string of exactly 32
    /// bytes; `None` for anything else.
    pub fn from_base64(text: &str) -> Option<Hash> {
        // The standard engine requires canonical padding and zero trailing
        // bits, so every hash has exactly one accepted encoding.
        let bytes = STANDARD.decode(text).ok()?;
        Hash::from_slice(&bytes)
    }
}

impl From<[u8; HASH_SIZE]> for Hash {
    fn from(bytes: [u8; HASH_SIZE]) -> Hash {
        Hash(bytes)
    }
}

impl fmt::Debug for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Hash({})", hex::encode(self.0))
    }
}

impl fmt::Display for Hash {
    /// Lowercase hex, as in the RFC 6962 reference data.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

/// The leaf hash of an entry: `SHA-256(0x00 || data)`.
pub fn leaf_hash(data: &[u8]) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([0x00]);
    hasher.update(data);
    Hash(hasher.finalize().into())
}

/// The hash of an interior node: `SHA-256(0x01 || left || right)`.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([0x01]);
    hasher.update(left.0);
    hasher.update(right.0);
    Hash(hasher.finalize().into())
}

/// The Merkle Tree Hash (RFC 6962 section 2.1) of a list of leaf hashes: the
/// root of the tree whose leaves they are. The empty list has
/// [`Hash::EMPTY_ROOT`].
///
/// Linear in the number of leaves, with a stack of at most 64 hashes.
pub fn root(leaves: &[Hash]) -> Hash {
    let mut right_edge = crate::CompactTree::new();
    for leaf in leaves {
        right_edge.push(*leaf);
    }
    right_edge.root()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn empty_root_is_sha256_of_nothing() {
        assert_eq!(Hash::EMPTY_ROOT.0, <[u8; 32]>::from(Sha256::digest(b"")));
        assert_eq!(root(&[]), Hash::EMPTY_ROOT);
    }

    #[test]
    fn base64_round_trips_and_refuses_other_lengths() {
        let hash = leaf_hash(b"");
        assert_eq!(Hash::from_base64(&hash.to_base64()), Some(hash));
        assert_eq!(Hash::from_base64("AAAA"), None);
        // Unpadded and non-canonical forms of a valid hash are refused.
        let unpadded = hash.to_base64().trim_end_matches('=').to_owned();
        assert_eq!(Hash::from_base64(&unpadded), None);
        let mut noncanonical = hash.to_base64();
        noncanonical.replace_range(42..43, "1");
        assert_eq!(Hash::from_base64(&noncanonical), None);
    }
}
