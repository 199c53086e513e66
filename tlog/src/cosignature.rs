//! The Ed25519 checkpoint cosignature of c2sp.org/tlog-cosignature
//! (signature type 0x04): the signed message
//! `cosignature/v1\ntime <timestamp>\n<checkpoint note text>` and the
//! `timestamp || signature` layout.
//!
//! This module owns the message format only; the cosigning key is in
//! the signer crate (`countersign_signer::note_keys`), verification in
//! [`crate::keys::VerifierKey`].

/// The header line of the signed message, which separates cosignatures
/// from every other use of the key.
pub const COSIGNATURE_HEADER: &str = "cosignature/v1";

/// The size of a cosignature: an 8-byte big-endian timestamp and a 64-byte
/// Ed25519 signature.
pub const COSIGNATURE_SIZE: usize = 8 + 64;

/// The largest timestamp a cosignature may carry, 2^63 - 1.
pub const MAX_TIMESTAMP: u64 = i64::MAX as u64;

/// The message a cosigner signs: the header line, `time <timestamp>` in
/// decimal, then the whole checkpoint note text (with its final newline and
/// any extension lines, without signature lines). `None` when the timestamp
/// exceeds [`MAX_TIMESTAMP`].
pub fn cosignature_message(timestamp: u64, note_text: &str) -> Option<Vec<u8>> {
    if timestamp > MAX_TIMESTAMP {
        return None;
    }
    Some(format!("{COSIGNATURE_HEADER}\ntime {timestamp}\n{note_text}").into_bytes())
}

/// The timestamp of a cosignature's bytes (after the key ID), if they have
/// the cosignature size and the timestamp is in range. It says nothing about
/// validity: read it from a verified note to trust it.
pub fn cosignature_timestamp(signature: &[u8]) -> Option<u64> {
    if signature.len() != COSIGNATURE_SIZE {
        return None;
    }
    let timestamp = u64::from_be_bytes(signature.get(..8)?.try_into().ok()?);
    (timestamp <= MAX_TIMESTAMP).then_some(timestamp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_example_message_is_reproduced() {
        // c2sp.org/tlog-cosignature, "Ed25519 signed message".
        let body =
            "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n";
        assert_eq!(
            cosignature_message(1679315147, body).as_deref(),
            Some(
                &b"cosignature/v1\ntime 1679315147\nexample.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"[..]
            )
        );
    }

    #[test]
    fn refuses_a_timestamp_above_two_to_the_63_minus_one() {
        assert_eq!(cosignature_message(MAX_TIMESTAMP + 1, "x\n"), None);
        assert!(cosignature_message(MAX_TIMESTAMP, "x\n").is_some());
        let mut signature = [0u8; COSIGNATURE_SIZE];
        signature[0] = 0x80;
        assert_eq!(cosignature_timestamp(&signature), None);
        assert_eq!(cosignature_timestamp(&signature[1..]), None);
    }
}
