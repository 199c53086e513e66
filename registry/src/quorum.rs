//! An operation's quorum: how many of its named approvers must approve the
//! same proposal before the signer issues a proof.
//!
//! `quorum = { required = M, approvers = ["alice", "bob", ...] }` in an
//! `[[operation]]` entry. Checked here at load: 1 ≤ M ≤ N, at most
//! [`MAX_QUORUM_APPROVERS`] names, each a valid approver name (the `<name>`
//! of a named approver certificate, `countersign://approver/<principal>/<name>`),
//! none twice. This module decides membership only; counting approvals is
//! the signer's and the ledger's.

use std::collections::BTreeSet;

use countersign_verifier::ApproverName;
use serde::Deserialize;
use serde_json::{Value, json};

/// Most approvers a quorum may name (a proof's provenance names every
/// approver who approved, so this bounds it too).
pub const MAX_QUORUM_APPROVERS: usize = countersign_verifier::claims::MAX_QUORUM_APPROVERS;

/// `quorum = { required, approvers }` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawQuorum {
    required: u64,
    approvers: Vec<String>,
}

/// A checked quorum: `required` distinct approvals out of `approvers`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quorum {
    required: u32,
    /// Sorted, distinct: the order written carries no meaning.
    approvers: Vec<ApproverName>,
}

/// `names` as approver names, sorted; the reason if one is not an
/// approver name or is listed twice.
pub(crate) fn approver_names(names: &[String]) -> Result<BTreeSet<ApproverName>, String> {
    let mut parsed = BTreeSet::new();
    for name in names {
        let approver = ApproverName::parse(name.as_str()).map_err(|_| {
            format!(
                "approver {name:?} is not an approver name (1 to 32 of a-z, 0-9 and -, not starting with -)"
            )
        })?;
        if !parsed.insert(approver) {
            return Err(format!("approver {name:?} is listed twice"));
        }
    }
    Ok(parsed)
}

impl RawQuorum {
    /// Checks the entry; the error is the reason (the caller names the field).
    pub(crate) fn build(&self) -> Result<Quorum, String> {
        if self.approvers.is_empty() {
            return Err("approvers must name at least one approver".into());
        }
        if self.approvers.len() > MAX_QUORUM_APPROVERS {
            return Err(format!(
                "approvers names {} approvers, more than {MAX_QUORUM_APPROVERS}",
                self.approvers.len()
            ));
        }
        let names = approver_names(&self.approvers)?;
        let n = names.len() as u64;
        if !(1..=n).contains(&self.required) {
            return Err(format!(
                "required = {} is outside 1..={n} (the number of approvers)",
                self.required
            ));
        }
        Ok(Quorum {
            // In range: at most MAX_QUORUM_APPROVERS, checked above.
            required: u32::try_from(self.required).map_err(|_| "required out of range")?,
            approvers: names.into_iter().collect(),
        })
    }
}

impl Quorum {
    /// A quorum of `required` out of the approvers named `approvers`,
    /// checked as a registry entry is; the error is the reason.
    pub fn new(required: u32, approvers: &[String]) -> Result<Quorum, String> {
        RawQuorum {
            required: u64::from(required),
            approvers: approvers.to_vec(),
        }
        .build()
    }

    /// The quorum that meets both `self` and `other`: the larger count,
    /// of the approvers both name; `None` when fewer approvers are named
    /// by both than that count (no group of approvers meets both).
    pub fn and(&self, other: &Quorum) -> Option<Quorum> {
        let required = self.required.max(other.required);
        let approvers: Vec<ApproverName> = self
            .approvers
            .iter()
            .filter(|name| other.is_member(name))
            .cloned()
            .collect();
        (approvers.len() >= required as usize).then_some(Quorum {
            required,
            approvers,
        })
    }

    /// How many distinct approvers must approve (M).
    pub fn required(&self) -> u32 {
        self.required
    }

    /// The approvers who may approve or deny (N names), sorted.
    pub fn approvers(&self) -> &[ApproverName] {
        &self.approvers
    }

    /// Whether `name` is one of the quorum's approvers.
    pub fn is_member(&self, name: &ApproverName) -> bool {
        self.approvers.binary_search(name).is_ok()
    }

    /// The quorum as it enters the contract revision.
    pub(crate) fn to_json(&self) -> Value {
        let approvers: Vec<&str> = self.approvers.iter().map(ApproverName::as_str).collect();
        json!({ "required": self.required, "approvers": approvers })
    }
}
