//! countersign's evidence bundles (docs/evidence.md): one approved action
//! (the canonical action, who proposed and who decided it with each
//! passkey assertion, the spent proof and the key set, the consumption and
//! the effect's recorded result), with every event it relies on and each
//! event's inclusion proof in one witnessed checkpoint; and the verifier
//! that checks all of it offline with public keys only.
//!
//! Owns: the format (version 1), the event hash and leaf encoding (which
//! the ledger writes with), the salted commitment to the arguments, and the
//! nineteen checks with their refusal codes. Must not: read a file, a
//! clock or the network (the CLI does I/O), or trust anything in a bundle
//! that a key outside it does not vouch for.
#![forbid(unsafe_code)]

pub mod bundle;
pub mod commitment;
pub mod event;
mod verify;

pub use bundle::{
    AssertionPart, Bundle, ConsumptionPart, DecisionPart, EventPart, FORMAT, ProposalPart,
    RelyingPartyPart,
};
pub use commitment::{Opening, commit};
pub use verify::{Check, Refused, Trust, Verified, verify};
