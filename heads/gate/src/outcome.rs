//! What executing an approved proposal came to. A refusal is an ordinary
//! result (nothing was applied), distinct from an error (the gate could not
//! decide). Every variant says plainly whether the effect ran.

use countersign_ledger::{Disposition, DispositionStatus, LedgerRefusal};
use countersign_proto::reason::{Code, Reason};
use countersign_verifier::Refusal;

use crate::signer_client::SignerRefusal;

/// The result of presenting a proof for a proposal.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The effect ran now and succeeded.
    Applied(Disposition),
    /// The effect ran now and failed; the proof is spent.
    Failed(Disposition),
    /// The effect was started now and its outcome is unknown (a webhook
    /// request may have been received): the intent stays open, nothing is
    /// retried, and a person or `reconcile` settles it. The proof is spent.
    Uncertain {
        /// The recorded disposition (status `uncertain`).
        disposition: Disposition,
        /// What went wrong after the effect started (no secret in it).
        reason: String,
    },
    /// The proof was already consumed: this is the recorded disposition, and
    /// nothing ran again.
    Recorded(Disposition),
    /// The proof was refused and nothing was applied.
    Refused(Refused),
}

impl Outcome {
    /// True when this call ran the effect successfully.
    pub fn applied_now(&self) -> bool {
        matches!(self, Outcome::Applied(_))
    }

    /// The disposition, when the proof was consumed (now or before).
    pub fn disposition(&self) -> Option<&Disposition> {
        match self {
            Outcome::Applied(d) | Outcome::Failed(d) | Outcome::Recorded(d) => Some(d),
            Outcome::Uncertain { disposition, .. } => Some(disposition),
            Outcome::Refused(_) => None,
        }
    }

    /// One line for a person or a model: what happened, and whether anything
    /// was applied.
    pub fn summary(&self) -> String {
        match self {
            Outcome::Applied(d) => format!("applied: {} ran once (nonce recorded)", d.proposal_id),
            Outcome::Failed(d) => format!(
                "failed: the effect of {} ran and reported an error; the approval is spent",
                d.proposal_id
            ),
            Outcome::Uncertain {
                disposition,
                reason,
            } => format!(
                "uncertain: the effect of {} was started and its outcome is unknown ({reason}); it is not retried (see `countersign reconcile`)",
                disposition.proposal_id
            ),
            Outcome::Recorded(d) => match d.status {
                DispositionStatus::Uncertain => format!(
                    "uncertain: {} was started before and never completed; nothing was run again (see `countersign reconcile`)",
                    d.proposal_id
                ),
                status => format!(
                    "already used: {} was executed before ({}); nothing was run again",
                    d.proposal_id,
                    status.as_str()
                ),
            },
            Outcome::Refused(r) => format!("refused: {r}; nothing was applied"),
        }
    }
}

/// Why a proof was refused. Every refusal means nothing was applied.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refused {
    /// The proof failed verification.
    #[error("{0}")]
    Proof(Refusal),
    /// The ledger refused it (revoked, not issued, mismatched proposal).
    #[error("{0}")]
    Ledger(LedgerRefusal),
    /// No such proposal in the ledger.
    #[error("unknown proposal {0}")]
    UnknownProposal(String),
    /// No approval waits to be handed over for this proposal (the signer's
    /// `no_live_handoff`).
    #[error(
        "no approval is waiting for {proposal_id}: a person must approve it for this session first (`countersign approve {proposal_id} --hand-off`, or the console's Approve for the proposing session)"
    )]
    NoHandoff {
        /// The proposal.
        proposal_id: String,
        /// The signer's refusal.
        refusal: SignerRefusal,
    },
    /// A person approved the proposal, but its proof expired unused: there
    /// is nothing to hand over, and a proposal is decided only once.
    #[error(
        "the approval of {0} expired before it was executed. An expired approval cannot be used or renewed: propose the action again for a person to approve"
    )]
    ApprovalExpired(String),
    /// The approval is held by another request that is executing it now;
    /// calling again shortly gets that execution's recorded result (or the
    /// approval, if it consumed nothing and handed it back).
    #[error(
        "{0} is approved and being executed by another request; nothing was applied by this one. Call again shortly for its recorded result"
    )]
    InProgress(String),
    /// The signer refused to hand the approval over (another session, say).
    #[error("the signer refused the handoff: {0}")]
    HandoffRefused(SignerRefusal),
    /// A person denied the proposal, its proposer withdrew it, or its
    /// approval was revoked: no approval will come for it.
    #[error("{proposal_id} is {status}{reason}: no approval will come for it")]
    Decided {
        /// The proposal.
        proposal_id: String,
        /// Its status (`denied`, `withdrawn`, `revoked`).
        status: &'static str,
        /// ` (<the reason given>)`, or empty.
        reason: String,
    },
    /// The proposal's operation is no longer in the registry.
    #[error("operation {0} is no longer in the registry")]
    UnknownOperation(String),
    /// The operation requires passkey assurance (`require_passkey` in the
    /// registry) and the proof, though genuine, does not carry it (`amr`
    /// with `passkey-uv`). Decided before consumption: the proof is not
    /// spent, and another proof, approved with a passkey, can still be used.
    #[error(
        "operation {0} requires an approval made with a passkey (user verified), and this proof does not say one was used"
    )]
    PasskeyRequired(String),
    /// The operation's effect is of a kind this head does not run. Decided
    /// before consumption: the proof is not spent.
    #[error("operation {operation} has a {kind} effect, which this head does not run")]
    UnsupportedEffect {
        /// The operation.
        operation: String,
        /// The effect kind as the registry names it.
        kind: &'static str,
    },
    /// The upstream MCP server no longer lists the tool exactly as it was
    /// pinned when the proposal was approved. Decided before consumption:
    /// nothing is called and the proof is not spent.
    #[error(
        "the MCP server {upstream} no longer lists the tool {tool} as it was pinned and approved ({change}); nothing was called. A person must review the change (`countersign gateway tools`)"
    )]
    ToolChanged {
        /// The upstream.
        upstream: String,
        /// The tool.
        tool: String,
        /// What changed: the definition, or the tool is gone.
        change: &'static str,
    },
    /// The upstream MCP server could not be reached. Decided before
    /// consumption: nothing is called and the approval stays usable.
    #[error(
        "the MCP server {upstream} is unavailable ({reason}); nothing was called and the approval stays usable"
    )]
    UpstreamUnavailable {
        /// The upstream.
        upstream: String,
        /// Why (no secret in it).
        reason: String,
    },
}

impl Refused {
    /// [`Refused::code`] as a metric label: one of a fixed set. A code the
    /// signer sent that is not one of those it can send here is counted
    /// as `signer_refused`, so a label never carries a received string.
    pub fn reason(&self) -> Reason {
        match self {
            Refused::Proof(r) => r.reason(),
            Refused::Ledger(r) => r.reason(),
            Refused::UnknownProposal(_) => Reason::UnknownProposal,
            Refused::UnknownOperation(_) => Reason::UnknownOperation,
            Refused::UnsupportedEffect { .. } => Reason::UnsupportedEffect,
            Refused::ToolChanged { .. } => Reason::ToolChanged,
            Refused::UpstreamUnavailable { .. } => Reason::UpstreamUnavailable,
            Refused::PasskeyRequired(_) => Reason::PasskeyRequired,
            Refused::InProgress(_) => Reason::InProgress,
            Refused::NoHandoff { .. } => Reason::NoLiveHandoff,
            Refused::Decided { .. } => Reason::NotPending,
            Refused::ApprovalExpired(_) => Reason::Expired,
            Refused::HandoffRefused(refusal) => {
                const HANDOFF_REASONS: &[Reason] = &[
                    Reason::NoLiveHandoff,
                    Reason::HandoffSessionMismatch,
                    Reason::HandoffInUse,
                    Reason::HandoffUnrecoverable,
                    Reason::NotYourProposal,
                    Reason::UnknownProposal,
                    Reason::InvalidField,
                    Reason::RoleNotAllowed,
                ];
                refusal
                    .code
                    .reason()
                    .filter(|r| HANDOFF_REASONS.contains(r))
                    .unwrap_or(Reason::SignerRefused)
            }
        }
    }

    /// The code for machine-readable output: the reason, or for a
    /// handoff the signer refused, the signer's code as it came.
    pub fn code(&self) -> Code {
        match self {
            Refused::NoHandoff { refusal, .. } | Refused::HandoffRefused(refusal) => {
                refusal.code.clone()
            }
            other => Code::Known(other.reason()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handoff_refused(code: &str) -> Refused {
        Refused::HandoffRefused(SignerRefusal {
            code: Code::parse(code),
            message: "m".to_owned(),
        })
    }

    #[test]
    fn a_metric_reason_is_a_known_code_or_signer_refused() {
        assert_eq!(
            handoff_refused("handoff_session_mismatch").reason(),
            Reason::HandoffSessionMismatch
        );
        assert_eq!(
            handoff_refused("whatever_a_peer_sent").reason(),
            Reason::SignerRefused
        );
        assert_eq!(
            handoff_refused("whatever_a_peer_sent").code(),
            "whatever_a_peer_sent"
        );
        assert_eq!(Refused::Proof(Refusal::Expired).reason(), Reason::Expired);
    }

    #[test]
    fn an_approval_that_expired_unused_says_so_and_not_that_none_was_given() {
        let refused = Refused::ApprovalExpired("prop_1".into());
        assert_eq!(refused.reason(), Reason::Expired);
        assert_eq!(refused.code(), "expired");
        assert_eq!(
            refused.to_string(),
            "the approval of prop_1 expired before it was executed. An expired approval cannot be used or renewed: propose the action again for a person to approve"
        );
    }
}
