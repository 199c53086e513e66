//! The Web Push channel: each waiting proposal is pushed to every device
//! subscribed in this home's console sessions by an approver who can
//! decide it (every approver of the principal, or for an operation with a
//! quorum only its listed approvers, as the registry says now; one
//! delivery per device), encrypted for that browser (RFC
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
//! read again before every attempt, so a device unpaired or revoked after
//! a proposal was taken gets nothing more either, not even a retry.
//!
//! Must not: log a key, an auth secret or an endpoint URL (they are
//! capabilities to reach the person's device); send anything a person
//! could decide with.

use std::path::{Path, PathBuf};
use std::time::Duration;

use countersign_identity::{Home, NotifyPushConfig};
use countersign_outbound::header::{
    AUTHORIZATION, CONTENT_ENCODING, CONTENT_TYPE, HeaderMap, HeaderValue, USER_AGENT,
};
use countersign_outbound::{Bytes, Target, post};
use countersign_push::{SubscribedDevice, VapidKey, subscribed_devices};
use countersign_registry::{CurrentRegistry, Schemas};
use serde::Serialize;
use time::OffsetDateTime;

use super::NotifyError;
use super::channels::Failure;
use super::message::Notification;

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
    home_root: PathBuf,
    /// The registry, for an operation's quorum (who can decide it).
    registry: Option<CurrentRegistry>,
}

impl PushChannel {
    /// Loads the VAPID key of `home`, making it first in a home made
    /// before push existed (see `countersign_push::vapid`).
    /// `registry` is the registry file: an operation with a quorum is
    /// pushed to its listed approvers' devices only. A registry that
    /// cannot be read leaves that filter off (a push carries no
    /// authority), with a warning.
    pub(crate) fn from_config(
        config: &NotifyPushConfig,
        home: &Home,
        registry: &Path,
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
            home_root: home.root().to_path_buf(),
            registry: match CurrentRegistry::open_with(registry, Schemas::OnFirstUse) {
                Ok(current) => Some(current),
                Err(e) => {
                    tracing::warn!(
                        "push: the registry cannot be read, so an operation's quorum does not narrow who is pushed to: {e}"
                    );
                    None
                }
            },
        })
    }

    /// The devices a push of `operation` goes to: every subscribed device,
    /// or for an operation with a quorum those of its listed approvers;
    /// of those, only the devices of `only` when it names any (an
    /// escalation's approvers).
    pub(crate) fn devices_for(&self, operation: &str, only: &[String]) -> Vec<SubscribedDevice> {
        let devices: Vec<SubscribedDevice> = self
            .devices()
            .into_iter()
            .filter(|d| only.is_empty() || only.contains(&d.approver))
            .collect();
        let Some(current) = &self.registry else {
            return devices;
        };
        let registry = current.now().unwrap_or_else(|e| {
            tracing::warn!("push: the registry cannot be read now, using the last one read: {e}");
            current.last_loaded()
        });
        match registry.get(operation).and_then(|op| op.quorum.as_ref()) {
            Some(quorum) => devices
                .into_iter()
                .filter(|d| quorum.approvers().iter().any(|a| a.as_str() == d.approver))
                .collect(),
            None => devices,
        }
    }

    /// The devices subscribed now (none, with a warning, if a store
    /// cannot be read).
    pub(crate) fn devices(&self) -> Vec<SubscribedDevice> {
        match subscribed_devices(&self.home_root, OffsetDateTime::now_utc()) {
            Ok(devices) => devices,
            Err(e) => {
                tracing::warn!("cannot read the subscribed devices: {e}");
                Vec::new()
            }
        }
    }

    /// One push of `notification` to the device of console session
    /// `session_id`, if it is still subscribed.
    pub(crate) async fn send(
        &self,
        session_id: &str,
        notification: &Notification,
    ) -> Result<(), Failure> {
        let Some(device) = self
            .devices()
            .into_iter()
            .find(|d| d.session_id == session_id)
        else {
            return Err(Failure::Final(
                "the device is no longer subscribed (unpaired, revoked, expired or unsubscribed)"
                    .into(),
            ));
        };
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

    const P256DH: &str =
        "BLn9b-VR0ca83knDNZ32dCHGyjJp-1riX9ZTN40MqV8K_LpQmLqxC_DoHvqvFXO_nGdAB4W9dogZb_sM-uV4JbY";
    const AUTH: &str = "_ordMnz7uTCmrpBTeUV4Bw";

    /// A console session store of `approver` with one subscribed session.
    fn subscribed(home: &Home, approver: &str) {
        let store = serde_json::json!({"version": 3, "pairings": [], "sessions": [{
            "id": format!("{approver}-phone"), "approver": approver, "sha256": "", "page_key_sha256": "",
            "paired_with": "", "created_at": "2026-01-01T00:00:00Z", "expires_at": "2099-01-01T00:00:00Z",
            "revoked_at": null, "device": "d",
            "push": {"endpoint": format!("https://push.example/{approver}"), "p256dh": P256DH, "auth": AUTH}}]});
        countersign_identity::files::write_private_new(
            &home
                .root()
                .join(format!("console-sessions-{approver}.json")),
            store.to_string().as_bytes(),
        )
        .unwrap();
    }

    #[test]
    fn an_operation_with_a_quorum_is_pushed_to_its_approvers_devices_only_and_the_key_is_made() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path().join("home")).unwrap();
        home.init().unwrap();
        for approver in ["alice", "bob", "console"] {
            subscribed(&home, approver);
        }
        let registry = dir.path().join("operations.toml");
        let text = countersign_registry::Registry::default_toml().replacen(
            "name = \"schedule.create\"\n",
            "name = \"schedule.create\"\nquorum = { required = 1, approvers = [\"alice\", \"carol\"] }\n",
            1,
        );
        countersign_identity::files::write_private_new(&registry, text.as_bytes()).unwrap();
        let config = NotifyPushConfig {
            contact: "mailto:a@example".into(),
            trust_roots: None,
            ttl_secs: 60,
            urgency: countersign_identity::PushUrgency::High,
            timeout_secs: 1,
        };
        // A home made before push existed: the first start makes the key.
        assert!(!home.vapid_key_path().exists());
        let push = PushChannel::from_config(&config, &home, &registry).unwrap();
        assert_eq!(
            countersign_push::vapid::public_key(&home).unwrap(),
            push.key.public_key()
        );
        let to = |op: &str, only: &[&str]| -> Vec<String> {
            let only: Vec<String> = only.iter().map(|a| (*a).to_owned()).collect();
            push.devices_for(op, &only)
                .into_iter()
                .map(|d| d.approver)
                .collect()
        };
        assert_eq!(to("schedule.create", &[]), ["alice"]);
        assert_eq!(to("schedule.pause", &[]), ["alice", "bob", "console"]);
        // An escalation to named approvers: their devices only, and only
        // those who can decide it.
        assert_eq!(to("schedule.pause", &["bob"]), ["bob"]);
        assert_eq!(to("schedule.create", &["bob"]), Vec::<String>::new());
        assert_eq!(to("schedule.create", &["alice", "bob"]), ["alice"]);
        // Without a readable registry, every approver's devices.
        let push =
            PushChannel::from_config(&config, &home, &dir.path().join("missing.toml")).unwrap();
        assert_eq!(push.devices_for("schedule.create", &[]).len(), 3);
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
