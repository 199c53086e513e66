//! The Web Push channel: each waiting proposal is pushed to every device
//! subscribed in the console's sessions by an approver who can decide it
//! (every approver of the principal, or for an operation with a quorum
//! only its listed approvers, as the signer's registry says now; one
//! delivery per device; the consoles publish their devices to the ledger
//! and the signer answers `PushDevices` from it, so this process needs no
//! access to a console's files and may run as a user of its own),
//! encrypted for that browser (RFC
//! 8291 `aes128gcm`) and signed with the installation's VAPID key (RFC
//! 8292: a JWT with `aud` the endpoint's origin, `exp` 12 hours ahead, `sub`
//! the configured contact), with `TTL` and `Urgency` headers, over
//! `countersign-outbound` (https against `trust_roots` only, plain http to
//! a loopback IP only).
//!
//! The payload is `{"id", "operation"}` and, when the proposal has one,
//! `"expires_at"` (when its decision window closes): never the arguments, their digest, a link or anything
//! that decides. The service worker builds the card's URL from the id on
//! its own origin.
//!
//! A push service answering 404 or 410 says the subscription is gone
//! (RFC 8030 section 7.3): the delivery fails at once and the subscription
//! is remembered as gone, so it gets nothing more. The subscriptions are
//! asked for again before every attempt, so a device unpaired or revoked
//! after a proposal was taken gets nothing more either, not even a retry.
//! Each device carries the VAPID key the console gave its browser: a push
//! signed with another key would be refused by every push service, so the
//! attempt fails at once, saying which file to copy.
//!
//! Must not: log a key, an auth secret or an endpoint URL (they are
//! capabilities to reach the person's device); send anything a person
//! could decide with.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use countersign_identity::{Home, NotifyPushConfig};
use countersign_outbound::header::{
    AUTHORIZATION, CONTENT_ENCODING, CONTENT_TYPE, HeaderMap, HeaderValue, USER_AGENT,
};
use countersign_outbound::{Bytes, Target, post};
use countersign_push::VapidKey;
use serde::Serialize;
use time::OffsetDateTime;

use super::NotifyError;
use super::channels::Failure;
use super::message::Notification;
use super::signer::{PushDevices, SignerLink, SubscribedDevice};

/// What a push says, in full.
#[derive(Debug, Serialize)]
struct Payload<'a> {
    id: &'a str,
    operation: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    expires_at: Option<String>,
}

/// The push's plaintext: the proposal id, the operation and, if the
/// proposal has one, when its decision window closes (RFC 3339).
pub(crate) fn payload(notification: &Notification) -> Vec<u8> {
    let payload = Payload {
        id: &notification.proposal_id,
        operation: &notification.operation,
        expires_at: notification.decide_by.map(super::message::rfc3339),
    };
    // A struct of strings always serializes.
    serde_json::to_vec(&payload).unwrap_or_default()
}

/// The configured push channel, its VAPID key loaded.
#[derive(Debug)]
pub(crate) struct PushChannel {
    key: VapidKey,
    contact: String,
    trust_roots: Option<PathBuf>,
    ttl_secs: u64,
    urgency: &'static str,
    timeout: Duration,
    /// The signer, which says which devices are subscribed.
    signer: Arc<SignerLink>,
    /// Where this process's private key is, for the message when the
    /// console gave browsers another key.
    key_path: PathBuf,
}

impl PushChannel {
    /// Loads the VAPID key of `home`, making it first in a home made
    /// before push existed (see `countersign_push::vapid`); the devices
    /// are asked of `signer`.
    pub(crate) fn from_config(
        config: &NotifyPushConfig,
        home: &Home,
        signer: Arc<SignerLink>,
    ) -> Result<PushChannel, NotifyError> {
        let refuse =
            |e: countersign_push::VapidError| NotifyError::Config(format!("notify.push: {e}"));
        for path in VapidKey::ensure(home).map_err(refuse)? {
            tracing::info!(path = %path.display(), "made the Web Push VAPID key");
        }
        if config.trust_roots.is_none() {
            tracing::warn!(
                "notify.push.trust_roots is not set: only plain-http loopback push endpoints (tests) can be reached"
            );
        }
        Ok(PushChannel {
            key: VapidKey::load(home).map_err(refuse)?,
            contact: config.contact.clone(),
            trust_roots: config.trust_roots.clone(),
            ttl_secs: config.ttl_secs,
            urgency: config.urgency.as_str(),
            timeout: Duration::from_secs(config.timeout_secs),
            signer,
            key_path: home.vapid_key_path(),
        })
    }

    /// The devices a push of `notification` goes to: those of every
    /// approver who can decide its operation, or of an escalation's
    /// approvers only, when it names some (the signer filters both).
    pub(crate) async fn devices_for(
        &self,
        notification: &Notification,
    ) -> Result<Vec<SubscribedDevice>, String> {
        Ok(self.asked(notification).await?.devices)
    }

    /// What the signer says now of the devices of `notification`.
    async fn asked(&self, notification: &Notification) -> Result<PushDevices, String> {
        let only = notification
            .escalation
            .as_ref()
            .map_or(&[][..], |e| e.approvers.as_slice());
        self.signer
            .push_devices(&notification.proposal_id, &notification.operation, only)
            .await
    }

    /// One push of `notification` to the device of console session
    /// `session_id`, if it is still subscribed.
    pub(crate) async fn send(
        &self,
        session_id: &str,
        notification: &Notification,
    ) -> Result<(), Failure> {
        let asked = self
            .asked(notification)
            .await
            .map_err(|e| Failure::Retry(format!("cannot ask the signer for the device: {e}")))?;
        let Some(device) = asked
            .devices
            .into_iter()
            .find(|d| d.session_id == session_id)
        else {
            return Err(Failure::Final(
                "the device is no longer subscribed (unpaired, revoked, expired or unsubscribed), or its approver can no longer decide this operation"
                    .into(),
            ));
        };
        if device.application_server_key != self.key.public_key() {
            return Err(Failure::Final(format!(
                "the console gave browsers the VAPID key {}, but this notify process signs with {} ({}), so every push service would refuse the push: give this process the console home's notify/vapid.key (deploy/setup-system.sh moves it)",
                device.application_server_key,
                self.key.public_key(),
                self.key_path.display()
            )));
        }
        let subscription = &device.subscription;
        let endpoint = subscription.endpoint();
        if endpoint.is_https() && self.trust_roots.is_none() {
            return Err(Failure::Final(
                "notify.push.trust_roots is not set, so no https push service can be reached"
                    .into(),
            ));
        }
        let body = subscription
            .encrypt(&payload(notification))
            .map_err(Failure::Retry)?;
        let now = OffsetDateTime::now_utc().unix_timestamp();
        let authorization = self
            .key
            .authorization(endpoint, &self.contact, now)
            .map_err(|e| Failure::Retry(e.to_string()))?;
        let value = |text: &str| {
            HeaderValue::from_str(text).map_err(|_| Failure::Final("bad header".into()))
        };
        let mut headers = HeaderMap::new();
        headers.insert(USER_AGENT, HeaderValue::from_static("countersign-notify/1"));
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/octet-stream"),
        );
        headers.insert(CONTENT_ENCODING, HeaderValue::from_static("aes128gcm"));
        headers.insert("ttl", value(&self.ttl_secs.to_string())?);
        headers.insert("urgency", HeaderValue::from_static(self.urgency));
        let mut authorization = value(&authorization)?;
        authorization.set_sensitive(true);
        headers.insert(AUTHORIZATION, authorization);
        let target = Target {
            url: endpoint,
            trust_roots: self.trust_roots.as_deref().map(Path::new),
            timeout: self.timeout,
        };
        let answer = post(target, headers, Bytes::from(body))
            .await
            .map_err(|e| Failure::Retry(e.to_string()))?;
        match answer.status {
            200..=299 => Ok(()),
            404 | 410 => Err(Failure::Gone {
                endpoint_sha256: subscription.endpoint_sha256(),
                reason: format!(
                    "the push service answered status {}: the subscription is gone, nothing more is pushed to it",
                    answer.status
                ),
            }),
            status => Err(Failure::Retry(format!(
                "the push service answered status {status}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn waiting() -> Notification {
        Notification {
            proposal_id: "prop_0a".into(),
            principal: "pr_1".into(),
            operation: "schedule.create".into(),
            arguments_sha256: "ab".repeat(32),
            console_url: Some("https://console.localhost:7444/proposals/prop_0a".into()),
            created_at: 1_700_000_000,
            decide_by: None,
            escalation: None,
            passkey: None,
        }
    }

    #[test]
    fn a_home_made_before_push_gets_its_key_at_the_first_start() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path().join("home")).unwrap();
        home.init().unwrap();
        assert!(!home.vapid_key_path().exists());
        let config = NotifyPushConfig {
            contact: "mailto:a@example".into(),
            trust_roots: None,
            ttl_secs: 60,
            urgency: countersign_identity::PushUrgency::High,
            timeout_secs: 1,
        };
        let signer = Arc::new(SignerLink::new(
            home.clone(),
            vec!["127.0.0.1:1".into()],
            None,
        ));
        let push = PushChannel::from_config(&config, &home, signer).unwrap();
        assert_eq!(
            countersign_push::vapid::public_key(&home).unwrap(),
            push.key.public_key()
        );
    }

    #[test]
    fn the_payload_names_the_proposal_and_operation_and_nothing_more() {
        let value: serde_json::Value = serde_json::from_slice(&payload(&waiting())).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"id": "prop_0a", "operation": "schedule.create"})
        );
    }

    #[test]
    fn the_payload_carries_the_close_of_the_decision_window_when_the_proposal_has_one() {
        let windowed = Notification {
            decide_by: Some(1_796_414_400),
            ..waiting()
        };
        let value: serde_json::Value = serde_json::from_slice(&payload(&windowed)).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"id": "prop_0a", "operation": "schedule.create", "expires_at": "2026-12-04T20:00:00Z"})
        );
    }
}
