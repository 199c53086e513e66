//! Crash recovery with real processes: a `countersign exec` process is
//! killed with SIGKILL (`COUNTERSIGN_FAULT`, see `countersign_gate::fault`).
//!
//! A `command` effect (outside the ledger, two-phase) is killed after the
//! intent is recorded and before the effect, or after the effect and before
//! its completion. Afterwards the action reads `uncertain`, a second
//! presentation of the proof runs nothing, and `countersign reconcile`
//! resolves it as DESIGN.md says: a replay-safe operation is run again with
//! the same idempotency key; anything else stays uncertain until a person
//! resolves it.
//!
//! A builtin effect (inside the ledger) is consumed, applied and completed
//! in one transaction; the same fault points are reached inside it, before
//! the commit, so the process dies mid-transaction: nothing is recorded or
//! applied, the nonce is not burned, the action is never uncertain, and the
//! same proof then applies exactly once. On both ledger backends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};

use countersign::CliError;
use countersign_gate::fault::FAULT_VAR;
use countersign_registry::Registry;
use support::{Backend, CREATE_NIGHTLY, Harness, Person, assert_refused, command_operation};

/// The default registry plus two command operations that append their
/// idempotency key to `log`: `note.append` (not replay-safe) and
/// `note.append_keyed` (replay-safe: a real one would dedupe on the key).
fn registry(log: &Path) -> String {
    let script = format!("echo \"$COUNTERSIGN_IDEMPOTENCY_KEY\" >> {}", log.display());
    format!(
        "{}{}{}",
        Registry::default_toml(),
        command_operation("note.append", false, &script, 10),
        command_operation("note.append_keyed", true, &script, 10)
    )
}

struct Crashed {
    h: Harness,
    id: String,
    proof: PathBuf,
    log: PathBuf,
    _scratch: tempfile::TempDir,
}

impl Crashed {
    /// The idempotency keys the command effect has received, in order.
    fn runs(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// Propose `op` with `args`, approve it, and run `countersign exec` as a
/// real process told to crash at `point`; assert it died by SIGKILL.
async fn kill_at(backend: Backend, op: &str, args: &str, point: &str) -> Crashed {
    let scratch = tempfile::tempdir().unwrap();
    let log = scratch.path().join("effects.log");
    let h = Harness::start_on(backend, &registry(&log)).await;
    let id = h.propose(op, args).await;
    let proof = h.approve_to_file(&id).await;
    let status = tokio::process::Command::new(countersign_integration_tests::bin("countersign"))
        .args(["--home", &h.home(), "--json", "exec", &id, "--proof-file"])
        .arg(&proof)
        .env(FAULT_VAR, point)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .await
        .unwrap();
    assert_eq!(status.signal(), Some(9), "killed by SIGKILL at {point}");
    Crashed {
        h,
        id,
        proof,
        log,
        _scratch: scratch,
    }
}

/// As [`kill_at`], for an effect outside the ledger: assert the crash left
/// the action uncertain without anything run twice.
async fn crash(backend: Backend, op: &str, args: &str, point: &str) -> Crashed {
    let crashed = kill_at(backend, op, args, point).await;
    let runs_before = crashed.runs();

    let result = crashed.h.cli(&["--json", "show", &crashed.id]).await;
    assert_eq!(result.json()["status"], "uncertain", "{}", result.stdout);
    // Presenting the proof again runs nothing: the recorded disposition.
    let again = crashed.h.exec(&crashed.id, &crashed.proof, &[]).await;
    assert_refused(&again, "already_used");
    assert_eq!(again.json()["recorded_status"], "uncertain");
    assert_eq!(crashed.runs(), runs_before, "nothing re-ran silently");
    crashed
}

/// `countersign --json reconcile`: the one entry's action, and the result.
async fn reconcile(c: &Crashed) -> (String, Result<(), CliError>) {
    let run = c.h.cli(&["--json", "reconcile"]).await;
    let report = run.json();
    let entries = report["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{report}");
    assert_eq!(entries[0]["proposal_id"], c.id.as_str());
    (
        entries[0]["action"].as_str().unwrap().to_string(),
        run.result,
    )
}

async fn final_status(c: &Crashed) -> String {
    let result = c.h.cli(&["--json", "result", &c.id]).await;
    result.json()["status"].as_str().unwrap().to_string()
}

/// A builtin killed inside its one transaction, at `point` (both points
/// are after its writes, which go to the database in one round trip, and
/// before its commit): nothing recorded, never uncertain, and the same
/// proof then applies exactly once.
async fn builtin_killed_mid_transaction_leaves_nothing(backend: Backend, point: &str) {
    let c = kill_at(backend, "schedule.create", CREATE_NIGHTLY, point).await;
    let show = c.h.cli(&["--json", "show", &c.id]).await;
    assert_eq!(show.json()["status"], "approved", "{}", show.stdout);
    assert_eq!(c.h.schedules().await, vec![]);
    assert_eq!(
        c.h.ledger().disposition(&c.id).await.unwrap(),
        None,
        "nonce not burned"
    );
    assert_eq!(c.h.ledger().interrupted().await.unwrap(), vec![]);
    let events = c.h.ledger().events().await.unwrap();
    assert!(
        events
            .iter()
            .all(|e| !["intent", "effect_applied", "completed"].contains(&e.kind.as_str())),
        "nothing of the consumption was recorded"
    );
    let run = c.h.cli(&["--json", "reconcile"]).await;
    assert_eq!(run.json()["entries"], serde_json::json!([]));

    // The same proof applies, once.
    let first = c.h.exec(&c.id, &c.proof, &[]).await;
    assert_eq!(first.result, Ok(()), "{}", first.stdout);
    assert_eq!(first.json()["applied"], true, "{}", first.stdout);
    let again = c.h.exec(&c.id, &c.proof, &[]).await;
    assert_refused(&again, "already_used");
    assert_eq!(again.json()["recorded_status"], "applied");
    assert_eq!(c.h.schedules().await.len(), 1);
    let events = c.h.ledger().events().await.unwrap();
    let count = |kind: &str| events.iter().filter(|e| e.kind == kind).count();
    assert_eq!(
        (count("intent"), count("effect_applied"), count("completed")),
        (1, 1, 1)
    );
    assert!(c.h.ledger().verify_chain().await.unwrap().is_intact());
    assert_eq!(final_status(&c).await, "applied");
}

async fn builtin_killed_after_its_intent_rows_leaves_nothing(backend: Backend) {
    builtin_killed_mid_transaction_leaves_nothing(backend, "after_intent").await;
}

async fn builtin_killed_just_before_its_commit_leaves_nothing(backend: Backend) {
    builtin_killed_mid_transaction_leaves_nothing(backend, "after_effect").await;
}

async fn unsafe_command_killed_before_its_effect_waits_for_a_person(backend: Backend) {
    let c = crash(backend, "note.append", r#"{"text":"hi"}"#, "after_intent").await;
    assert_eq!(c.runs(), Vec::<String>::new());
    let (action, result) = reconcile(&c).await;
    assert_eq!(action, "still_uncertain");
    assert!(matches!(result, Err(CliError::NotApplied(_))), "{result:?}");
    assert_eq!(c.runs(), Vec::<String>::new(), "reconcile ran nothing");
    assert_eq!(final_status(&c).await, "uncertain");
    let resolve = ["--json", "reconcile", "--resolve", &c.id, "--not-applied"];
    let resolved = c.h.cli_with(&resolve, "", Person::TypesTheChallenge).await;
    assert_eq!(resolved.result, Ok(()), "{}", resolved.stdout);
    assert_eq!(final_status(&c).await, "failed");
    assert_eq!(c.runs(), Vec::<String>::new());
}

async fn unsafe_command_killed_after_its_effect_waits_for_a_person(backend: Backend) {
    let c = crash(backend, "note.append", r#"{"text":"hi"}"#, "after_effect").await;
    assert_eq!(c.runs().len(), 1);
    assert_eq!(reconcile(&c).await.0, "still_uncertain");
    assert_eq!(c.runs().len(), 1, "reconcile ran nothing");
    let resolve = ["--json", "reconcile", "--resolve", &c.id, "--applied"];
    let resolved = c.h.cli_with(&resolve, "", Person::TypesTheChallenge).await;
    assert_eq!(resolved.result, Ok(()), "{}", resolved.stdout);
    assert_eq!(final_status(&c).await, "applied");
    assert_eq!(c.runs().len(), 1);
}

async fn replay_safe_command_killed_after_its_effect_replays_with_the_same_key(backend: Backend) {
    let c = crash(
        backend,
        "note.append_keyed",
        r#"{"text":"hi"}"#,
        "after_effect",
    )
    .await;
    let first = c.runs();
    assert_eq!(first.len(), 1);
    assert_eq!(reconcile(&c).await, ("replayed".into(), Ok(())));
    let runs = c.runs();
    assert_eq!(runs.len(), 2);
    assert_eq!(
        runs[1], first[0],
        "the replay carries the same idempotency key"
    );
    let nonce =
        c.h.ledger()
            .disposition(&c.id)
            .await
            .unwrap()
            .unwrap()
            .nonce;
    assert_eq!(runs[0], nonce);
    assert_eq!(final_status(&c).await, "applied");
}

/// Each scenario as two tests, `<name>::sqlite` and `<name>::postgres`.
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name(super::Backend::Sqlite).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name(super::Backend::Postgres).await
            }
        }
    )*};
}

on_both_backends!(
    builtin_killed_after_its_intent_rows_leaves_nothing,
    builtin_killed_just_before_its_commit_leaves_nothing,
    unsafe_command_killed_before_its_effect_waits_for_a_person,
    unsafe_command_killed_after_its_effect_waits_for_a_person,
    replay_safe_command_killed_after_its_effect_replays_with_the_same_key,
);
