//! The `command` effect kind: a fixed program run without a shell, the
//! canonical arguments on its stdin, by a head between an intent and a
//! completion. This module checks the definition only; it must not run
//! anything.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{EffectKind, TIMEOUT_SECS, invalid};
use crate::RegistryError;

/// A `command` effect as the registry file writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Command {
    /// Absolute path of the program.
    pub program: PathBuf,
    /// Fixed arguments passed to the program (never from the proposal).
    #[serde(default)]
    pub args: Vec<String>,
    /// Seconds before the program is killed, 1..=300.
    pub timeout_secs: u64,
}

impl EffectKind for Command {
    fn name(&self) -> &'static str {
        "command"
    }

    fn check(&self, operation: &str, _require_passkey: bool) -> Result<(), RegistryError> {
        let Command {
            program,
            args,
            timeout_secs,
        } = self;
        if !program.is_absolute() {
            return Err(RegistryError::RelativeProgram {
                operation: operation.to_owned(),
                program: program.display().to_string(),
            });
        }
        if program.as_os_str().as_encoded_bytes().contains(&0) {
            return Err(invalid(operation, "program", "contains a NUL byte".into()));
        }
        if args.iter().any(|a| a.contains('\0')) {
            return Err(invalid(
                operation,
                "args",
                "an argument contains a NUL byte".into(),
            ));
        }
        if !TIMEOUT_SECS.contains(timeout_secs) {
            return Err(invalid(
                operation,
                "timeout_secs",
                format!("{timeout_secs} is outside 1..=300"),
            ));
        }
        Ok(())
    }

    fn timeout(&self) -> Option<std::time::Duration> {
        Some(std::time::Duration::from_secs(self.timeout_secs))
    }

    fn proof_reissuable(&self) -> bool {
        false
    }

    /// Any head of the installation runs the fixed program.
    fn deliveries(&self) -> crate::Deliveries {
        crate::Deliveries::AnyHead
    }
}
