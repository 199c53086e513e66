//! The binary's log redaction, applied by the shared log sink
//! (`countersign_identity::log`) to every line: anything shaped like a proof
//! or an API credential is redacted. No countersign code logs either; this also
//! covers what a dependency logs verbatim at DEBUG or TRACE (the MCP SDK logs
//! whole requests, so a proof a model pasted into a tool argument, which the
//! tool refuses, would otherwise reach the log). The redaction itself is
//! `countersign_api::redact::redact`, the one place that knows both shapes.

use std::borrow::Cow;

/// `text` with every `v4.public.` token (header, base64url body, optional
/// footer) replaced by `[redacted proof]`, and the secret of every API
/// credential (`cs1_<id>_<secret>`) by `[redacted]`.
pub fn redact_secrets(text: &str) -> Cow<'_, str> {
    countersign_api::redact::redact(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_every_proof_with_its_footer_and_keeps_the_rest() {
        let line = r#"request arguments: {"proof": String("v4.public.eyJhYmMi_-x.Zm9vdGVy"), "n": 1} and v4.public.QUJD"#;
        assert_eq!(
            redact_secrets(line),
            r#"request arguments: {"proof": String("[redacted proof]"), "n": 1} and [redacted proof]"#
        );
    }

    #[test]
    fn redacts_api_credentials_but_keeps_their_id() {
        assert_eq!(
            redact_secrets("Authorization: Bearer cs1_0123456789abcdef_c2VjcmV0LXNlY3JldA"),
            "Authorization: Bearer cs1_0123456789abcdef_[redacted]"
        );
    }

    #[test]
    fn leaves_text_without_a_secret_untouched() {
        assert!(matches!(
            redact_secrets("applied: prop_1 ran once"),
            Cow::Borrowed(_)
        ));
        assert_eq!(
            redact_secrets("v4.local.x v4.public"),
            "v4.local.x v4.public"
        );
    }
}
