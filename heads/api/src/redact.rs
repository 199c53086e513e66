//! A second line of defence for logs: a `tracing-subscriber` writer that
//! replaces anything shaped like a proof (`v4.public.…`) or an API token
//! (`cs1_<id>_<secret>`) before a line is written. The first line is that
//! nothing logs them: the API logs method, route template, status and time,
//! never a URL, a query string, a header or a body.
//!
//! Must not: buffer across writes (each formatted event is one write).

use std::borrow::Cow;
use std::io::{self, Write};

use tracing_subscriber::fmt::MakeWriter;

/// Replace proofs and API tokens in `text`.
pub fn redact(text: &str) -> Cow<'_, str> {
    if !text.contains("v4.public.") && !text.contains(crate::tokens::TOKEN_PREFIX) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let next = [
            rest.find("v4.public.").map(|i| (i, true)),
            rest.find(crate::tokens::TOKEN_PREFIX).map(|i| (i, false)),
        ]
        .into_iter()
        .flatten()
        .min_by_key(|(i, _)| *i);
        let Some((at, is_proof)) = next else {
            out.push_str(rest);
            return Cow::Owned(out);
        };
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
            .unwrap_or(tail.len());
        if is_proof {
            out.push_str("[redacted proof]");
        } else {
            // Keep the id (not secret) so an operator can tell tokens apart.
            let id: String = tail[crate::tokens::TOKEN_PREFIX.len()..end]
                .chars()
                .take(16)
                .collect();
            out.push_str(&format!("{}{id}_[redacted]", crate::tokens::TOKEN_PREFIX));
        }
        rest = &tail[end..];
    }
}

/// Wraps a writer so that every write is redacted first.
#[derive(Debug)]
pub struct Redacting<W>(W);

impl<W: Write> Write for Redacting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0.write_all(redact(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// A [`MakeWriter`] whose writers redact (for `tracing_subscriber::fmt().with_writer`).
#[derive(Debug, Clone)]
pub struct RedactingMakeWriter<M>(M);

impl<M> RedactingMakeWriter<M> {
    /// Redact everything `inner` would write.
    pub fn new(inner: M) -> Self {
        Self(inner)
    }
}

impl<'a, M: MakeWriter<'a>> MakeWriter<'a> for RedactingMakeWriter<M> {
    type Writer = Redacting<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        Redacting(self.0.make_writer())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_proofs_and_tokens_and_keeps_the_rest() {
        let line = "a v4.public.eyJhIjoxfQ.Zm9v b token=cs1_0123456789abcdef_AAAAsecretBBBB-_ c";
        assert_eq!(
            redact(line),
            "a [redacted proof] b token=cs1_0123456789abcdef_[redacted] c"
        );
        assert!(matches!(redact("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn the_writer_redacts_what_passes_through() {
        let mut out = Vec::new();
        Redacting(&mut out)
            .write_all(b"proof=v4.public.abc.def\n")
            .unwrap_or_default();
        assert_eq!(String::from_utf8_lossy(&out), "proof=[redacted proof]\n");
    }
}
