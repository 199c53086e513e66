//! The raw proof: a secret bearer token.
//!
//! Owns: the `Proof` wrapper (zeroized on drop, redacted `Debug`, no
//! `Display`/`Serialize`, constant-time equality) and its input bounds.
//! Must not: print, log or serialize the token text; only its SHA-256 leaves.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::canonical::sha256_hex;

/// Largest proof text accepted: room for a 128 KiB payload, its signature and a footer, in base64url.
pub const MAX_PROOF_BYTES: usize = 192 * 1024;

/// The bytes a token may hold: `[A-Za-z0-9._-]`.
const TOKEN_ALPHABET: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-');
        b += 1;
    }
    table
};

/// Whether `byte` is one a token may hold (`[A-Za-z0-9._-]`): the
/// proof's alphabet, and the key id's in its footer.
pub(crate) fn is_token_byte(byte: u8) -> bool {
    TOKEN_ALPHABET[usize::from(byte)]
}

/// Why a text is not even shaped like a proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ProofFormatError {
    /// No text.
    #[error("the proof is empty")]
    Empty,
    /// Longer than [`MAX_PROOF_BYTES`].
    #[error("the proof is longer than {MAX_PROOF_BYTES} bytes")]
    TooLarge,
    /// Contains a byte outside the token alphabet `[A-Za-z0-9._-]`.
    #[error("the proof contains a character outside the token alphabet")]
    InvalidCharacter,
}

/// A raw proof (PASETO v4.public token). Secret: whoever holds it may execute the approved action once.
pub struct Proof(Zeroizing<String>);

impl Proof {
    /// Wraps proof text read from a file, stdin or the signer.
    ///
    /// Removes ASCII whitespace around the token (a trailing `\n`, a CRLF
    /// written by an editor, spaces pasted around it: none of it can be part
    /// of a token), then requires 1..=[`MAX_PROOF_BYTES`] bytes of
    /// `[A-Za-z0-9._-]`. The text is zeroized on every path, including
    /// refusals. This is the one place proof text is trimmed: every head
    /// reads a proof through it.
    pub fn from_text(text: String) -> Result<Proof, ProofFormatError> {
        // Trimmed in place: the buffer is never copied, and `Zeroizing`
        // clears its whole capacity (the trimmed bytes too) on drop.
        let mut text = Zeroizing::new(text);
        let is_space = |c: char| c.is_ascii_whitespace();
        let end = text.trim_end_matches(is_space).len();
        text.truncate(end);
        let start = end - text.trim_start_matches(is_space).len();
        text.drain(..start);
        if text.is_empty() {
            return Err(ProofFormatError::Empty);
        }
        if text.len() > MAX_PROOF_BYTES {
            return Err(ProofFormatError::TooLarge);
        }
        // Every byte looked at (no early exit), so the loop runs branch-free.
        if !text.bytes().fold(true, |ok, b| ok & is_token_byte(b)) {
            return Err(ProofFormatError::InvalidCharacter);
        }
        Ok(Proof(text))
    }

    /// The token text. Callers must not log, print or persist it.
    pub fn expose_secret(&self) -> &str {
        &self.0
    }

    /// Lowercase hex SHA-256 of the token text (what the ledger stores).
    pub fn sha256_hex(&self) -> String {
        sha256_hex(self.0.as_bytes())
    }

    /// The key that lets a ledger check possession of this proof without
    /// receiving it: SHA-256 of [`CONSUME_KEY_TAG`] and the token text. The
    /// signer stores [`ConsumeKey::digest`] with the issuance; a head
    /// presents the key when it consumes the proof. Nobody without the
    /// proof can compute the key from the stored digest or hash.
    pub fn consume_key(&self) -> ConsumeKey {
        let mut h = Sha256::new();
        h.update(CONSUME_KEY_TAG);
        h.update(self.0.as_bytes());
        ConsumeKey(Zeroizing::new(h.finalize().into()))
    }
}

/// Domain tag of [`Proof::consume_key`]: the key is never the proof's own
/// SHA-256, which the ledger stores in the clear.
pub const CONSUME_KEY_TAG: &[u8] = b"countersign/v1/consume-key\0";

/// Proof of possession of one proof, for the ledger's consume check. Secret
/// while the proof is unused (it authorizes consuming it); useless after.
pub struct ConsumeKey(Zeroizing<[u8; 32]>);

impl ConsumeKey {
    /// Lowercase hex of the key: what a head sends with the consumption.
    pub fn expose_hex(&self) -> String {
        hex::encode(*self.0)
    }

    /// Lowercase hex SHA-256 of the key: what the signer stores with the
    /// issuance and the ledger compares.
    pub fn digest(&self) -> String {
        sha256_hex(&*self.0)
    }
}

impl std::fmt::Debug for ConsumeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ConsumeKey(<redacted>)")
    }
}

impl std::fmt::Debug for Proof {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Proof(<redacted>)")
    }
}

impl PartialEq for Proof {
    fn eq(&self, other: &Self) -> bool {
        bool::from(self.0.as_bytes().ct_eq(other.0.as_bytes()))
    }
}

impl Eq for Proof {}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_consume_key_is_tagged_and_its_digest_is_its_sha256() {
        let proof = Proof::from_text("v4.public.abc".into()).unwrap();
        let key = proof.consume_key();
        let mut tagged = CONSUME_KEY_TAG.to_vec();
        tagged.extend_from_slice(b"v4.public.abc");
        assert_eq!(key.expose_hex(), sha256_hex(&tagged));
        assert_ne!(key.expose_hex(), proof.sha256_hex());
        assert_eq!(
            key.digest(),
            sha256_hex(&hex::decode(key.expose_hex()).unwrap())
        );
        assert_eq!(format!("{key:?}"), "ConsumeKey(<redacted>)");
    }

    #[test]
    fn debug_never_shows_the_token() {
        let p = Proof::from_text("v4.public.c2VjcmV0\n".to_owned()).unwrap();
        assert_eq!(format!("{p:?}"), "Proof(<redacted>)");
        assert_eq!(p.expose_secret(), "v4.public.c2VjcmV0");
    }

    #[test]
    fn strips_ascii_whitespace_around_the_token() {
        for text in ["abc\n\n", "abc\r\n", " \tabc \r\n", "\nabc", "abc\x0c"] {
            assert_eq!(
                Proof::from_text(text.to_owned()).unwrap().expose_secret(),
                "abc"
            );
        }
        assert_eq!(
            Proof::from_text(" \r\n\t".to_owned()).unwrap_err(),
            ProofFormatError::Empty
        );
    }

    #[test]
    fn refuses_whitespace_inside_the_token_and_non_ascii_space_around_it() {
        assert_eq!(
            Proof::from_text("ab\r\ncd".to_owned()).unwrap_err(),
            ProofFormatError::InvalidCharacter
        );
        assert_eq!(
            Proof::from_text("abc\u{a0}".to_owned()).unwrap_err(),
            ProofFormatError::InvalidCharacter
        );
    }

    #[test]
    fn refuses_oversized_and_foreign_characters() {
        let big = "a".repeat(MAX_PROOF_BYTES + 1);
        assert_eq!(
            Proof::from_text(big).unwrap_err(),
            ProofFormatError::TooLarge
        );
        assert_eq!(
            Proof::from_text("v4.public.ab cd".to_owned()).unwrap_err(),
            ProofFormatError::InvalidCharacter
        );
        assert_eq!(
            Proof::from_text("v4.public.é".to_owned()).unwrap_err(),
            ProofFormatError::InvalidCharacter
        );
    }

    #[test]
    fn equality_and_hash_follow_the_text() {
        let a = Proof::from_text("v4.public.abc".to_owned()).unwrap();
        let b = Proof::from_text("v4.public.abc\n".to_owned()).unwrap();
        let c = Proof::from_text("v4.public.abd".to_owned()).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.sha256_hex(), sha256_hex(b"v4.public.abc"));
    }
}
