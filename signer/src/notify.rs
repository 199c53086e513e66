//! Notifications, recorded and never sent: when a proposal waits for a
//! person, or a passkey is enrolled or removed, and `[notify]` is
//! configured, the signer records what to tell in the ledger's
//! notification outbox. The notify process (`countersign notify serve`,
//! certificate role `notifier`) takes the rows over `PendingNotifications`
//! and `AckNotifications` and delivers them. This process opens no
//! outbound connection and links no delivery code (no HTTP, SMTP or D-Bus
//! client): a receiver's reply is never parsed next to the key.
//!
//! A notification holds the proposal id, operation, arguments' digest and
//! decision window, or the passkey change: never a proof, a decision link,
//! an enrolment code or a secret. How it is told (its text, the console's
//! link from the notify process's own `[console]`) is the notify process's
//! business: a signer of another host records the same row. Recording never fails the RPC that caused
//! it: a ledger error is logged (the proposal still shows in `pending` and
//! the console).

use countersign_identity::Config;
use countersign_ledger::{Ledger, OutboxNotification, Proposal};
use countersign_proto::v1 as wire;
use countersign_registry::Escalation;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::error::RpcError;

/// What `PendingNotifications` returns at most per call.
pub(crate) const MAX_PER_CALL: u32 = 100;

/// Records notifications in the outbox, when `[notify]` is configured.
#[derive(Debug, Clone, Default)]
pub struct Outbox {
    /// `None`: `[notify]` is not configured, nothing is recorded.
    on: Option<On>,
}

#[derive(Debug, Clone)]
struct On {
    ledger: Ledger,
}

/// A passkey enrolled or removed: for which approver, which credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PasskeyChange {
    event: &'static str,
    approver: String,
    credential_id: String,
    name: String,
}

impl PasskeyChange {
    /// `credential_id`, named `name`, was enrolled for `approver`.
    pub(crate) fn enrolled(approver: &str, credential_id: &str, name: &str) -> PasskeyChange {
        PasskeyChange::new("enrolled", approver, credential_id, name)
    }

    /// `credential_id`, named `name`, of `approver` was removed.
    pub(crate) fn removed(approver: &str, credential_id: &str, name: &str) -> PasskeyChange {
        PasskeyChange::new("removed", approver, credential_id, name)
    }

    fn new(event: &'static str, approver: &str, credential_id: &str, name: &str) -> Self {
        PasskeyChange {
            event,
            approver: approver.to_owned(),
            credential_id: credential_id.to_owned(),
            name: name.to_owned(),
        }
    }
}

/// Whom an escalation goes to (the operation's `escalation`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct EscalationBody {
    channels: Vec<String>,
    approvers: Vec<String>,
    after_secs: u64,
}

/// A row's body, as JSON in the ledger. Its fields are everything a
/// notification can say.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum Body {
    Proposal {
        proposal_id: String,
        operation: String,
        arguments_sha256: String,
        /// The console's page, in rows recorded by a signer that still
        /// composed it; the notify process now composes it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        console_url: Option<String>,
        /// When its decision window closes (Unix seconds); absent in rows
        /// recorded before windows existed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decide_by: Option<i64>,
        /// Set on the row that escalates it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        escalation: Option<EscalationBody>,
    },
    Passkey {
        event: String,
        approver: String,
        credential_id: String,
        name: String,
    },
}

impl Outbox {
    /// Records into `ledger` when `config` has a `[notify]` section (its
    /// channels are the notify process's business, not this one's).
    pub fn configured(config: &Config, ledger: &Ledger) -> Outbox {
        Outbox {
            on: config.notify.as_ref().map(|_| On {
                ledger: ledger.clone(),
            }),
        }
    }

    /// Whether notifications are recorded.
    pub fn is_on(&self) -> bool {
        self.on.is_some()
    }

    /// The rows that tell a person `proposal` waits, for the ledger to
    /// commit with the proposal itself
    /// ([`countersign_ledger::Ledger::insert_announced_proposal`]): its
    /// notification, and, when `escalation` is set and due before the
    /// proposal's window closes, its escalation, held back until then.
    /// None when notifications are off (or a row cannot be made, logged).
    pub(crate) fn proposal_waiting(
        &self,
        proposal: &Proposal,
        escalation: Option<&Escalation>,
    ) -> Vec<OutboxNotification> {
        if self.on.is_none() {
            return Vec::new();
        }
        let body = |escalation: Option<EscalationBody>| Body::Proposal {
            proposal_id: proposal.id.to_string(),
            operation: proposal.operation.clone(),
            arguments_sha256: proposal.arguments_sha256.clone(),
            console_url: None,
            decide_by: proposal.decide_by.map(OffsetDateTime::unix_timestamp),
            escalation,
        };
        let first = outbox_row(&proposal.principal, proposal.created_at, &body(None));
        let escalation = escalation.and_then(|e| {
            let due = escalation_due(proposal, e)?;
            let to = EscalationBody {
                channels: e.channels.clone(),
                approvers: e.approvers.iter().map(|a| a.as_str().to_owned()).collect(),
                after_secs: e.after_secs,
            };
            Some(
                outbox_row(&proposal.principal, proposal.created_at, &body(Some(to))).map(|row| {
                    OutboxNotification {
                        not_before: Some(due),
                        escalates: Some(proposal.id.to_string()),
                        ..row
                    }
                }),
            )
        });
        std::iter::once(first)
            .chain(escalation)
            .filter_map(|row| {
                row.inspect_err(|e| tracing::error!(error = %e, "notification not recorded"))
                    .ok()
            })
            .collect()
    }

    /// Takes back the notification `row` (of `principal`): its proposal no
    /// longer waits for anyone (a rule approved it as it was recorded).
    /// A failure is logged; the notify process then tells of a proposal
    /// the console already shows approved.
    pub(crate) async fn withdraw(&self, principal: &str, row: &OutboxNotification) {
        let Some(on) = &self.on else {
            return;
        };
        if let Err(e) = on
            .ledger
            .acknowledge_notifications(principal, std::slice::from_ref(&row.id))
            .await
        {
            tracing::warn!(notification_id = %row.id, error = %e, "notification not taken back");
        }
    }

    /// Records that a passkey of `principal` was enrolled or removed, so
    /// that a person hears of a change they did not make.
    pub(crate) async fn passkey_changed(&self, principal: &str, change: PasskeyChange) {
        let Some(on) = &self.on else {
            return;
        };
        let body = Body::Passkey {
            event: change.event.to_owned(),
            approver: change.approver,
            credential_id: change.credential_id,
            name: change.name,
        };
        on.record(principal, OffsetDateTime::now_utc(), &body).await;
    }
}

impl On {
    async fn record(&self, principal: &str, at: OffsetDateTime, body: &Body) {
        let row = match outbox_row(principal, at, body) {
            Ok(row) => row,
            Err(e) => {
                tracing::error!(error = %e, "notification not recorded");
                return;
            }
        };
        match self.ledger.record_notification(&row).await {
            Ok(()) => tracing::info!(notification_id = %row.id, "notification recorded"),
            Err(e) => tracing::error!(error = %e, "notification not recorded"),
        }
    }
}

/// When `proposal`'s escalation is due: `after_secs` after it was made,
/// unless no one could decide it by then (its window closed), when nobody
/// is paged for nothing.
fn escalation_due(proposal: &Proposal, escalation: &Escalation) -> Option<OffsetDateTime> {
    let after = time::Duration::seconds(i64::try_from(escalation.after_secs).ok()?);
    let due = proposal.created_at.checked_add(after)?;
    match proposal.decide_by {
        Some(closes) if due >= closes => None,
        _ => Some(due),
    }
}

fn outbox_row(
    principal: &str,
    at: OffsetDateTime,
    body: &Body,
) -> Result<OutboxNotification, String> {
    let mut random = [0u8; 16];
    getrandom::fill(&mut random).map_err(|e| format!("random: {e}"))?;
    Ok(OutboxNotification {
        id: format!("ntf_{}", hex::encode(random)),
        principal: principal.to_owned(),
        created_at: at,
        body: serde_json::to_string(body).map_err(|e| format!("encoding: {e}"))?,
        not_before: None,
        escalates: None,
    })
}

/// A stored row as the notifier receives it.
pub(crate) fn to_wire(row: &OutboxNotification) -> Result<wire::OutboxNotification, RpcError> {
    let body: Body = serde_json::from_str(&row.body)
        .map_err(|e| RpcError::Internal(format!("notification {} is not readable: {e}", row.id)))?;
    let about = match body {
        Body::Proposal {
            proposal_id,
            operation,
            arguments_sha256,
            console_url,
            decide_by,
            escalation,
        } => wire::outbox_notification::About::Proposal(wire::ProposalWaiting {
            proposal_id,
            operation,
            arguments_sha256,
            console_url: console_url.unwrap_or_default(),
            decide_by: decide_by.unwrap_or_default(),
            escalation: escalation.map(|e| wire::Escalation {
                channels: e.channels,
                approvers: e.approvers,
                after_secs: e.after_secs,
            }),
        }),
        Body::Passkey {
            event,
            approver,
            credential_id,
            name,
        } => wire::outbox_notification::About::Passkey(wire::PasskeyChanged {
            event,
            approver,
            credential_id,
            name,
        }),
    };
    Ok(wire::OutboxNotification {
        id: row.id.clone(),
        created_at: row.created_at.unix_timestamp(),
        about: Some(about),
    })
}

/// A notification id as `AckNotifications` accepts it: `ntf_` + 32
/// lowercase hex.
pub(crate) fn is_notification_id(id: &str) -> bool {
    id.strip_prefix("ntf_").is_some_and(|hex| {
        hex.len() == 32
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The body of a waiting proposal, with `console_url` as an earlier
    /// signer would have recorded it (or none, as rows are recorded now).
    fn waiting_body(console_url: Option<&str>) -> Body {
        Body::Proposal {
            proposal_id: "prop_0a".into(),
            operation: "schedule.create".into(),
            arguments_sha256: "ab".repeat(32),
            console_url: console_url.map(str::to_owned),
            decide_by: Some(1_700_003_600),
            escalation: None,
        }
    }

    /// `row` as the notifier receives it, a waiting proposal.
    fn proposal_sent(row: &OutboxNotification) -> wire::ProposalWaiting {
        match to_wire(row).unwrap().about {
            Some(wire::outbox_notification::About::Proposal(sent)) => sent,
            other => panic!("not a proposal: {other:?}"),
        }
    }

    #[test]
    fn a_row_records_no_console_link_and_an_older_rows_link_still_reaches_the_notifier() {
        let at = OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap();
        let row = outbox_row("pr_1", at, &waiting_body(None)).unwrap();
        assert!(!row.body.contains("console"), "{}", row.body);
        let sent = proposal_sent(&row);
        assert_eq!(sent.console_url, "");
        // A row an earlier signer recorded, with the link it composed.
        let older = r#"{"kind":"proposal","proposal_id":"prop_0a","operation":"schedule.create","arguments_sha256":"00","console_url":"https://console.localhost:7444/proposals/prop_0a","decide_by":1700003600}"#;
        let row = OutboxNotification {
            body: older.into(),
            ..row
        };
        let sent = proposal_sent(&row);
        assert_eq!(
            sent.console_url,
            "https://console.localhost:7444/proposals/prop_0a"
        );
    }

    #[test]
    fn a_recorded_proposal_reaches_the_notifier_with_nothing_more() {
        let at = OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap();
        let body = waiting_body(Some("https://console.localhost:7444/proposals/prop_0a"));
        let row = outbox_row("pr_1", at, &body).unwrap();
        assert!(is_notification_id(&row.id), "{}", row.id);
        let sent = to_wire(&row).unwrap();
        assert_eq!(sent.created_at, 1_700_000_000);
        assert_eq!(
            sent.about,
            Some(wire::outbox_notification::About::Proposal(
                wire::ProposalWaiting {
                    proposal_id: "prop_0a".into(),
                    operation: "schedule.create".into(),
                    arguments_sha256: "ab".repeat(32),
                    console_url: "https://console.localhost:7444/proposals/prop_0a".into(),
                    decide_by: 1_700_003_600,
                    escalation: None,
                }
            ))
        );
    }

    #[test]
    fn an_escalation_is_due_after_its_delay_only_within_the_window() {
        let created_at = OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap();
        let proposal = |window: i64| Proposal {
            id: "prop_0123456789abcdef0123456789abcdef".parse().unwrap(),
            principal: "pr_0123456789abcdef0123456789abcdef".parse().unwrap(),
            session: "mcp-0123456789abcdef".parse().unwrap(),
            operation: "schedule.create".into(),
            arguments_json: "{}".into(),
            arguments_sha256: "ab".repeat(32),
            contract_revision: "1".repeat(64),
            policy_revision: "2".repeat(64),
            note: String::new(),
            preview: String::new(),
            created_at,
            premise: None,
            decide_by: Some(created_at + time::Duration::seconds(window)),
            policy: None,
        };
        let after = |secs: u64| Escalation {
            after_secs: secs,
            channels: vec!["smtp".into()],
            approvers: Vec::new(),
        };
        assert_eq!(
            escalation_due(&proposal(3600), &after(600)),
            Some(created_at + time::Duration::seconds(600))
        );
        assert_eq!(escalation_due(&proposal(600), &after(600)), None);
        assert_eq!(escalation_due(&proposal(300), &after(600)), None);
    }

    #[test]
    fn only_well_formed_ids_are_acknowledged() {
        assert!(is_notification_id(&format!("ntf_{}", "0a".repeat(16))));
        for bad in ["", "ntf_", "prop_00", &format!("ntf_{}", "0A".repeat(16))] {
            assert!(!is_notification_id(bad), "{bad}");
        }
    }
}
