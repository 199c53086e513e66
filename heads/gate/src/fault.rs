//! Test-only crash injection: `COUNTERSIGN_FAULT=<point>` in a head's
//! environment makes the head kill itself with SIGKILL when it reaches that
//! point of an execution, so tests can prove what a crash there leaves
//! behind. The mechanism is the ledger's ([`countersign_ledger::fault`]):
//! compiled into every build, deliberately, so the tests kill the very
//! binary users run; it can only stop the process, never change what is
//! written or applied.
//!
//! The points mean different things for the two consume flows:
//! - an effect outside the ledger (`command`), two-phase: `after_intent`
//!   is after the first transaction committed the nonce and intent, before
//!   the effect runs; `after_effect` is after the effect ran, before the
//!   second transaction records completion. Both leave the action
//!   `uncertain` for `countersign reconcile`.
//! - a builtin effect, one transaction: the same names are reached inside
//!   the ledger's transaction (after the intent rows are written; after the
//!   effect and completion rows are written), before the commit. The
//!   process dies mid-transaction, so nothing is recorded: the nonce is not
//!   burned, nothing is applied, and the proof can be presented again.
//!
//! And one for a handoff: `after_claim` is after the head claimed a proof
//! from the signer, before it presents it (nothing is consumed); the
//! signer hands the approval to another head once the claim's lease ran
//! out.

pub use countersign_ledger::fault::FAULT_VAR;

/// Where a head may be told to crash: between the two transactions of an
/// effect outside the ledger, or between a handoff's claim and its
/// presentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FaultPoint {
    /// After the consume transaction committed, before the effect.
    IntentRecorded,
    /// After the effect, before the completion transaction.
    EffectRan,
    /// After a handoff was claimed, before its proof is presented.
    HandoffClaimed,
}

impl FaultPoint {
    fn name(self) -> &'static str {
        match self {
            FaultPoint::IntentRecorded => "after_intent",
            FaultPoint::EffectRan => "after_effect",
            FaultPoint::HandoffClaimed => "after_claim",
        }
    }
}

/// Kill this process with SIGKILL if `COUNTERSIGN_FAULT` names `point`.
pub(crate) fn crash_point(point: FaultPoint) {
    countersign_ledger::fault::crash_point(point.name());
}
