//! The one compilation of the data operations' parameter schemas.
//!
//! Owns: a cache of compiled validators, one per data operation (and per
//! registry operation for `propose`, keyed by its contract revision), for
//! the registry a head serves; it is emptied when the head passes a registry
//! that is not the one the cache was built for (the file was reloaded), so
//! a validator never outlives the schema it was compiled from. Every head
//! validates through it, so the rules and the error lines are the same.
//!
//! Must not: carry a parameter's value into an error line (the lines come
//! from [`countersign_registry::schema_errors`], which masks values).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use countersign_registry::{Operation as RegistryOperation, Registry};
use countersign_surface::operations::{DataOperation, ParamSchema};
use jsonschema::Validator;
use serde_json::Value;

/// Why parameters were not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamsError {
    /// They do not match the schema: up to four masked lines, each
    /// `<path>: <message>`.
    #[error("{}", .0.join("; "))]
    Invalid(Vec<String>),
    /// The schema itself does not compile (a fault of the table or registry).
    #[error("the parameter schema of {operation} does not compile: {detail}")]
    Schema {
        /// The data operation (`propose:<registry operation>` for proposals).
        operation: String,
        /// What the compiler said.
        detail: String,
    },
}

/// Compiled parameter validators for one registry at a time.
#[derive(Default)]
pub struct Schemas {
    cache: Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
    /// The registry the validators below were compiled for.
    registry: Option<Arc<Registry>>,
    validators: HashMap<String, Arc<Validator>>,
}

impl Schemas {
    /// Check `params` against the parameter schema of `op` (of `registry_op`
    /// for `propose`), compiling it on first use for `registry`.
    pub fn check(
        &self,
        registry: &Arc<Registry>,
        op: &DataOperation,
        registry_op: Option<&RegistryOperation>,
        params: &Value,
    ) -> Result<(), ParamsError> {
        let validator = self.validator(registry, op, registry_op)?;
        let lines = countersign_registry::schema_errors(&validator, params);
        if lines.is_empty() {
            Ok(())
        } else {
            Err(ParamsError::Invalid(lines))
        }
    }

    /// Compile every parameter schema of `table` for `registry` now, so a
    /// head that cannot validate a call refuses to start.
    pub fn compile_all(
        &self,
        registry: &Arc<Registry>,
        table: &[DataOperation],
    ) -> Result<(), ParamsError> {
        for op in table {
            match op.params {
                ParamSchema::Propose => {
                    for reg in registry.proposable() {
                        self.validator(registry, op, Some(reg))?;
                    }
                }
                ParamSchema::Fixed(_) => {
                    self.validator(registry, op, None)?;
                }
            }
        }
        Ok(())
    }

    fn validator(
        &self,
        registry: &Arc<Registry>,
        op: &DataOperation,
        registry_op: Option<&RegistryOperation>,
    ) -> Result<Arc<Validator>, ParamsError> {
        let (name, key) = match registry_op {
            Some(reg) => {
                let name = format!("{}:{}", op.name, reg.name);
                let key = format!("{name}@{}", reg.contract_revision());
                (name, key)
            }
            None => (op.name.to_string(), op.name.to_string()),
        };
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if !cache
            .registry
            .as_ref()
            .is_some_and(|r| Arc::ptr_eq(r, registry))
        {
            cache.registry = Some(Arc::clone(registry));
            cache.validators.clear();
        }
        if let Some(validator) = cache.validators.get(&key) {
            return Ok(Arc::clone(validator));
        }
        let schema = op.params.schema(registry_op);
        let validator = Arc::new(
            jsonschema::options()
                .with_draft(jsonschema::Draft::Draft202012)
                .offline()
                .should_validate_formats(true)
                .build(&schema)
                .map_err(|e| ParamsError::Schema {
                    operation: name,
                    detail: e.masked().to_string(),
                })?,
        );
        cache.validators.insert(key, Arc::clone(&validator));
        Ok(validator)
    }

    /// How many validators are compiled (for tests).
    pub fn compiled(&self) -> usize {
        let cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        cache.validators.len()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use countersign_surface::DATA_OPERATIONS;
    use serde_json::json;

    fn registry() -> Arc<Registry> {
        Arc::new(Registry::from_toml_str(Registry::default_toml()).unwrap())
    }

    fn get_proposal() -> &'static DataOperation {
        DATA_OPERATIONS
            .iter()
            .find(|o| o.name == "get_proposal")
            .unwrap()
    }

    #[test]
    fn each_schema_is_compiled_once_per_registry() {
        let (schemas, registry) = (Schemas::default(), registry());
        schemas.compile_all(&registry, DATA_OPERATIONS).unwrap();
        let all = schemas.compiled();
        let id = json!({"proposal_id": format!("prop_{}", "0".repeat(32))});
        schemas.check(&registry, get_proposal(), None, &id).unwrap();
        assert_eq!(schemas.compiled(), all);
        // A reloaded registry (another value) starts a fresh cache.
        schemas
            .check(&self::registry(), get_proposal(), None, &id)
            .unwrap();
        assert_eq!(schemas.compiled(), 1);
    }

    #[test]
    fn refuses_parameters_outside_the_schema_with_masked_lines() {
        let schemas = Schemas::default();
        let err = schemas
            .check(
                &registry(),
                get_proposal(),
                None,
                &json!({"proposal_id": "secret-ish"}),
            )
            .unwrap_err();
        let ParamsError::Invalid(lines) = &err else {
            panic!("{err}");
        };
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with("/proposal_id: "), "{lines:?}");
        assert!(!err.to_string().contains("secret-ish"), "{err}");
    }
}
