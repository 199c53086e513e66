//! The configured channels, checked when the notify process starts, and
//! one attempt on one of them.

use countersign_identity::NotifyConfig;

use super::NotifyError;
use super::desktop::DesktopChannel;
use super::message::Notification;
use super::smtp::SmtpChannel;
use super::store::{Channel, ChannelState};
use super::webhook::WebhookChannel;

/// Every channel `[notify]` configures.
#[derive(Debug)]
pub(crate) struct Channels {
    webhook: Option<WebhookChannel>,
    smtp: Option<SmtpChannel>,
    desktop: Option<DesktopChannel>,
    /// Configured but not usable here, and why (a desktop channel without
    /// a session bus).
    unavailable: Vec<(Channel, &'static str)>,
}

impl Channels {
    /// Checks each configured channel; any that cannot be used refuses the
    /// start with the setting named.
    pub(crate) fn from_config(config: &NotifyConfig) -> Result<Channels, NotifyError> {
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
            unavailable,
        })
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

    /// One attempt on `channel` for delivery `id` at `timestamp` (Unix
    /// seconds); the error is the reason, free of secrets.
    pub(crate) async fn send(
        &self,
        channel: Channel,
        id: &str,
        timestamp: i64,
        notification: &Notification,
    ) -> Result<(), String> {
        match channel {
            Channel::Webhook => match &self.webhook {
                Some(webhook) => webhook.send(id, timestamp, notification).await,
                None => Err("the webhook channel is not configured".into()),
            },
            Channel::Smtp => match &self.smtp {
                Some(smtp) => smtp.send(id, notification).await,
                None => Err("the smtp channel is not configured".into()),
            },
            Channel::Desktop => match &self.desktop {
                Some(desktop) => desktop.send(notification).await,
                None => Err("the desktop channel is not available".into()),
            },
        }
    }
}
