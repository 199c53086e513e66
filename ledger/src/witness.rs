//! Witnesses' cosignatures of the log's checkpoints (issue 49, item 2):
//! what the witnessing client (`countersign-witness`) stores and reads
//! back, and the one check every cosignature passes before it is written
//! and again whenever it is read: a C2SP cosignature (type 0x04, nonzero
//! timestamp) by exactly the witness key it is stored under, over the
//! stored checkpoint of its size, byte for byte.
//!
//! Storage (migration 13): `tlog_cosignatures` (append-only, one row per
//! checkpoint size and witness key: the signature line as returned) and
//! `tlog_witnesses` (the client's persisted queue: per witness key, the
//! largest size it cosigned, which never decreases, since when it has been
//! unreachable, whether that gap was recorded, and why it was halted).
//!
//! This module owns the check and the types; it holds no SQL
//! (`sql/witness.rs`) and no network code (the client is its own crate).

use countersign_tlog::{Note, NoteSignature, TrustedKeys, VerifierKey};

/// The event recorded when a witness has been unreachable for the gap
/// interval (details: `witness`, `key`, `since`, `error`).
pub const WITNESS_GAP_EVENT: &str = "tlog_witness_gap";
/// The event recorded when a witness whose gap was recorded answers again
/// (details: `witness`, `key`, `since`).
pub const WITNESS_BACK_EVENT: &str = "tlog_witness_back";
/// The event recorded when a witness shows that the log was rolled back
/// or forked: it cosigned a size beyond the log, or refused our proof of
/// consistency with what it cosigned (details: `witness`, `key`,
/// `witness_size`, `log_size`, `reason`).
pub const WITNESS_ROLLBACK_EVENT: &str = "tlog_witness_rollback";

/// The witnessing client's persisted state for one witness key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessState {
    /// The witness's verifier key (`name+id+base64`), the row's key.
    pub witness_key: String,
    /// The largest checkpoint size the witness cosigned for this log, as
    /// far as the client saw (0: none yet). Never decreases.
    pub acknowledged: u64,
    /// When the current run of failed attempts began (the ledger's
    /// timestamp form), if the last attempt failed.
    pub unreachable_since: Option<String>,
    /// Whether that outage was recorded as a [`WITNESS_GAP_EVENT`].
    pub gap_recorded: bool,
    /// Why the client stopped sending to this witness (a rolled-back or
    /// forked log), if it did.
    pub halted: Option<String>,
}

impl WitnessState {
    /// The state of a witness never contacted.
    pub fn new(witness_key: &VerifierKey) -> WitnessState {
        WitnessState {
            witness_key: witness_key.to_string(),
            acknowledged: 0,
            unreachable_since: None,
            gap_recorded: false,
            halted: None,
        }
    }
}

/// A stored cosignature, as read back (and checked again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCosignature {
    /// The checkpoint size it cosigns.
    pub size: u64,
    /// The witness's verifier key.
    pub witness_key: String,
    /// The note signature line, without its final newline.
    pub line: String,
    /// Its timestamp (POSIX seconds).
    pub timestamp: u64,
    /// When it was stored (the ledger's timestamp form).
    pub stored_at: String,
}

/// Why a cosignature was not stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CosignatureRefusal {
    /// The signature line does not parse as a note signature line.
    #[error("not a note signature line: {0}")]
    Malformed(String),
    /// The key is not a cosignature (type 0x04) key.
    #[error("the key is not a cosignature/v1 (0x04) key")]
    NotACosignatureKey,
    /// The line is not by the key (another name or key ID).
    #[error("the line is not by this witness key")]
    OtherKey,
    /// The line is by the key but does not verify over the checkpoint.
    #[error("the cosignature does not verify over the checkpoint")]
    DoesNotVerify,
    /// The cosignature carries no timestamp, or timestamp zero
    /// (c2sp.org/tlog-witness: it MUST NOT be zero).
    #[error("the cosignature's timestamp is zero")]
    ZeroTimestamp,
}

/// Checks that `line` (a note signature line, with or without its final
/// newline) is a cosignature by `key` over the checkpoint `note` (a whole
/// signed note: its text is what is cosigned); its timestamp if so.
pub fn check_cosignature(
    note: &str,
    key: &VerifierKey,
    line: &str,
) -> Result<u64, CosignatureRefusal> {
    if key.signature_type() != countersign_tlog::SignatureType::CosignatureV1 {
        return Err(CosignatureRefusal::NotACosignatureKey);
    }
    let line = line.strip_suffix('\n').unwrap_or(line);
    if line.contains('\n') {
        return Err(CosignatureRefusal::Malformed("more than one line".into()));
    }
    let text = Note::parse(note.as_bytes())
        .map_err(|e| CosignatureRefusal::Malformed(format!("the checkpoint: {e}")))?
        .text()
        .to_owned();
    let cosigned = Note::parse(format!("{text}\n{line}\n").as_bytes())
        .map_err(|e| CosignatureRefusal::Malformed(e.to_string()))?;
    let [signature] = cosigned.signatures() else {
        return Err(CosignatureRefusal::Malformed("not one line".into()));
    };
    if signature.name() != key.name() || signature.id() != key.id() {
        return Err(CosignatureRefusal::OtherKey);
    }
    let keys = TrustedKeys::new([key.clone()]).map_err(|_| CosignatureRefusal::DoesNotVerify)?;
    let verified = cosigned
        .verify(&keys)
        .map_err(|_| CosignatureRefusal::DoesNotVerify)?;
    match verified.signed_by(key).and_then(|v| v.timestamp()) {
        Some(0) | None => Err(CosignatureRefusal::ZeroTimestamp),
        Some(timestamp) => Ok(timestamp),
    }
}

/// `note` with `lines` appended to its signature block, in the given
/// order, as one signed note. Lines already in the note are not repeated.
pub(crate) fn append_signatures(note: &str, lines: &[String]) -> Result<String, String> {
    let mut parsed = Note::parse(note.as_bytes()).map_err(|e| e.to_string())?;
    for line in lines {
        let one = Note::parse(format!("x\n\n{line}\n").as_bytes()).map_err(|e| e.to_string())?;
        for signature in one.signatures() {
            if !parsed.signatures().contains(signature) {
                parsed
                    .push_signature(NoteSignature::clone(signature))
                    .map_err(|e| e.to_string())?;
            }
        }
    }
    Ok(parsed.to_string())
}
