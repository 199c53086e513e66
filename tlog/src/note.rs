//! C2SP signed notes (c2sp.org/signed-note): strict parsing and formatting of
//! the text and signature lines, signing with any [`NoteSigner`], and
//! verification against a set of known keys that yields a [`VerifiedNote`].
//!
//! A note's text means nothing until [`Note::verify`] has built a
//! [`VerifiedNote`]; nothing else constructs one. This module holds no
//! private keys.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use thiserror::Error;

use crate::keys::{KeyId, KeyName, SignatureType, VerifierKey};

/// The most signature lines a note may carry. The spec requires accepting at
/// least 16; golang.org/x/mod/sumdb/note also stops at 100.
pub const MAX_SIGNATURES: usize = 100;

/// The prefix of every signature line: em dash (U+2014) and a space.
const SIGNATURE_PREFIX: &str = "\u{2014} ";

/// Why a note was refused, or could not be signed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NoteError {
    /// The note is not valid UTF-8.
    #[error("the note is not valid UTF-8")]
    NotUtf8,
    /// The note contains a control character other than newline.
    #[error("the note contains a control character other than newline")]
    ControlCharacter,
    /// The note text is empty or does not end in a newline.
    #[error("the note text must end in a newline")]
    TextNotNewlineTerminated,
    /// There is no blank line separating text from signatures.
    #[error("the note has no signature block")]
    NoSignatureBlock,
    /// The signature block is empty.
    #[error("the note has no signature lines")]
    NoSignatures,
    /// The last signature line does not end in a newline.
    #[error("the last signature line does not end in a newline")]
    UnterminatedSignatureLine,
    /// A line of the signature block is not `— <name> <base64>`, or its
    /// signature is not canonical base64 of at least five bytes.
    #[error("malformed signature line {line}")]
    MalformedSignatureLine {
        /// The line's 1-based position within the signature block.
        line: usize,
    },
    /// More than [`MAX_SIGNATURES`] signature lines.
    #[error("more than {MAX_SIGNATURES} signatures")]
    TooManySignatures,
    /// Two trusted keys have the same name and key ID.
    #[error("two trusted keys are both {name}+{id}")]
    DuplicateKey {
        /// The shared name.
        name: KeyName,
        /// The shared key ID.
        id: KeyId,
    },
    /// A signature from a known key does not verify: the whole note is
    /// refused.
    #[error("invalid signature by {name}+{id}")]
    InvalidSignature {
        /// The key name.
        name: KeyName,
        /// The key ID.
        id: KeyId,
    },
    /// No signature is from a known key.
    #[error("no signature from a known key")]
    NoKnownSignature,
    /// Signing was asked with no signer.
    #[error("no signer given")]
    NoSigner,
    /// A cosignature timestamp exceeds 2^63 - 1.
    #[error("the cosignature timestamp exceeds 2^63 - 1")]
    TimestampOutOfRange,
    /// A signer could not produce a signature.
    #[error("the signer failed")]
    SignerFailed,
}

/// One signature line: key name, key ID and the signature bytes after the
/// key ID. Parsed, not verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteSignature {
    name: KeyName,
    id: KeyId,
    signature: Vec<u8>,
}

impl NoteSignature {
    /// A signature line from its parts.
    pub fn new(name: KeyName, id: KeyId, signature: Vec<u8>) -> NoteSignature {
        NoteSignature {
            name,
            id,
            signature,
        }
    }

    /// The key name.
    pub fn name(&self) -> &KeyName {
        &self.name
    }

    /// The key ID.
    pub fn id(&self) -> KeyId {
        self.id
    }

    /// The signature bytes after the key ID.
    pub fn signature(&self) -> &[u8] {
        &self.signature
    }

    fn parse(line: &str, position: usize) -> Result<NoteSignature, NoteError> {
        let malformed = || NoteError::MalformedSignatureLine { line: position };
        let rest = line.strip_prefix(SIGNATURE_PREFIX).ok_or_else(malformed)?;
        let (name, encoded) = rest.split_once(' ').ok_or_else(malformed)?;
        let name = KeyName::new(name).map_err(|_| malformed())?;
        let bytes = STANDARD.decode(encoded).map_err(|_| malformed())?;
        if bytes.len() < 5 {
            return Err(malformed());
        }
        let (id, signature) = bytes.split_at(4);
        let id = KeyId(id.try_into().map_err(|_| malformed())?);
        Ok(NoteSignature::new(name, id, signature.to_vec()))
    }
}

impl fmt::Display for NoteSignature {
    /// The signature line, with its final newline.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut bytes = Vec::with_capacity(4 + self.signature.len());
        bytes.extend_from_slice(&self.id.0);
        bytes.extend_from_slice(&self.signature);
        writeln!(
            f,
            "{SIGNATURE_PREFIX}{} {}",
            self.name,
            STANDARD.encode(bytes)
        )
    }
}

/// Anything that signs note texts under one key: the signature bytes it
/// returns follow the key ID in the signature line.
pub trait NoteSigner {
    /// The key name.
    fn key_name(&self) -> &KeyName;
    /// The key ID.
    fn key_id(&self) -> KeyId;
    /// Signs a note text (which ends in a newline).
    fn sign(&self, text: &str) -> Result<Vec<u8>, NoteError>;
}

/// A parsed, unverified note: text and signature lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    text: String,
    signatures: Vec<NoteSignature>,
}

impl Note {
    /// Parses a signed note strictly: UTF-8 with no control characters but
    /// newline; the text up to the last blank line; then one or more
    /// well-formed signature lines, at most [`MAX_SIGNATURES`].
    pub fn parse(bytes: &[u8]) -> Result<Note, NoteError> {
        let message = std::str::from_utf8(bytes).map_err(|_| NoteError::NotUtf8)?;
        check_characters(message)?;
        let split = message.rfind("\n\n").ok_or(NoteError::NoSignatureBlock)?;
        let (text, block) = (&message[..=split], &message[split + 2..]);
        if block.is_empty() {
            return Err(NoteError::NoSignatures);
        }
        let block = block
            .strip_suffix('\n')
            .ok_or(NoteError::UnterminatedSignatureLine)?;
        let mut signatures = Vec::new();
        for (position, line) in block.split('\n').enumerate() {
            if signatures.len() == MAX_SIGNATURES {
                return Err(NoteError::TooManySignatures);
            }
            signatures.push(NoteSignature::parse(line, position + 1)?);
        }
        Ok(Note {
            text: text.to_owned(),
            signatures,
        })
    }

    /// The note text, with its final newline.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The signature lines, in order.
    pub fn signatures(&self) -> &[NoteSignature] {
        &self.signatures
    }

    /// Appends a signature line (a witness's cosignature, say).
    pub fn push_signature(&mut self, signature: NoteSignature) -> Result<(), NoteError> {
        if self.signatures.len() == MAX_SIGNATURES {
            return Err(NoteError::TooManySignatures);
        }
        self.signatures.push(signature);
        Ok(())
    }

    /// Verifies every signature from a known key; any that fails refuses the
    /// whole note, and at least one must verify. Signatures from unknown
    /// keys, even sharing a name or an ID with a known one, are kept as
    /// unverified.
    pub fn verify(&self, keys: &TrustedKeys) -> Result<VerifiedNote, NoteError> {
        let mut verified: Vec<VerifiedSignature> = Vec::new();
        let mut unverified = Vec::new();
        for signature in &self.signatures {
            let Some(key) = keys.get(&signature.name, signature.id) else {
                unverified.push(signature.clone());
                continue;
            };
            let timestamp = key.check(&self.text, &signature.signature).ok_or_else(|| {
                NoteError::InvalidSignature {
                    name: signature.name.clone(),
                    id: signature.id,
                }
            })?;
            let seen = verified
                .iter()
                .any(|v| v.name == signature.name && v.id == signature.id);
            if !seen {
                verified.push(VerifiedSignature {
                    name: signature.name.clone(),
                    id: signature.id,
                    signature_type: key.signature_type(),
                    timestamp,
                });
            }
        }
        if verified.is_empty() {
            return Err(NoteError::NoKnownSignature);
        }
        Ok(VerifiedNote {
            text: self.text.clone(),
            verified,
            unverified,
        })
    }
}

impl fmt::Display for Note {
    /// The note as sent: text, blank line, signature lines.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The text ends in a newline; one more makes the blank line.
        writeln!(f, "{}", self.text)?;
        for signature in &self.signatures {
            write!(f, "{signature}")?;
        }
        Ok(())
    }
}

/// Signs a note text with each signer in turn and returns the whole note.
/// The text must be valid note text: ending in a newline, no control
/// characters but newline.
pub fn sign_note(text: &str, signers: &[&dyn NoteSigner]) -> Result<Note, NoteError> {
    check_text(text)?;
    if signers.is_empty() {
        return Err(NoteError::NoSigner);
    }
    if signers.len() > MAX_SIGNATURES {
        return Err(NoteError::TooManySignatures);
    }
    let mut signatures = Vec::with_capacity(signers.len());
    for signer in signers {
        let signature = signer.sign(text)?;
        signatures.push(NoteSignature::new(
            signer.key_name().clone(),
            signer.key_id(),
            signature,
        ));
    }
    Ok(Note {
        text: text.to_owned(),
        signatures,
    })
}

/// Checks a note text for signing: non-empty, ending in a newline, no
/// control characters but newline.
pub(crate) fn check_text(text: &str) -> Result<(), NoteError> {
    check_characters(text)?;
    if !text.ends_with('\n') {
        return Err(NoteError::TextNotNewlineTerminated);
    }
    Ok(())
}

fn check_characters(text: &str) -> Result<(), NoteError> {
    if text.chars().any(|c| c < '\u{20}' && c != '\n') {
        return Err(NoteError::ControlCharacter);
    }
    Ok(())
}

/// The keys a verifier trusts, at most one per (name, key ID).
#[derive(Debug, Clone, Default)]
pub struct TrustedKeys {
    keys: BTreeMap<(KeyName, KeyId), VerifierKey>,
}

impl TrustedKeys {
    /// A set of keys, refusing two with the same name and key ID.
    pub fn new(keys: impl IntoIterator<Item = VerifierKey>) -> Result<TrustedKeys, NoteError> {
        let mut set = TrustedKeys::default();
        for key in keys {
            let slot = (key.name().clone(), key.id());
            if set.keys.contains_key(&slot) {
                return Err(NoteError::DuplicateKey {
                    name: slot.0,
                    id: slot.1,
                });
            }
            set.keys.insert(slot, key);
        }
        Ok(set)
    }

    fn get(&self, name: &KeyName, id: KeyId) -> Option<&VerifierKey> {
        self.keys.get(&(name.clone(), id))
    }
}

/// A signature that verified under a trusted key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedSignature {
    name: KeyName,
    id: KeyId,
    signature_type: SignatureType,
    timestamp: Option<u64>,
}

impl VerifiedSignature {
    /// The key name.
    pub fn name(&self) -> &KeyName {
        &self.name
    }

    /// The key ID.
    pub fn id(&self) -> KeyId {
        self.id
    }

    /// The signature type of the key.
    pub fn signature_type(&self) -> SignatureType {
        self.signature_type
    }

    /// The cosignature's timestamp (POSIX seconds), for type 0x04.
    pub fn timestamp(&self) -> Option<u64> {
        self.timestamp
    }

    /// Whether this signature was made by `key`.
    pub fn is_by(&self, key: &VerifierKey) -> bool {
        self.name == *key.name() && self.id == key.id()
    }
}

/// A note with at least one signature verified under a trusted key; only
/// [`Note::verify`] builds one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedNote {
    text: String,
    verified: Vec<VerifiedSignature>,
    unverified: Vec<NoteSignature>,
}

impl VerifiedNote {
    /// The note text, with its final newline.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The verified signatures, one per key, in note order.
    pub fn verified(&self) -> &[VerifiedSignature] {
        &self.verified
    }

    /// Signatures from keys not trusted, kept as they were.
    pub fn unverified(&self) -> &[NoteSignature] {
        &self.unverified
    }

    /// The verified signature by `key`, if any.
    pub fn signed_by(&self, key: &VerifierKey) -> Option<&VerifiedSignature> {
        self.verified.iter().find(|v| v.is_by(key))
    }
}
