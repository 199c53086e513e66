//! The `rule` effect kind: a person's approval of `rule.create` creates
//! the auto-approval rule its arguments define, in the signer. No proof is
//! issued and no head applies it. This module checks the definition only.

use super::{EffectKind, invalid};
use crate::RegistryError;
use crate::rule::RULE_CREATE;

/// The `rule` effect: it has no fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule;

/// The refusal of a rule effect on another operation than `rule.create`,
/// or of another kind on `rule.create`.
pub(super) fn backs_only_rule_create(operation: &str) -> RegistryError {
    invalid(
        operation,
        "kind",
        "the effect kind \"rule\" backs exactly the operation rule.create".into(),
    )
}

impl EffectKind for Rule {
    fn name(&self) -> &'static str {
        "rule"
    }

    fn check(&self, operation: &str, require_passkey: bool) -> Result<(), RegistryError> {
        if operation != RULE_CREATE {
            return Err(backs_only_rule_create(operation));
        }
        // Rules never cover an operation that requires a passkey, and
        // an installation that requires one for every approval refuses
        // every rule: a passkey on rule.create itself would add nothing
        // the signer could honour without storing its assertion.
        if require_passkey {
            return Err(invalid(
                operation,
                "kind",
                "rule.create cannot require a passkey (see docs/rules.md)".into(),
            ));
        }
        Ok(())
    }

    /// None: no head applies it.
    fn timeout(&self) -> Option<std::time::Duration> {
        None
    }

    fn proof_reissuable(&self) -> bool {
        false
    }

    /// The approval creates the rule in the signer; no proof exists.
    fn deliveries(&self) -> crate::Deliveries {
        crate::Deliveries::NoProof
    }
}
