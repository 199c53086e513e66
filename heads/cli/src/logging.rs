//! The binary's log sink: standard error, with anything shaped like a proof
//! redacted. No countersign code logs a proof; this also covers what a
//! dependency logs verbatim at DEBUG or TRACE (the MCP SDK logs whole
//! requests, so a proof a model pasted into a tool argument, which the tool
//! refuses, would otherwise reach the log).

use std::borrow::Cow;
use std::io::{self, Write};

/// The PASETO header every countersign proof starts with.
const PROOF_HEADER: &str = "v4.public.";

/// What a redacted proof reads as.
const REDACTED: &str = "[redacted proof]";

/// Standard error, with [`redact_proofs`] applied to every write. The
/// tracing formatter writes one whole event per call, so a proof is never
/// split across two writes.
pub struct RedactingStderr;

impl Write for RedactingStderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        io::stderr().write_all(redact_proofs(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

/// `text` with every `v4.public.` token (header, base64url body, optional
/// footer) replaced by `[redacted proof]`.
pub fn redact_proofs(text: &str) -> Cow<'_, str> {
    if !text.contains(PROOF_HEADER) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(PROOF_HEADER) {
        out.push_str(&rest[..at]);
        out.push_str(REDACTED);
        let token = &rest[at + PROOF_HEADER.len()..];
        let end = token
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
            .unwrap_or(token.len());
        rest = &token[end..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_every_proof_with_its_footer_and_keeps_the_rest() {
        let line = r#"request arguments: {"proof": String("v4.public.eyJhYmMi_-x.Zm9vdGVy"), "n": 1} and v4.public.QUJD"#;
        assert_eq!(
            redact_proofs(line),
            r#"request arguments: {"proof": String("[redacted proof]"), "n": 1} and [redacted proof]"#
        );
    }

    #[test]
    fn leaves_text_without_a_proof_untouched() {
        assert!(matches!(
            redact_proofs("applied: prop_1 ran once"),
            Cow::Borrowed(_)
        ));
        assert_eq!(
            redact_proofs("v4.local.x v4.public"),
            "v4.local.x v4.public"
        );
    }
}
