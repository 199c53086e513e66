//! Test-only crash injection: `COUNTERSIGN_FAULT=<point>` in a process's
//! environment makes it kill itself with SIGKILL when it reaches that point,
//! so tests can prove what a crash there leaves behind.
//!
//! Compiled into every build, deliberately: the tests kill the very binary
//! users run, not a specially built one. It is harmless: the only thing it
//! can do is stop the process, abruptly, which anyone able to set the
//! process's environment can already do. It never changes what is written
//! or applied.
//!
//! The ledger reaches the points `after_intent` and `after_effect` inside
//! the single transaction of [`crate::Ledger::consume_builtin`], both after
//! its writes (the nonce, intent, effect and completion rows go to the
//! database in one round trip) and before its commit: a kill there leaves
//! nothing.
//! The gate reaches the same names between the two transactions of an
//! effect outside the ledger (see `countersign_gate::fault`).
//!
//! A signer reaches four points in a `Decide` that approves
//! (signer/tests/two_signer_faults.rs kills one of two signers at each):
//! `signer_in_issuance` in the ledger's approval job (`approve_in`), after
//! the issuance's writes and before the group commit's transaction
//! commits: a kill leaves the proposal pending; `signer_after_issuance_commit`
//! in the signer once the issuance committed and before a handoff's proof
//! is kept in memory; `signer_after_decision_commit` once a decision
//! (approval or denial) is recorded and its answer built, before it is
//! sent. After either of the last two, the proposal is decided and a
//! waiting handoff is re-derived from the ledger by whichever signer is
//! claimed from. `signer_after_quorum_approval_commit` once an approval
//! that does not yet complete its quorum is recorded, before its answer
//! is sent: the proposal is pending with that approval counted.

//!
//! One point pauses rather than kills ([`pause_point`]):
//! `signer_paused_in_checkpoint`, in the signer holding the checkpoint
//! chore, after it took or renewed the lease and before it writes
//! (signer/tests/two_signer_pause.rs resumes it once another signer has
//! taken the chore over, and its write is refused by the fencing token).

/// The environment variable naming the fault point.
pub const FAULT_VAR: &str = "COUNTERSIGN_FAULT";

/// Kill this process with SIGKILL if `COUNTERSIGN_FAULT` names `point`.
pub fn crash_point(point: &str) {
    if std::env::var_os(FAULT_VAR).is_some_and(|v| v == point) {
        tracing::warn!(point, "{FAULT_VAR}: killing this process");
        let me = rustix::process::getpid();
        let _ = rustix::process::kill_process(me, rustix::process::Signal::KILL);
        // SIGKILL cannot be caught; should it somehow fail, still stop here.
        std::process::abort();
    }
}

/// Stop this process with SIGSTOP, the first time only, if
/// `COUNTERSIGN_FAULT` names `point`: whoever sent SIGCONT finds it where
/// it stopped, as after a long pause of a process or a frozen host.
pub fn pause_point(point: &str) {
    static PAUSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if std::env::var_os(FAULT_VAR).is_some_and(|v| v == point)
        && !PAUSED.swap(true, std::sync::atomic::Ordering::SeqCst)
    {
        tracing::warn!(point, "{FAULT_VAR}: pausing this process");
        let me = rustix::process::getpid();
        let _ = rustix::process::kill_process(me, rustix::process::Signal::STOP);
    }
}
