//! The one mapping between the wire's status and decision enums and the
//! stable lowercase names every head prints (`pending`, `approve`, ...) and
//! parses (`--status applied`). The matches are exhaustive: a value added to
//! an enum in `signer.proto` does not build until it has a name here, and
//! every renderer that matches the enum fails to build the same way.

use std::fmt;
use std::str::FromStr;

use crate::v1::{ProposalStatus, QuorumDecision, RuleStatus};

/// A name that is not one of the enum's values; the message lists them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} `{name}`: expected one of {expected}")]
pub struct UnknownName {
    kind: &'static str,
    name: String,
    expected: String,
}

/// Declares `ALL`, `name`, `Display` and `FromStr` for a wire enum from one
/// list of (value, name) pairs; `UNSPECIFIED` is what a head reads when a
/// newer signer sent a value it does not know, printed as `unknown` and
/// never parsed.
macro_rules! names {
    ($enum:ident, $kind:literal, unspecified: $unspecified:ident, $($value:ident => $name:literal),+ $(,)?) => {
        impl $enum {
            /// Every value a signer sends, in the proto's order.
            pub const ALL: &'static [$enum] = &[$($enum::$value),+];

            /// The stable lowercase name heads print; `unknown` for a
            /// value this head does not know.
            pub fn name(self) -> &'static str {
                match self {
                    $enum::$unspecified => "unknown",
                    $($enum::$value => $name),+
                }
            }
        }

        impl fmt::Display for $enum {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl FromStr for $enum {
            type Err = UnknownName;

            fn from_str(name: &str) -> Result<Self, UnknownName> {
                $enum::ALL
                    .iter()
                    .copied()
                    .find(|value| value.name() == name)
                    .ok_or_else(|| UnknownName {
                        kind: $kind,
                        name: name.to_owned(),
                        expected: [$($name),+].join(", "),
                    })
            }
        }
    };
}

names!(ProposalStatus, "proposal status", unspecified: Unspecified,
    Pending => "pending",
    Denied => "denied",
    Withdrawn => "withdrawn",
    Approved => "approved",
    Revoked => "revoked",
    Expired => "expired",
    Applied => "applied",
    Failed => "failed",
    Uncertain => "uncertain",
);

names!(RuleStatus, "rule status", unspecified: Unspecified,
    Active => "active",
    Revoked => "revoked",
    Expired => "expired",
    Proposed => "proposed",
);

names!(QuorumDecision, "quorum decision", unspecified: Unspecified,
    Approve => "approve",
    Deny => "deny",
);

impl ProposalStatus {
    /// Whether a person can still decide it: approve, deny, or (quorum)
    /// add an approval. Matched exhaustively, so a new status must say.
    pub fn awaits_decision(self) -> bool {
        match self {
            ProposalStatus::Pending => true,
            ProposalStatus::Denied
            | ProposalStatus::Withdrawn
            | ProposalStatus::Approved
            | ProposalStatus::Revoked
            | ProposalStatus::Expired
            | ProposalStatus::Applied
            | ProposalStatus::Failed
            | ProposalStatus::Uncertain
            | ProposalStatus::Unspecified => false,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_name_parses_back_to_its_value_and_unknown_is_never_parsed() {
        for status in ProposalStatus::ALL {
            assert_eq!(status.name().parse::<ProposalStatus>(), Ok(*status));
        }
        for status in RuleStatus::ALL {
            assert_eq!(status.name().parse::<RuleStatus>(), Ok(*status));
        }
        for decision in QuorumDecision::ALL {
            assert_eq!(decision.name().parse::<QuorumDecision>(), Ok(*decision));
        }
        assert_eq!(ProposalStatus::Unspecified.name(), "unknown");
        let refused = "unknown".parse::<ProposalStatus>().unwrap_err();
        assert_eq!(
            refused.to_string(),
            "unknown proposal status `unknown`: expected one of pending, denied, withdrawn, \
             approved, revoked, expired, applied, failed, uncertain"
        );
    }

    #[test]
    fn every_wire_value_but_unspecified_has_a_name() {
        // The generated enums' values, by their protobuf number: each one
        // but 0 is in `ALL` (so a value added to the proto and not here is
        // caught even where nothing matches it yet).
        let numbered = |n| ProposalStatus::try_from(n).ok();
        let count = (1..64).filter_map(numbered).count();
        assert_eq!(count, ProposalStatus::ALL.len());
        let count = (1..64).filter_map(|n| RuleStatus::try_from(n).ok()).count();
        assert_eq!(count, RuleStatus::ALL.len());
        let count = (1..64)
            .filter_map(|n| QuorumDecision::try_from(n).ok())
            .count();
        assert_eq!(count, QuorumDecision::ALL.len());
    }
}
