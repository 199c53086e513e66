//! countersign proof v1, verification side: canonical JSON (RFC 8785),
//! PASETO v4.public verification, claims, key ids, and the `VerifiedProof`
//! type that only [`verify()`] can build.
//!
//! This crate holds no signing code: it uses `ed25519_dalek::VerifyingKey`
//! only. The signer builds tokens with [`paseto::signing_input`] and
//! [`paseto::assemble`] around its own key.
#![forbid(unsafe_code)]

pub mod builtin;
pub mod canonical;
pub mod claims;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod ids;
pub mod keys;
pub mod keyset;
pub mod lifetimes;
pub mod offline;
pub mod paseto;
pub mod proof;
pub mod refusal;
pub mod timestamp;
pub mod verify;

pub use builtin::{BuiltinEffect, UnknownBuiltinEffect};
pub use claims::{
    AuthMethod, Claims, CommandPremise, Grant, InvalidPasskeyAssurance, MAX_PREMISE_ARGV,
    MAX_PREMISE_NAME_BYTES, MAX_PREMISE_OUTPUT_BYTES, PasskeyAssurance, Premise, StatePremise,
};
pub use ids::{ApproverName, IdError, Principal, ProposalId, RuleId, Session};
pub use keys::{KeyRing, key_id};
pub use keyset::{KeySet, KeyStatus, PublishedKey};
pub use offline::{OfflineExpectations, OfflineVerified, verify_offline};
pub use proof::{ConsumeKey, Proof, ProofFormatError};
pub use refusal::Refusal;
pub use verify::{Expectations, VerifiedProof, verify};
