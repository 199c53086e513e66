//! The one shutdown shape of every long-running process (the signer,
//! `countersign api serve`, `countersign up`): run until
//! [`shutdown_signal`] resolves, then [`drain`] the work in flight for at
//! most a grace period.
//!
//! This module owns signal handling and the grace timer only; it must not
//! know what is being served or decide what a process does after it.

use std::future::Future;
use std::time::Duration;

pub use countersign_verifier::lifetimes::SHUTDOWN_GRACE;

/// Resolves on the first SIGINT or SIGTERM, and logs which. If a handler
/// cannot be installed, it never resolves through that signal (the
/// process keeps its default disposition for it, which ends it).
pub async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let term = signal(SignalKind::terminate());
    let int = signal(SignalKind::interrupt());
    let (mut term, mut int) = match (term, int) {
        (Ok(term), Ok(int)) => (term, int),
        (term, int) => {
            tracing::warn!(
                sigterm = term.is_ok(),
                sigint = int.is_ok(),
                "cannot install every signal handler"
            );
            return std::future::pending().await;
        }
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM received, shutting down"),
        _ = int.recv() => tracing::info!("SIGINT received, shutting down"),
    }
}

/// How draining ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Drained<T> {
    /// Everything in flight finished within the grace period.
    Finished(T),
    /// The grace period ended first; what was still running is abandoned.
    GraceOver,
}

/// Wait for `in_flight` (a server's graceful shutdown, a task tracker's
/// `wait`) for at most `grace`; logs a warning when the grace ends first.
pub async fn drain<F: Future>(in_flight: F, grace: Duration) -> Drained<F::Output> {
    match tokio::time::timeout(grace, in_flight).await {
        Ok(done) => Drained::Finished(done),
        Err(_) => {
            tracing::warn!(
                grace_secs = grace.as_secs(),
                "grace period over; exiting with work in flight"
            );
            Drained::GraceOver
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn drain_waits_for_work_that_finishes_within_the_grace() {
        let work = async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            7
        };
        assert_eq!(
            drain(work, Duration::from_secs(5)).await,
            Drained::Finished(7)
        );
    }

    #[tokio::test]
    async fn drain_gives_up_when_the_grace_ends_first() {
        let started = std::time::Instant::now();
        let work = std::future::pending::<()>();
        assert_eq!(
            drain(work, Duration::from_millis(100)).await,
            Drained::GraceOver
        );
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
