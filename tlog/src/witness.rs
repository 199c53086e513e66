//! The c2sp.org/tlog-witness `add-checkpoint` exchange, as bytes: the
//! request body a log sends and the witness's answer, read strictly.
//! Pure: no I/O, no keys. The lines of a 200 answer are only shaped like
//! note signature lines here; the client has each checked as a
//! cosignature over the checkpoint it sent before anything is stored.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::hash::Hash;

/// The most consistency proof lines a client may send.
pub const MAX_PROOF_LINES: usize = 63;
/// The `Content-Type` of a 409 answer's size.
pub const SIZE_CONTENT_TYPE: &str = "text/x.tlog.size";

/// The body of `POST <prefix>/add-checkpoint`: `old <size>`, one base64
/// line per proof hash, an empty line, then the signed checkpoint note.
/// `None` if the proof has more than [`MAX_PROOF_LINES`] hashes.
pub fn request_body(old: u64, proof: &[Hash], note: &str) -> Option<String> {
    if proof.len() > MAX_PROOF_LINES {
        return None;
    }
    let mut body = format!("old {old}\n");
    for hash in proof {
        body.push_str(&STANDARD.encode(hash.as_bytes()));
        body.push('\n');
    }
    body.push('\n');
    body.push_str(note);
    Some(body)
}

/// What a witness answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// 200: the note signature lines it returned (each without its
    /// newline), not yet checked.
    Cosigned(Vec<String>),
    /// 409 with a `text/x.tlog.size` body: the size of the latest
    /// checkpoint it cosigned for this log.
    Conflict(u64),
    /// Any other answer: the status, and why it is not one of the above.
    Refused {
        /// The HTTP status.
        status: u16,
        /// What was wrong, for the log (the body is not repeated).
        reason: String,
    },
}

/// Reads a witness's answer.
pub fn parse_reply(status: u16, content_type: Option<&str>, body: &[u8]) -> Reply {
    let refused = |reason: &str| Reply::Refused {
        status,
        reason: reason.to_owned(),
    };
    match status {
        200 => match parse_lines(body) {
            Some(lines) => Reply::Cosigned(lines),
            None => refused("200 without note signature lines, each ending in a newline"),
        },
        409 => {
            let media = content_type
                .and_then(|t| t.split(';').next())
                .map(str::trim)
                .map(str::to_ascii_lowercase);
            if media.as_deref() != Some(SIZE_CONTENT_TYPE) {
                return refused("409 without Content-Type text/x.tlog.size");
            }
            match parse_size(body) {
                Some(size) => Reply::Conflict(size),
                None => refused("409 whose body is not a decimal size and a newline"),
            }
        }
        _ => refused(match status {
            400 => "the witness refused the request as malformed (400)",
            403 => "the witness does not trust the log's signature (403)",
            404 => "the witness does not know this log's origin (404)",
            422 => "the witness found the checkpoint inconsistent (422)",
            _ => "an answer the protocol does not define",
        }),
    }
}

/// One or more lines, each starting with the em dash and a space and
/// ending in a newline; no empty line.
fn parse_lines(body: &[u8]) -> Option<Vec<String>> {
    let text = std::str::from_utf8(body).ok()?.strip_suffix('\n')?;
    let lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
    lines
        .iter()
        .all(|l| l.starts_with("\u{2014} "))
        .then_some(lines)
}

/// A canonical decimal (no sign, no leading zero) and a newline.
fn parse_size(body: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(body).ok()?.strip_suffix('\n')?;
    let canonical = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    if canonical { text.parse().ok() } else { None }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_request_body_is_the_specs_layout() {
        let a = crate::leaf_hash(b"a");
        let b = crate::leaf_hash(b"b");
        let note = "o\n2\nroot=\n\n\u{2014} o sig\n";
        let body = request_body(1, &[a, b], note).unwrap();
        assert_eq!(
            body,
            format!(
                "old 1\n{}\n{}\n\n{note}",
                STANDARD.encode(a.as_bytes()),
                STANDARD.encode(b.as_bytes())
            )
        );
        assert_eq!(
            request_body(0, &[], note).unwrap(),
            format!("old 0\n\n{note}")
        );
        assert_eq!(request_body(0, &[a; 64], note), None);
    }

    /// c2sp.org/tlog-witness (github.com/C2SP/C2SP, commit
    /// 95978ca8038c058314b6ead7d6c1fa43af3bebec), "Example request body".
    const SPEC_REQUEST: &str = "old 20852014
PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=
jrJZDmY8Y7SyJE0MWLpLozkIVMSMZcD5kvuKxPC3swk=
5+pKlUdi2LeF/BcMHBn+Ku6yhPGNCswZZD1X/6QgPd8=
/6WVhPs2CwSsb5rYBH5cjHV/wSmA79abXAwhXw3Kj/0=

example.com/behind-the-sofa
20852163
CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=

\u{2014} example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=
\u{2014} example.com/behind-the-sofa opLqBQsREYCgu6xQkYQwJr9fo45a62DN9EdmHXnZdXNqlcVGlCum2Wks+49/V6267UEjw6QUXTS5Rovnzv++qbSzm9Q=
";

    /// The same document's "Example response body".
    const SPEC_RESPONSE: &str = "\u{2014} witness.example/w1 CMp+6LWBU0anHGH5aNDTJkH/gj79sG+T6+iP2ThYN5krrDJbR1HDnucjL39QsZTSvVjyQLrdk3DXDqI5G2HgLatVs0pWh6Up69HVOw==
\u{2014} witness.example/w1 I7rEps0pvK2UqkS2gSpVUDhrhVtQV9lgF6pRrWAvjJHjyWpW7VcE3SiOlVlbQNt64vWhO+DlkL0+UfzuOBMh9ChdMkP1vi/lCAsmlw==
\u{2014} witness.example/w2 AWui8Sk55XjYLOijihBjhqEH6nS1ndDymE0a+6idX7pLcnoB+dhnz0854aLZgrrKbYKA7nC3HNJhm/kWl7oJlqU3rXXvpysAdyP3wQ==
";

    #[test]
    fn reproduces_the_specs_example_request_and_reads_its_response() {
        let (head, note) = SPEC_REQUEST.split_once("\n\n").unwrap();
        let mut lines = head.lines();
        let old: u64 = lines
            .next()
            .unwrap()
            .strip_prefix("old ")
            .unwrap()
            .parse()
            .unwrap();
        let proof: Vec<Hash> = lines
            .map(|l| {
                let bytes: [u8; 32] = STANDARD.decode(l).unwrap().try_into().unwrap();
                Hash::from(bytes)
            })
            .collect();
        assert_eq!(proof.len(), 4);
        assert_eq!(request_body(old, &proof, note).unwrap(), SPEC_REQUEST);
        let Reply::Cosigned(lines) = parse_reply(200, Some("text/plain"), SPEC_RESPONSE.as_bytes())
        else {
            panic!("the spec's response is not read as cosignatures");
        };
        assert_eq!(lines.len(), 3);
        assert!(lines[2].starts_with("\u{2014} witness.example/w2 AWui8Sk5"));
    }

    #[test]
    fn reads_cosignatures_and_sizes_strictly() {
        assert_eq!(
            parse_reply(200, None, "\u{2014} w AAAA\n\u{2014} w2 BBBB\n".as_bytes()),
            Reply::Cosigned(vec!["\u{2014} w AAAA".into(), "\u{2014} w2 BBBB".into()])
        );
        assert!(matches!(
            parse_reply(200, None, "\u{2014} w AAAA".as_bytes()),
            Reply::Refused { status: 200, .. }
        ));
        assert!(matches!(
            parse_reply(200, None, b"w AAAA\n"),
            Reply::Refused { status: 200, .. }
        ));
        assert_eq!(
            parse_reply(409, Some("text/x.tlog.size"), b"42\n"),
            Reply::Conflict(42)
        );
        assert_eq!(
            parse_reply(409, Some("Text/X.Tlog.Size; charset=utf-8"), b"0\n"),
            Reply::Conflict(0)
        );
        for (content_type, body) in [
            (Some("text/plain"), &b"42\n"[..]),
            (None, b"42\n"),
            (Some("text/x.tlog.size"), b"042\n"),
            (Some("text/x.tlog.size"), b"42"),
            (Some("text/x.tlog.size"), b"-1\n"),
            (Some("text/x.tlog.size"), b"99999999999999999999999\n"),
        ] {
            assert!(
                matches!(
                    parse_reply(409, content_type, body),
                    Reply::Refused { status: 409, .. }
                ),
                "{content_type:?} {body:?}"
            );
        }
        assert_eq!(
            parse_reply(422, None, b""),
            Reply::Refused {
                status: 422,
                reason: "the witness found the checkpoint inconsistent (422)".into()
            }
        );
    }
}
