//! The signer's metrics: proposals by operation, decisions by kind,
//! issuances, refusals by reason code, re-issues for reconcile by result,
//! the latency of an approval from request to issued proof, and the
//! approvals waiting to be handed over.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;

use crate::Exposition;

/// A person's decision, as counted (`decision` and `delivery` labels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Approved, the proof returned to the approver (`approve`, `direct`).
    ApproveDirect,
    /// Approved, the proof kept for one head (`approve`, `handoff`).
    ApproveHandoff,
    /// Denied (`deny`, `none`).
    Deny,
}

/// Why a proof was issued (`source` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Issuance {
    /// A person's approval (`approval`).
    Approval,
    /// A re-issue for a head reconciling a replay-safe webhook (`reissue`).
    Reissue,
    /// An approval under an auto-approval rule a person created (`rule`).
    Rule,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct OperationLabels {
    /// A name from the registry file (bounded by it): a proposal of an
    /// unknown operation is refused before it is counted here.
    operation: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct DecisionLabels {
    decision: &'static str,
    delivery: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct SourceLabels {
    source: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct VerdictLabels {
    /// `forbid`, `require_approval`, `permit` or `person`.
    verdict: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct DifferenceLabels {
    /// The binding set's verdict (`person` without one).
    binding: &'static str,
    /// The log-only set's verdict.
    shadow: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ReasonLabels {
    /// A stable snake_case reason code (a fixed set of constants).
    reason: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ResultLabels {
    /// `reissued`, or the stable reason code of the refusal.
    result: &'static str,
}

/// The signer's counters, histogram and gauge. Clones count into the same
/// metrics; they are served only once registered in an [`Exposition`].
#[derive(Debug, Clone, Default)]
pub struct SignerMetrics {
    proposals: Family<OperationLabels, Counter>,
    decisions: Family<DecisionLabels, Counter>,
    issuances: Family<SourceLabels, Counter>,
    refusals: Family<ReasonLabels, Counter>,
    reissues: Family<ResultLabels, Counter>,
    issuance_seconds: IssuanceHistogram,
    issuance_batches: BatchHistogram,
    waiting_handoffs: Gauge,
    policy_verdicts: Family<VerdictLabels, Counter>,
    policy_shadow_differences: Family<DifferenceLabels, Counter>,
}

/// The histogram of [`SignerMetrics`], with the crate's latency buckets.
#[derive(Debug, Clone)]
struct IssuanceHistogram(Histogram);

impl Default for IssuanceHistogram {
    fn default() -> Self {
        IssuanceHistogram(Histogram::new(crate::latency_buckets()))
    }
}

/// The group-commit histogram of [`SignerMetrics`].
#[derive(Debug, Clone)]
struct BatchHistogram(Histogram);

impl Default for BatchHistogram {
    fn default() -> Self {
        BatchHistogram(Histogram::new(crate::batch_buckets()))
    }
}

impl SignerMetrics {
    /// Registers these metrics in `exposition` (names below).
    pub fn register(&self, exposition: &mut Exposition) {
        let r = &mut exposition.registry;
        r.register(
            "countersign_proposals",
            "Proposals recorded, by operation",
            self.proposals.clone(),
        );
        r.register(
            "countersign_decisions",
            "Decisions recorded, by decision and delivery",
            self.decisions.clone(),
        );
        r.register(
            "countersign_issuances",
            "Proofs issued, by source",
            self.issuances.clone(),
        );
        r.register(
            "countersign_signer_refusals",
            "Signer calls refused or failed, by reason code",
            self.refusals.clone(),
        );
        r.register(
            "countersign_reissues",
            "ReissueForReconcile calls, by result: reissued or the refusal's reason code",
            self.reissues.clone(),
        );
        r.register(
            "countersign_issuance_seconds",
            "Time from an approving Decide call to its issued proof, in seconds",
            self.issuance_seconds.0.clone(),
        );
        r.register(
            "countersign_issuance_batch_size",
            "Approvals (issuances) that shared one ledger transaction and commit (group commit)",
            self.issuance_batches.0.clone(),
        );
        r.register(
            "countersign_policy_verdicts",
            "Proposals the binding Cedar policy set decided, by verdict",
            self.policy_verdicts.clone(),
        );
        r.register(
            "countersign_policy_shadow_differences",
            "Proposals on which the log-only Cedar policy set would have decided otherwise, by both verdicts",
            self.policy_shadow_differences.clone(),
        );
        r.register(
            "countersign_waiting_handoffs",
            "Approvals waiting to be handed to a head (not claimed, not expired)",
            self.waiting_handoffs.clone(),
        );
    }

    /// A proposal of `operation` (a registered name) was recorded.
    pub fn proposed(&self, operation: &str) {
        self.proposals
            .get_or_create(&OperationLabels {
                operation: operation.to_owned(),
            })
            .inc();
    }

    /// The binding Cedar policy set said `verdict` of a proposal
    /// (`forbid`, `require_approval`, `permit` or `person`).
    pub fn policy_verdict(&self, verdict: &'static str) {
        self.policy_verdicts
            .get_or_create(&VerdictLabels { verdict })
            .inc();
    }

    /// The log-only Cedar policy set would have said `shadow` where the
    /// binding one said `binding`.
    pub fn policy_shadow_difference(&self, binding: &'static str, shadow: &'static str) {
        self.policy_shadow_differences
            .get_or_create(&DifferenceLabels { binding, shadow })
            .inc();
    }

    /// A decision was recorded.
    pub fn decided(&self, decision: Decision) {
        let (decision, delivery) = match decision {
            Decision::ApproveDirect => ("approve", "direct"),
            Decision::ApproveHandoff => ("approve", "handoff"),
            Decision::Deny => ("deny", "none"),
        };
        self.decisions
            .get_or_create(&DecisionLabels { decision, delivery })
            .inc();
    }

    /// A proof was issued, and for an approval it took `seconds` from the
    /// request's arrival.
    pub fn issued(&self, source: Issuance, seconds: Option<f64>) {
        let source = match source {
            Issuance::Approval => "approval",
            Issuance::Reissue => "reissue",
            Issuance::Rule => "rule",
        };
        self.issuances.get_or_create(&SourceLabels { source }).inc();
        if let Some(seconds) = seconds {
            self.issuance_seconds.0.observe(seconds);
        }
    }

    /// One ledger commit carried `size` approvals.
    pub fn approvals_committed(&self, size: usize) {
        self.issuance_batches.0.observe(size as f64);
    }

    /// A call was refused (or failed: `internal`) with `reason`.
    pub fn refused(&self, reason: &'static str) {
        self.refusals.get_or_create(&ReasonLabels { reason }).inc();
    }

    /// A `ReissueForReconcile` call ended with `result`: `reissued`, or the
    /// refusal's reason code (a fixed set of constants).
    pub fn reissue(&self, result: &'static str) {
        self.reissues.get_or_create(&ResultLabels { result }).inc();
    }

    /// Sets how many approvals wait to be handed over.
    pub fn set_waiting_handoffs(&self, waiting: usize) {
        self.waiting_handoffs
            .set(i64::try_from(waiting).unwrap_or(i64::MAX));
    }
}
