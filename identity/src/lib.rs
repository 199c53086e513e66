//! Who is who in countersign: the private home directory and its permission
//! checks, the installation's principal, the configuration file and the
//! checks on the files it names, the development PKI, the TLS configurations
//! of the signer and its clients, the client credentials (role or named
//! approver) a process presents, and the role, principal and approver name a
//! peer's certificate names; and the log sink every countersign process shares
//! (`log`).
//!
//! This crate holds no proof-signing code and never reads the signer's
//! Ed25519 key; it only knows where that key lives.
#![forbid(unsafe_code)]

pub mod certificate;
mod config;
mod console_config;
pub mod console_pki;
pub mod console_trust;
mod error;
pub mod failover;
pub mod files;
mod home;
pub mod host;
pub mod log;
mod notify;
#[cfg(feature = "otlp")]
mod otlp;
mod paths;
mod peer;
pub mod pki;
pub mod shutdown;
mod tlog_config;
pub mod tls;

pub use config::{
    Config, DEFAULT_CHECKPOINT_EVERY_SECS, DEFAULT_CONSOLE_ADDR, DEFAULT_DECISION_WINDOW_SECS,
    DEFAULT_HANDOFF_CLAIM_LEASE_SECS, DEFAULT_SIGNER_ADDR, MAX_DECISION_WINDOW_SECS,
    MAX_HANDOFF_CLAIM_LEASE_SECS, MAX_LIFETIME_CAP_SECS, MetricsConfig, PasskeyConfig,
    PolicyConfig,
};
pub use console_config::ConsoleConfig;
pub use error::IdentityError;
pub use home::{DEV_NAMED_APPROVERS, Home, InitReport, generate_principal, is_valid_principal};
pub use notify::{
    DEFAULT_MAX_ATTEMPTS, DEFAULT_NOTIFY_TIMEOUT_SECS, DEFAULT_OCSF_BATCH, DEFAULT_POLL_MS,
    DEFAULT_PUSH_CONTACT, DEFAULT_PUSH_TTL_SECS, DEFAULT_RETRY_INITIAL_MS, DEFAULT_RETRY_MAX_MS,
    NotifyConfig, NotifyOcsfConfig, NotifyPushConfig, NotifySmtpConfig, NotifyWebhookConfig,
    PushUrgency, RetryConfig, SmtpTls,
};
pub use paths::{ConfiguredFile, check_configured_file};
pub use peer::{
    ApproverName, ClientCredential, PeerIdentity, Principal, Role, SIGNER_URI, peer_identity,
};
pub use tlog_config::{
    DEFAULT_WITNESS_GAP_SECS, DEFAULT_WITNESS_POLL_MS, DEFAULT_WITNESS_TIMEOUT_SECS, TlogConfig,
};
