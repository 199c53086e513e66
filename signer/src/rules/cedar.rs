//! A rule whose scope is written in Cedar (its definition's `cedar`): the
//! signer checks that scope against the registry's schema before a person
//! may create the rule, and asks it, beside the rule's other tests, at
//! each proposal the rule might approve.
//!
//! Owns the parsed scopes, cached by the definition's digest and the
//! schema's. Must not let a scope that no longer validates (the registry
//! changed under it) approve anything: it is parsed and checked again
//! against each new schema, and a scope that fails covers nothing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use countersign_policy::{CedarScope, GeneratedSchema, PolicyRequest};
use countersign_registry::rule::{RuleDefinition, RuleError};

/// Scopes parsed and checked, by definition digest and schema digest.
#[derive(Debug, Default)]
pub(crate) struct CedarScopes {
    parsed: Mutex<HashMap<(String, String), Arc<CedarScope>>>,
}

impl CedarScopes {
    /// `definition`'s Cedar scope checked against `schema` (`None`: the
    /// rule has none).
    pub(crate) fn checked(
        &self,
        definition: &RuleDefinition,
        schema: &GeneratedSchema,
    ) -> Result<Option<Arc<CedarScope>>, RuleError> {
        let Some(text) = &definition.cedar else {
            return Ok(None);
        };
        let key = (
            definition.sha256_hex().to_owned(),
            schema.digest().to_owned(),
        );
        let mut parsed = self.parsed.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(scope) = parsed.get(&key) {
            return Ok(Some(Arc::clone(scope)));
        }
        let scope = CedarScope::parse(text, &definition.operations, schema)
            .map_err(|e| RuleError::Cedar(e.to_string()))?;
        let scope = Arc::new(scope);
        // Scopes checked against an older schema are never asked again.
        parsed.retain(|(_, of), _| of == schema.digest());
        parsed.insert(key, Arc::clone(&scope));
        Ok(Some(scope))
    }

    /// Whether `definition`'s Cedar scope (if any) permits `request`. A
    /// scope that no longer checks against `schema`, or that cannot see
    /// the request exactly, permits nothing (the proposal waits for a
    /// person); the reason is logged.
    pub(crate) fn permits(
        &self,
        definition: &RuleDefinition,
        schema: &GeneratedSchema,
        request: &PolicyRequest<'_>,
    ) -> bool {
        let scope = match self.checked(definition, schema) {
            Ok(None) => return true,
            Ok(Some(scope)) => scope,
            Err(e) => {
                tracing::warn!(definition = definition.sha256_hex(), error = %e, "a rule's Cedar scope no longer checks; it approves nothing");
                return false;
            }
        };
        scope.permits(schema, request).unwrap_or_else(|e| {
            tracing::warn!(definition = definition.sha256_hex(), error = %e, "a rule's Cedar scope could not see the proposal; it approves nothing");
            false
        })
    }
}
