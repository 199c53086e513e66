//! The `pin` effect kind: `gateway.pin` only. A person's approval of the
//! proposal lets a head write the tool definitions its arguments carry into
//! the pins file beside its registry, between an intent and a completion.
//! Its operation is made from `gateway.toml`, never written in the
//! registry file. This module checks the definition only; it must not
//! touch a file.

use super::{EffectKind, invalid};
use crate::RegistryError;
use crate::gateway::PIN_OPERATION;

/// How long writing the pins file may take before the head gives up.
const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The `pin` effect: it has no fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PinTools;

impl EffectKind for PinTools {
    fn name(&self) -> &'static str {
        "pin"
    }

    fn check(&self, operation: &str, _require_passkey: bool) -> Result<(), RegistryError> {
        if operation != PIN_OPERATION {
            return Err(invalid(
                operation,
                "kind",
                format!("the effect kind \"pin\" backs exactly the operation {PIN_OPERATION}"),
            ));
        }
        Ok(())
    }

    fn timeout(&self) -> Option<std::time::Duration> {
        Some(TIMEOUT)
    }

    fn proof_reissuable(&self) -> bool {
        false
    }

    /// Any head that follows the registry file writes the pins beside it.
    fn deliveries(&self) -> crate::Deliveries {
        crate::Deliveries::AnyHead
    }
}
