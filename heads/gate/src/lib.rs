//! The verifier/effect service that every head embeds: verify a proof with
//! the public keys, consume it once through the ledger, run the effect and
//! record completion. It holds no signing key and links no signing code.
#![forbid(unsafe_code)]

pub mod command;
