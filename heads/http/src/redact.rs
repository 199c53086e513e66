//! A second line of defence for logs: replace anything shaped like a proof
//! (`v4.public.…`) or an API credential (`cs1_<id>_<secret>`) before a line
//! is written (the `countersign` binary's log sink and the API's internal
//! error detail use it). The first line is that nothing logs them: the API
//! logs method, route template, status and time, never a URL, a query
//! string, a header or a body.

use std::borrow::Cow;

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
}
