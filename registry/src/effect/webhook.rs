//! The `webhook` effect kind: one HTTP POST of the canonical arguments to a
//! fixed URL, carrying the proof, by a head between an intent and a
//! completion. Its receiver verifies the proof itself, so the signer may
//! re-issue the proof of an uncertain one for reconcile. This module checks
//! the definition only; it must not open a connection.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{EffectKind, TIMEOUT_SECS, invalid};
use crate::{RegistryError, WebhookUrl};

/// The statuses a webhook accepts when the registry names none.
pub const DEFAULT_ACCEPT_STATUS: [u16; 4] = [200, 201, 202, 204];

fn default_accept_status() -> Vec<u16> {
    DEFAULT_ACCEPT_STATUS.to_vec()
}

/// A `webhook` effect as the registry file writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Webhook {
    /// `https://` URL, or `http://` to a loopback IP address (never a
    /// name such as `localhost`) when `allow_plain_http_loopback` is set.
    /// Checked by [`WebhookUrl::parse`].
    pub url: String,
    /// Seconds for the whole exchange (connect to response), 1..=300.
    pub timeout_secs: u64,
    /// Response statuses that mean applied (each 200..=299).
    #[serde(default = "default_accept_status")]
    pub accept_status: Vec<u16>,
    /// Absolute path of a PEM bundle of the CAs trusted for the
    /// receiver's certificate; required for `https`, refused for `http`.
    #[serde(default)]
    pub trust_roots: Option<PathBuf>,
    /// Permits an `http://` URL, and only to a loopback IP address.
    #[serde(default)]
    pub allow_plain_http_loopback: bool,
}

impl Webhook {
    /// The checks of a webhook; the error names the field (under
    /// `effect.`) and the reason.
    fn check_fields(&self) -> Result<(), (&'static str, String)> {
        let parsed = WebhookUrl::parse(&self.url).map_err(|r| ("url", r))?;
        let trust_roots = self.trust_roots.as_deref();
        if parsed.is_https() {
            if self.allow_plain_http_loopback {
                return Err((
                    "allow_plain_http_loopback",
                    "applies only to an http:// URL; remove it for https".into(),
                ));
            }
            let Some(roots) = trust_roots else {
                return Err((
                    "trust_roots",
                    "is required for an https URL: the absolute path of a PEM bundle of the receiver's CAs (no system roots are built in)".into(),
                ));
            };
            if !roots.is_absolute() {
                return Err(("trust_roots", format!("{roots:?} is not an absolute path")));
            }
            if roots.as_os_str().as_encoded_bytes().contains(&0) {
                return Err(("trust_roots", "contains a NUL byte".into()));
            }
        } else {
            if !self.allow_plain_http_loopback {
                return Err((
                    "url",
                    "plain http:// is refused; use https://, or set allow_plain_http_loopback = true for a loopback receiver".into(),
                ));
            }
            if let Some(reason) = parsed.plain_http_refusal() {
                return Err(("url", reason));
            }
            if trust_roots.is_some() {
                return Err(("trust_roots", "applies only to an https URL".into()));
            }
        }
        let timeout_secs = self.timeout_secs;
        if !TIMEOUT_SECS.contains(&timeout_secs) {
            return Err(("timeout_secs", format!("{timeout_secs} is outside 1..=300")));
        }
        if self.accept_status.is_empty() {
            return Err(("accept_status", "must name at least one status".into()));
        }
        let mut seen = BTreeSet::new();
        for status in &self.accept_status {
            if !(200..=299).contains(status) {
                return Err(("accept_status", format!("{status} is outside 200..=299")));
            }
            if !seen.insert(*status) {
                return Err(("accept_status", format!("{status} is listed twice")));
            }
        }
        Ok(())
    }
}

impl EffectKind for Webhook {
    fn name(&self) -> &'static str {
        "webhook"
    }

    fn check(&self, operation: &str, _require_passkey: bool) -> Result<(), RegistryError> {
        self.check_fields()
            .map_err(|(field, reason)| invalid(operation, field, reason))
    }

    fn timeout(&self) -> Option<std::time::Duration> {
        Some(std::time::Duration::from_secs(self.timeout_secs))
    }

    /// True: the receiver verifies the proof, so a re-send needs one.
    fn proof_reissuable(&self) -> bool {
        true
    }

    /// Any head sends the request.
    fn deliveries(&self) -> crate::Deliveries {
        crate::Deliveries::AnyHead
    }
}
