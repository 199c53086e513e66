//! The webhook channel: one POST of the notification's JSON, signed the
//! Standard Webhooks way: `webhook-id`, `webhook-timestamp` and
//! `webhook-signature: v1,<base64 HMAC-SHA256(secret, id.timestamp.body)>`.
//! The secret (`whsec_<base64>`) is read from a 0600 file when the notify
//! process starts, held zeroized, and never logged; the connection is
//! `countersign-outbound`'s (TLS against the configured roots only, plain
//! http to loopback only). A 2xx answer is delivered; anything else is a
//! failed attempt, retried.
//!
//! HMAC-SHA256 comes from `ring`, already the process's one crypto
//! provider, rather than a second implementation (`hmac` + `sha2`).

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use countersign_identity::NotifyWebhookConfig;
use countersign_identity::files::read_private;
use countersign_outbound::header::{CONTENT_TYPE, HeaderMap, HeaderValue, USER_AGENT};
use countersign_outbound::{Bytes, Target, post};
use countersign_registry::WebhookUrl;
use zeroize::Zeroizing;

use super::NotifyError;
use super::message::Notification;

/// Standard Webhooks headers.
pub const ID_HEADER: &str = "webhook-id";
/// Unix seconds of the attempt.
pub const TIMESTAMP_HEADER: &str = "webhook-timestamp";
/// `v1,<base64>`.
pub const SIGNATURE_HEADER: &str = "webhook-signature";

/// The secret that signs, from `whsec_<base64>`. No `Debug` that shows it.
pub(crate) struct WebhookSecret(Zeroizing<Vec<u8>>);

impl fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WebhookSecret(..)")
    }
}

impl WebhookSecret {
    /// Parses `whsec_<base64>` (surrounding whitespace ignored); at least
    /// 16 bytes of key.
    pub(crate) fn parse(text: &[u8]) -> Result<WebhookSecret, String> {
        let text = std::str::from_utf8(text).map_err(|_| "is not UTF-8".to_owned())?;
        let encoded = text
            .trim()
            .strip_prefix("whsec_")
            .ok_or("does not start with whsec_")?;
        let key = Zeroizing::new(
            STANDARD
                .decode(encoded)
                .map_err(|_| "is not whsec_ followed by base64".to_owned())?,
        );
        if key.len() < 16 {
            return Err("holds fewer than 16 bytes of key".into());
        }
        Ok(WebhookSecret(key))
    }

    /// `v1,<base64 HMAC-SHA256(key, "{id}.{timestamp}.{body}")>`.
    pub(crate) fn sign(&self, id: &str, timestamp: i64, body: &str) -> String {
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &self.0);
        let signed = format!("{id}.{timestamp}.{body}");
        let tag = ring::hmac::sign(&key, signed.as_bytes());
        format!("v1,{}", STANDARD.encode(tag.as_ref()))
    }
}

/// The configured webhook, checked.
/// `url` as a POST target: https with `trust_roots`, or plain http to a
/// loopback host without them; a refusal names the key through `refuse`
/// and the `peer` ("receiver", "collector") the roots are for.
pub(crate) fn checked_url(
    url: &str,
    trust_roots: Option<&Path>,
    peer: &str,
    refuse: impl Fn(String) -> NotifyError,
) -> Result<WebhookUrl, NotifyError> {
    let url = WebhookUrl::parse(url).map_err(|e| refuse(format!("url {e}")))?;
    match (url.is_https(), trust_roots) {
        (true, None) => Err(refuse(format!(
            "trust_roots is required for an https url: a PEM bundle of the {peer}'s CAs (no system roots are built in)"
        ))),
        (false, _) if !url.is_loopback() => {
            let reason = url.plain_http_refusal().unwrap_or_default();
            Err(refuse(format!("url: {reason}")))
        }
        (false, Some(_)) => Err(refuse("trust_roots applies only to an https url".into())),
        _ => Ok(url),
    }
}

#[derive(Debug)]
pub(crate) struct WebhookChannel {
    url: WebhookUrl,
    trust_roots: Option<PathBuf>,
    timeout: Duration,
    secret: WebhookSecret,
}

impl WebhookChannel {
    /// Checks the URL (https with trust roots, or http to a loopback IP
    /// address: never to a name such as `localhost`, which the resolver answers)
    /// and reads the secret file (0600, this user's, not a symlink).
    pub(crate) fn from_config(config: &NotifyWebhookConfig) -> Result<WebhookChannel, NotifyError> {
        let refuse = |detail: String| NotifyError::Config(format!("notify.webhook.{detail}"));
        let url = checked_url(
            &config.url,
            config.trust_roots.as_deref(),
            "receiver",
            refuse,
        )?;
        let bytes =
            read_private(&config.secret_file).map_err(|e| refuse(format!("secret_file: {e}")))?;
        let secret = WebhookSecret::parse(&bytes)
            .map_err(|e| refuse(format!("secret_file {}: {e}", config.secret_file.display())))?;
        Ok(WebhookChannel {
            url,
            trust_roots: config.trust_roots.clone(),
            timeout: Duration::from_secs(config.timeout_secs),
            secret,
        })
    }

    /// One attempt: POST, signed for `delivery_id` at `timestamp`.
    pub(crate) async fn send(
        &self,
        delivery_id: &str,
        timestamp: i64,
        notification: &Notification,
    ) -> Result<(), String> {
        let body = notification.webhook_body()?;
        let signature = self.secret.sign(delivery_id, timestamp, &body);
        let value = |text: &str| HeaderValue::from_str(text).map_err(|_| "bad header".to_owned());
        let mut headers = HeaderMap::new();
        headers.insert(USER_AGENT, HeaderValue::from_static("countersign-notify/1"));
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ID_HEADER, value(delivery_id)?);
        headers.insert(TIMESTAMP_HEADER, value(&timestamp.to_string())?);
        let mut signature = value(&signature)?;
        signature.set_sensitive(true);
        headers.insert(SIGNATURE_HEADER, signature);
        let target = Target {
            url: &self.url,
            trust_roots: self.trust_roots.as_deref().map(Path::new),
            timeout: self.timeout,
        };
        post_expecting_2xx(target, headers, body, "receiver").await
    }
}

/// POSTs `body` to `target`: `Ok` on a 2xx answer, else what went wrong or
/// which status the `peer` ("receiver", "collector") answered.
pub(crate) async fn post_expecting_2xx(
    target: Target<'_>,
    headers: HeaderMap,
    body: String,
    peer: &str,
) -> Result<(), String> {
    let answer = post(target, headers, Bytes::from(body))
        .await
        .map_err(|e| e.to_string())?;
    if (200..300).contains(&answer.status) {
        Ok(())
    } else {
        Err(format!("the {peer} answered status {}", answer.status))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The example of the Standard Webhooks specification's reference
    /// libraries.
    #[test]
    fn signs_the_standard_webhooks_example() {
        let secret = WebhookSecret::parse(b"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n").unwrap();
        let signature = secret.sign(
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            r#"{"test": 2432232314}"#,
        );
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn refuses_a_secret_that_is_not_whsec_base64() {
        for (text, expected) in [
            (
                &b"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"[..],
                "does not start with whsec_",
            ),
            (b"whsec_not base64!", "is not whsec_ followed by base64"),
            (b"whsec_AAAA", "holds fewer than 16 bytes of key"),
            (b"\xff", "is not UTF-8"),
        ] {
            assert_eq!(WebhookSecret::parse(text).unwrap_err(), expected);
        }
        assert_eq!(
            format!(
                "{:?}",
                WebhookSecret::parse(b"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap()
            ),
            "WebhookSecret(..)"
        );
    }
}
