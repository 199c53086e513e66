//! The salted commitment to an action's arguments (`export
//! --commit-arguments`): the bundle carries the commitment, the salt and
//! the arguments go to a file of their own, and `verify --reveal` opens it.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The domain tag hashed before the salt.
const TAG: &[u8] = b"countersign-evidence/v1 arguments\n";

/// The commitment to `arguments` (canonical JSON text) under `salt`, hex.
pub fn commit(salt: &[u8; 32], arguments: &str) -> String {
    let mut h = Sha256::new();
    h.update(TAG);
    h.update(salt);
    h.update(arguments.as_bytes());
    hex::encode(h.finalize())
}

/// What opens a commitment: the arguments and the salt, as the salt file
/// holds them (`{"arguments": TEXT, "salt": HEX}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Opening {
    /// The canonical JSON text of the arguments.
    pub arguments: String,
    /// The 32-byte salt, hex.
    pub salt: String,
}

impl Opening {
    /// The commitment this opening makes, or `None` when its salt is not
    /// 32 bytes of hex.
    pub fn commitment(&self) -> Option<String> {
        let salt: [u8; 32] = hex::decode(&self.salt).ok()?.try_into().ok()?;
        Some(commit(&salt, &self.arguments))
    }
}
