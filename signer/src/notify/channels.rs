//! The configured channels, checked when the signer starts, and one
//! attempt on one of them.

use countersign_identity::NotifyConfig;

use super::NotifyError;
use super::message::Notification;
use super::smtp::SmtpChannel;
use super::store::Channel;
use super::webhook::WebhookChannel;

/// Every channel `[notify]` configures.
#[derive(Debug)]
pub(crate) struct Channels {
    webhook: Option<WebhookChannel>,
    smtp: Option<SmtpChannel>,
}

impl Channels {
    /// Checks each configured channel; any that cannot be used refuses the
    /// start with the setting named.
    pub(crate) async fn from_config(config: &NotifyConfig) -> Result<Channels, NotifyError> {
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
        Ok(Channels { webhook, smtp })
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
        }
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
        }
    }
}
