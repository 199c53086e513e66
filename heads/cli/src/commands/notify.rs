//! `countersign notify status`: what the signer's `[notify]` channels
//! delivered for this principal, asked over the approver's certificate.
//! Prints what the signer says and nothing else: delivery states, attempts,
//! reasons. No notification carries a proof, and neither does this.

use countersign_proto::v1::{NotifyDelivery, NotifyStatusRequest, NotifyStatusResponse};
use serde::Serialize;

use crate::Io;
use crate::context::Context;
use crate::error::CliError;
use crate::output::{write_json, write_text};

/// `countersign notify status`
pub(crate) async fn status(ctx: &Context, json: bool, io: &mut Io<'_>) -> Result<(), CliError> {
    let mut approver = ctx.approver().await?;
    let status = approver
        .notify_status(NotifyStatusRequest {})
        .await?
        .into_inner();
    if json {
        return write_json(io.out, &StatusJson::from(&status));
    }
    write_text(io.out, &status_text(&status))
}

/// One block per channel: its counts, then one line per delivery.
fn status_text(status: &NotifyStatusResponse) -> String {
    if !status.enabled {
        return "notifications are off: the signer's configuration has no [notify] section\n"
            .into();
    }
    let mut text = String::new();
    if status.dropped > 0 {
        text.push_str(&format!(
            "dropped: {} notifications (the signer's queue was full)\n",
            status.dropped
        ));
    }
    for channel in &status.channels {
        if !channel.unavailable.is_empty() {
            text.push_str(&format!(
                "{}: unavailable: {}\n",
                channel.channel, channel.unavailable
            ));
            continue;
        }
        text.push_str(&format!(
            "{}: {} delivered, {} pending, {} failed\n",
            channel.channel, channel.delivered, channel.pending, channel.failed
        ));
        for d in &channel.deliveries {
            text.push_str(&format!(
                "  {} {:<9} {} {} attempts {}",
                d.updated_at, d.state, d.proposal_id, d.operation, d.attempts
            ));
            if !d.next_attempt_at.is_empty() {
                text.push_str(&format!(" next {}", d.next_attempt_at));
            }
            if !d.last_error.is_empty() {
                text.push_str(&format!(" last error: {}", d.last_error));
            }
            text.push('\n');
        }
    }
    text
}

#[derive(Serialize)]
struct StatusJson<'a> {
    enabled: bool,
    dropped: u64,
    channels: Vec<ChannelJson<'a>>,
}

#[derive(Serialize)]
struct ChannelJson<'a> {
    channel: &'a str,
    delivered: u32,
    pending: u32,
    failed: u32,
    unavailable: Option<&'a str>,
    deliveries: Vec<DeliveryJson<'a>>,
}

#[derive(Serialize)]
struct DeliveryJson<'a> {
    delivery_id: &'a str,
    proposal_id: &'a str,
    operation: &'a str,
    state: &'a str,
    attempts: u32,
    last_error: Option<&'a str>,
    next_attempt_at: Option<&'a str>,
    updated_at: &'a str,
}

impl<'a> From<&'a NotifyStatusResponse> for StatusJson<'a> {
    fn from(status: &'a NotifyStatusResponse) -> Self {
        let delivery = |d: &'a NotifyDelivery| DeliveryJson {
            delivery_id: &d.delivery_id,
            proposal_id: &d.proposal_id,
            operation: &d.operation,
            state: &d.state,
            attempts: d.attempts,
            last_error: Some(d.last_error.as_str()).filter(|e| !e.is_empty()),
            next_attempt_at: Some(d.next_attempt_at.as_str()).filter(|t| !t.is_empty()),
            updated_at: &d.updated_at,
        };
        StatusJson {
            enabled: status.enabled,
            dropped: status.dropped,
            channels: status
                .channels
                .iter()
                .map(|c| ChannelJson {
                    channel: &c.channel,
                    delivered: c.delivered,
                    pending: c.pending,
                    failed: c.failed,
                    unavailable: Some(c.unavailable.as_str()).filter(|u| !u.is_empty()),
                    deliveries: c.deliveries.iter().map(delivery).collect(),
                })
                .collect(),
        }
    }
}
