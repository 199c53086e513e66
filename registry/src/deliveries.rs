//! Who carries out a person's approval: the deliveries an effect kind
//! allows, declared once by each kind ([`crate::EffectKind::deliveries`])
//! and read by the signer, which refuses any other delivery before it
//! records a decision, and by every approver interface, which offers only
//! what the signer will accept.
//!
//! Must not: name a head or an interface, or say how a kind runs. An
//! interface maps these to its own words and buttons.

/// How an approval of an operation may be delivered, from what its effect
/// kind needs to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deliveries {
    /// Any head of the principal runs it: the deciding interface now (or a
    /// proof carried in a private file), or a head that claims the
    /// approval later, in the proposing session or one the person names.
    AnyHead,
    /// Only the head that holds what the effect needs runs it (the
    /// gateway, which holds the upstreams' connections): the approval is
    /// handed off, to the proposing session or one the person names.
    HandoffOnly,
    /// Only the proposing session runs it (a coding agent's hook, which
    /// waits for the decision and lets the agent's own runtime run the
    /// call): the approval is handed off to that session, no other.
    ProposingSession,
    /// The approval is the effect (it creates a rule in the signer): no
    /// proof is issued and nothing is delivered.
    NoProof,
}

impl Deliveries {
    /// Whether the proof may come back to the deciding interface (to run
    /// now, or for a private file).
    pub fn direct(self) -> bool {
        matches!(self, Deliveries::AnyHead)
    }

    /// Whether the approval may be handed off to a session other than the
    /// proposing one.
    pub fn other_session(self) -> bool {
        matches!(self, Deliveries::AnyHead | Deliveries::HandoffOnly)
    }

    /// The name the signer's view and the docs use.
    pub fn as_str(self) -> &'static str {
        match self {
            Deliveries::AnyHead => "any_head",
            Deliveries::HandoffOnly => "handoff_only",
            Deliveries::ProposingSession => "proposing_session",
            Deliveries::NoProof => "no_proof",
        }
    }
}
