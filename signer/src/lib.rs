//! countersign-signer library: the isolated signer, the only holder of the
//! Ed25519 private key, and its gRPC service.
//!
//! `key` (the key file and the `ProofSigner` trait), `pkcs11` (a key on a
//! PKCS#11 token) and `issue` (assembling proofs) are the only modules that
//! touch signing; `keystore` decides which
//! key is active and which still verify; the service modules authorize callers by their
//! client certificate, talk to the registry and the ledger, and never log a
//! proof. Passkey ceremonies are checked by the `countersign-webauthn` crate.
#![forbid(unsafe_code)]

mod audit_events;
mod changes;
pub mod checkpoint;
mod convert;
mod decide;
mod error;
mod handoff;
pub mod issue;
pub mod key;
pub mod keystore;
pub mod log_checkpoint;
pub mod log_key;
pub mod note_keys;
pub mod notify;
mod offer;
pub mod operator_policy;
pub mod passkeys;
pub mod pkcs11;
pub mod policy_cli;
pub mod published_keys;
mod push_devices;
mod quorum;
mod recover;
mod reissue;
mod resolve;
mod rpcs;
mod rules;
pub mod serve;
mod service;
mod spent_proof;
mod state;
mod status;
#[cfg(feature = "testing")]
pub mod testing;
mod watch;
mod withdraw;

pub use changes::SWEEP_EVERY;
pub use error::StartError;
pub use serve::{run, serve_metrics, serve_until_signal};
pub use state::{SignerState, load_or_create_key, policy_from};
