//! The operator's approval policy: proof audience and lifetimes, and its
//! revision (bound into every proof). This module owns the lifetime rules;
//! it must not let any lifetime exceed the 1800 s hard cap.

use countersign_verifier::canonical;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::definition::LIFETIME_CAP_SECS;
use crate::{Operation, PolicyError};

/// The operator-set values that shape every proof.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// The proof audience (`aud`) verifiers expect.
    pub audience: String,
    /// Lifetime for operations that request none, 1..=1800 s (300 by default).
    pub default_lifetime_secs: u64,
    /// Ceiling on any lifetime, 1..=1800 s.
    pub max_lifetime_secs: u64,
}

impl Policy {
    /// The hard cap on any proof lifetime, in seconds.
    pub const LIFETIME_CAP_SECS: u64 = LIFETIME_CAP_SECS;
    /// The default lifetime when the operator sets none, in seconds.
    pub const DEFAULT_LIFETIME_SECS: u64 = countersign_verifier::lifetimes::DEFAULT_LIFETIME_SECS;

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
        };
        policy.validate()?;
        Ok(policy)
    }

    /// Refuses an empty or non-printable audience, lifetimes of 0 or above
    /// 1800 s, and a default above the maximum.
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
}
