//! The verifier/effect service that every head embeds: verify a proof with
//! the public keys (following the signer's rotations) and consume it once
//! through the ledger (a builtin effect in the same single transaction; a
//! `command`, `webhook` or `mcp` effect between an intent and a completion
//! transaction); reconcile interrupted intents (re-sending a replay-safe
//! webhook with a proof the signer re-issues); talk to the
//! signer as a head or an approver over mutually authenticated gRPC.
//!
//! It holds no signing key and links no signing code: the only thing it can
//! do with a proof is check it and spend it once.
#![forbid(unsafe_code)]

/// The `command` effect's child process: the program runner is shared
/// with premise commands, which the ledger runs inside a consumption.
pub use countersign_process as command;
mod effect;
mod execute;
pub mod fault;
mod handoff;
mod live_keys;
mod outcome;
mod reconcile;
pub mod signer_client;

pub use effect::{hook, mcp, webhook};
pub use execute::{Gate, GateError};
pub use live_keys::KeyRefresh;
pub use outcome::{Outcome, Refused};
pub use reconcile::{ReconcileEntry, ReconcileReport};
