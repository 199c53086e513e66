//! What a notification says: that a proposal waits for a person, which
//! one (id, operation, the SHA-256 of its canonical arguments) and where
//! to review it (the console's proposal page, which decides nothing on
//! GET); or that a passkey was enrolled or removed, for which approver
//! (so that a person hears of an enrolment they did not make). Nothing
//! else: the type has no field that could hold a proof, a decision link,
//! an enrolment code or a secret, and every rendering (webhook JSON,
//! email, desktop) is built from these fields alone.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The Standard Webhooks event type of a notification.
pub const EVENT_TYPE: &str = "proposal.waiting";

/// What happened to a passkey.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PasskeyEvent {
    /// Enrolled, with its approver's enrolment code.
    Enrolled,
    /// Removed, with an assertion of another passkey of its approver.
    Removed,
}

impl PasskeyEvent {
    /// The Standard Webhooks event type: `passkey.enrolled` or `passkey.removed`.
    pub fn event_type(self) -> &'static str {
        match self {
            PasskeyEvent::Enrolled => "passkey.enrolled",
            PasskeyEvent::Removed => "passkey.removed",
        }
    }

    fn verb(self) -> &'static str {
        match self {
            PasskeyEvent::Enrolled => "enrolled",
            PasskeyEvent::Removed => "removed",
        }
    }
}

/// A passkey enrolled or removed: for which approver, which credential.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PasskeyChange {
    /// Enrolled or removed.
    pub event: PasskeyEvent,
    /// The approver it belongs to (`<principal>` or `<principal>/<name>`).
    pub approver: String,
    /// Its credential id (base64url), as `passkeys list` shows it.
    pub credential_id: String,
    /// The name the person gave it.
    pub name: String,
}

impl PasskeyChange {
    /// `credential_id`, named `name`, was enrolled for `approver`.
    pub fn enrolled(approver: &str, credential_id: &str, name: &str) -> PasskeyChange {
        PasskeyChange::new(PasskeyEvent::Enrolled, approver, credential_id, name)
    }

    /// `credential_id`, named `name`, of `approver` was removed.
    pub fn removed(approver: &str, credential_id: &str, name: &str) -> PasskeyChange {
        PasskeyChange::new(PasskeyEvent::Removed, approver, credential_id, name)
    }

    fn new(event: PasskeyEvent, approver: &str, credential_id: &str, name: &str) -> Self {
        PasskeyChange {
            event,
            approver: approver.to_owned(),
            credential_id: credential_id.to_owned(),
            name: name.to_owned(),
        }
    }
}

/// The Standard Webhooks event type of a proposal's escalation.
pub const ESCALATED_EVENT_TYPE: &str = "proposal.escalated";

/// Whom a proposal's escalation goes to, as its operation's registry
/// entry names it: still undecided `after_secs` after it was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Escalation {
    /// The channels (`webhook`, `smtp`, `desktop`, `push`) it goes on.
    pub channels: Vec<String>,
    /// The approvers whose paired devices a push of it goes to (a push
    /// goes to them even if `push` is not among the channels); empty: every
    /// device a first push reaches.
    pub approvers: Vec<String>,
    /// Seconds after the proposal it was due.
    pub after_secs: u64,
}

/// One proposal waiting for a person, or one passkey change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notification {
    /// The proposal's id (empty for a passkey change).
    pub proposal_id: String,
    /// The principal that owns it (status is shown to its approvers only).
    pub principal: String,
    /// The operation's registry name.
    pub operation: String,
    /// SHA-256 (hex) of the proposal's canonical arguments.
    pub arguments_sha256: String,
    /// The console's page for the proposal, when a console is configured.
    pub console_url: Option<String>,
    /// When it was proposed, or the passkey changed (Unix seconds).
    pub created_at: i64,
    /// When the proposal's decision window closes (Unix seconds): after
    /// it, no one can decide it. `None` for a passkey change, and for a
    /// proposal recorded before windows existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decide_by: Option<i64>,
    /// Set when this tells again of a proposal still waiting after its
    /// operation's first delay, to the next approvers or channels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation: Option<Escalation>,
    /// A passkey change; then the proposal fields above are empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passkey: Option<PasskeyChange>,
}

impl Notification {
    /// Why it is too late to tell of this proposal at `now` (Unix
    /// seconds): its decision window has closed, so no one can decide it
    /// and a person told of it could do nothing. `None` while it can
    /// still be decided, and for a passkey change.
    pub fn too_late(&self, now: i64) -> Option<String> {
        let closed = self.decide_by.filter(|&at| at <= now)?;
        Some(format!(
            "proposal {}'s decision window closed at {} before this was delivered; no one can decide it now, so nothing was sent",
            self.proposal_id,
            rfc3339(closed)
        ))
    }
}

/// The webhook body: `{"type", "timestamp", "data"}` as Standard Webhooks
/// recommends, `data` holding the fields above (not the principal).
#[derive(Debug, Serialize)]
struct Payload<'a> {
    r#type: &'static str,
    timestamp: String,
    data: PayloadData<'a>,
}

#[derive(Debug, Serialize)]
struct PayloadData<'a> {
    proposal_id: &'a str,
    operation: &'a str,
    arguments_sha256: &'a str,
    console_url: Option<&'a str>,
    /// When its decision window closes (RFC 3339); absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    decide_by: Option<String>,
}

/// The webhook body of a passkey change: `data` holds the approver, the
/// credential id and its name (not the principal).
#[derive(Debug, Serialize)]
struct PasskeyPayload<'a> {
    r#type: &'static str,
    timestamp: String,
    data: PasskeyData<'a>,
}

#[derive(Debug, Serialize)]
struct PasskeyData<'a> {
    approver: &'a str,
    credential_id: &'a str,
    name: &'a str,
}

impl Notification {
    /// A notification that `change` happened to a passkey of `principal`
    /// at `at` (Unix seconds).
    pub fn of_passkey(principal: &str, change: PasskeyChange, at: i64) -> Notification {
        Notification {
            proposal_id: String::new(),
            principal: principal.to_owned(),
            operation: String::new(),
            arguments_sha256: String::new(),
            console_url: None,
            created_at: at,
            decide_by: None,
            escalation: None,
            passkey: Some(change),
        }
    }

    /// What `notify status` shows as its subject: the operation, or the
    /// passkey event's type.
    pub fn subject(&self) -> &str {
        match &self.passkey {
            Some(change) => change.event.event_type(),
            None => &self.operation,
        }
    }

    /// The JSON body a webhook receiver gets.
    pub fn webhook_body(&self) -> Result<String, String> {
        if let Some(change) = &self.passkey {
            let payload = PasskeyPayload {
                r#type: change.event.event_type(),
                timestamp: rfc3339(self.created_at),
                data: PasskeyData {
                    approver: &change.approver,
                    credential_id: &change.credential_id,
                    name: &change.name,
                },
            };
            return serde_json::to_string(&payload).map_err(|e| format!("webhook body: {e}"));
        }
        let payload = Payload {
            r#type: match self.escalation {
                Some(_) => ESCALATED_EVENT_TYPE,
                None => EVENT_TYPE,
            },
            timestamp: rfc3339(self.created_at),
            data: PayloadData {
                proposal_id: &self.proposal_id,
                operation: &self.operation,
                arguments_sha256: &self.arguments_sha256,
                console_url: self.console_url.as_deref(),
                decide_by: self.decide_by.map(rfc3339),
            },
        };
        serde_json::to_string(&payload).map_err(|e| format!("webhook body: {e}"))
    }

    /// A one-line summary (email subject, desktop summary).
    pub fn summary(&self) -> String {
        if let Some(change) = &self.passkey {
            return format!(
                "countersign: a passkey of {} was {}",
                change.approver,
                change.event.verb()
            );
        }
        match &self.escalation {
            Some(e) => format!(
                "countersign: {} still waits for a decision after {} ({})",
                self.operation,
                duration(e.after_secs),
                self.proposal_id
            ),
            None => format!(
                "countersign: {} waits for your decision ({})",
                self.operation, self.proposal_id
            ),
        }
    }

    /// The plain-text body of an email or desktop notification.
    pub fn text(&self) -> String {
        if let Some(change) = &self.passkey {
            return format!(
                "A passkey of approver {} was {}.\n\n\
                 Name:          {}\nCredential id: {}\nAt:            {}\n\n\
                 If that was not you, have the signer's administrator remove it \
                 (`countersign-signer passkeys remove {}`) and find out who drew \
                 or used the enrolment code.\n\n\
                 This message carries no approval and authorizes nothing.\n",
                change.approver,
                change.event.verb(),
                change.name,
                change.credential_id,
                rfc3339(self.created_at),
                change.credential_id,
            );
        }
        let link = match &self.console_url {
            Some(url) => format!("Review it in the console: {url}\n"),
            None => "Review it with `countersign pending` at an approver's terminal.\n".into(),
        };
        let window = match self.decide_by {
            Some(at) => format!(
                "Decide by: {} (undecided by then, it expires)\n",
                rfc3339(at)
            ),
            None => String::new(),
        };
        let opening = match &self.escalation {
            Some(e) => format!(
                "A proposal still waits for a person's decision, {} after it was made: \
                 you are told because no one has decided it yet.",
                duration(e.after_secs)
            ),
            None => "A proposal waits for a person's decision.".to_owned(),
        };
        format!(
            "{opening}\n\n\
             Proposal:  {}\nOperation: {}\nArguments SHA-256: {}\nProposed:  {}\n{window}\n{link}\n\
             This message carries no approval: opening the link decides nothing, \
             and only an approver interface can approve or deny.\n",
            self.proposal_id,
            self.operation,
            self.arguments_sha256,
            rfc3339(self.created_at),
        )
    }
}

/// `secs` as people read a delay: `90 s`, `10 min`, `2 h 5 min`.
fn duration(secs: u64) -> String {
    match secs {
        0..120 => format!("{secs} s"),
        120..7200 => format!("{} min", secs / 60),
        _ => format!("{} h {} min", secs / 3600, secs % 3600 / 60),
    }
}

/// `unix` as RFC 3339 UTC (the epoch for a time out of range).
pub(crate) fn rfc3339(unix: i64) -> String {
    OffsetDateTime::from_unix_timestamp(unix)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
        .format(&Rfc3339)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn sample() -> Notification {
        Notification {
            proposal_id: "prop_0a".into(),
            principal: "pr_1".into(),
            operation: "schedule.create".into(),
            arguments_sha256: "ab".repeat(32),
            console_url: Some("http://127.0.0.1:7444/proposals/prop_0a".into()),
            created_at: 1_700_000_000,
            decide_by: None,
            escalation: None,
            passkey: None,
        }
    }

    #[test]
    fn it_is_too_late_to_tell_of_a_proposal_once_its_window_closed() {
        let windowed = Notification {
            decide_by: Some(1_700_003_600),
            ..sample()
        };
        assert_eq!(windowed.too_late(1_700_003_599), None);
        assert_eq!(
            windowed.too_late(1_700_003_600).unwrap(),
            "proposal prop_0a's decision window closed at 2023-11-14T23:13:20Z before this was delivered; no one can decide it now, so nothing was sent"
        );
        // No window (recorded before windows existed), or a passkey change.
        assert_eq!(sample().too_late(i64::MAX), None);
        let change = PasskeyChange::removed("pr_1/alice", "AAEC", "laptop");
        assert_eq!(
            Notification::of_passkey("pr_1", change, 1).too_late(i64::MAX),
            None
        );
    }

    #[test]
    fn a_passkey_change_names_the_approver_and_credential_and_nothing_more() {
        let change = PasskeyChange::enrolled("pr_1/alice", "AAEC", "laptop");
        let n = Notification::of_passkey("pr_1", change, 1_700_000_000);
        let body: serde_json::Value = serde_json::from_str(&n.webhook_body().unwrap()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({
                "type": "passkey.enrolled",
                "timestamp": "2023-11-14T22:13:20Z",
                "data": {"approver": "pr_1/alice", "credential_id": "AAEC", "name": "laptop"}
            })
        );
        assert_eq!(
            n.summary(),
            "countersign: a passkey of pr_1/alice was enrolled"
        );
        assert!(n.text().contains("authorizes nothing"), "{}", n.text());
        assert_eq!(n.subject(), "passkey.enrolled");
    }

    #[test]
    fn a_stored_proposal_notification_without_a_passkey_field_still_loads() {
        let text = r#"{"proposal_id":"prop_0a","principal":"pr_1","operation":"op","arguments_sha256":"00","console_url":null,"created_at":0}"#;
        let n: Notification = serde_json::from_str(text).unwrap();
        assert_eq!(n.passkey, None);
        assert!(!serde_json::to_string(&n).unwrap().contains("passkey"));
    }

    #[test]
    fn the_webhook_body_names_the_proposal_and_nothing_more() {
        let body: serde_json::Value =
            serde_json::from_str(&sample().webhook_body().unwrap()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({
                "type": "proposal.waiting",
                "timestamp": "2023-11-14T22:13:20Z",
                "data": {
                    "proposal_id": "prop_0a",
                    "operation": "schedule.create",
                    "arguments_sha256": "ab".repeat(32),
                    "console_url": "http://127.0.0.1:7444/proposals/prop_0a",
                }
            })
        );
    }

    #[test]
    fn a_window_is_in_the_webhook_body_and_the_text() {
        let n = Notification {
            decide_by: Some(1_700_003_600),
            ..sample()
        };
        let body: serde_json::Value = serde_json::from_str(&n.webhook_body().unwrap()).unwrap();
        assert_eq!(body["data"]["decide_by"], "2023-11-14T23:13:20Z");
        assert!(
            n.text()
                .contains("Decide by: 2023-11-14T23:13:20Z (undecided by then, it expires)"),
            "{}",
            n.text()
        );
        assert!(!sample().text().contains("Decide by"));
    }

    #[test]
    fn an_escalation_says_so_in_its_type_summary_and_text() {
        let n = Notification {
            escalation: Some(Escalation {
                channels: vec!["smtp".into()],
                approvers: vec![],
                after_secs: 600,
            }),
            ..sample()
        };
        let body: serde_json::Value = serde_json::from_str(&n.webhook_body().unwrap()).unwrap();
        assert_eq!(body["type"], "proposal.escalated");
        assert_eq!(body["data"]["proposal_id"], "prop_0a");
        assert_eq!(
            n.summary(),
            "countersign: schedule.create still waits for a decision after 10 min (prop_0a)"
        );
        assert!(
            n.text().starts_with(
                "A proposal still waits for a person's decision, 10 min after it was made"
            ),
            "{}",
            n.text()
        );
        assert!(n.text().contains("carries no approval"), "{}", n.text());
    }

    #[test]
    fn the_text_says_it_carries_no_approval() {
        let text = sample().text();
        assert!(text.contains("Proposal:  prop_0a"), "{text}");
        assert!(text.contains("carries no approval"), "{text}");
        assert!(text.contains("/proposals/prop_0a"), "{text}");
    }
}
