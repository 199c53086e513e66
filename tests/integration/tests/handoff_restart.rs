//! Handoffs that survive a signer restart, and a head that dies holding
//! one, with real processes: the `countersign-signer` binary serves the
//! home and is killed with SIGKILL between the person's approval
//! (`approve --for-mcp`) and the head's claim, then started again; a
//! `countersign exec --handoff` process is killed with SIGKILL after its
//! claim and before it presents the proof (`COUNTERSIGN_FAULT=after_claim`).
//! In both cases the approval is executed once, by a later head, and
//! recorded once; what must not be handed over after a restart (a direct
//! approval, a revoked one, one for another session, one whose key was
//! retired) is refused with its exact reason and nothing is applied. On
//! both ledger backends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{BufRead as _, BufReader, Read as _};
use std::os::unix::process::ExitStatusExt as _;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use countersign_gate::fault::FAULT_VAR;
use countersign_integration_tests::bin;
use countersign_ledger::DispositionStatus;
use countersign_registry::Registry;
use support::{Backend, CREATE_NIGHTLY, Harness, assert_refused};

/// The session the proposals come from and the handoffs are claimed in.
const SESSION: &str = "mcp-00000000000000aa";
/// The claim lease the signer process is configured with.
const LEASE_SECS: u64 = 2;

/// The `countersign-signer serve` process of a harness's home, on a port
/// of its own (the home's configuration is rewritten to name it, so every
/// CLI run talks to this process, not to the harness's in-process signer).
struct SignerProcess {
    home: String,
    child: Option<Child>,
}

impl SignerProcess {
    fn start(h: &Harness) -> SignerProcess {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let config_path = h.signer.home().config_path();
        let config = std::fs::read_to_string(&config_path).unwrap();
        let ours =
            format!("addr = \"127.0.0.1:{port}\"\nhandoff_claim_lease_secs = {LEASE_SECS}\n");
        let config = config.replacen(&format!("addr = \"{}\"\n", h.signer.addr()), &ours, 1);
        assert!(config.contains(&ours), "{config}");
        std::fs::write(&config_path, config).unwrap();
        let mut signer = SignerProcess {
            home: h.home(),
            child: None,
        };
        signer.spawn();
        signer
    }

    /// Starts the process and waits for its ready line; its later output
    /// is drained so it never blocks on a full pipe.
    fn spawn(&mut self) {
        let mut child = Command::new(bin("countersign-signer"))
            .args(["serve", "--home", &self.home])
            .env("COUNTERSIGN_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut seen = String::new();
        while !seen.contains("countersign-signer listening on") {
            assert!(stderr.read_line(&mut seen).unwrap() > 0, "exited: {seen}");
        }
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = stderr.read_to_end(&mut sink);
        });
        self.child = Some(child);
    }

    /// SIGKILL, then wait for the process to be gone.
    fn kill(&mut self) {
        let mut child = self.child.take().unwrap();
        let pid = rustix::process::Pid::from_child(&child);
        rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(9), "killed by SIGKILL");
    }

    /// Killed with SIGKILL and started again: nothing of its memory left.
    fn kill_and_restart(&mut self) {
        self.kill();
        self.spawn();
    }
}

impl Drop for SignerProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A harness whose home is served by a signer process, and a proposal of
/// `SESSION` to create the nightly schedule.
async fn started(backend: Backend) -> (Harness, SignerProcess, String) {
    let mut h = Harness::start_on(backend, Registry::default_toml()).await;
    // The process is the home's one signer: a SQLite ledger has one, and
    // the harness's own stops serving (its state stays readable).
    h.signer.halt().await.unwrap();
    let signer = SignerProcess::start(&h);
    let id = h
        .propose_in("schedule.create", CREATE_NIGHTLY, SESSION)
        .await;
    (h, signer, id)
}

/// The approval was applied once, and is recorded so.
async fn applied_once(h: &Harness, id: &str) {
    assert_eq!(h.schedules().await.len(), 1, "{:?}", h.schedules().await);
    let recorded = h.ledger().disposition(id).await.unwrap().unwrap();
    assert_eq!(recorded.status, DispositionStatus::Applied);
    let events = h.ledger().events().await.unwrap();
    let applied = events
        .iter()
        .filter(|e| e.kind == "effect_applied" && e.proposal_id.as_deref() == Some(id))
        .count();
    assert_eq!(applied, 1);
    // A further handoff execution gets the recorded disposition only.
    let again = h.exec_handoff(id, SESSION).await;
    assert_refused(&again, "already_used");
    assert_eq!(h.schedules().await.len(), 1);
    assert!(
        h.ledger()
            .verify_chain()
            .await
            .unwrap()
            .first_break
            .is_none()
    );
}

/// Nothing of `id` was applied or consumed.
async fn nothing_applied(h: &Harness, id: &str) {
    assert_eq!(h.schedules().await, vec![]);
    assert_eq!(h.ledger().disposition(id).await.unwrap(), None);
}

async fn a_handoff_survives_a_sigkill_of_the_signer(backend: Backend) {
    let (h, mut signer, id) = started(backend).await;
    h.approve_for_mcp(&id).await;
    signer.kill_and_restart();

    let run = h.exec_handoff(&id, SESSION).await;
    assert_eq!(run.result, Ok(()), "{}", run.stdout);
    assert_eq!(run.json()["applied"], true, "{}", run.stdout);
    applied_once(&h, &id).await;
    // And once more after another restart: still the recorded result.
    signer.kill_and_restart();
    let again = h.exec_handoff(&id, SESSION).await;
    assert_refused(&again, "already_used");
    assert_eq!(h.schedules().await.len(), 1);
}

#[tokio::test]
async fn a_handoff_survives_a_sigkill_of_the_signer_on_sqlite() {
    a_handoff_survives_a_sigkill_of_the_signer(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_handoff_survives_a_sigkill_of_the_signer_on_postgres() {
    a_handoff_survives_a_sigkill_of_the_signer(Backend::Postgres).await;
}

async fn a_head_killed_holding_a_claim_strands_the_approval_only_for_the_lease(backend: Backend) {
    let (h, _signer, id) = started(backend).await;
    h.approve_for_mcp(&id).await;
    let status = tokio::process::Command::new(bin("countersign"))
        .args(["--home", &h.home(), "--json", "exec", &id, "--handoff"])
        .args(["--session", SESSION])
        .env(FAULT_VAR, "after_claim")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await
        .unwrap();
    assert_eq!(
        status.signal(),
        Some(9),
        "killed by SIGKILL after its claim"
    );
    nothing_applied(&h, &id).await;

    // While the dead head's lease runs, another is told it is held.
    let held = h.exec_handoff(&id, SESSION).await;
    assert_refused(&held, "in_progress");
    nothing_applied(&h, &id).await;

    tokio::time::sleep(Duration::from_millis(LEASE_SECS * 1000 + 300)).await;
    let run = h.exec_handoff(&id, SESSION).await;
    assert_eq!(run.result, Ok(()), "{}", run.stdout);
    assert_eq!(run.json()["applied"], true, "{}", run.stdout);
    applied_once(&h, &id).await;
}

#[tokio::test]
async fn a_head_killed_holding_a_claim_strands_the_approval_only_for_the_lease_on_sqlite() {
    a_head_killed_holding_a_claim_strands_the_approval_only_for_the_lease(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_head_killed_holding_a_claim_strands_the_approval_only_for_the_lease_on_postgres() {
    a_head_killed_holding_a_claim_strands_the_approval_only_for_the_lease(Backend::Postgres).await;
}

async fn after_a_restart_only_a_live_handoff_of_this_session_is_handed_over(backend: Backend) {
    let (h, mut signer, direct) = started(backend).await;
    // A direct approval: the proof went to the person's file.
    h.approve_to_file(&direct).await;
    // A revoked handoff.
    let revoked = h
        .propose_in("schedule.create", CREATE_NIGHTLY, SESSION)
        .await;
    h.approve_for_mcp(&revoked).await;
    let run = h.cli(&["revoke", &revoked]).await;
    assert_eq!(run.result, Ok(()), "{}{}", run.stdout, run.stderr);
    // A live handoff, claimed from another session.
    let live = h
        .propose_in("schedule.create", CREATE_NIGHTLY, SESSION)
        .await;
    h.approve_for_mcp(&live).await;
    signer.kill_and_restart();

    assert_refused(&h.exec_handoff(&direct, SESSION).await, "no_live_handoff");
    // A revoked approval: no approval will come, and the head says so.
    assert_refused(&h.exec_handoff(&revoked, SESSION).await, "not_pending");
    assert_refused(
        &h.exec_handoff(&live, "mcp-00000000000000bb").await,
        "handoff_session_mismatch",
    );
    assert_eq!(h.schedules().await, vec![]);
    for id in [&direct, &revoked, &live] {
        assert_eq!(h.ledger().disposition(id).await.unwrap(), None);
    }
    // The refusals changed nothing: its own session executes it, once.
    let run = h.exec_handoff(&live, SESSION).await;
    assert_eq!(run.json()["applied"], true, "{}", run.stdout);
    applied_once(&h, &live).await;
}

#[tokio::test]
async fn after_a_restart_only_a_live_handoff_of_this_session_is_handed_over_on_sqlite() {
    after_a_restart_only_a_live_handoff_of_this_session_is_handed_over(Backend::Sqlite).await;
}

#[tokio::test]
async fn after_a_restart_only_a_live_handoff_of_this_session_is_handed_over_on_postgres() {
    after_a_restart_only_a_live_handoff_of_this_session_is_handed_over(Backend::Postgres).await;
}

/// `countersign-signer keys ARGS --home HOME`: its stdout; it must succeed.
fn signer_keys(h: &Harness, args: &[&str]) -> String {
    let out = Command::new(bin("countersign-signer"))
        .arg("keys")
        .args(args)
        .args(["--home", &h.home()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "keys {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

async fn a_handoff_whose_key_was_retired_is_refused_after_a_restart(backend: Backend) {
    let (h, mut signer, id) = started(backend).await;
    h.approve_for_mcp(&id).await;
    let old = signer_keys(&h, &["list"]);
    let old = old.split_whitespace().next().unwrap().to_owned();
    signer_keys(&h, &["rotate"]);
    signer_keys(&h, &["retire", &old]);
    signer.kill_and_restart();

    let run = h.exec_handoff(&id, SESSION).await;
    assert_refused(&run, "handoff_unrecoverable");
    assert!(
        run.stdout.contains("revoke it and propose again"),
        "{}",
        run.stdout
    );
    nothing_applied(&h, &id).await;
}

#[tokio::test]
async fn a_handoff_whose_key_was_retired_is_refused_after_a_restart_on_sqlite() {
    a_handoff_whose_key_was_retired_is_refused_after_a_restart(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_handoff_whose_key_was_retired_is_refused_after_a_restart_on_postgres() {
    a_handoff_whose_key_was_retired_is_refused_after_a_restart(Backend::Postgres).await;
}
