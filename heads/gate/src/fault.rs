//! Test-only crash injection: `COUNTERSIGN_FAULT=<point>` in a head's
//! environment makes the head kill itself with SIGKILL when it reaches that
//! point of an execution, so tests can prove what a crash there leaves
//! behind (an `uncertain` intent, never a silent re-run) and that
//! `countersign reconcile` resolves it.
//!
//! Compiled into every build, deliberately: the tests kill the very binary
//! users run, not a specially built one. It is harmless: the only thing it
//! can do is stop the process, abruptly, which anyone able to set the
//! process's environment can already do. It never changes what is written
//! or applied. Points: `after_intent` (the nonce and intent are committed,
//! the effect has not run) and `after_effect` (the effect ran; for a
//! `command` its completion is not recorded yet, while a builtin effect
//! commits with its completion).

/// The environment variable naming the fault point.
pub const FAULT_VAR: &str = "COUNTERSIGN_FAULT";

/// Where a head may be told to crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FaultPoint {
    /// After the consume transaction committed, before the effect.
    AfterIntent,
    /// After the effect, before the completion transaction.
    AfterEffect,
}

impl FaultPoint {
    fn name(self) -> &'static str {
        match self {
            FaultPoint::AfterIntent => "after_intent",
            FaultPoint::AfterEffect => "after_effect",
        }
    }
}

/// Kill this process with SIGKILL if `COUNTERSIGN_FAULT` names `point`.
pub(crate) fn crash_point(point: FaultPoint) {
    if std::env::var_os(FAULT_VAR).is_some_and(|v| v == point.name()) {
        tracing::warn!(point = point.name(), "{FAULT_VAR}: killing this process");
        let me = rustix::process::getpid();
        let _ = rustix::process::kill_process(me, rustix::process::Signal::KILL);
        // SIGKILL cannot be caught; should it somehow fail, still stop here.
        std::process::abort();
    }
}
