//! Evaluating a request against a policy set, with countersign's
//! precedence: forbid, then require approval, then permit; no satisfied
//! permit means a person decides, as without a policy. And the shadow
//! comparison of a log-only set's verdict with the binding one's.
//!
//! This module owns the precedence and the fail-safe reading of Cedar's
//! evaluation errors: a `forbid` whose condition errors counts as a
//! satisfied forbid (an error must never open a way through), and a
//! `permit` whose condition errors counts as not satisfied (Cedar's own
//! reading). It must not let an error, a conflict or a missing policy end
//! in a permit.

use std::collections::BTreeSet;

use cedar_policy::{AuthorizationError, Effect};

use crate::annotations::{self, ApprovalQuorum};
use crate::{GeneratedSchema, PolicyRequest, PolicySet, RequestError};

/// What a policy set says about one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A `forbid` is satisfied (or errored), or several `@require_approval`
    /// permits ask for approvals no approver group can give together: the
    /// proposal is refused, no person is asked.
    Forbid {
        /// The forbids satisfied or erroring (or the conflicting
        /// `@require_approval` permits), sorted.
        policies: Vec<String>,
    },
    /// A `@require_approval` permit is satisfied and no forbid: a person
    /// must approve, with this quorum when one is named.
    RequireApproval {
        /// The satisfied `@require_approval` permits, sorted.
        policies: Vec<String>,
        /// The strictest combination of their quorums (see
        /// `annotations.rs`); `None`: any one approver of the principal.
        quorum: Option<ApprovalQuorum>,
    },
    /// Permits are satisfied, none requiring approval, and no forbid.
    Permit {
        /// The satisfied permits, sorted.
        policies: Vec<String>,
    },
    /// Nothing is satisfied: a person decides, as without a policy.
    PersonDecides,
}

/// The kind of a verdict, as the test table writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// [`Verdict::Forbid`], `"forbid"`.
    Forbid,
    /// [`Verdict::RequireApproval`], `"require_approval"`.
    RequireApproval,
    /// [`Verdict::Permit`], `"permit"`.
    Permit,
    /// [`Verdict::PersonDecides`], `"person"`.
    #[serde(rename = "person")]
    PersonDecides,
}

impl VerdictKind {
    /// The name the test table uses.
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictKind::Forbid => "forbid",
            VerdictKind::RequireApproval => "require_approval",
            VerdictKind::Permit => "permit",
            VerdictKind::PersonDecides => "person",
        }
    }
}

impl Verdict {
    /// Its kind.
    pub fn kind(&self) -> VerdictKind {
        match self {
            Verdict::Forbid { .. } => VerdictKind::Forbid,
            Verdict::RequireApproval { .. } => VerdictKind::RequireApproval,
            Verdict::Permit { .. } => VerdictKind::Permit,
            Verdict::PersonDecides => VerdictKind::PersonDecides,
        }
    }

    /// The policies that determined it (none for
    /// [`Verdict::PersonDecides`]).
    pub fn policies(&self) -> &[String] {
        match self {
            Verdict::Forbid { policies }
            | Verdict::RequireApproval { policies, .. }
            | Verdict::Permit { policies } => policies,
            Verdict::PersonDecides => &[],
        }
    }
}

/// Whether a policy set decides or is only watched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Its verdict is the one acted on.
    Binding,
    /// Evaluated beside the binding set; its verdict is only compared
    /// ([`shadow_difference`]) and recorded.
    LogOnly,
}

/// A log-only set's verdict that differs from the binding set's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// What the binding set said (and what was acted on).
    pub binding: Verdict,
    /// What the log-only set would have said.
    pub shadow: Verdict,
}

/// The difference between a binding verdict and a log-only one, if their
/// outcomes differ: another kind, or another quorum. The same outcome
/// reached through other policies is no difference.
pub fn shadow_difference(binding: &Verdict, shadow: &Verdict) -> Option<Difference> {
    let same = match (binding, shadow) {
        (
            Verdict::RequireApproval { quorum: a, .. },
            Verdict::RequireApproval { quorum: b, .. },
        ) => a == b,
        (a, b) => a.kind() == b.kind(),
    };
    (!same).then(|| Difference {
        binding: binding.clone(),
        shadow: shadow.clone(),
    })
}

impl PolicySet {
    /// Evaluates `request` against this set under `schema` (which the set
    /// should have passed [`PolicySet::validate`] against). Refuses a
    /// request Cedar cannot see exactly ([`RequestError::NotRepresentable`]).
    pub fn evaluate(
        &self,
        schema: &GeneratedSchema,
        request: &PolicyRequest<'_>,
    ) -> Result<Verdict, RequestError> {
        let cedar = request.to_cedar(schema)?;
        let response = self.authorizer.is_authorized(
            &cedar.request,
            self.for_action(request.operation),
            &cedar.entities,
        );
        let diagnostics = response.diagnostics();
        let mut forbids = BTreeSet::new();
        let mut permits = BTreeSet::new();
        for id in diagnostics.reason() {
            let id = id.to_string();
            match self.policies.get(&id).map(|p| p.effect) {
                Some(Effect::Permit) => permits.insert(id),
                // A satisfied policy this set does not know: refuse.
                Some(Effect::Forbid) | None => forbids.insert(id),
            };
        }
        for error in diagnostics.errors() {
            let AuthorizationError::PolicyEvaluationError(error) = error;
            let id = error.policy_id().to_string();
            match self.policies.get(&id).map(|p| p.effect) {
                Some(Effect::Permit) => {}
                Some(Effect::Forbid) | None => {
                    forbids.insert(id);
                }
            }
        }
        if !forbids.is_empty() {
            return Ok(Verdict::Forbid {
                policies: forbids.into_iter().collect(),
            });
        }
        let (requiring, plain): (Vec<String>, Vec<String>) = permits
            .into_iter()
            .partition(|id| self.policies.get(id).is_some_and(|p| p.approval.is_some()));
        if !requiring.is_empty() {
            let approvals = requiring
                .iter()
                .filter_map(|id| self.policies.get(id).and_then(|p| p.approval.as_ref()));
            return Ok(match annotations::combine(approvals) {
                Ok(quorum) => Verdict::RequireApproval {
                    policies: requiring,
                    quorum,
                },
                Err(()) => Verdict::Forbid {
                    policies: requiring,
                },
            });
        }
        if !plain.is_empty() {
            return Ok(Verdict::Permit { policies: plain });
        }
        Ok(Verdict::PersonDecides)
    }
}
