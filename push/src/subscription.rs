//! A browser's push subscription (`PushSubscription.toJSON()`), parsed
//! strictly before anything keeps it: `{"endpoint", "expirationTime",
//! "keys": {"p256dh", "auth"}}` and nothing else, each field once. The
//! endpoint follows the webhook channel's rule (https, or plain http to a
//! loopback IP address only, so a test's local push service works and
//! nothing is sent in the clear across a network); `p256dh` is the
//! base64url (no padding) of an uncompressed point on P-256, `auth` of 16
//! bytes. The same checks run when a stored subscription is read back.
//!
//! The auth secret is not a credential of countersign's, but it lets
//! whoever holds it (with the push service's help) forge or read pushes to
//! that browser: it is kept only in 0600 stores and never shown by `Debug`.
//!
//! Must not: accept a subscription it would not send to; show its keys.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_registry::WebhookUrl;
use serde::{Deserialize, Serialize};

/// The largest subscription JSON accepted, in bytes.
pub const MAX_SUBSCRIPTION_BYTES: usize = 4096;

/// Why a subscription is refused; the message says what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubscriptionRefusal {
    /// Longer than [`MAX_SUBSCRIPTION_BYTES`].
    #[error("The subscription is larger than 4096 bytes")]
    TooLarge,
    /// Not the JSON shape of a `PushSubscription` (a field missing,
    /// unknown or repeated, or a value of the wrong type).
    #[error("The subscription is not the JSON of a browser's PushSubscription")]
    NotASubscription,
    /// The endpoint URL cannot be used (the detail says why).
    #[error("The subscription's endpoint {0}")]
    Endpoint(String),
    /// `keys.p256dh` is not a P-256 public key.
    #[error("The subscription's p256dh key {0}")]
    P256dh(&'static str),
    /// `keys.auth` is not a 16-byte secret.
    #[error("The subscription's auth secret {0}")]
    Auth(&'static str),
}

/// A push subscription that passed every check.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Stored", into = "Stored")]
pub struct Subscription {
    endpoint: WebhookUrl,
    endpoint_text: String,
    p256dh: [u8; 65],
    auth: [u8; 16],
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Subscription({}, keys ..)",
            crate::vapid::origin(&self.endpoint)
        )
    }
}

/// The browser's JSON.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Browser {
    endpoint: String,
    /// Allowed (null or a time) and not used: a push service refuses an
    /// expired subscription itself (404/410), which ends it here too.
    #[serde(rename = "expirationTime")]
    _expiration_time: Option<f64>,
    keys: BrowserKeys,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BrowserKeys {
    p256dh: String,
    auth: String,
}

/// How a subscription is stored: the three strings, checked again on load.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored {
    endpoint: String,
    p256dh: String,
    auth: String,
}

impl TryFrom<Stored> for Subscription {
    type Error = SubscriptionRefusal;
    fn try_from(s: Stored) -> Result<Self, Self::Error> {
        Subscription::new(&s.endpoint, &s.p256dh, &s.auth)
    }
}

impl From<Subscription> for Stored {
    fn from(s: Subscription) -> Self {
        Stored {
            p256dh: s.p256dh_base64url(),
            auth: s.auth_base64url(),
            endpoint: s.endpoint_text,
        }
    }
}

impl Subscription {
    /// Parses the JSON a browser's `PushSubscription.toJSON()` gives.
    pub fn from_browser_json(json: &[u8]) -> Result<Subscription, SubscriptionRefusal> {
        if json.len() > MAX_SUBSCRIPTION_BYTES {
            return Err(SubscriptionRefusal::TooLarge);
        }
        let browser: Browser =
            serde_json::from_slice(json).map_err(|_| SubscriptionRefusal::NotASubscription)?;
        Subscription::new(&browser.endpoint, &browser.keys.p256dh, &browser.keys.auth)
    }

    /// Checks the three parts.
    pub fn new(
        endpoint: &str,
        p256dh: &str,
        auth: &str,
    ) -> Result<Subscription, SubscriptionRefusal> {
        let url = WebhookUrl::parse(endpoint).map_err(SubscriptionRefusal::Endpoint)?;
        if let Some(why) = url.plain_http_refusal() {
            return Err(SubscriptionRefusal::Endpoint(format!("is refused: {why}")));
        }
        let point = decode(p256dh).ok_or(SubscriptionRefusal::P256dh("is not base64url"))?;
        let p256dh: [u8; 65] = point.try_into().map_err(|_| {
            SubscriptionRefusal::P256dh("is not 65 bytes (an uncompressed P-256 point)")
        })?;
        if web_push_native::p256::PublicKey::from_sec1_bytes(&p256dh).is_err() || p256dh[0] != 4 {
            return Err(SubscriptionRefusal::P256dh("is not a point on P-256"));
        }
        let secret = decode(auth).ok_or(SubscriptionRefusal::Auth("is not base64url"))?;
        let auth: [u8; 16] = secret
            .try_into()
            .map_err(|_| SubscriptionRefusal::Auth("is not 16 bytes"))?;
        Ok(Subscription {
            endpoint: url,
            endpoint_text: endpoint.to_owned(),
            p256dh,
            auth,
        })
    }

    /// The push resource to POST to.
    pub fn endpoint(&self) -> &WebhookUrl {
        &self.endpoint
    }

    /// The endpoint as the browser gave it.
    pub fn endpoint_text(&self) -> &str {
        &self.endpoint_text
    }

    /// The browser's P-256 public key, base64url (as it is stored).
    pub fn p256dh_base64url(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.p256dh)
    }

    /// The browser's auth secret, base64url (as it is stored).
    pub fn auth_base64url(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.auth)
    }

    /// SHA-256 (hex) of the endpoint: how a subscription a push service
    /// said is gone (404/410) is remembered without keeping its URL.
    pub fn endpoint_sha256(&self) -> String {
        let digest = ring::digest::digest(&ring::digest::SHA256, self.endpoint_text.as_bytes());
        digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// `plaintext` encrypted for this browser (RFC 8291, `aes128gcm`, one
    /// record, a fresh sender key and salt each time): the request body.
    pub fn encrypt(&self, plaintext: &[u8]) -> Result<Vec<u8>, String> {
        let public = web_push_native::p256::PublicKey::from_sec1_bytes(&self.p256dh)
            .map_err(|_| "the subscription's key is not on P-256".to_owned())?;
        let auth = web_push_native::Auth::clone_from_slice(&self.auth);
        web_push_native::encrypt(plaintext.to_vec(), &public, &auth)
            .map_err(|e| format!("cannot encrypt the push: {e}"))
    }
}

/// Base64url without padding, strictly (no padding, no other alphabet).
fn decode(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(text).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A P-256 point (the example of web-push-native's documentation).
    const P256DH: &str =
        "BLn9b-VR0ca83knDNZ32dCHGyjJp-1riX9ZTN40MqV8K_LpQmLqxC_DoHvqvFXO_nGdAB4W9dogZb_sM-uV4JbY";
    const AUTH: &str = "_ordMnz7uTCmrpBTeUV4Bw";

    fn json(endpoint: &str, p256dh: &str, auth: &str) -> String {
        serde_json::json!({"endpoint": endpoint, "expirationTime": null, "keys": {"p256dh": p256dh, "auth": auth}}).to_string()
    }

    #[test]
    fn accepts_a_browsers_subscription_and_stores_it_as_three_strings() {
        let text = json("https://fcm.googleapis.com/fcm/send/abc:def", P256DH, AUTH);
        let sub = Subscription::from_browser_json(text.as_bytes()).unwrap();
        assert_eq!(
            sub.endpoint_text(),
            "https://fcm.googleapis.com/fcm/send/abc:def"
        );
        let stored = serde_json::to_value(&sub).unwrap();
        assert_eq!(
            stored,
            serde_json::json!({"endpoint": "https://fcm.googleapis.com/fcm/send/abc:def", "p256dh": P256DH, "auth": AUTH})
        );
        assert_eq!(serde_json::from_value::<Subscription>(stored).unwrap(), sub);
        assert_eq!(
            format!("{sub:?}"),
            "Subscription(https://fcm.googleapis.com, keys ..)"
        );
        let local = json("http://127.0.0.1:9/push/1", P256DH, AUTH);
        assert!(Subscription::from_browser_json(local.as_bytes()).is_ok());
    }

    #[test]
    fn refuses_each_bad_subscription_with_its_reason() {
        let cases: Vec<(String, &str)> = vec![
            ("x".repeat(4097), "The subscription is larger than 4096 bytes"),
            ("{}".into(), "The subscription is not the JSON of a browser's PushSubscription"),
            (
                r#"{"endpoint":"https://a.example/1","endpoint":"https://b.example/2","expirationTime":null,"keys":{"p256dh":"x","auth":"y"}}"#.into(),
                "The subscription is not the JSON of a browser's PushSubscription",
            ),
            (
                serde_json::json!({"endpoint": "https://a.example/1", "keys": {"p256dh": P256DH, "auth": AUTH}, "extra": 1}).to_string(),
                "The subscription is not the JSON of a browser's PushSubscription",
            ),
            (
                json("http://push.example/1", P256DH, AUTH),
                "The subscription's endpoint is refused: plain http:// is allowed only to a loopback IP address (127.0.0.1 or [::1]), not \"push.example\"",
            ),
            (
                json("ftp://push.example/1", P256DH, AUTH),
                "The subscription's endpoint must start with https:// (or http:// to a loopback host)",
            ),
            (
                json("https://user@push.example/1", P256DH, AUTH),
                "The subscription's endpoint must not contain user information (@)",
            ),
            (json("https://push.example/1", "BLn9+/==", AUTH), "The subscription's p256dh key is not base64url"),
            (
                json("https://push.example/1", &URL_SAFE_NO_PAD.encode([4u8; 33]), AUTH),
                "The subscription's p256dh key is not 65 bytes (an uncompressed P-256 point)",
            ),
            (
                json("https://push.example/1", &URL_SAFE_NO_PAD.encode([4u8; 65]), AUTH),
                "The subscription's p256dh key is not a point on P-256",
            ),
            (json("https://push.example/1", P256DH, "_ordMnz7uTCmrpBTeUV4Bw=="), "The subscription's auth secret is not base64url"),
            (
                json("https://push.example/1", P256DH, &URL_SAFE_NO_PAD.encode([1u8; 17])),
                "The subscription's auth secret is not 16 bytes",
            ),
        ];
        for (text, expected) in cases {
            let refusal = Subscription::from_browser_json(text.as_bytes()).unwrap_err();
            assert_eq!(refusal.to_string(), expected, "{text}");
        }
    }

    #[test]
    fn a_stored_subscription_is_checked_again_when_read() {
        let bad =
            serde_json::json!({"endpoint": "http://10.0.0.1/p", "p256dh": P256DH, "auth": AUTH});
        assert!(serde_json::from_value::<Subscription>(bad).is_err());
    }

    #[test]
    fn an_encrypted_push_is_aes128gcm_and_never_the_plaintext() {
        let sub = Subscription::new("https://push.example/1", P256DH, AUTH).unwrap();
        let body = sub.encrypt(br#"{"id":"prop_1"}"#).unwrap();
        // RFC 8188 header: salt (16), record size (4), key id length (1) = 65, key id.
        assert_eq!(body[20], 65);
        assert_eq!(body[21], 4);
        assert!(!body.windows(6).any(|w| w == b"prop_1"));
        assert_ne!(
            body,
            sub.encrypt(br#"{"id":"prop_1"}"#).unwrap(),
            "a fresh salt and key each time"
        );
    }
}
