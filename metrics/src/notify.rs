//! The notify process's metrics: notifications taken from the signer's
//! outbox, and every delivery attempt by channel and result.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use crate::Exposition;

/// What became of one delivery attempt (`result` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// The receiver took it (`delivered`).
    Delivered,
    /// It failed and will be tried again (`retry`).
    Retry,
    /// It failed and will not be tried again (`failed`).
    Failed,
    /// The push service said the subscription is gone (`gone`).
    Gone,
}

impl Attempt {
    fn as_str(self) -> &'static str {
        match self {
            Attempt::Delivered => "delivered",
            Attempt::Retry => "retry",
            Attempt::Failed => "failed",
            Attempt::Gone => "gone",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct AttemptLabels {
    /// `webhook`, `smtp`, `desktop` or `push` (a fixed set).
    channel: &'static str,
    result: &'static str,
}

/// The notify process's counters. Clones count into the same metrics;
/// they are served only once registered in an [`Exposition`].
#[derive(Debug, Clone, Default)]
pub struct NotifyMetrics {
    taken: Counter,
    attempts: Family<AttemptLabels, Counter>,
}

impl NotifyMetrics {
    /// Registers these metrics in `exposition` (names below).
    pub fn register(&self, exposition: &mut Exposition) {
        let r = &mut exposition.registry;
        r.register(
            "countersign_notifications_taken",
            "Notifications taken from the signer's outbox",
            self.taken.clone(),
        );
        r.register(
            "countersign_notification_attempts",
            "Delivery attempts, by channel and result",
            self.attempts.clone(),
        );
    }

    /// A notification was taken (and its deliveries saved).
    pub fn taken(&self) {
        self.taken.inc();
    }

    /// One attempt on `channel` ended as `result`.
    pub fn attempt(&self, channel: &'static str, result: Attempt) {
        self.attempts
            .get_or_create(&AttemptLabels {
                channel,
                result: result.as_str(),
            })
            .inc();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn counts_attempts_by_channel_and_result() {
        let metrics = NotifyMetrics::default();
        let mut exposition = Exposition::new();
        metrics.register(&mut exposition);
        metrics.taken();
        metrics.attempt("webhook", Attempt::Retry);
        metrics.attempt("webhook", Attempt::Delivered);
        metrics.attempt("push", Attempt::Gone);
        let text = exposition.render();
        for line in [
            "countersign_notifications_taken_total 1",
            "countersign_notification_attempts_total{channel=\"webhook\",result=\"retry\"} 1",
            "countersign_notification_attempts_total{channel=\"webhook\",result=\"delivered\"} 1",
            "countersign_notification_attempts_total{channel=\"push\",result=\"gone\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
    }
}
