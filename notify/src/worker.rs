//! The task that delivers: every `poll` it takes the notifications
//! waiting in the signer's outbox, makes one delivery per usable channel,
//! saves the state, and only then acknowledges them to the signer (so a
//! crash in between makes the signer offer them again, and the ones
//! already held are only acknowledged). Each attempt runs as its own task
//! (a receiver that never answers delays only its own delivery); retries
//! are scheduled (`retry`), and the state is saved after every change. It
//! logs proposal ids, channels and reasons, never a secret.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use countersign_identity::RetryConfig;
use countersign_metrics::{Attempt, NotifyMetrics};
use time::OffsetDateTime;
use tokio::task::JoinSet;

use super::Channels;
use super::channels::Failure;
use super::message::Notification;
use super::retry::{jitter, next_delay_ms};
use super::signer::{SignerLink, Waiting};
use super::store::{Channel, Deliveries, Delivery, State, StateFile};

/// What the task owns.
pub(crate) struct Worker {
    pub(crate) channels: Arc<Channels>,
    pub(crate) retry: RetryConfig,
    pub(crate) file: StateFile,
    pub(crate) deliveries: Arc<Mutex<Deliveries>>,
    pub(crate) signer: Arc<SignerLink>,
    /// The home's principal: the signer answers its notifications only.
    pub(crate) principal: String,
    /// How often the signer is asked.
    pub(crate) poll: Duration,
    /// What it counts.
    pub(crate) metrics: NotifyMetrics,
}

/// The outcome of one attempt.
type Attempted = (String, Result<(), Failure>);

/// Unix milliseconds now.
pub(crate) fn now_ms() -> i64 {
    i64::try_from(OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

/// At start: a pending delivery whose channel is no longer configured (or
/// not available) is failed with that reason; the others are due when
/// their time comes, or now.
pub(crate) fn settle_on_start(deliveries: &mut Deliveries, channels: &Channels) {
    let now = now_ms();
    for d in &mut deliveries.deliveries {
        if d.state == State::Pending && !channels.is_usable(d.channel) {
            d.state = State::Failed;
            d.next_attempt_ms = None;
            d.last_error = Some(format!(
                "the {} channel is no longer configured or available",
                d.channel.as_str()
            ));
            d.updated_ms = now;
        }
    }
}

pub(crate) fn lock(deliveries: &Mutex<Deliveries>) -> MutexGuard<'_, Deliveries> {
    // A poisoned lock only means a panic elsewhere while holding it; the
    // data is still the last consistent state written.
    deliveries
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs until `shutdown` completes. Attempts still running then are
/// abandoned; their deliveries stay pending in the file and the next start
/// resumes them.
pub(crate) async fn run(mut worker: Worker, shutdown: impl Future<Output = ()>) {
    let mut attempts: JoinSet<Attempted> = JoinSet::new();
    let mut in_flight: HashMap<tokio::task::Id, String> = HashMap::new();
    let mut poll = tokio::time::interval(worker.poll);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut signer_down = false;
    tokio::pin!(shutdown);
    loop {
        let due_in = next_due_in(&worker.deliveries, &in_flight);
        tokio::select! {
            () = &mut shutdown => return,
            _ = poll.tick() => match worker.take_waiting().await {
                Ok(()) if signer_down => {
                    signer_down = false;
                    tracing::info!("the signer answers again");
                }
                Ok(()) => {}
                Err(e) if !signer_down => {
                    signer_down = true;
                    tracing::warn!("cannot take the waiting notifications (asking again every poll): {e}");
                }
                Err(e) => tracing::debug!("cannot take the waiting notifications: {e}"),
            },
            Some(joined) = attempts.join_next_with_id(), if !attempts.is_empty() => {
                let (id, outcome) = match joined {
                    Ok((task, (id, outcome))) => {
                        in_flight.remove(&task);
                        (id, outcome)
                    }
                    Err(e) => match in_flight.remove(&e.id()) {
                        Some(id) => (id, Err(Failure::Retry(format!("the attempt ended abnormally: {e}")))),
                        None => continue,
                    },
                };
                worker.record(&id, outcome);
            }
            () = sleep_for(due_in) => {
                for (id, channel, device, notification) in worker.due(&in_flight) {
                    let channels = Arc::clone(&worker.channels);
                    let key = id.clone();
                    let task = attempts.spawn(async move {
                        let timestamp = OffsetDateTime::now_utc().unix_timestamp();
                        let outcome = channels
                            .send(channel, &id, device.as_deref(), timestamp, &notification)
                            .await;
                        (id, outcome)
                    });
                    in_flight.insert(task.id(), key);
                }
            }
        }
    }
}

impl Worker {
    /// Takes what waits in the signer's outbox: one pending delivery per
    /// usable channel for each notification not held yet, saved, then
    /// every one acknowledged. Nothing is acknowledged unless saved.
    async fn take_waiting(&mut self) -> Result<(), String> {
        let waiting = self.signer.waiting(&self.principal).await?;
        if waiting.is_empty() {
            return Ok(());
        }
        // A push goes to each subscribed device, and only for a waiting
        // proposal (not a passkey change): the devices are asked of the
        // signer first, outside the lock. If it cannot say (it just
        // answered, so its answer is likely to stay the same), the push of
        // that notification fails with the reason, shown by `notify
        // status`, and the other channels go on.
        let new: Vec<(&Waiting, Vec<Channel>)> = {
            let deliveries = lock(&self.deliveries);
            waiting
                .iter()
                .filter(|w| !deliveries.holds(&w.id))
                .map(|w| (w, self.channels.for_notification(&w.notification)))
                .collect()
        };
        let mut taken = Vec::with_capacity(new.len());
        for (w, channels) in new {
            let pushed = w.notification.passkey.is_none() && channels.contains(&Channel::Push);
            let devices = match pushed {
                true => Some(self.channels.push_devices(&w.notification).await),
                false => None,
            };
            taken.push((w, channels, devices));
        }
        {
            let now = now_ms();
            let mut deliveries = lock(&self.deliveries);
            for (w, channels, devices) in taken {
                for channel in channels {
                    let targets: Vec<Option<String>> = match (channel, &devices) {
                        (Channel::Push, Some(Ok(found))) => found
                            .iter()
                            .filter(|d| !deliveries.is_gone(&d.subscription.endpoint_sha256()))
                            .map(|d| Some(d.session_id.clone()))
                            .collect(),
                        (Channel::Push, Some(Err(why))) => {
                            tracing::warn!(notification_id = %w.id, "cannot ask the signer which devices to push to; not pushed: {why}");
                            deliveries.deliveries.push(Delivery {
                                id: delivery_id(&w.id, channel, None),
                                notification_id: w.id.clone(),
                                channel,
                                notification: w.notification.clone(),
                                state: State::Failed,
                                attempts: 0,
                                last_error: Some(format!(
                                    "the signer could not say which devices to push to: {why}"
                                )),
                                next_attempt_ms: None,
                                updated_ms: now,
                                device: None,
                            });
                            Vec::new()
                        }
                        (Channel::Push, None) => Vec::new(),
                        _ => vec![None],
                    };
                    for device in targets {
                        deliveries.deliveries.push(Delivery {
                            id: delivery_id(&w.id, channel, device.as_deref()),
                            notification_id: w.id.clone(),
                            channel,
                            notification: w.notification.clone(),
                            state: State::Pending,
                            attempts: 0,
                            last_error: None,
                            next_attempt_ms: Some(now),
                            updated_ms: now,
                            device,
                        });
                    }
                }
                self.metrics.taken();
                tracing::info!(notification_id = %w.id, proposal_id = %w.notification.proposal_id, "notification taken");
            }
            self.file.save(&deliveries).map_err(|e| e.to_string())?;
        }
        let ids = waiting.into_iter().map(|w| w.id).collect();
        self.signer.acknowledge(ids).await?;
        Ok(())
    }

    /// The pending deliveries that are due and not being attempted.
    fn due(
        &self,
        in_flight: &HashMap<tokio::task::Id, String>,
    ) -> Vec<(String, Channel, Option<String>, Notification)> {
        let now = now_ms();
        lock(&self.deliveries)
            .deliveries
            .iter()
            .filter(|d| d.state == State::Pending && d.next_attempt_ms.is_some_and(|at| at <= now))
            .filter(|d| !in_flight.values().any(|id| id == &d.id))
            .map(|d| {
                (
                    d.id.clone(),
                    d.channel,
                    d.device.clone(),
                    d.notification.clone(),
                )
            })
            .collect()
    }

    /// Records an attempt's outcome: delivered, or failed and either
    /// scheduled again or given up.
    fn record(&mut self, id: &str, outcome: Result<(), Failure>) {
        let now = now_ms();
        let mut deliveries = lock(&self.deliveries);
        let Some(d) = deliveries.get_mut(id) else {
            return;
        };
        d.attempts = d.attempts.saturating_add(1);
        d.updated_ms = now;
        let proposal_id = d.notification.proposal_id.clone();
        let channel = d.channel.as_str();
        let counted = match &outcome {
            Ok(()) => Attempt::Delivered,
            Err(Failure::Final(_)) => Attempt::Failed,
            Err(Failure::Gone { .. }) => Attempt::Gone,
            Err(Failure::Retry(_)) if d.attempts >= self.retry.max_attempts => Attempt::Failed,
            Err(Failure::Retry(_)) => Attempt::Retry,
        };
        self.metrics.attempt(channel, counted);
        match outcome {
            Ok(()) => {
                d.state = State::Delivered;
                d.next_attempt_ms = None;
                tracing::info!(%proposal_id, channel, attempts = d.attempts, "notification delivered");
            }
            Err(Failure::Final(reason)) => {
                d.state = State::Failed;
                d.next_attempt_ms = None;
                tracing::warn!(%proposal_id, channel, attempts = d.attempts, %reason, "notification failed; not tried again");
                d.last_error = Some(reason);
            }
            Err(Failure::Gone {
                endpoint_sha256,
                reason,
            }) => {
                d.state = State::Failed;
                d.next_attempt_ms = None;
                let device = d.device.clone();
                tracing::warn!(%proposal_id, channel, attempts = d.attempts, %reason, "push subscription gone; nothing more is pushed to it");
                d.last_error = Some(reason.clone());
                deliveries.mark_gone(&endpoint_sha256, now);
                // Other pushes waiting for the same device end too.
                for other in &mut deliveries.deliveries {
                    if other.channel == Channel::Push
                        && other.state == State::Pending
                        && other.device.is_some()
                        && other.device == device
                    {
                        other.state = State::Failed;
                        other.next_attempt_ms = None;
                        other.updated_ms = now;
                        other.last_error = Some(reason.clone());
                    }
                }
            }
            Err(Failure::Retry(reason)) => {
                match next_delay_ms(&self.retry, d.attempts, jitter()) {
                    Some(delay) => {
                        d.next_attempt_ms =
                            Some(now.saturating_add(i64::try_from(delay).unwrap_or(i64::MAX)));
                        tracing::warn!(%proposal_id, channel, attempts = d.attempts, retry_in_ms = delay, %reason, "notification attempt failed; will retry");
                    }
                    None => {
                        d.state = State::Failed;
                        d.next_attempt_ms = None;
                        tracing::warn!(%proposal_id, channel, attempts = d.attempts, %reason, "notification failed; no attempt left");
                    }
                }
                d.last_error = Some(reason);
            }
        }
        deliveries.prune();
        self.save(&deliveries);
    }

    fn save(&self, deliveries: &Deliveries) {
        if let Err(e) = self.file.save(deliveries) {
            tracing::error!("notification state not saved: {e}");
        }
    }
}

/// `msg_<32 hex>` of the first 16 bytes of SHA-256 over the notification
/// id and the channel (and, for a push, the device): the same on every
/// attempt and after any restart, and different per channel and device,
/// so a receiver can recognise a duplicate.
fn delivery_id(notification_id: &str, channel: Channel, device: Option<&str>) -> String {
    let mut input = Vec::new();
    input.extend_from_slice(b"countersign-notify delivery v1\0");
    input.extend_from_slice(notification_id.as_bytes());
    input.push(0);
    input.extend_from_slice(channel.as_str().as_bytes());
    if let Some(device) = device {
        input.push(0);
        input.extend_from_slice(device.as_bytes());
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, &input);
    format!("msg_{}", hex::encode(&digest.as_ref()[..16]))
}

async fn sleep_for(due_in: Option<Duration>) {
    match due_in {
        Some(delay) => tokio::time::sleep(delay).await,
        None => std::future::pending().await,
    }
}

/// How long until the earliest pending delivery not being attempted is
/// due; `None` when there is none.
fn next_due_in(
    deliveries: &Mutex<Deliveries>,
    in_flight: &HashMap<tokio::task::Id, String>,
) -> Option<Duration> {
    let now = now_ms();
    lock(deliveries)
        .deliveries
        .iter()
        .filter(|d| d.state == State::Pending && !in_flight.values().any(|id| id == &d.id))
        .filter_map(|d| d.next_attempt_ms)
        .min()
        .map(|at| Duration::from_millis(u64::try_from(at.saturating_sub(now)).unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delivery_id_is_stable_and_differs_per_channel_and_notification() {
        let a = delivery_id(
            "ntf_00000000000000000000000000000001",
            Channel::Webhook,
            None,
        );
        assert_eq!(
            a,
            delivery_id(
                "ntf_00000000000000000000000000000001",
                Channel::Webhook,
                None
            )
        );
        assert!(a.starts_with("msg_") && a.len() == 36, "{a}");
        assert_ne!(
            a,
            delivery_id("ntf_00000000000000000000000000000001", Channel::Smtp, None)
        );
        assert_ne!(
            a,
            delivery_id(
                "ntf_00000000000000000000000000000002",
                Channel::Webhook,
                None
            )
        );
    }
}
