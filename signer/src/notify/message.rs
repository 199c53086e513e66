//! What a notification says: that a proposal waits for a person, which
//! one (id, operation, the SHA-256 of its canonical arguments) and where
//! to review it (the console's proposal page, which decides nothing on
//! GET). Nothing else: the type has no field that could hold a proof, a
//! decision link or a secret, and every rendering (webhook JSON, email,
//! desktop) is built from these fields alone.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The Standard Webhooks event type of a notification.
pub const EVENT_TYPE: &str = "proposal.waiting";

/// One proposal waiting for a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notification {
    /// The proposal's id.
    pub proposal_id: String,
    /// The principal that owns it (status is shown to its approvers only).
    pub principal: String,
    /// The operation's registry name.
    pub operation: String,
    /// SHA-256 (hex) of the proposal's canonical arguments.
    pub arguments_sha256: String,
    /// The console's page for the proposal, when a console is configured.
    pub console_url: Option<String>,
    /// When it was proposed (Unix seconds).
    pub created_at: i64,
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
}

impl Notification {
    /// The JSON body a webhook receiver gets.
    pub fn webhook_body(&self) -> Result<String, String> {
        let payload = Payload {
            r#type: EVENT_TYPE,
            timestamp: rfc3339(self.created_at),
            data: PayloadData {
                proposal_id: &self.proposal_id,
                operation: &self.operation,
                arguments_sha256: &self.arguments_sha256,
                console_url: self.console_url.as_deref(),
            },
        };
        serde_json::to_string(&payload).map_err(|e| format!("webhook body: {e}"))
    }

    /// A one-line summary (email subject, desktop summary).
    pub fn summary(&self) -> String {
        format!(
            "countersign: {} waits for your decision ({})",
            self.operation, self.proposal_id
        )
    }

    /// The plain-text body of an email or desktop notification.
    pub fn text(&self) -> String {
        let link = match &self.console_url {
            Some(url) => format!("Review it in the console: {url}\n"),
            None => "Review it with `countersign pending` at an approver's terminal.\n".into(),
        };
        format!(
            "A proposal waits for a person's decision.\n\n\
             Proposal:  {}\nOperation: {}\nArguments SHA-256: {}\nProposed:  {}\n\n{link}\n\
             This message carries no approval: opening the link decides nothing, \
             and only an approver interface can approve or deny.\n",
            self.proposal_id,
            self.operation,
            self.arguments_sha256,
            rfc3339(self.created_at),
        )
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
        }
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
    fn the_text_says_it_carries_no_approval() {
        let text = sample().text();
        assert!(text.contains("Proposal:  prop_0a"), "{text}");
        assert!(text.contains("carries no approval"), "{text}");
        assert!(text.contains("/proposals/prop_0a"), "{text}");
    }
}
