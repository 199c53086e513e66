//! The annotations countersign reads on a policy: `@id("...")`,
//! `@require_approval`, `@quorum("N")` and `@approvers("a,b")`, checked
//! when the policy set is parsed, and how the approvals several satisfied
//! policies require combine.
//!
//! This module owns those rules. It must not relax a requirement: when
//! several policies require approval, the strictest count wins and only
//! approvers every group names count (the intersection); a combination no
//! approver group can meet is refused, never loosened.
//!
//! - `@require_approval` (no value) on a `permit`: a satisfied one means a
//!   person must approve even though the policy permits. On a `forbid` it
//!   is refused (a forbid is never approved).
//! - `@approvers("alice,bob")`: the named approvers (comma-separated
//!   approver names, none twice, at most 16) who may approve;
//!   `@quorum("2")`: how many of them must (1 up to their number).
//!   `@quorum` needs `@approvers`; either needs `@require_approval`.
//!   `@approvers` alone is a quorum of one of them.
//!
//! Other annotations are left to the operator (documentation, `@advice`).

use std::collections::BTreeSet;

use cedar_policy::{Effect, Policy};
use countersign_registry::{ApproverName, MAX_QUORUM_APPROVERS};

/// The annotation naming a policy.
pub const ID: &str = "id";
/// The annotation marking a permit as requiring a person's approval.
pub const REQUIRE_APPROVAL: &str = "require_approval";
/// The annotation giving how many named approvers must approve.
pub const QUORUM: &str = "quorum";
/// The annotation naming the approvers who may approve.
pub const APPROVERS: &str = "approvers";

/// Who must approve: `required` distinct approvals out of `approvers`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalQuorum {
    /// How many distinct approvers must approve (at least 1).
    pub required: u32,
    /// The approvers who may, sorted, distinct; never fewer than `required`.
    pub approvers: Vec<ApproverName>,
}

/// What a `@require_approval` permit asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Approval {
    /// `None`: any one approver of the principal, as without a policy.
    pub(crate) quorum: Option<ApprovalQuorum>,
}

/// The approval `policy` requires, if it is a `@require_approval` permit;
/// the error is the reason its annotations are refused.
pub(crate) fn approval(policy: &Policy) -> Result<Option<Approval>, String> {
    let quorum = policy.annotation(QUORUM);
    let approvers = policy.annotation(APPROVERS);
    let Some(marker) = policy.annotation(REQUIRE_APPROVAL) else {
        if quorum.is_some() || approvers.is_some() {
            return Err(format!(
                "@{QUORUM} and @{APPROVERS} need @{REQUIRE_APPROVAL}"
            ));
        }
        return Ok(None);
    };
    if !marker.is_empty() {
        return Err(format!("@{REQUIRE_APPROVAL} takes no value"));
    }
    if policy.effect() == Effect::Forbid {
        return Err(format!(
            "@{REQUIRE_APPROVAL} is for a permit: a forbid is never approved"
        ));
    }
    let approvers = match approvers {
        None if quorum.is_some() => {
            return Err(format!("@{QUORUM} needs @{APPROVERS}: a quorum of whom?"));
        }
        None => return Ok(Some(Approval { quorum: None })),
        Some(list) => approver_list(list)?,
    };
    let required = match quorum {
        None => 1,
        Some(text) => {
            let digits_only = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
            match text.parse::<u32>() {
                Ok(n) if digits_only && n >= 1 && n as usize <= approvers.len() => n,
                _ => {
                    return Err(format!(
                        "@{QUORUM}({text:?}) must be a whole number from 1 to {} (the number of @{APPROVERS})",
                        approvers.len()
                    ));
                }
            }
        }
    };
    Ok(Some(Approval {
        quorum: Some(ApprovalQuorum {
            required,
            approvers: approvers.into_iter().collect(),
        }),
    }))
}

/// `"alice,bob"` as distinct approver names.
fn approver_list(list: &str) -> Result<BTreeSet<ApproverName>, String> {
    let mut names = BTreeSet::new();
    for name in list.split(',').map(str::trim) {
        let parsed = ApproverName::parse(name).map_err(|_| {
            format!(
                "@{APPROVERS}: {name:?} is not an approver name (1 to 32 of a-z, 0-9 and -, not starting with -)"
            )
        })?;
        if !names.insert(parsed) {
            return Err(format!("@{APPROVERS}: {name:?} is listed twice"));
        }
    }
    if names.len() > MAX_QUORUM_APPROVERS {
        return Err(format!(
            "@{APPROVERS} names {} approvers, more than {MAX_QUORUM_APPROVERS}",
            names.len()
        ));
    }
    Ok(names)
}

/// The approval several satisfied `@require_approval` permits require
/// together: the highest count, from the approvers every group names.
/// `Err(())` when those approvers are fewer than the count: no approval
/// could satisfy every policy, and the caller refuses.
pub(crate) fn combine<'a>(
    approvals: impl IntoIterator<Item = &'a Approval>,
) -> Result<Option<ApprovalQuorum>, ()> {
    let mut required = 1;
    let mut group: Option<BTreeSet<&ApproverName>> = None;
    for quorum in approvals.into_iter().filter_map(|a| a.quorum.as_ref()) {
        required = required.max(quorum.required);
        let names: BTreeSet<&ApproverName> = quorum.approvers.iter().collect();
        group = Some(match group {
            None => names,
            Some(group) => group.intersection(&names).copied().collect(),
        });
    }
    let Some(group) = group else {
        return Ok(None);
    };
    if group.len() < required as usize {
        return Err(());
    }
    Ok(Some(ApprovalQuorum {
        required,
        approvers: group.into_iter().cloned().collect(),
    }))
}
