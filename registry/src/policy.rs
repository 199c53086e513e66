//! The operator's approval policy: proof audience and lifetimes, and its
//! revision (bound into every proof), and the decision window of a
//! proposal. This module owns the lifetime and window rules; it must not
//! let any lifetime exceed the 1800 s hard cap, nor a window 7 days.

use countersign_verifier::canonical;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::definition::{DECISION_WINDOW_CAP_SECS, LIFETIME_CAP_SECS};
use crate::{Operation, PolicyError};

/// The operator-set values that shape every proof, and the decision
/// window of every proposal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// The proof audience (`aud`) verifiers expect.
    pub audience: String,
    /// Lifetime for operations that request none, 1..=1800 s (300 by default).
    pub default_lifetime_secs: u64,
    /// Ceiling on any lifetime, 1..=1800 s.
    pub max_lifetime_secs: u64,
    /// How long a proposal of an operation that sets no window of its own
    /// waits for a decision before it expires, 1..=604800 s (3600 by
    /// default). Not in the revision: no proof binds it.
    #[serde(default = "default_decision_window")]
    pub decision_window_secs: u64,
}

fn default_decision_window() -> u64 {
    Policy::DEFAULT_DECISION_WINDOW_SECS
}

impl Policy {
    /// The hard cap on any proof lifetime, in seconds.
    pub const LIFETIME_CAP_SECS: u64 = LIFETIME_CAP_SECS;
    /// The default lifetime when the operator sets none, in seconds.
    pub const DEFAULT_LIFETIME_SECS: u64 = countersign_verifier::lifetimes::DEFAULT_LIFETIME_SECS;
    /// The decision window when the operator sets none, in seconds: an hour.
    pub const DEFAULT_DECISION_WINDOW_SECS: u64 = 3600;
    /// The longest decision window, in seconds: 7 days.
    pub const DECISION_WINDOW_CAP_SECS: u64 = DECISION_WINDOW_CAP_SECS;

    /// Builds a policy and checks it (see [`Policy::validate`]).
    pub fn new(
        audience: impl Into<String>,
        default_lifetime_secs: u64,
        max_lifetime_secs: u64,
    ) -> Result<Policy, PolicyError> {
        let policy = Policy {
            audience: audience.into(),
            default_lifetime_secs,
            max_lifetime_secs,
            decision_window_secs: Policy::DEFAULT_DECISION_WINDOW_SECS,
        };
        policy.validate()?;
        Ok(policy)
    }

    /// This policy with `secs` as its decision window, checked.
    pub fn with_decision_window(mut self, secs: u64) -> Result<Policy, PolicyError> {
        self.decision_window_secs = secs;
        self.validate()?;
        Ok(self)
    }

    /// Refuses an empty or non-printable audience, lifetimes of 0 or above
    /// 1800 s, a default above the maximum, and a decision window of 0 or
    /// above 7 days.
    pub fn validate(&self) -> Result<(), PolicyError> {
        let audience_ok = !self.audience.is_empty()
            && self.audience.len() <= 256
            && self.audience.bytes().all(|b| b.is_ascii_graphic());
        if !audience_ok {
            return Err(PolicyError::BadAudience);
        }
        for (field, value) in [
            ("default_lifetime_secs", self.default_lifetime_secs),
            ("max_lifetime_secs", self.max_lifetime_secs),
        ] {
            if !(1..=LIFETIME_CAP_SECS).contains(&value) {
                return Err(PolicyError::LifetimeOutOfRange {
                    field,
                    value,
                    cap: LIFETIME_CAP_SECS,
                });
            }
        }
        if self.default_lifetime_secs > self.max_lifetime_secs {
            return Err(PolicyError::DefaultAboveMax {
                default: self.default_lifetime_secs,
                max: self.max_lifetime_secs,
            });
        }
        if !(1..=DECISION_WINDOW_CAP_SECS).contains(&self.decision_window_secs) {
            return Err(PolicyError::DecisionWindowOutOfRange {
                value: self.decision_window_secs,
                cap: DECISION_WINDOW_CAP_SECS,
            });
        }
        Ok(())
    }

    /// SHA-256 hex of the canonical JSON of
    /// `{"audience", "default_lifetime_secs", "max_lifetime_secs"}`.
    ///
    /// Lifetimes above 2^53 − 1 have no canonical form; such a policy (which
    /// [`Policy::validate`] refuses) gets the revision `"invalid-policy"`,
    /// which no proof made from a valid policy can carry.
    pub fn revision(&self) -> String {
        let value = json!({
            "audience": self.audience,
            "default_lifetime_secs": self.default_lifetime_secs,
            "max_lifetime_secs": self.max_lifetime_secs,
        });
        canonical::canonical_sha256_hex(&value).unwrap_or_else(|_| "invalid-policy".to_owned())
    }

    /// The operation's lifetime, else the default, capped at the maximum and
    /// at the 1800 s hard cap.
    pub fn lifetime_for(&self, op: &Operation) -> u64 {
        op.lifetime_secs
            .unwrap_or(self.default_lifetime_secs)
            .min(self.max_lifetime_secs)
            .min(LIFETIME_CAP_SECS)
    }

    /// How long a proposal of `op` waits for a decision: the operation's
    /// window, else this policy's, capped at 7 days.
    pub fn decision_window_for(&self, op: &Operation) -> u64 {
        op.decision_window_secs
            .unwrap_or(self.decision_window_secs)
            .min(DECISION_WINDOW_CAP_SECS)
    }
}
