//! `NotifyStatus`: what `countersign notify status` shows an approver: per
//! configured channel, the deliveries of the caller's principal (newest
//! first), pending retries with their next attempt, failures with their
//! reason, and how many notifications a full queue dropped.

use std::sync::atomic::Ordering;

use countersign_proto::v1 as wire;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::Notifier;
use super::store::{Delivery, State};

/// Deliveries listed per channel.
pub(crate) const LISTED_PER_CHANNEL: usize = 20;

impl Notifier {
    /// The status of `principal`'s deliveries.
    pub(crate) fn status(&self, principal: &str) -> wire::NotifyStatusResponse {
        let Some(inner) = &self.inner else {
            return wire::NotifyStatusResponse::default();
        };
        let deliveries = super::worker::lock(&inner.deliveries);
        let channels = inner
            .channels
            .usable()
            .into_iter()
            .map(|channel| {
                let mine: Vec<&Delivery> = deliveries
                    .deliveries
                    .iter()
                    .rev()
                    .filter(|d| d.channel == channel && d.notification.principal == principal)
                    .collect();
                let count = |state: State| {
                    u32::try_from(mine.iter().filter(|d| d.state == state).count())
                        .unwrap_or(u32::MAX)
                };
                wire::NotifyChannelStatus {
                    channel: channel.as_str().to_owned(),
                    delivered: count(State::Delivered),
                    pending: count(State::Pending),
                    failed: count(State::Failed),
                    deliveries: mine
                        .iter()
                        .take(LISTED_PER_CHANNEL)
                        .map(|d| delivery_view(d))
                        .collect(),
                    unavailable: String::new(),
                }
            })
            .chain(inner.channels.unavailable().iter().map(|(channel, why)| {
                wire::NotifyChannelStatus {
                    channel: channel.as_str().to_owned(),
                    unavailable: (*why).to_owned(),
                    ..Default::default()
                }
            }))
            .collect();
        wire::NotifyStatusResponse {
            enabled: true,
            channels,
            dropped: inner.dropped.load(Ordering::Relaxed),
        }
    }
}

fn delivery_view(d: &Delivery) -> wire::NotifyDelivery {
    wire::NotifyDelivery {
        delivery_id: d.id.clone(),
        proposal_id: d.notification.proposal_id.clone(),
        operation: d.notification.subject().to_owned(),
        state: d.state.as_str().to_owned(),
        attempts: d.attempts,
        last_error: d.last_error.clone().unwrap_or_default(),
        next_attempt_at: d.next_attempt_ms.map(rfc3339_ms).unwrap_or_default(),
        updated_at: rfc3339_ms(d.updated_ms),
    }
}

/// Unix milliseconds as RFC 3339 UTC, to the second.
fn rfc3339_ms(ms: i64) -> String {
    OffsetDateTime::from_unix_timestamp(ms.div_euclid(1000))
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
        .format(&Rfc3339)
        .unwrap_or_default()
}
