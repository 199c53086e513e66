//! The gate's metrics (every head embeds a gate): consumes by outcome,
//! refusals by reason code, the latency of one execution, and how many
//! consumptions shared each ledger commit (group commit).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;

use crate::Exposition;

/// What presenting a proof came to (`outcome` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumeOutcome {
    /// The effect ran now and succeeded (`applied`).
    Applied,
    /// The effect ran now and failed (`failed`).
    Failed,
    /// The effect started and its outcome is unknown (`uncertain`).
    Uncertain,
    /// The proof was consumed before: its recorded result (`replay`).
    Replay,
    /// The proof was refused; nothing was applied (`refused`).
    Refused,
    /// The gate could not decide (ledger, registry, signer or effect fault;
    /// `error`).
    Error,
}

impl ConsumeOutcome {
    fn label(self) -> &'static str {
        match self {
            ConsumeOutcome::Applied => "applied",
            ConsumeOutcome::Failed => "failed",
            ConsumeOutcome::Uncertain => "uncertain",
            ConsumeOutcome::Replay => "replay",
            ConsumeOutcome::Refused => "refused",
            ConsumeOutcome::Error => "error",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ReasonLabels {
    /// A stable snake_case reason code (a fixed set of constants).
    reason: &'static str,
}

/// The gate's counters and histogram. Every clone of a gate counts into
/// the same metrics; they are served only once registered.
#[derive(Debug, Clone)]
pub struct GateMetrics {
    consumes: Family<OutcomeLabels, Counter>,
    refusals: Family<ReasonLabels, Counter>,
    consume_seconds: Histogram,
    batch_sizes: Histogram,
}

impl Default for GateMetrics {
    fn default() -> Self {
        GateMetrics {
            consumes: Family::default(),
            refusals: Family::default(),
            consume_seconds: Histogram::new(crate::latency_buckets()),
            batch_sizes: Histogram::new(crate::batch_buckets()),
        }
    }
}

impl GateMetrics {
    /// Registers these metrics in `exposition` (names below).
    pub fn register(&self, exposition: &mut Exposition) {
        let r = &mut exposition.registry;
        r.register(
            "countersign_consumes",
            "Proofs presented to the gate, by outcome",
            self.consumes.clone(),
        );
        r.register(
            "countersign_gate_refusals",
            "Proofs the gate refused, by reason code (nothing was applied)",
            self.refusals.clone(),
        );
        r.register(
            "countersign_consume_seconds",
            "Time to verify, consume and apply one proof (or refuse it), in seconds",
            self.consume_seconds.clone(),
        );
        r.register(
            "countersign_consume_batch_size",
            "Consumptions that shared one ledger transaction and commit (group commit)",
            self.batch_sizes.clone(),
        );
    }

    /// One ledger commit carried `size` consumptions.
    pub fn batch_committed(&self, size: usize) {
        self.batch_sizes.observe(size as f64);
    }

    /// One presentation came to `outcome` (refused for `reason`) in `seconds`.
    pub fn consumed(&self, outcome: ConsumeOutcome, reason: Option<&'static str>, seconds: f64) {
        self.consumes
            .get_or_create(&OutcomeLabels {
                outcome: outcome.label(),
            })
            .inc();
        if let Some(reason) = reason {
            self.refusals.get_or_create(&ReasonLabels { reason }).inc();
        }
        self.consume_seconds.observe(seconds);
    }
}
