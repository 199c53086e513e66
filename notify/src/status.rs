//! What `countersign notify status` shows: per configured channel, the
//! deliveries of this home's principal (newest first), pending retries
//! with their next attempt, failures with their reason, read from the
//! notify process's state file; and how many notifications still wait in
//! the signer's outbox, not yet taken by a notify process (asked with the
//! notifier certificate). Nothing here holds a proof or a secret.

use countersign_identity::{Config, Home};
use serde::Serialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::NotifyError;
use crate::store::{ChannelState, Delivery, State, StateFile};

/// Deliveries listed per channel.
pub const LISTED_PER_CHANNEL: usize = 20;

/// The notifications of one home.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Status {
    /// False when the configuration has no `[notify]` section.
    pub enabled: bool,
    /// Notifications the signer holds that no notify process has taken
    /// yet; `None` when the signer could not be asked ([`Status::signer_error`]).
    pub waiting: Option<u64>,
    /// Why the signer could not be asked, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signer_error: Option<String>,
    /// One per configured channel.
    pub channels: Vec<ChannelStatus>,
}

/// One channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChannelStatus {
    /// `webhook`, `smtp`, `desktop` or `push`.
    pub channel: String,
    /// Counts over the deliveries kept.
    pub delivered: u32,
    /// Waiting for an attempt.
    pub pending: u32,
    /// Given up.
    pub failed: u32,
    /// Why the notify process does not use it (a desktop channel without
    /// a session bus), or `None`.
    pub unavailable: Option<String>,
    /// Newest first, at most [`LISTED_PER_CHANNEL`].
    pub deliveries: Vec<DeliveryStatus>,
}

/// One delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeliveryStatus {
    /// `msg_<hex>`: a webhook delivery's `webhook-id`.
    pub delivery_id: String,
    /// The proposal (empty for a passkey change).
    pub proposal_id: String,
    /// The operation, or the passkey event's type.
    pub operation: String,
    /// `pending`, `delivered` or `failed`.
    pub state: String,
    /// Attempts made so far.
    pub attempts: u32,
    /// The last failed attempt's reason.
    pub last_error: Option<String>,
    /// RFC 3339 UTC, while pending.
    pub next_attempt_at: Option<String>,
    /// RFC 3339 UTC: the last change.
    pub updated_at: String,
    /// For a push: the console session (device) it goes to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
}

/// The status of `home`'s deliveries, from its state file (`waiting` is
/// left to [`waiting`]). Before the notify process first started, the
/// configured channels with no delivery.
pub fn local(home: &Home, config: &Config) -> Result<Status, NotifyError> {
    let Some(notify) = &config.notify else {
        return Ok(Status::default());
    };
    let principal = home
        .principal()
        .map_err(|e| NotifyError::Config(e.to_string()))?;
    let saved = StateFile::at(home).load()?;
    let channels = if saved.channels.is_empty() {
        configured(notify)
    } else {
        saved.channels.clone()
    };
    let channels = channels
        .into_iter()
        .map(|state| {
            let mine: Vec<&Delivery> = saved
                .deliveries
                .iter()
                .rev()
                .filter(|d| d.channel == state.channel && d.notification.principal == principal)
                .collect();
            let count = |wanted: State| {
                u32::try_from(mine.iter().filter(|d| d.state == wanted).count()).unwrap_or(u32::MAX)
            };
            ChannelStatus {
                channel: state.channel.as_str().to_owned(),
                delivered: count(State::Delivered),
                pending: count(State::Pending),
                failed: count(State::Failed),
                unavailable: state.unavailable,
                deliveries: mine
                    .iter()
                    .take(LISTED_PER_CHANNEL)
                    .map(|d| delivery_view(d))
                    .collect(),
            }
        })
        .collect();
    Ok(Status {
        enabled: true,
        waiting: None,
        signer_error: None,
        channels,
    })
}

/// How many notifications of `home`'s principal wait in the signer's
/// outbox, asked with the home's notifier certificate (counts up to 100).
pub async fn waiting(home: &Home, config: &Config) -> Result<u64, String> {
    let mut client = crate::signer::connect(home, &config.signer_addrs()).await?;
    let answer = client
        .pending_notifications(countersign_proto::v1::PendingNotificationsRequest { limit: 0 })
        .await
        .map_err(|s| format!("the signer answered {:?}: {}", s.code(), s.message()))?;
    Ok(answer.into_inner().notifications.len() as u64)
}

/// The channels `[notify]` configures, as a process would find them before
/// it checked them.
fn configured(notify: &countersign_identity::NotifyConfig) -> Vec<ChannelState> {
    use crate::store::Channel;
    [
        (Channel::Webhook, notify.webhook.is_some()),
        (Channel::Smtp, notify.smtp.is_some()),
        (Channel::Desktop, notify.desktop),
        (Channel::Push, notify.push.is_some()),
    ]
    .into_iter()
    .filter(|(_, on)| *on)
    .map(|(channel, _)| ChannelState {
        channel,
        unavailable: None,
    })
    .collect()
}

fn delivery_view(d: &Delivery) -> DeliveryStatus {
    DeliveryStatus {
        delivery_id: d.id.clone(),
        proposal_id: d.notification.proposal_id.clone(),
        operation: d.notification.subject().to_owned(),
        state: d.state.as_str().to_owned(),
        attempts: d.attempts,
        last_error: d.last_error.clone(),
        next_attempt_at: d.next_attempt_ms.map(rfc3339_ms),
        updated_at: rfc3339_ms(d.updated_ms),
        device: d.device.clone(),
    }
}

/// Unix milliseconds as RFC 3339 UTC, to the second.
fn rfc3339_ms(ms: i64) -> String {
    OffsetDateTime::from_unix_timestamp(ms.div_euclid(1000))
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
        .format(&Rfc3339)
        .unwrap_or_default()
}
