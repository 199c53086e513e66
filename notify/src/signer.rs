//! The notify process's connection to the signer, with the home's
//! `notifier` certificate (`pki/notifier.pem`): the only two RPCs that
//! certificate may call, `PendingNotifications` and `AckNotifications`.
//! It connects lazily and again after any failure; it never holds an
//! approver or head credential. A waiting notification becomes a
//! [`Notification`] here, the one place the wire form is read.

use countersign_identity::{ClientCredential, Home, Role, tls};
use countersign_proto::v1 as wire;
use countersign_proto::v1::outbox_notification::About;
use countersign_proto::v1::signer_client::SignerClient;
use tonic::transport::Channel;

use crate::message::{Escalation, Notification, PasskeyChange, PasskeyEvent};

/// How many waiting notifications one poll takes at most.
const PER_POLL: u32 = 100;

/// A notification the signer holds, and its outbox id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Waiting {
    /// `ntf_<32 hex>`: what the acknowledgement names.
    pub(crate) id: String,
    pub(crate) notification: Notification,
}

/// The signer, as the notifier reaches it.
#[derive(Debug)]
pub(crate) struct SignerLink {
    home: Home,
    addr: String,
    client: Option<SignerClient<Channel>>,
}

impl SignerLink {
    pub(crate) fn new(home: Home, addr: String) -> SignerLink {
        SignerLink {
            home,
            addr,
            client: None,
        }
    }

    async fn client(&mut self) -> Result<&mut SignerClient<Channel>, String> {
        if self.client.is_none() {
            self.client = Some(connect(&self.home, &self.addr).await?);
        }
        self.client
            .as_mut()
            .ok_or_else(|| "not connected".to_owned())
    }

    /// The notifications of this home's principal waiting in the signer's
    /// outbox, oldest first. Ones this build cannot read are skipped
    /// (logged) and left in the outbox.
    pub(crate) async fn waiting(&mut self, principal: &str) -> Result<Vec<Waiting>, String> {
        let answer = self
            .client()
            .await?
            .pending_notifications(wire::PendingNotificationsRequest { limit: PER_POLL })
            .await;
        let answer = self.settle(answer)?;
        Ok(answer
            .notifications
            .into_iter()
            .filter_map(|n| match waiting(n, principal) {
                Ok(w) => Some(w),
                Err(e) => {
                    tracing::warn!("a waiting notification was not read: {e}");
                    None
                }
            })
            .collect())
    }

    /// Tells the signer that `ids` are held durably here now.
    pub(crate) async fn acknowledge(&mut self, ids: Vec<String>) -> Result<u32, String> {
        let answer = self
            .client()
            .await?
            .ack_notifications(wire::AckNotificationsRequest { ids })
            .await;
        Ok(self.settle(answer)?.acknowledged)
    }

    /// The answer, or why not; a failed call drops the connection so the
    /// next one connects again.
    fn settle<T>(
        &mut self,
        answer: Result<tonic::Response<T>, tonic::Status>,
    ) -> Result<T, String> {
        match answer {
            Ok(answer) => Ok(answer.into_inner()),
            Err(status) => {
                self.client = None;
                let reason = status
                    .metadata()
                    .get(countersign_proto::reason::METADATA_KEY)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("none")
                    .to_owned();
                Err(format!(
                    "the signer answered {:?} (reason {reason}): {}",
                    status.code(),
                    status.message()
                ))
            }
        }
    }
}

/// A client of the signer at `addr` with `home`'s notifier certificate.
pub(crate) async fn connect(home: &Home, addr: &str) -> Result<SignerClient<Channel>, String> {
    tls::install_crypto_provider();
    let config = tls::client_config_for(home, &ClientCredential::Role(Role::Notifier))
        .map_err(|e| format!("the notifier credential: {e}"))?;
    let endpoint = tls::signer_endpoint(addr, config)
        .map_err(|e| format!("cannot reach the signer at {addr}: {e}"))?;
    let channel = endpoint.connect().await.map_err(|e| {
        format!(
            "cannot reach the signer at {addr}: {}",
            tls::error_chain(&e)
        )
    })?;
    Ok(SignerClient::new(channel))
}

/// The wire form read into a notification of `principal`.
fn waiting(n: wire::OutboxNotification, principal: &str) -> Result<Waiting, String> {
    let notification = match n.about {
        Some(About::Proposal(p)) => Notification {
            proposal_id: p.proposal_id,
            principal: principal.to_owned(),
            operation: p.operation,
            arguments_sha256: p.arguments_sha256,
            console_url: Some(p.console_url).filter(|url| !url.is_empty()),
            created_at: n.created_at,
            decide_by: Some(p.decide_by).filter(|&at| at != 0),
            escalation: p.escalation.map(|e| Escalation {
                channels: e.channels,
                approvers: e.approvers,
                after_secs: e.after_secs,
            }),
            passkey: None,
        },
        Some(About::Passkey(p)) => {
            let event = match p.event.as_str() {
                "enrolled" => PasskeyEvent::Enrolled,
                "removed" => PasskeyEvent::Removed,
                other => return Err(format!("{}: unknown passkey event {other:?}", n.id)),
            };
            let change = PasskeyChange {
                event,
                approver: p.approver,
                credential_id: p.credential_id,
                name: p.name,
            };
            Notification::of_passkey(principal, change, n.created_at)
        }
        None => return Err(format!("{}: says nothing", n.id)),
    };
    Ok(Waiting {
        id: n.id,
        notification,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_waiting_proposal_becomes_its_notification_and_an_empty_link_none() {
        let read = waiting(
            wire::OutboxNotification {
                id: "ntf_1".into(),
                created_at: 7,
                about: Some(About::Proposal(wire::ProposalWaiting {
                    proposal_id: "prop_0a".into(),
                    operation: "op".into(),
                    arguments_sha256: "00".into(),
                    console_url: String::new(),
                    decide_by: 0,
                    escalation: None,
                })),
            },
            "pr_1",
        )
        .unwrap();
        assert_eq!(read.id, "ntf_1");
        assert_eq!(read.notification.console_url, None);
        assert_eq!(read.notification.created_at, 7);
        assert_eq!(read.notification.principal, "pr_1");
    }

    #[test]
    fn refuses_a_notification_it_cannot_read() {
        let empty = wire::OutboxNotification {
            id: "ntf_2".into(),
            created_at: 0,
            about: None,
        };
        assert_eq!(waiting(empty, "pr_1").unwrap_err(), "ntf_2: says nothing");
        let odd = wire::OutboxNotification {
            id: "ntf_3".into(),
            created_at: 0,
            about: Some(About::Passkey(wire::PasskeyChanged {
                event: "renamed".into(),
                ..Default::default()
            })),
        };
        assert_eq!(
            waiting(odd, "pr_1").unwrap_err(),
            "ntf_3: unknown passkey event \"renamed\""
        );
    }
}
