//! Passkey assurance in a proof: the optional `amr` and `pkh` claims.
//!
//! Owns: the closed list of authentication methods a signer may assert
//! ([`AuthMethod`]), the [`PasskeyAssurance`] pair that carries them with
//! the hash of the passkey credential id, and their strict reading from and
//! writing to claim values. Must not: decide whether an operation needs the
//! assurance (the registry says so and the gate enforces it) or check a
//! WebAuthn assertion (the signer does, before it signs).

use serde_json::Value;

use crate::canonical;
use crate::refusal::Refusal;

/// An authentication method the signer checked before it signed, as named
/// in the `amr` claim. Closed: a proof naming any other method is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuthMethod {
    /// `passkey-uv`: a WebAuthn assertion from the approver's registered
    /// passkey, with the user-verified (UV) flag set.
    PasskeyUv,
}

impl AuthMethod {
    /// Every method this verifier knows.
    pub const ALL: &'static [AuthMethod] = &[AuthMethod::PasskeyUv];

    /// The method's name in the `amr` claim.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMethod::PasskeyUv => "passkey-uv",
        }
    }

    /// The method named `name`, if this verifier knows it.
    pub fn from_name(name: &str) -> Option<AuthMethod> {
        AuthMethod::ALL.iter().copied().find(|m| m.as_str() == name)
    }
}

/// Why an `amr`/`pkh` pair cannot be carried by a proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InvalidPasskeyAssurance {
    /// `amr` names no method.
    #[error("amr must name at least one authentication method")]
    NoMethods,
    /// `amr` names a method twice.
    #[error("amr names {} twice", .0.as_str())]
    DuplicateMethod(AuthMethod),
    /// `pkh` is not 64 lowercase hex digits.
    #[error("pkh must be the lowercase hex SHA-256 of the credential id")]
    CredentialHash,
}

/// What the signer checked with a passkey before it signed: the methods
/// (`amr`: non-empty, no duplicates, each an [`AuthMethod`]) and the SHA-256
/// of the passkey's credential id (`pkh`: 64 lowercase hex digits). A proof
/// carries both claims or neither; a value of this type always holds a
/// valid pair, so writing it gives claims the verifier reads back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasskeyAssurance {
    methods: Vec<AuthMethod>,
    credential_id_sha256: String,
}

impl PasskeyAssurance {
    /// The assurance of `methods`, checked with the passkey whose credential
    /// id hashes (SHA-256, lowercase hex) to `credential_id_sha256`.
    pub fn new(
        methods: Vec<AuthMethod>,
        credential_id_sha256: String,
    ) -> Result<PasskeyAssurance, InvalidPasskeyAssurance> {
        if methods.is_empty() {
            return Err(InvalidPasskeyAssurance::NoMethods);
        }
        for (i, method) in methods.iter().enumerate() {
            if methods[..i].contains(method) {
                return Err(InvalidPasskeyAssurance::DuplicateMethod(*method));
            }
        }
        if !super::is_sha256_hex(&credential_id_sha256) {
            return Err(InvalidPasskeyAssurance::CredentialHash);
        }
        Ok(PasskeyAssurance {
            methods,
            credential_id_sha256,
        })
    }

    /// The assurance of `methods`, checked with the passkey whose
    /// credential id is `credential_id` (its raw bytes, hashed here).
    pub fn for_credential(
        methods: Vec<AuthMethod>,
        credential_id: &[u8],
    ) -> Result<PasskeyAssurance, InvalidPasskeyAssurance> {
        PasskeyAssurance::new(methods, canonical::sha256_hex(credential_id))
    }

    /// The methods, in the order the proof names them (`amr`).
    pub fn methods(&self) -> &[AuthMethod] {
        &self.methods
    }

    /// Whether the signer checked `method`.
    pub fn includes(&self, method: AuthMethod) -> bool {
        self.methods.contains(&method)
    }

    /// Lowercase hex SHA-256 of the passkey's credential id (`pkh`).
    pub fn credential_id_sha256(&self) -> &str {
        &self.credential_id_sha256
    }

    /// The `amr` claim's value.
    pub(super) fn amr_value(&self) -> Value {
        Value::Array(
            self.methods
                .iter()
                .map(|m| Value::String(m.as_str().to_owned()))
                .collect(),
        )
    }

    /// Reads the `amr` and `pkh` claim values strictly: anything but a valid
    /// pair of known methods and a credential hash is `Malformed`.
    pub(super) fn from_claim_values(amr: Value, pkh: Value) -> Result<PasskeyAssurance, Refusal> {
        let Value::Array(names) = amr else {
            return Err(Refusal::Malformed);
        };
        let methods = names
            .iter()
            .map(|name| name.as_str().and_then(AuthMethod::from_name))
            .collect::<Option<Vec<_>>>()
            .ok_or(Refusal::Malformed)?;
        let Value::String(pkh) = pkh else {
            return Err(Refusal::Malformed);
        };
        PasskeyAssurance::new(methods, pkh).map_err(|_| Refusal::Malformed)
    }
}
