//! The notify process's connection to the signer, with the home's
//! `notifier` certificate (`pki/notifier.pem`): the only three RPCs that
//! certificate may call, `PendingNotifications` and `AckNotifications`
//! (the worker's) and `PushDevices` (the push channel's, from the attempts
//! running at once). One [`SignerLink`] serves them all: it connects
//! lazily and again after any failure, and holds no approver or head
//! credential. A waiting notification becomes a [`Notification`] here, and
//! a subscribed device a [`SubscribedDevice`]: the one place the wire form
//! is read.

use countersign_identity::{ClientCredential, ConsoleConfig, Home, Role, tls};
use countersign_proto::v1 as wire;
use countersign_proto::v1::outbox_notification::About;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_push::Subscription;
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

/// The signer, as the notify process reaches it; shared (`Arc`) by the
/// worker and the push channel.
#[derive(Debug)]
pub(crate) struct SignerLink {
    home: Home,
    /// `[signer] addr`, then `[signer] fallback_addrs`.
    addrs: Vec<String>,
    /// This process's `[console]`: its proposal pages are the links.
    console: Option<ConsoleConfig>,
    client: tokio::sync::Mutex<Option<SignerClient<Channel>>>,
}

impl SignerLink {
    pub(crate) fn new(
        home: Home,
        addrs: Vec<String>,
        console: Option<ConsoleConfig>,
    ) -> SignerLink {
        SignerLink {
            home,
            addrs,
            console,
            client: tokio::sync::Mutex::new(None),
        }
    }

    /// The connected client (a cheap clone), connecting first if needed.
    async fn client(&self) -> Result<SignerClient<Channel>, String> {
        let mut held = self.client.lock().await;
        if let Some(client) = &*held {
            return Ok(client.clone());
        }
        let client = connect(&self.home, &self.addrs).await?;
        *held = Some(client.clone());
        Ok(client)
    }

    /// The answer, or why not; a failed call drops the connection so the
    /// next one connects again.
    async fn settle<T>(
        &self,
        answer: Result<tonic::Response<T>, tonic::Status>,
    ) -> Result<T, String> {
        if answer.is_err() {
            *self.client.lock().await = None;
        }
        answer.map(tonic::Response::into_inner).map_err(refusal)
    }

    /// The notifications of this home's principal waiting in the signer's
    /// outbox, oldest first. Ones this build cannot read are skipped
    /// (logged) and left in the outbox.
    pub(crate) async fn waiting(&self, principal: &str) -> Result<Vec<Waiting>, String> {
        let answer = self
            .client()
            .await?
            .pending_notifications(wire::PendingNotificationsRequest { limit: PER_POLL })
            .await;
        let answer = self.settle(answer).await?;
        Ok(answer
            .notifications
            .into_iter()
            .filter_map(|n| match waiting(n, principal, self.console.as_ref()) {
                Ok(w) => Some(w),
                Err(e) => {
                    tracing::warn!("a waiting notification was not read: {e}");
                    None
                }
            })
            .collect())
    }

    /// The ledger's events from leaf `from_leaf` on, at most `limit`, in
    /// leaf order.
    pub(crate) async fn audit_events(
        &self,
        from_leaf: u64,
        limit: u32,
    ) -> Result<Vec<wire::AuditEvent>, String> {
        let answer = self
            .client()
            .await?
            .audit_events(wire::AuditEventsRequest { from_leaf, limit })
            .await;
        Ok(self.settle(answer).await?.events)
    }

    /// Tells the signer that `ids` are held durably here now.
    pub(crate) async fn acknowledge(&self, ids: Vec<String>) -> Result<u32, String> {
        let answer = self
            .client()
            .await?
            .ack_notifications(wire::AckNotificationsRequest { ids })
            .await;
        Ok(self.settle(answer).await?.acknowledged)
    }

    /// The subscribed devices of the approvers who can decide proposal
    /// `proposal_id` of `operation` (of `only`, when it names any). A
    /// device whose subscription does not pass the strict parse is left
    /// out, with a warning naming its session.
    pub(crate) async fn push_devices(
        &self,
        proposal_id: &str,
        operation: &str,
        only: &[String],
    ) -> Result<PushDevices, String> {
        let answer = self
            .client()
            .await?
            .push_devices(wire::PushDevicesRequest {
                operation: operation.to_owned(),
                approvers: only.to_vec(),
                proposal_id: proposal_id.to_owned(),
            })
            .await;
        let answer = self.settle(answer).await?;
        Ok(PushDevices {
            devices: answer.devices.into_iter().filter_map(device).collect(),
        })
    }
}

/// What the signer's refusal says, with its reason code.
fn refusal(status: tonic::Status) -> String {
    let reason = status
        .metadata()
        .get(countersign_proto::reason::METADATA_KEY)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("none")
        .to_owned();
    format!(
        "the signer answered {:?} (reason {reason}): {}",
        status.code(),
        status.message()
    )
}

/// One browser subscribed to Web Push in a paired console session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SubscribedDevice {
    /// The approver whose console the session decides in.
    pub(crate) approver: String,
    /// The console session's id (not secret).
    pub(crate) session_id: String,
    /// Where and how to push to it, checked here again.
    pub(crate) subscription: Subscription,
    /// The VAPID public key the console gives browsers to subscribe with.
    pub(crate) application_server_key: String,
}

/// The devices a push goes to.
#[derive(Debug)]
pub(crate) struct PushDevices {
    pub(crate) devices: Vec<SubscribedDevice>,
}

/// The wire form of a device, its subscription checked.
fn device(d: wire::PushDevice) -> Option<SubscribedDevice> {
    match Subscription::new(&d.endpoint, &d.p256dh, &d.auth) {
        Ok(subscription) => Some(SubscribedDevice {
            approver: d.approver,
            session_id: d.session_id,
            subscription,
            application_server_key: d.application_server_key,
        }),
        Err(e) => {
            tracing::warn!(session_id = %d.session_id, "a stored push subscription is not usable, nothing is pushed to it: {e}");
            None
        }
    }
}

/// A client of the signer at `addr` with `home`'s notifier certificate.
pub(crate) async fn connect(
    home: &Home,
    addrs: &[String],
) -> Result<SignerClient<Channel>, String> {
    let config = tls::SignerTls::of(home, &ClientCredential::Role(Role::Notifier))
        .map_err(|e| format!("the notifier credential: {e}"))?;
    let channel = countersign_identity::failover::signer_channel(addrs, &config)
        .await
        .map_err(|e| {
            format!(
                "cannot reach the signer at {}: {}",
                addrs.join(", "),
                tls::error_chain(&e)
            )
        })?;
    Ok(SignerClient::new(channel))
}

/// The wire form read into a notification of `principal`, linking to the
/// proposal's page of `console` (this process's `[console]`; without one,
/// the link a row of an earlier signer carries, if any).
fn waiting(
    n: wire::OutboxNotification,
    principal: &str,
    console: Option<&ConsoleConfig>,
) -> Result<Waiting, String> {
    let notification = match n.about {
        Some(About::Proposal(p)) => Notification {
            console_url: console
                .map(|console| console.proposal_url(&p.proposal_id))
                .or_else(|| Some(p.console_url).filter(|url| !url.is_empty())),
            proposal_id: p.proposal_id,
            principal: principal.to_owned(),
            operation: p.operation,
            arguments_sha256: p.arguments_sha256,
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

    fn proposal_waiting(console_url: &str) -> wire::OutboxNotification {
        wire::OutboxNotification {
            id: "ntf_1".into(),
            created_at: 7,
            about: Some(About::Proposal(wire::ProposalWaiting {
                proposal_id: "prop_0a".into(),
                operation: "op".into(),
                arguments_sha256: "00".into(),
                console_url: console_url.into(),
                decide_by: 0,
                escalation: None,
            })),
        }
    }

    #[test]
    fn a_waiting_proposal_becomes_its_notification_and_an_empty_link_none() {
        let read = waiting(proposal_waiting(""), "pr_1", None).unwrap();
        assert_eq!(read.id, "ntf_1");
        assert_eq!(read.notification.console_url, None);
        assert_eq!(read.notification.created_at, 7);
        assert_eq!(read.notification.principal, "pr_1");
    }

    #[test]
    fn the_link_is_this_processs_console_page_else_an_older_rows() {
        let console = ConsoleConfig {
            addr: "127.0.0.1:7444".parse().unwrap(),
            names: vec!["console.example".into()],
            own_cert: None,
            mdns: false,
        };
        let older = "https://elsewhere.example:7444/proposals/prop_0a";
        for row_link in ["", older] {
            let read = waiting(proposal_waiting(row_link), "pr_1", Some(&console)).unwrap();
            assert_eq!(
                read.notification.console_url.as_deref(),
                Some(console.proposal_url("prop_0a").as_str())
            );
        }
        let read = waiting(proposal_waiting(older), "pr_1", None).unwrap();
        assert_eq!(read.notification.console_url.as_deref(), Some(older));
    }

    #[test]
    fn a_device_is_read_only_with_a_subscription_that_passes_the_strict_parse() {
        let wire = |endpoint: &str| {
            wire::PushDevice {
            approver: "console".into(),
            session_id: "s1".into(),
            endpoint: endpoint.into(),
            p256dh: "BLn9b-VR0ca83knDNZ32dCHGyjJp-1riX9ZTN40MqV8K_LpQmLqxC_DoHvqvFXO_nGdAB4W9dogZb_sM-uV4JbY".into(),
            auth: "_ordMnz7uTCmrpBTeUV4Bw".into(),
            application_server_key: "BVapid".into(),
        }
        };
        let read = device(wire("https://push.example/1")).unwrap();
        assert_eq!(
            (read.approver.as_str(), read.session_id.as_str()),
            ("console", "s1")
        );
        assert_eq!(read.subscription.endpoint_text(), "https://push.example/1");
        assert_eq!(read.application_server_key, "BVapid");
        // Plain http off loopback is never pushed to, whatever the store says.
        assert_eq!(device(wire("http://10.0.0.1/p")), None);
    }

    #[test]
    fn refuses_a_notification_it_cannot_read() {
        let empty = wire::OutboxNotification {
            id: "ntf_2".into(),
            created_at: 0,
            about: None,
        };
        assert_eq!(
            waiting(empty, "pr_1", None).unwrap_err(),
            "ntf_2: says nothing"
        );
        let odd = wire::OutboxNotification {
            id: "ntf_3".into(),
            created_at: 0,
            about: Some(About::Passkey(wire::PasskeyChanged {
                event: "renamed".into(),
                ..Default::default()
            })),
        };
        assert_eq!(
            waiting(odd, "pr_1", None).unwrap_err(),
            "ntf_3: unknown passkey event \"renamed\""
        );
    }
}
