//! The `builtin` effect kind: one of the ledger's built-in effects over its
//! state store, applied by a head inside the ledger's one consuming
//! transaction. This module checks the definition only.

use serde::{Deserialize, Serialize};

use super::EffectKind;
use crate::{BuiltinEffect, RegistryError};

/// A `builtin` effect as the registry file writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Builtin {
    /// The builtin effect's name: a [`BuiltinEffect`], equal to the
    /// operation's name.
    pub name: String,
}

impl EffectKind for Builtin {
    fn name(&self) -> &'static str {
        "builtin"
    }

    fn check(&self, operation: &str, _require_passkey: bool) -> Result<(), RegistryError> {
        let name = &self.name;
        let reason = if name.parse::<BuiltinEffect>().is_err() {
            format!(
                "{name:?} is not a builtin (known: {})",
                BuiltinEffect::known()
            )
        } else if name != operation {
            format!("builtin {name:?} may only back the operation of the same name")
        } else {
            return Ok(());
        };
        Err(RegistryError::UnknownBuiltin {
            operation: operation.to_owned(),
            reason,
        })
    }

    /// None: applied inside the consuming transaction, no intent is left.
    fn timeout(&self) -> Option<std::time::Duration> {
        None
    }

    fn proof_reissuable(&self) -> bool {
        false
    }

    /// Applied by any head inside the ledger's transaction.
    fn deliveries(&self) -> crate::Deliveries {
        crate::Deliveries::AnyHead
    }
}
