//! Why a WebAuthn registration or assertion was refused: one variant per
//! refusal, each with a stable reason code for the wire.

use countersign_reason::Reason;

/// A refused registration or assertion.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebAuthnError {
    /// The bytes are not what WebAuthn defines (CBOR, JSON, lengths, base64url).
    #[error("malformed WebAuthn data: {0}")]
    Malformed(&'static str),
    /// clientDataJSON `type` is not the ceremony's (`webauthn.create` / `webauthn.get`).
    #[error("client data is not for {expected}")]
    WrongType {
        /// The type this ceremony needs.
        expected: &'static str,
    },
    /// clientDataJSON `challenge` is not the one the signer issued.
    #[error("the assertion was made for another challenge")]
    BadChallenge,
    /// clientDataJSON `origin` is not one of the relying party's origins.
    #[error("origin {0:?} is not allowed")]
    WrongOrigin(String),
    /// clientDataJSON says the ceremony ran in a cross-origin frame.
    #[error("cross-origin ceremonies are not allowed")]
    CrossOrigin,
    /// The authenticator data's RP ID hash is not SHA-256 of our RP ID.
    #[error("the authenticator data is for another relying party")]
    WrongRp,
    /// The user-present flag is clear.
    #[error("the authenticator did not test user presence")]
    NoUserPresence,
    /// The user-verified flag is clear: no PIN or biometric was checked.
    #[error("the authenticator did not verify the user")]
    NoUserVerification,
    /// A registration without attested credential data.
    #[error("the registration carries no credential")]
    NoCredentialData,
    /// An attestation format other than `none`.
    #[error("attestation format {0:?} is not accepted (only \"none\")")]
    UnsupportedAttestation(String),
    /// A public key other than ES256/P-256 or EdDSA/Ed25519.
    #[error("only ES256 (P-256) and EdDSA (Ed25519) keys are accepted")]
    UnsupportedKey,
    /// The assertion names another credential than the enrolled one.
    #[error("the assertion is from another credential")]
    WrongCredential,
    /// The signature does not verify with the credential's public key.
    #[error("the assertion's signature does not verify")]
    BadSignature,
    /// The signature counter did not increase: a replay or a cloned authenticator.
    #[error("signature counter {received} is not above {stored}: replay or cloned authenticator")]
    CounterNotIncreased {
        /// The counter stored with the credential.
        stored: u32,
        /// The counter in the assertion.
        received: u32,
    },
}

impl WebAuthnError {
    /// The stable snake_case code of [`Self::reason`] (safe for wire
    /// formats, logs and test vectors).
    pub fn code(&self) -> &'static str {
        self.reason().code()
    }

    /// This refusal's reason in the one catalogue.
    pub fn reason(&self) -> Reason {
        match self {
            WebAuthnError::Malformed(_) => Reason::WebauthnMalformed,
            WebAuthnError::WrongType { .. } => Reason::WebauthnWrongType,
            WebAuthnError::BadChallenge => Reason::WebauthnBadChallenge,
            WebAuthnError::WrongOrigin(_) => Reason::WebauthnWrongOrigin,
            WebAuthnError::CrossOrigin => Reason::WebauthnCrossOrigin,
            WebAuthnError::WrongRp => Reason::WebauthnWrongRp,
            WebAuthnError::NoUserPresence => Reason::WebauthnNoUserPresence,
            WebAuthnError::NoUserVerification => Reason::WebauthnNoUserVerification,
            WebAuthnError::NoCredentialData => Reason::WebauthnNoCredentialData,
            WebAuthnError::UnsupportedAttestation(_) => Reason::WebauthnUnsupportedAttestation,
            WebAuthnError::UnsupportedKey => Reason::WebauthnUnsupportedKey,
            WebAuthnError::WrongCredential => Reason::WebauthnWrongCredential,
            WebAuthnError::BadSignature => Reason::WebauthnBadSignature,
            WebAuthnError::CounterNotIncreased { .. } => Reason::WebauthnCounterNotIncreased,
        }
    }
}
