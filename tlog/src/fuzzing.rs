//! The body of the `witness_reply` fuzz target under `fuzz/` (run with
//! cargo-fuzz), as a plain function, so that the committed seed corpus
//! `fuzz/seeds/witness_reply/` is replayed by this crate's unit tests on
//! every run without a fuzzing toolchain. It panics when a property it
//! states does not hold; it must not panic on any other input.

use crate::note::Note;
use crate::witness::{Reply, parse_reply};

/// A witness's answer, as untrusted bytes: the first byte picks the status
/// (200, 409 or another) and the `Content-Type` (absent, the size type, or
/// another), the rest is the body. Reading never panics; a 200 is read as
/// lines that each start a note signature line and hold no newline, which
/// appended to a checkpoint note either parse as its signatures or refuse
/// it; a 409 is read as a size whose decimal form, with a newline, is the
/// body exactly.
#[allow(clippy::unwrap_used)] // a broken property must panic: that is the finding
pub fn witness_reply(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let status = match selector % 3 {
        0 => 200,
        1 => 409,
        _ => 400 + u16::from(selector / 3) % 200,
    };
    let content_type = match (selector / 3) % 3 {
        0 => None,
        1 => Some("text/x.tlog.size"),
        _ => Some("text/plain; charset=utf-8"),
    };
    match parse_reply(status, content_type, body) {
        Reply::Cosigned(lines) => {
            assert_eq!(status, 200);
            assert!(!lines.is_empty());
            for line in &lines {
                assert!(line.starts_with("\u{2014} ") && !line.contains('\n'));
            }
            let note = format!("o\n1\nAAAA\n\n{}\n", lines.join("\n"));
            if let Ok(parsed) = Note::parse(note.as_bytes()) {
                assert_eq!(parsed.signatures().len(), lines.len());
            }
        }
        Reply::Conflict(size) => {
            assert_eq!(status, 409);
            assert_eq!(format!("{size}\n").as_bytes(), body);
        }
        Reply::Refused {
            status: refused, ..
        } => assert_eq!(refused, status),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::witness_reply;

    #[test]
    fn every_committed_seed_passes_the_target() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/witness_reply");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| entry.unwrap().path())
            .collect();
        files.sort();
        assert!(files.len() >= 8, "seeds in {}", dir.display());
        for file in files {
            witness_reply(&std::fs::read(&file).unwrap());
        }
    }
}
