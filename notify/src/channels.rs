//! The configured channels, checked when the notify process starts, and
//! one attempt on one of them.

use countersign_identity::{Home, NotifyConfig};

use super::NotifyError;
use super::desktop::DesktopChannel;
use super::message::Notification;
use super::push::PushChannel;
use super::signer::{SignerLink, SubscribedDevice};
use super::smtp::SmtpChannel;
use super::store::{Channel, ChannelState};
use super::webhook::WebhookChannel;

/// Why an attempt did not deliver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Tried again per the retry policy.
    Retry(String),
    /// Not tried again (the device is no longer subscribed).
    Final(String),
    /// The push service said the subscription is gone (404/410): not
    /// tried again, and nothing more is pushed to that subscription.
    Gone {
        /// SHA-256 (hex) of its endpoint.
        endpoint_sha256: String,
        /// What the push service answered.
        reason: String,
    },
}

impl From<String> for Failure {
    fn from(reason: String) -> Self {
        Failure::Retry(reason)
    }
}

/// Every channel `[notify]` configures.
#[derive(Debug)]
pub(crate) struct Channels {
    webhook: Option<WebhookChannel>,
    smtp: Option<SmtpChannel>,
    desktop: Option<DesktopChannel>,
    push: Option<PushChannel>,
    /// Configured but not usable here, and why (a desktop channel without
    /// a session bus).
    unavailable: Vec<(Channel, &'static str)>,
}

impl Channels {
    /// Checks each configured channel; any that cannot be used refuses the
    /// start with the setting named.
    pub(crate) fn from_config(
        config: &NotifyConfig,
        home: &Home,
        signer: &std::sync::Arc<SignerLink>,
    ) -> Result<Channels, NotifyError> {
        let webhook = config
            .webhook
            .as_ref()
            .map(WebhookChannel::from_config)
            .transpose()?;
        let smtp = config
            .smtp
            .as_ref()
            .map(SmtpChannel::from_config)
            .transpose()?;
        let push = config
            .push
            .as_ref()
            .map(|push| PushChannel::from_config(push, home, std::sync::Arc::clone(signer)))
            .transpose()?;
        let mut unavailable = Vec::new();
        let desktop = match config.desktop {
            false => None,
            true => {
                match DesktopChannel::for_address(std::env::var_os("DBUS_SESSION_BUS_ADDRESS")) {
                    Ok(channel) => Some(channel),
                    Err(why) => {
                        unavailable.push((Channel::Desktop, why));
                        None
                    }
                }
            }
        };
        Ok(Channels {
            webhook,
            smtp,
            desktop,
            push,
            unavailable,
        })
    }

    /// The channels `notification` is delivered on: every usable one; for
    /// an escalation, those of its channels that are usable, and push when
    /// it names approvers.
    pub(crate) fn for_notification(&self, notification: &Notification) -> Vec<Channel> {
        let Some(escalation) = &notification.escalation else {
            return self.usable();
        };
        Channel::ALL
            .into_iter()
            .filter(|c| {
                escalation.channels.iter().any(|name| name == c.as_str())
                    || (*c == Channel::Push && !escalation.approvers.is_empty())
            })
            .filter(|c| self.is_usable(*c))
            .collect()
    }

    /// The channels a new notification is delivered on.
    pub(crate) fn usable(&self) -> Vec<Channel> {
        Channel::ALL
            .into_iter()
            .filter(|c| self.is_usable(*c))
            .collect()
    }

    /// Whether `channel` is configured and usable.
    pub(crate) fn is_usable(&self, channel: Channel) -> bool {
        match channel {
            Channel::Webhook => self.webhook.is_some(),
            Channel::Smtp => self.smtp.is_some(),
            Channel::Desktop => self.desktop.is_some(),
            Channel::Push => self.push.is_some(),
        }
    }

    /// Every configured channel: usable, or why not.
    pub(crate) fn states(&self) -> Vec<ChannelState> {
        self.usable()
            .into_iter()
            .map(|channel| ChannelState {
                channel,
                unavailable: None,
            })
            .chain(self.unavailable.iter().map(|(channel, why)| ChannelState {
                channel: *channel,
                unavailable: Some((*why).to_owned()),
            }))
            .collect()
    }

    /// The devices a push of `notification` goes to (none without a push
    /// channel), as the signer says now: every subscribed device of an
    /// approver who can decide its operation (of an escalation's
    /// approvers only, when it names some).
    pub(crate) async fn push_devices(
        &self,
        notification: &Notification,
    ) -> Result<Vec<SubscribedDevice>, String> {
        match &self.push {
            Some(push) => push.devices_for(notification).await,
            None => Ok(Vec::new()),
        }
    }

    /// One attempt on `channel` for delivery `id` (to `device`, for a
    /// push) at `timestamp` (Unix seconds); the error is the reason, free
    /// of secrets.
    pub(crate) async fn send(
        &self,
        channel: Channel,
        id: &str,
        device: Option<&str>,
        timestamp: i64,
        notification: &Notification,
    ) -> Result<(), Failure> {
        // A delivery delayed past the proposal's decision window (the
        // notify process was down, a receiver kept failing) tells of
        // nothing anyone can decide: it ends here, sending nothing.
        if let Some(why) = notification.too_late(timestamp) {
            return Err(Failure::Final(why));
        }
        match channel {
            Channel::Webhook => match &self.webhook {
                Some(webhook) => Ok(webhook.send(id, timestamp, notification).await?),
                None => Err(Failure::Retry(
                    "the webhook channel is not configured".into(),
                )),
            },
            Channel::Smtp => match &self.smtp {
                Some(smtp) => Ok(smtp.send(id, notification).await?),
                None => Err(Failure::Retry("the smtp channel is not configured".into())),
            },
            Channel::Desktop => match &self.desktop {
                Some(desktop) => Ok(desktop.send(notification).await?),
                None => Err(Failure::Retry(
                    "the desktop channel is not available".into(),
                )),
            },
            Channel::Push => match (&self.push, device) {
                (Some(push), Some(device)) => push.send(device, notification).await,
                (None, _) => Err(Failure::Retry("the push channel is not configured".into())),
                (_, None) => Err(Failure::Final("a push delivery names no device".into())),
            },
        }
    }
}
