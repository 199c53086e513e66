//! Many heads, one proof: real OS processes on both ledger backends present
//! the same proof at once, and exactly one effect happens.
//!
//! Two shapes, both with real processes:
//! - `api_heads_*`: 4 worker processes, each one head with ONE gate (one
//!   ledger handle, as an API head has) running 8 concurrent attempts; the
//!   worker is this test binary re-executed in worker mode (`race_worker`),
//!   driving the CLI's own `Context`/`Gate` code. 32 attempts per round.
//! - `cli_processes_*`: 8 `countersign exec` processes (the shipped binary)
//!   per round, one attempt each.
//!
//! Every round: exactly one caller applies; every other caller gets the
//! recorded disposition (applied, or uncertain while the winner had not yet
//! completed) and nothing runs twice. Counts and the losers' latency are
//! printed (`--nocapture`); the latency is judged by the benchmark, where
//! timing is measured in a release build.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use countersign::Context;
use countersign_gate::Outcome;
use countersign_registry::Registry;
use countersign_verifier::Proof;
use support::{Backend, Harness};

const WORKER_VAR: &str = "COUNTERSIGN_TEST_RACE_WORKER";
const PROCESSES: usize = 4;
const TASKS: usize = 8;
const ROUNDS: usize = 8;
const CLI_PROCESSES: usize = 8;
const CLI_ROUNDS: usize = 3;

/// Worker mode: a no-op in a normal test run. With `WORKER_VAR` set to
/// `<home>\t<proposal id>\t<proof file>\t<tasks>`, this process is one head:
/// it builds one gate and presents the proof from `<tasks>` concurrent
/// tasks, printing one `RACE <outcome> <micros>` line per attempt.
#[test]
fn race_worker() {
    let Ok(spec) = std::env::var(WORKER_VAR) else {
        return;
    };
    let parts: Vec<&str> = spec.split('\t').collect();
    let [home, id, proof_file, tasks] = parts[..] else {
        panic!("bad worker spec");
    };
    let tasks: usize = tasks.parse().unwrap();
    let proof = std::fs::read_to_string(proof_file).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let ctx = Context::load(Context::home(Some(home.into())).unwrap()).unwrap();
        let mut head = ctx.head().await.unwrap();
        let gate = ctx.gate(&mut head).await.unwrap();
        let attempts: Vec<_> = (0..tasks)
            .map(|_| {
                let id = countersign_verifier::ProposalId::parse(id).unwrap();
                let (gate, proof) = (gate.clone(), proof.clone());
                tokio::spawn(async move {
                    let proof = Proof::from_text(proof).unwrap();
                    let start = Instant::now();
                    let session = countersign_verifier::Session::parse("cli").unwrap();
                    let outcome = gate.execute(&id, &session, &proof).await;
                    (outcome, start.elapsed())
                })
            })
            .collect();
        for attempt in attempts {
            let (outcome, took) = attempt.await.unwrap();
            let label = match outcome {
                Ok(Outcome::Applied(_)) => "applied".to_string(),
                Ok(Outcome::Recorded(d)) => format!("recorded:{}", d.status.as_str()),
                Ok(other) => format!("other:{}", other.summary().replace(' ', "_")),
                Err(e) => format!("error:{}", e.to_string().replace(' ', "_")),
            };
            println!("RACE {label} {}", took.as_micros());
        }
    });
}

/// Losers' latency summary: (median, max).
fn latency(mut micros: Vec<u128>) -> (Duration, Duration) {
    micros.sort_unstable();
    let at = |i: usize| Duration::from_micros(micros[i].try_into().unwrap());
    (at(micros.len() / 2), at(micros.len() - 1))
}

/// One round: a fresh proposal, approved to a file, raced by `PROCESSES`
/// workers of `TASKS` tasks. Returns the losers' latencies.
async fn api_round(h: &Harness, round: usize) -> Vec<u128> {
    let args = format!(r#"{{"name":"race-{round}","cron":"0 3 * * *"}}"#);
    let id = h.propose("schedule.create", &args).await;
    let proof = h.approve_to_file(&id).await;
    let spec = format!("{}\t{id}\t{}\t{TASKS}", h.home(), proof.display());
    let workers: Vec<_> = (0..PROCESSES)
        .map(|_| {
            tokio::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "race_worker", "--nocapture", "--test-threads=1"])
                .env(WORKER_VAR, &spec)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let (mut applied, mut losers) = (0, Vec::new());
    for worker in workers {
        let out = worker.wait_with_output().await.unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        // libtest may print its own "test race_worker ... " before a line.
        let lines: Vec<_> = stdout
            .lines()
            .filter_map(|l| l.find("RACE ").map(|at| &l[at..]))
            .collect();
        assert_eq!(lines.len(), TASKS, "{stdout}");
        for line in lines {
            let mut fields = line.split(' ').skip(1);
            let (label, micros) = (fields.next().unwrap(), fields.next().unwrap());
            match label {
                "applied" => applied += 1,
                "recorded:applied" | "recorded:uncertain" => losers.push(micros.parse().unwrap()),
                other => panic!("round {round}: unexpected outcome {other}"),
            }
        }
    }
    assert_eq!(applied, 1, "round {round}: exactly one effect");
    losers
}

async fn api_heads_race(backend: Backend) {
    let h = Harness::start_on(backend, Registry::default_toml()).await;
    let mut losers = Vec::new();
    let started = Instant::now();
    for round in 0..ROUNDS {
        losers.extend(api_round(&h, round).await);
    }
    let elapsed = started.elapsed();
    // One schedule and one applied effect per round, never more.
    assert_eq!(h.schedules().await.len(), ROUNDS);
    let events = h.ledger().events().await.unwrap();
    let count = |kind: &str| events.iter().filter(|e| e.kind == kind).count();
    assert_eq!(count("intent"), ROUNDS);
    assert_eq!(count("effect_applied"), ROUNDS);
    assert_eq!(count("completed"), ROUNDS);
    assert!(h.ledger().verify_chain().await.unwrap().is_intact());
    let (median, max) = latency(losers.clone());
    eprintln!(
        "{backend:?}: {ROUNDS} rounds x {PROCESSES} processes x {TASKS} tasks: \
         {ROUNDS} applied, {} recorded; losers' latency median {median:?}, max {max:?}; \
         {elapsed:?} in all",
        losers.len()
    );
    // Every loser got an answer. How fast is the benchmark's to measure
    // (`cargo bench -p countersign-bench --bench load`, the 32-way races), not
    // a timed test's.
    assert_eq!(losers.len(), ROUNDS * (PROCESSES * TASKS - 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_heads_on_sqlite_apply_exactly_once() {
    api_heads_race(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_heads_on_postgres_apply_exactly_once() {
    api_heads_race(Backend::Postgres).await;
}

/// `countersign --home <home> --json exec <id> --proof-file <file>` as a
/// real process: its JSON answer.
async fn exec_process(home: String, id: String, proof: PathBuf) -> serde_json::Value {
    let out = tokio::process::Command::new(countersign_integration_tests::bin("countersign"))
        .args(["--home", &home, "--json", "exec", &id, "--proof-file"])
        .arg(&proof)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

async fn cli_processes_race(backend: Backend) {
    let h = Harness::start_on(backend, Registry::default_toml()).await;
    for round in 0..CLI_ROUNDS {
        let args = format!(r#"{{"name":"cli-{round}","cron":"0 3 * * *"}}"#);
        let id = h.propose("schedule.create", &args).await;
        let proof = h.approve_to_file(&id).await;
        let home = h.home();
        let runs: Vec<_> = (0..CLI_PROCESSES)
            .map(|_| exec_process(home.clone(), id.clone(), proof.clone()))
            .collect();
        let answers = futures_join_all(runs).await;
        let applied = answers.iter().filter(|a| a["applied"] == true).count();
        assert_eq!(applied, 1, "round {round}: {answers:?}");
        for a in answers.iter().filter(|a| a["applied"] != true) {
            assert_eq!(a["reason"], "already_used", "{a}");
            assert_eq!(a["ok"], false, "{a}");
        }
    }
    assert_eq!(h.schedules().await.len(), CLI_ROUNDS);
    eprintln!(
        "{backend:?}: {CLI_ROUNDS} rounds x {CLI_PROCESSES} countersign exec processes: \
         {CLI_ROUNDS} applied, {} already used",
        CLI_ROUNDS * (CLI_PROCESSES - 1)
    );
}

/// Await every future concurrently, in order.
async fn futures_join_all<
    F: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
>(
    futures: Vec<F>,
) -> Vec<T> {
    let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for handle in handles {
        out.push(handle.await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_processes_on_sqlite_apply_exactly_once() {
    cli_processes_race(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_processes_on_postgres_apply_exactly_once() {
    cli_processes_race(Backend::Postgres).await;
}
