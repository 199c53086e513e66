//! The metrics every long-running countersign process keeps, and the
//! loopback-only listener that serves them as `GET /metrics`.
//!
//! This crate owns the whole vocabulary: every metric's name, help text,
//! labels and buckets ([`SignerMetrics`] for the signer, [`GateMetrics`] for
//! the gate every head embeds, [`NotifyMetrics`] for the notify process),
//! so no process invents a name of its own.
//! Label values are small enums or bounded codes (refusal reason codes,
//! operation names from the registry file); never a request field, an
//! argument, a principal, a session or a proof.
//!
//! Counting is always on and costs an atomic add; serving is off unless a
//! process is configured with a `[metrics]` address, which must be
//! loopback ([`bind`]). The listener answers `GET /metrics` and nothing
//! else, reads no request body, and holds no secret: what it can show is
//! what the registered metrics count.
//!
//! It must not depend on any head (the gate and the signer depend on it).
#![forbid(unsafe_code)]

mod exposition;
mod gate;
mod listen;
mod notify;
mod signer;

pub use exposition::Exposition;
pub use gate::{ConsumeOutcome, GateMetrics};
pub use listen::{CONTENT_TYPE, MetricsError, bind, serve};
pub use notify::{Attempt, NotifyMetrics};
pub use signer::{Decision, Issuance, SignerMetrics};

/// Buckets of the latency histograms, in seconds: 0.5 ms to about 16 s,
/// doubling (a consume over a builtin effect takes about a millisecond; a
/// webhook or command effect is bounded by its timeout).
fn latency_buckets() -> impl Iterator<Item = f64> {
    prometheus_client::metrics::histogram::exponential_buckets(0.0005, 2.0, 16)
}

/// Buckets of the group-commit size histograms: 1, 2, 4, ... 64, the
/// ledger's largest batch.
fn batch_buckets() -> impl Iterator<Item = f64> {
    prometheus_client::metrics::histogram::exponential_buckets(1.0, 2.0, 7)
}
