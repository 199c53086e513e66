//! Why a proof was refused.
//!
//! Owns: the closed list of refusal kinds, each one's reason in the one
//! catalogue (`countersign_reason`) and one-line message. Must not: carry proof text, claim values or key
//! material (a refusal may be shown to a model or written to a log).

use countersign_reason::Reason;

/// A proof was refused. Ordinary result, not an internal fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Refusal {
    /// Not a well-formed token, footer or claims object.
    #[error("the proof is malformed")]
    Malformed,
    /// Not PASETO version 4.
    #[error("the proof is not a PASETO v4 token")]
    WrongVersion,
    /// PASETO v4 but not the `public` purpose.
    #[error("the proof is not a v4.public token")]
    WrongPurpose,
    /// The footer names a key this verifier does not trust.
    #[error("the proof names an unknown signing key")]
    UnknownKeyId,
    /// The signature does not verify.
    #[error("the proof's signature does not verify")]
    BadSignature,
    /// The signed payload is not the canonical JSON encoding of the claims.
    #[error("the proof's claims are not canonical JSON")]
    NonCanonicalClaims,
    /// Issued for another audience.
    #[error("the proof was issued for another audience")]
    WrongAudience,
    /// Issued to another principal.
    #[error("the proof was issued to another principal")]
    WrongPrincipal,
    /// Issued for another session.
    #[error("the proof was issued for another session")]
    WrongSession,
    /// Issued for another proposal.
    #[error("the proof was issued for another proposal")]
    ProposalMismatch,
    /// Issued for another operation.
    #[error("the proof was issued for another operation")]
    OperationMismatch,
    /// The arguments differ from the approved ones (or from their own hash).
    #[error("the proof was issued for other arguments")]
    ArgumentsMismatch,
    /// Issued under another contract revision of the operation.
    #[error("the proof was issued under another contract revision")]
    ContractRevisionMismatch,
    /// Issued under another policy revision.
    #[error("the proof was issued under another policy revision")]
    PolicyRevisionMismatch,
    /// The proof has expired.
    #[error("the proof has expired")]
    Expired,
    /// The proof's lifetime exceeds this verifier's ceiling.
    #[error("the proof's lifetime exceeds this verifier's ceiling")]
    LifetimeTooLong,
    /// The proof is not valid yet.
    #[error("the proof is not valid yet")]
    NotYetValid,
}

impl Refusal {
    /// Every refusal kind, in check order.
    pub const ALL: &'static [Refusal] = &[
        Refusal::Malformed,
        Refusal::WrongVersion,
        Refusal::WrongPurpose,
        Refusal::UnknownKeyId,
        Refusal::BadSignature,
        Refusal::NonCanonicalClaims,
        Refusal::WrongAudience,
        Refusal::WrongPrincipal,
        Refusal::WrongSession,
        Refusal::ProposalMismatch,
        Refusal::OperationMismatch,
        Refusal::ArgumentsMismatch,
        Refusal::ContractRevisionMismatch,
        Refusal::PolicyRevisionMismatch,
        Refusal::LifetimeTooLong,
        Refusal::Expired,
        Refusal::NotYetValid,
    ];

    /// The stable snake_case code of [`Self::reason`] (safe for wire
    /// formats, logs and test vectors).
    pub fn code(&self) -> &'static str {
        self.reason().code()
    }

    /// This refusal's reason in the one catalogue.
    pub fn reason(&self) -> Reason {
        match self {
            Refusal::Malformed => Reason::Malformed,
            Refusal::WrongVersion => Reason::WrongVersion,
            Refusal::WrongPurpose => Reason::WrongPurpose,
            Refusal::UnknownKeyId => Reason::UnknownKeyId,
            Refusal::BadSignature => Reason::BadSignature,
            Refusal::NonCanonicalClaims => Reason::NonCanonicalClaims,
            Refusal::WrongAudience => Reason::WrongAudience,
            Refusal::WrongPrincipal => Reason::WrongPrincipal,
            Refusal::WrongSession => Reason::WrongSession,
            Refusal::ProposalMismatch => Reason::ProposalMismatch,
            Refusal::OperationMismatch => Reason::OperationMismatch,
            Refusal::ArgumentsMismatch => Reason::ArgumentsMismatch,
            Refusal::ContractRevisionMismatch => Reason::ContractRevisionMismatch,
            Refusal::PolicyRevisionMismatch => Reason::PolicyRevisionMismatch,
            Refusal::Expired => Reason::Expired,
            Refusal::LifetimeTooLong => Reason::LifetimeTooLong,
            Refusal::NotYetValid => Reason::NotYetValid,
        }
    }

    /// The refusal with this code, if any.
    pub fn from_code(code: &str) -> Option<Refusal> {
        Refusal::ALL.iter().copied().find(|r| r.code() == code)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::Refusal;

    #[test]
    fn codes_are_unique_snake_case_and_round_trip() {
        let mut seen = std::collections::BTreeSet::new();
        for r in Refusal::ALL {
            let code = r.code();
            assert!(
                code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{code}"
            );
            assert!(seen.insert(code), "duplicate code {code}");
            assert_eq!(Refusal::from_code(code), Some(*r));
            assert!(!r.to_string().contains('\n'));
        }
        assert_eq!(seen.len(), 17);
    }
}
