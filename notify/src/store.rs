//! Delivery state: every notification's delivery per channel (pending with
//! its next attempt, delivered, or failed with the last reason), and the
//! channels as the running process found them, kept in
//! `notify/notify-state.json` in the notify process's home (0600, replaced
//! atomically after each change, never in the signer's directory), so that
//! a restarted notify process resumes its pending retries and still shows
//! its failures, and `countersign notify status` reads it.
//!
//! Nothing here holds a proof or a secret: a delivery is a
//! [`Notification`] and what happened to it. Finished deliveries are kept
//! up to [`KEEP_FINISHED`] per channel, newest first.

use std::path::PathBuf;

use countersign_identity::files::replace_private_locked;
use countersign_identity::{Home, IdentityError};
use serde::{Deserialize, Serialize};

use super::NotifyError;
use super::message::Notification;

/// Finished (delivered or failed) deliveries kept per channel.
pub(crate) const KEEP_FINISHED: usize = 50;

/// A way of telling a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Channel {
    /// A Standard Webhooks POST.
    Webhook,
    /// An email.
    Smtp,
    /// org.freedesktop.Notifications on the session bus.
    Desktop,
    /// Web Push to a subscribed device (one delivery per device).
    Push,
}

impl Channel {
    pub(crate) const ALL: [Channel; 4] = [
        Channel::Webhook,
        Channel::Smtp,
        Channel::Desktop,
        Channel::Push,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Channel::Webhook => "webhook",
            Channel::Smtp => "smtp",
            Channel::Desktop => "desktop",
            Channel::Push => "push",
        }
    }
}

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum State {
    /// Waiting for its next attempt.
    Pending,
    /// Accepted by the channel.
    Delivered,
    /// Given up after the last attempt (or its channel is gone).
    Failed,
}

impl State {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            State::Pending => "pending",
            State::Delivered => "delivered",
            State::Failed => "failed",
        }
    }
}

/// One notification on one channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Delivery {
    /// `msg_<32 hex>`: the Standard Webhooks `webhook-id`, the same on
    /// every attempt (derived from the notification's id and the channel).
    pub(crate) id: String,
    /// The signer's id of the notification (`ntf_<32 hex>`).
    pub(crate) notification_id: String,
    pub(crate) channel: Channel,
    pub(crate) notification: Notification,
    pub(crate) state: State,
    pub(crate) attempts: u32,
    pub(crate) last_error: Option<String>,
    /// Unix milliseconds of the next attempt, while pending.
    pub(crate) next_attempt_ms: Option<i64>,
    /// Unix milliseconds of the last change.
    pub(crate) updated_ms: i64,
    /// For a push: the console session (device) it goes to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) device: Option<String>,
}

/// A push subscription its push service said is gone (404 or 410, RFC
/// 8030 section 7.3): nothing is pushed to it again. Kept by the SHA-256
/// of its endpoint, at most [`KEEP_GONE`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct GoneSubscription {
    /// SHA-256 (hex) of the endpoint URL.
    pub(crate) endpoint_sha256: String,
    /// Unix milliseconds when the push service said so.
    pub(crate) at_ms: i64,
}

/// Gone subscriptions remembered (oldest dropped first).
pub(crate) const KEEP_GONE: usize = 1000;

/// Everything the file holds.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Deliveries {
    /// The configured channels as the process found them when it last
    /// started: usable, or why not.
    #[serde(default)]
    pub(crate) channels: Vec<ChannelState>,
    /// Oldest first.
    pub(crate) deliveries: Vec<Delivery>,
    /// Push subscriptions their push service said are gone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) gone: Vec<GoneSubscription>,
}

/// A configured channel as the process found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ChannelState {
    pub(crate) channel: Channel,
    /// Why it is not used (a desktop channel without a session bus).
    pub(crate) unavailable: Option<String>,
}

impl Deliveries {
    /// Drops the oldest finished deliveries beyond [`KEEP_FINISHED`] per
    /// channel; pending ones are always kept.
    pub(crate) fn prune(&mut self) {
        for channel in Channel::ALL {
            let finished = self
                .deliveries
                .iter()
                .filter(|d| d.channel == channel && d.state != State::Pending)
                .count();
            let mut excess = finished.saturating_sub(KEEP_FINISHED);
            self.deliveries.retain(|d| {
                if excess > 0 && d.channel == channel && d.state != State::Pending {
                    excess -= 1;
                    false
                } else {
                    true
                }
            });
        }
    }

    /// The delivery with `id`.
    pub(crate) fn get_mut(&mut self, id: &str) -> Option<&mut Delivery> {
        self.deliveries.iter_mut().find(|d| d.id == id)
    }

    /// Remembers that the subscription with this endpoint hash is gone.
    pub(crate) fn mark_gone(&mut self, endpoint_sha256: &str, at_ms: i64) {
        if self.is_gone(endpoint_sha256) {
            return;
        }
        self.gone.push(GoneSubscription {
            endpoint_sha256: endpoint_sha256.to_owned(),
            at_ms,
        });
        let excess = self.gone.len().saturating_sub(KEEP_GONE);
        self.gone.drain(..excess);
    }

    /// Whether the push service said this subscription is gone.
    pub(crate) fn is_gone(&self, endpoint_sha256: &str) -> bool {
        self.gone
            .iter()
            .any(|g| g.endpoint_sha256 == endpoint_sha256)
    }

    /// Whether the signer's notification `id` is held here already.
    pub(crate) fn holds(&self, notification_id: &str) -> bool {
        self.deliveries
            .iter()
            .any(|d| d.notification_id == notification_id)
    }
}

/// The state file of a home.
#[derive(Debug, Clone)]
pub(crate) struct StateFile {
    path: PathBuf,
    lock: PathBuf,
}

impl StateFile {
    /// `home`'s state file, its directory created (0700) if missing.
    pub(crate) fn of(home: &Home) -> Result<StateFile, NotifyError> {
        home.ensure_notify_dir()
            .map_err(|e| NotifyError::State(e.to_string()))?;
        Ok(StateFile::at(home))
    }

    /// `home`'s state file, for reading (nothing is created).
    pub(crate) fn at(home: &Home) -> StateFile {
        let path = home.notify_state_path();
        let mut lock = path.clone().into_os_string();
        lock.push(".lock");
        StateFile {
            path,
            lock: PathBuf::from(lock),
        }
    }

    /// The deliveries as last saved (none if there is no file).
    pub(crate) fn load(&self) -> Result<Deliveries, NotifyError> {
        match countersign_identity::files::read_private(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                NotifyError::State(format!("{} is not readable: {e}", self.path.display()))
            }),
            Err(IdentityError::Missing(_)) => Ok(Deliveries::default()),
            Err(e) => Err(NotifyError::State(e.to_string())),
        }
    }

    /// Replaces the file with `deliveries`.
    pub(crate) fn save(&self, deliveries: &Deliveries) -> Result<(), NotifyError> {
        let bytes = serde_json::to_vec_pretty(deliveries)
            .map_err(|e| NotifyError::State(format!("encoding: {e}")))?;
        replace_private_locked(&self.path, &self.lock, |_| Ok::<_, IdentityError>(bytes))
            .map_err(|e| NotifyError::State(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn delivery(n: usize, channel: Channel, state: State) -> Delivery {
        Delivery {
            id: format!("msg_{n}"),
            notification_id: format!("ntf_{n}"),
            channel,
            notification: Notification {
                proposal_id: format!("prop_{n}"),
                principal: "pr_1".into(),
                operation: "op".into(),
                arguments_sha256: "00".into(),
                console_url: None,
                created_at: 0,
                decide_by: None,
                escalation: None,
                passkey: None,
            },
            state,
            attempts: 1,
            last_error: None,
            next_attempt_ms: None,
            updated_ms: 0,
            device: None,
        }
    }

    #[test]
    fn pruning_keeps_every_pending_delivery_and_the_newest_finished() {
        let mut all = Deliveries::default();
        all.deliveries
            .push(delivery(0, Channel::Webhook, State::Pending));
        for n in 1..=KEEP_FINISHED + 3 {
            all.deliveries
                .push(delivery(n, Channel::Webhook, State::Failed));
        }
        all.deliveries
            .push(delivery(999, Channel::Smtp, State::Delivered));
        all.prune();
        let ids: Vec<_> = all.deliveries.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(ids.len(), 1 + KEEP_FINISHED + 1);
        assert_eq!(ids[0], "msg_0");
        assert_eq!(ids[1], "msg_4");
        assert!(ids.contains(&"msg_999"));
    }

    #[test]
    fn the_state_file_round_trips_and_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path().join("home")).unwrap();
        std::fs::create_dir(home.root()).unwrap();
        std::fs::set_permissions(home.root(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let file = StateFile::of(&home).unwrap();
        assert_eq!(file.load().unwrap(), Deliveries::default());
        let mut all = Deliveries::default();
        all.deliveries
            .push(delivery(1, Channel::Smtp, State::Pending));
        file.save(&all).unwrap();
        assert_eq!(file.load().unwrap(), all);
        assert!(all.holds("ntf_1") && !all.holds("ntf_2"));
        let mode = std::fs::metadata(home.notify_state_path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
