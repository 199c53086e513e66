//! countersign's load tool: one run, one machine, every figure next to the
//! raw limit it is measured against.
//!
//! ```text
//! cargo bench -p countersign-bench --bench load              # everything
//! cargo bench -p countersign-bench --bench load -- --quick   # smaller counts
//! cargo bench -p countersign-bench --bench load -- --latency-only
//! ```
//! Options: `--quick`, `--sqlite-only`, `--postgres-only`, `--no-growth`,
//! `--no-race`, `--verification-only`, `--latency-only`, `--no-latency`, `--netns-only`,
//! `--no-netns`, `--gateway-only` (the MCP gateway's figures only; it needs
//! `npm ci --prefix tests/mcp-servers` and `node`),
//! `--latency-n N` (iterations of the latency and watch sections; 300, or
//! 30 with `--quick`), `--watch-only` (the watch section only),
//! `--watch-across-only` (the watch section across two signers of one
//! PostgreSQL ledger only; `--latency-n` iterations),
//! `--idle-secs S` (how long the watch section's idle watcher waits; 30),
//! `--hook-only` (the hook section only; `--latency-n` iterations, 100),
//! `--evidence-only` (`evidence verify` processes only; `--latency-n`
//! iterations, 300), `--policy-only` (the operator's policy at a proposal
//! only; `--latency-n` iterations, 300, or 30 with `--quick`).
//! The latency and hook sections run the `countersign` binary of this
//! profile: `cargo build --release --bins` first.
//! PostgreSQL: a fresh database on `$COUNTERSIGN_TEST_PG` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`), dropped afterwards.
//!
//! What it measures (see BENCHMARKS.md for the figures):
//! 1. raw `verify_strict` of a proof's signature, against
//! 2. full proof verification (`countersign_verifier::verify`: parse,
//!    key lookup, signature, canonical claims, bindings, times);
//! 3. the raw database cost of a nonce-insert + intent-event transaction on
//!    the ledger's own tables (lock the chain head, insert the nonce, insert
//!    the event, commit), with 1, 8 and 32 concurrent callers, against
//! 4. full consume through `Gate::execute` (read the proposal, verify, then
//!    ONE transaction: the checks, then consume, builtin effect, completion
//!    and their events written in one round trip) at the same concurrency;
//! 5. 32-way races for one proof over 32 independent ledger handles (as 32
//!    processes would hold): the losers' latency;
//! 6. consume latency with 10^3 and with 10^6 consumed nonces (bulk-inserted
//!    directly, with their intents and completions);
//! 7. end-to-end latency over real sockets and processes, p50 and p99, each
//!    beside its floor (`latency.rs`): CLI commands against process start
//!    and one fresh mTLS call; Propose, Decide, the API head and the MCP
//!    head against a kept-connection round trip plus one commit;
//! 8. consume throughput with PostgreSQL in a network namespace of its own
//!    behind a proxy adding 0, 0.5, 1 and 2 ms of round trip, beside the
//!    raw single-chain transaction at the same delay (`netns.rs`; needs
//!    root and `ip`, skipped otherwise);
//! 9. a person's approval reaching a `WatchProposal` watcher in another
//!    process, p50 and p99, beside a kept-channel `GetProposal` round
//!    trip, and the CPU time of a watcher waiting `--idle-secs` for a
//!    decision nobody makes (`watch.rs`);
//! 10. `countersign hook claude-code` answering a call a rule covers, as a
//!     process, p50 and p99, beside `countersign show` (`hook.rs`);
//! 11. a decision made through one signer reaching a `WatchProposal`
//!     watcher (another process) of another signer of the same PostgreSQL
//!     ledger, p50 and p99 after `Decide` returned, beside the same
//!     decision reaching a watcher of the deciding signer
//!     (`watch_across.rs`; skipped with `--sqlite-only`);
//! 12. `Propose` with a binding Cedar policy set of 6 and of 200 policies,
//!     p50 and p99, beside `Propose` with none, and the in-process
//!     evaluation alone (`policy.rs`).
//!
//! Proofs are minted with the signer's own issuing code (a dev-dependency:
//! nothing here ships).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod evidence;
mod gateway;
mod heads;
mod hook;
mod latency;
mod netns;
mod policy;
/// The policy sets the policy crate's criterion bench evaluates.
#[path = "../../../policy/benches/sets/mod.rs"]
mod policy_sets;
mod watch;
mod watch_across;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use base64::Engine as _;
use countersign_gate::{Gate, Outcome};
use countersign_ledger::testing::TempPgDatabase;
use countersign_ledger::{IssuanceRecord, Ledger, Proposal};
use countersign_registry::{CurrentRegistry, Registry};
use countersign_signer::issue::sign_claims;
use countersign_signer::key::ProofKey;
use countersign_verifier::canonical::{sha256_hex, to_canonical};
use countersign_verifier::lifetimes::DEFAULT_MAX_LIFETIME;
use countersign_verifier::{
    Claims, Expectations, KeyRing, Principal, Proof, ProposalId, Session, paseto, verify,
};
use ed25519_dalek::Signature;
use serde_json::json;
use time::OffsetDateTime;
use tokio::sync::Mutex;

const PRINCIPAL: &str = "pr_0123456789abcdef0123456789abcdef";
const SESSION: &str = "bench";
const AUDIENCE: &str = "countersign-bench";
const POLICY: &str = "2222222222222222222222222222222222222222222222222222222222222222";
const OPERATION: &str = "schedule.create";

struct Options {
    quick: bool,
    sqlite: bool,
    postgres: bool,
    growth: bool,
    /// Run the 32-way races after each backend's throughput table.
    race: bool,
    /// Run the latency section (and, with `latency_only`, nothing else).
    latency: bool,
    latency_only: bool,
    /// Run the section with the database a round trip away (and, with
    /// `netns_only`, nothing else).
    netns: bool,
    netns_only: bool,
    /// Run only the MCP gateway's section (it needs npm's MCP servers).
    gateway_only: bool,
    /// Iterations of the latency and watch sections, if given.
    latency_n: Option<usize>,
    /// Run only the watch section.
    watch_only: bool,
    /// Run only the watch section across two signers.
    watch_across_only: bool,
    /// Run only the hook section.
    hook_only: bool,
    /// Run only the evidence section.
    evidence_only: bool,
    /// Run only the policy section.
    policy_only: bool,
    /// How long the watch section's idle watcher waits, if given.
    idle_secs: Option<u64>,
}

impl Options {
    fn parse() -> Options {
        let args: Vec<String> = std::env::args().collect();
        let has = |flag: &str| args.iter().any(|a| a == flag);
        Options {
            quick: has("--quick"),
            sqlite: !has("--postgres-only"),
            postgres: !has("--sqlite-only"),
            growth: !has("--no-growth"),
            race: !has("--no-race"),
            latency: !has("--no-latency"),
            latency_only: has("--latency-only"),
            netns: !has("--no-netns"),
            netns_only: has("--netns-only"),
            gateway_only: has("--gateway-only"),
            latency_n: number_after(&args, "--latency-n"),
            watch_only: has("--watch-only"),
            watch_across_only: has("--watch-across-only"),
            hook_only: has("--hook-only"),
            evidence_only: has("--evidence-only"),
            policy_only: has("--policy-only"),
            idle_secs: number_after(&args, "--idle-secs"),
        }
    }

    fn n(&self, full: usize) -> usize {
        if self.quick { full / 10 } else { full }
    }
}

/// The number after `flag` in `args`, if the flag is there; a flag
/// without a number ends the run.
fn number_after<T: std::str::FromStr>(args: &[String], flag: &str) -> Option<T> {
    let at = args.iter().position(|a| a == flag)?;
    match args.get(at + 1).map(|n| n.parse()) {
        Some(Ok(n)) => Some(n),
        _ => {
            eprintln!("{flag} needs a number");
            std::process::exit(2);
        }
    }
}

/// The key, registry and key ring shared by every measurement.
struct Fixture {
    key: ProofKey,
    keys: KeyRing,
    registry: Arc<CurrentRegistry>,
    crev: String,
}

impl Fixture {
    fn new() -> Fixture {
        let key = ProofKey::from_seed(&[7u8; 32]);
        let mut keys = KeyRing::new();
        keys.insert(key.verifying_key());
        let registry = Registry::from_toml_str(Registry::default_toml()).unwrap();
        let crev = registry
            .get(OPERATION)
            .unwrap()
            .contract_revision()
            .to_string();
        Fixture {
            key,
            keys,
            registry: Arc::new(CurrentRegistry::fixed(registry)),
            crev,
        }
    }

    /// Proposal `n` and its proof.
    fn proposal(&self, n: u64) -> (Proposal, Proof, IssuanceRecord) {
        self.proposal_for(PRINCIPAL, n)
    }

    /// Proposal `n` of `principal` and its proof (`n` unique across
    /// principals: it makes the id and the nonce).
    fn proposal_for(&self, principal: &str, n: u64) -> (Proposal, Proof, IssuanceRecord) {
        let now = OffsetDateTime::now_utc().replace_nanosecond(0).unwrap();
        let args = json!({"name": format!("s{n}"), "cron": "0 3 * * *"});
        let arguments_json = to_canonical(&args).unwrap();
        let p = Proposal {
            id: ProposalId::parse(format!("prop_{n:032x}")).unwrap(),
            principal: Principal::parse(principal).unwrap(),
            session: Session::parse(SESSION).unwrap(),
            operation: OPERATION.into(),
            arguments_sha256: sha256_hex(arguments_json.as_bytes()),
            arguments_json,
            contract_revision: self.crev.clone(),
            policy_revision: POLICY.into(),
            note: String::new(),
            preview: "bench".into(),
            created_at: now,
            premise: None,
            decide_by: Some(now + time::Duration::hours(1)),
            policy: None,
        };
        let claims = Claims {
            iss: "countersign-signer".into(),
            aud: AUDIENCE.into(),
            sub: p.principal.to_string(),
            sid: p.session.to_string(),
            pid: p.id.to_string(),
            op: p.operation.clone(),
            args,
            args_sha256: p.arguments_sha256.clone(),
            crev: p.contract_revision.clone(),
            prev: p.policy_revision.clone(),
            grant: None,
            prov: "human:cli".into(),
            jti: format!("{n:0>42}A"),
            iat: now,
            nbf: now,
            exp: now + DEFAULT_MAX_LIFETIME,
            passkey: None,
            premise: None,
        };
        let proof = sign_claims(&self.key, &claims).unwrap();
        let record = IssuanceRecord::from_claims(&claims, &proof);
        (p, proof, record)
    }

    fn expectations<'a>(&'a self, p: &'a Proposal) -> Expectations<'a> {
        Expectations {
            audience: AUDIENCE,
            principal: PRINCIPAL,
            session: SESSION,
            proposal_id: &p.id,
            operation: OPERATION,
            arguments_sha256: &p.arguments_sha256,
            contract_revision: &self.crev,
            policy_revision: POLICY,
            now: OffsetDateTime::now_utc(),
            max_lifetime: DEFAULT_MAX_LIFETIME,
        }
    }

    fn gate(&self, ledger: Ledger) -> Gate {
        self.gate_for(ledger, PRINCIPAL)
    }

    /// A gate of `principal`'s heads.
    fn gate_for(&self, ledger: Ledger, principal: &str) -> Gate {
        Gate::new(
            ledger,
            Arc::clone(&self.registry),
            self.keys.clone(),
            principal.parse().unwrap(),
            AUDIENCE.into(),
            POLICY.into(),
            DEFAULT_MAX_LIFETIME,
        )
    }
}

/// Operations per second of `f` over `n` calls (after a short warm-up).
fn per_second(n: usize, mut f: impl FnMut()) -> f64 {
    for _ in 0..n / 10 {
        f();
    }
    let start = Instant::now();
    for _ in 0..n {
        f();
    }
    n as f64 / start.elapsed().as_secs_f64()
}

fn verification(fx: &Fixture, opts: &Options) {
    let (p, proof, _) = fx.proposal(1);
    // The raw limit: verify_strict over the exact PASETO pre-authentication
    // encoding of this proof's payload and footer.
    let text = proof.expose_secret();
    let mut parts = text.split('.').skip(2);
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let body = b64.decode(parts.next().unwrap()).unwrap();
    let footer = b64.decode(parts.next().unwrap()).unwrap();
    let (payload, sig) = body.split_at(body.len() - 64);
    let signature = Signature::from_bytes(sig.try_into().unwrap());
    let message = paseto::signing_input(payload, &footer);
    let key = fx.key.verifying_key();
    let n = opts.n(20_000);
    let expect = fx.expectations(&p);
    // Alternating batches, best of each: on a shared machine a neighbour's
    // burst then slows one batch, not one side of the comparison.
    let (mut raw, mut full) = (0f64, 0f64);
    for _ in 0..5 {
        raw = raw.max(per_second(n / 5, || {
            key.verify_strict(&message, &signature).unwrap()
        }));
        full = full.max(per_second(n / 5, || {
            let proof = Proof::from_text(text.to_string()).unwrap();
            verify(&proof, &fx.keys, &expect).unwrap();
        }));
    }
    println!("## Verification ({n} calls each, best of 5 alternating batches)");
    println!(
        "raw ed25519 verify_strict      {raw:>10.0} /s  {:>8.1} us",
        1e6 / raw
    );
    println!(
        "full proof verification        {full:>10.0} /s  {:>8.1} us",
        1e6 / full
    );
    println!(
        "full / raw cost: {:.2}x (target <= 1.2x) {}",
        raw / full,
        verdict(raw / full <= 1.2)
    );
    println!();
}

fn verdict(met: bool) -> &'static str {
    if met { "MET" } else { "MISSED" }
}

/// A fresh database of `backend`; keep the guard alive while using it.
async fn fresh_database(
    backend: &str,
) -> (String, Option<TempPgDatabase>, Option<tempfile::TempDir>) {
    match backend {
        "postgres" => {
            let db = TempPgDatabase::create().await.unwrap();
            (db.url().to_string(), Some(db), None)
        }
        _ => {
            let dir = tempfile::tempdir().unwrap();
            let url = format!("sqlite://{}", dir.path().join("ledger.db").display());
            (url, None, Some(dir))
        }
    }
}

/// Insert and approve proposals `from..from + n`; their proofs.
async fn prepare(fx: &Fixture, ledger: &Ledger, from: u64, n: usize) -> Vec<(ProposalId, Proof)> {
    let mut out = Vec::with_capacity(n);
    for i in from..from + n as u64 {
        let (p, proof, record) = fx.proposal(i);
        ledger.insert_proposal(&p).await.unwrap();
        ledger.record_approval(&record).await.unwrap();
        out.push((p.id, proof));
    }
    out
}

/// Run `work` over `items` with `callers` concurrent tasks; ops per second.
async fn throughput<T, F, Fut>(items: Vec<T>, callers: usize, work: F) -> f64
where
    T: Send + 'static,
    F: Fn(T) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let n = items.len();
    let queue = Arc::new(Mutex::new(items));
    let work = Arc::new(work);
    let start = Instant::now();
    let tasks: Vec<_> = (0..callers)
        .map(|_| {
            let (queue, work) = (Arc::clone(&queue), Arc::clone(&work));
            tokio::spawn(async move {
                loop {
                    let Some(item) = queue.lock().await.pop() else {
                        break;
                    };
                    work(item).await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    n as f64 / start.elapsed().as_secs_f64()
}

/// The raw transaction: lock one chain's head (the principal's), insert the
/// nonce, insert the event extending the head (its trigger advances the
/// head), commit. On
/// SQLite one writer connection per process and `BEGIN IMMEDIATE`, as the
/// ledger does.
enum RawDb {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
}

macro_rules! raw_transaction {
    ($tx:expr, $lock:expr, $insert_nonce:expr, $nonce:expr, $pid:expr) => {{
        let tx = &mut $tx;
        let (count, hash): (i64, String) = sqlx::query_as($lock)
            .bind(PRINCIPAL)
            .fetch_optional(&mut **tx)
            .await
            .unwrap()
            .unwrap_or((0, countersign_ledger::GENESIS_HASH.to_owned()));
        $insert_nonce.execute(&mut **tx).await.unwrap();
        sqlx::query(
            "INSERT INTO events (chain, seq, at, kind, proposal_id, actor, details, prev_hash, hash)
             VALUES ($4, $1, $2, 'intent', $3, $4, $5, $6, $7)",
        )
        .bind(count + 1)
        .bind("2026-01-01T00:00:00Z")
        .bind($pid)
        .bind(PRINCIPAL)
        .bind(format!(r#"{{"nonce":"{}"}}"#, $nonce))
        .bind(&hash)
        .bind(sha256_hex(format!("{hash}{}", $nonce).as_bytes()))
        .execute(&mut **tx)
        .await
        .unwrap();
    }};
}

impl RawDb {
    async fn open(url: &str) -> RawDb {
        use sqlx::sqlite::{
            SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous,
        };
        if let Some(path) = url.strip_prefix("sqlite://") {
            let options = SqliteConnectOptions::new()
                .filename(path)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Full)
                .foreign_keys(true)
                .busy_timeout(Duration::from_secs(5));
            let pool = SqlitePoolOptions::new()
                .max_connections(1)
                .connect_with(options)
                .await
                .unwrap();
            RawDb::Sqlite(pool)
        } else {
            let pool = sqlx::postgres::PgPoolOptions::new()
                .max_connections(16)
                .connect(url)
                .await
                .unwrap();
            RawDb::Postgres(pool)
        }
    }

    /// One raw transaction for proposal `proposal_id` approved with `proof`.
    /// On PostgreSQL the nonce insert carries the proof's consume key, which
    /// the ledger's trigger checks against the issuance (as it does for
    /// every head's consume).
    async fn consume(&self, proposal_id: String, proof: &Proof) {
        let nonce = nonce_of(&proposal_id);
        let insert = "INSERT INTO consumed_nonces (nonce, proposal_id, consumed_at";
        let at = "2026-01-01T00:00:00Z";
        match self {
            RawDb::Sqlite(pool) => {
                let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
                let sql = format!("{insert}) VALUES ($1, $2, $3)");
                let query = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(&nonce)
                    .bind(&proposal_id)
                    .bind(at);
                let lock = "SELECT count, hash FROM chain_heads WHERE chain = $1";
                raw_transaction!(tx, lock, query, &nonce, &proposal_id);
                tx.commit().await.unwrap();
            }
            RawDb::Postgres(pool) => {
                let mut tx = pool.begin().await.unwrap();
                let sql = format!("{insert}, consume_key) VALUES ($1, $2, $3, $4)");
                let query = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(&nonce)
                    .bind(&proposal_id)
                    .bind(at)
                    .bind(proof.consume_key().expose_hex());
                let lock = "SELECT count, hash FROM countersign_lock_chain($1)";
                raw_transaction!(tx, lock, query, &nonce, &proposal_id);
                tx.commit().await.unwrap();
            }
        }
    }
}

/// Batches a ledger committed, and the consumptions they carried.
#[derive(Clone, Default)]
pub(crate) struct BatchCount(Arc<Counts>);

#[derive(Default)]
struct Counts {
    batches: AtomicU64,
    consumptions: AtomicU64,
}

impl BatchCount {
    /// Count the batches `ledger` commits from now on.
    pub(crate) fn observe(&self, ledger: &Ledger) {
        let seen = Arc::clone(&self.0);
        ledger.observe_batches(Arc::new(move |batch| {
            seen.batches.fetch_add(1, Ordering::Relaxed);
            seen.consumptions
                .fetch_add(batch.consumptions as u64, Ordering::Relaxed);
        }));
    }

    pub(crate) fn reset(&self) {
        self.0.batches.store(0, Ordering::Relaxed);
        self.0.consumptions.store(0, Ordering::Relaxed);
    }

    /// Consumptions per commit since the last reset.
    pub(crate) fn mean(&self) -> f64 {
        let batches = self.0.batches.load(Ordering::Relaxed).max(1);
        self.0.consumptions.load(Ordering::Relaxed) as f64 / batches as f64
    }
}

/// The argument that makes this binary the child of [`fresh_commit`].
const ONE_COMMIT: &str = "--one-commit";

/// One durable SQLite commit in a fresh process, as `countersign exec`
/// does its own: this binary runs again as a child that opens the ledger
/// at `url` (a new connection, the WAL opened cold) and commits the raw
/// consume of `id` with the proof it reads on stdin, timing the open and
/// the commit itself; what process start costs is in `show`, the other
/// half of the floor. The child's own measure comes back on its stdout.
async fn fresh_commit(url: &str, id: &ProposalId, proof: &Proof) -> Result<Duration, String> {
    use tokio::io::AsyncWriteExt as _;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut child = tokio::process::Command::new(exe)
        .args([ONE_COMMIT, url, id.as_str()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("fresh commit child: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    stdin
        .write_all(proof.expose_secret().as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    drop(stdin);
    let out = child.wait_with_output().await.map_err(|e| e.to_string())?;
    let nanos: u64 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|_| format!("fresh commit child answered {:?}", out))?;
    Ok(Duration::from_nanos(nanos))
}

/// The child of [`fresh_commit`]: `url` and `id` as arguments, the proof
/// on stdin; prints how long opening the ledger and committing took.
fn one_commit_child(args: &[String]) {
    let [url, id] = args else {
        panic!("usage: {ONE_COMMIT} URL PROPOSAL_ID (proof on stdin)");
    };
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).unwrap();
    let proof = Proof::from_text(text.trim().to_string()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let took = runtime.block_on(async {
        let started = Instant::now();
        let raw = RawDb::open(url).await;
        raw.consume(id.clone(), &proof).await;
        started.elapsed()
    });
    println!("{}", took.as_nanos());
}

/// The nonce of proposal `prop_<n hex>` as `Fixture::proposal` makes it.
fn nonce_of(id: &str) -> String {
    let n = u64::from_str_radix(id.trim_start_matches("prop_"), 16).unwrap();
    format!("{n:0>42}A")
}

async fn consume_all(gate: &Gate, id: &ProposalId, proof: &Proof) -> Outcome {
    let session = Session::parse(SESSION).unwrap();
    gate.execute(id, &session, proof).await.unwrap()
}

async fn backend_run(fx: &Fixture, opts: &Options, backend: &str) {
    let (url, _pg, _dir) = fresh_database(backend).await;
    let ledger = Ledger::open(&url).await.unwrap();
    let raw = Arc::new(RawDb::open(&url).await);
    let gate = fx.gate(ledger.clone());
    let n = opts.n(2000);
    println!("## {backend}: consume throughput ({n} operations per figure)");
    println!("callers   raw tx /s   full consume /s   full/raw   mean batch");
    let batches = BatchCount::default();
    batches.observe(&ledger);
    let mut next = 1_000_000u64;
    for callers in [1usize, 8, 32] {
        let items = prepare(fx, &ledger, next, n).await;
        next += n as u64;
        let raw_db = Arc::clone(&raw);
        let raw_rate = throughput(items, callers, move |(id, proof): (ProposalId, Proof)| {
            let raw_db = Arc::clone(&raw_db);
            async move { raw_db.consume(id.into(), &proof).await }
        })
        .await;
        let items = prepare(fx, &ledger, next, n).await;
        next += n as u64;
        let g = gate.clone();
        batches.reset();
        let full_rate = throughput(items, callers, move |(id, proof): (ProposalId, Proof)| {
            let g = g.clone();
            async move {
                assert!(consume_all(&g, &id, &proof).await.applied_now());
            }
        })
        .await;
        let ratio = full_rate / raw_rate;
        // The issue's target is for 32 callers of one principal; fewer
        // callers are shown for the shape.
        let target = match callers {
            32 => format!("(target >= 1.5x) {}", verdict(ratio >= 1.5)),
            _ => String::new(),
        };
        println!(
            "{callers:>7}   {raw_rate:>9.0}   {full_rate:>15.0}   {ratio:>7.2}x   {:>10.1} {target}",
            batches.mean(),
        );
    }
    println!();
    // Free the raw pool's connections: the race opens 32 more handles.
    drop(raw);
    if opts.race {
        race_latency(fx, opts, &url, &ledger, &mut next).await;
    }
}

/// 32 callers race for one proof per round. On SQLite each has its own
/// ledger handle (its own connections, as 32 processes would); on
/// PostgreSQL 8 handles serve 4 callers each (as 8 API-head processes
/// would), to stay within the server's connection limit (100 by default,
/// shared with whatever else runs there).
async fn race_latency(fx: &Fixture, opts: &Options, url: &str, ledger: &Ledger, next: &mut u64) {
    const WAY: usize = 32;
    let handles = if url.starts_with("postgres") { 8 } else { WAY };
    let rounds = opts.n(100).max(5);
    let mut gates = Vec::with_capacity(WAY);
    for _ in 0..handles {
        gates.push(fx.gate(Ledger::open(url).await.unwrap()));
    }
    for i in handles..WAY {
        gates.push(gates[i % handles].clone());
    }
    let mut losers = Vec::new();
    let mut winners = Vec::new();
    let start = Instant::now();
    for _ in 0..rounds {
        let (id, proof) = prepare(fx, ledger, *next, 1).await.pop().unwrap();
        *next += 1;
        let barrier = Arc::new(tokio::sync::Barrier::new(WAY));
        let tasks: Vec<_> = gates
            .iter()
            .map(|g| {
                let (g, id, barrier) = (g.clone(), id.clone(), Arc::clone(&barrier));
                let proof = Proof::from_text(proof.expose_secret().to_string()).unwrap();
                tokio::spawn(async move {
                    barrier.wait().await;
                    let t = Instant::now();
                    let outcome = consume_all(&g, &id, &proof).await;
                    (outcome.applied_now(), t.elapsed())
                })
            })
            .collect();
        let mut applied = 0;
        for task in tasks {
            let (won, took) = task.await.unwrap();
            if won {
                applied += 1;
                winners.push(took);
            } else {
                losers.push(took);
            }
        }
        assert_eq!(applied, 1, "exactly one effect per round");
    }
    let elapsed = start.elapsed();
    losers.sort_unstable();
    let pct = |q: f64| losers[((losers.len() - 1) as f64 * q) as usize];
    println!("## {WAY}-way races: {rounds} rounds, {handles} independent ledger handles");
    println!(
        "exactly one effect per round; losers' latency: median {:?}, p99 {:?}, max {:?}; \
         winners' median {:?}; {:?} per round",
        pct(0.5),
        pct(0.99),
        pct(1.0),
        {
            winners.sort_unstable();
            winners[winners.len() / 2]
        },
        elapsed / rounds as u32
    );
    println!();
}

/// Bulk-insert consumed nonces (with intents and completions) directly,
/// bypassing foreign keys, until the table holds `target` rows.
async fn grow_to(url: &str, target: u64) {
    use sqlx::Connection as _;
    let sql = |from: u64, to: u64, series: &str| {
        format!(
            "INSERT INTO consumed_nonces (nonce, proposal_id, consumed_at)
               SELECT 'g' || n, 'prop_g' || n, '2026-01-01T00:00:00Z' FROM {series};
             INSERT INTO intents (nonce, proposal_id, principal, session, operation,
                 arguments_json, proof_sha256, recorded_at)
               SELECT 'g' || n, 'prop_g' || n, '{PRINCIPAL}', 's', '{OPERATION}', '{{}}',
                      'h' || n, '2026-01-01T00:00:00Z' FROM {series};
             INSERT INTO completions (nonce, proposal_id, status, error, result, resolved_by,
                 completed_at)
               SELECT 'g' || n, 'prop_g' || n, 'applied', NULL, '{{}}', NULL,
                      '2026-01-01T00:00:00Z' FROM {series};",
        )
        .replace("{from}", &from.to_string())
        .replace("{to}", &to.to_string())
    };
    if let Some(path) = url.strip_prefix("sqlite://") {
        let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{path}"))
            .await
            .unwrap();
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM consumed_nonces")
            .fetch_one(&mut c)
            .await
            .unwrap();
        let from = u64::try_from(count).unwrap();
        let series = "(WITH RECURSIVE s(n) AS (SELECT {from} UNION ALL SELECT n + 1 FROM s WHERE n + 1 < {to}) SELECT n FROM s)";
        let body = sql(from, target, series);
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "PRAGMA foreign_keys = OFF; BEGIN; {body} COMMIT;"
        )))
        .execute(&mut c)
        .await
        .unwrap();
        c.close().await.unwrap();
    } else {
        let mut c = sqlx::PgConnection::connect(url).await.unwrap();
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM consumed_nonces")
            .fetch_one(&mut c)
            .await
            .unwrap();
        let from = u64::try_from(count).unwrap();
        let series = "generate_series({from}, {to} - 1) AS s(n)";
        let body = sql(from, target, series);
        // Superuser only: skips the foreign-key triggers for this session.
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "SET session_replication_role = replica; BEGIN; {body} COMMIT; ANALYZE;"
        )))
        .execute(&mut c)
        .await
        .unwrap();
        c.close().await.unwrap();
    }
}

/// Mean and median consume latency, one caller, over `n` fresh proofs.
async fn consume_latency(
    fx: &Fixture,
    gate: &Gate,
    ledger: &Ledger,
    from: u64,
    n: usize,
) -> (Duration, Duration) {
    let items = prepare(fx, ledger, from, n).await;
    let mut took = Vec::with_capacity(n);
    for (id, proof) in items {
        let t = Instant::now();
        assert!(consume_all(gate, &id, &proof).await.applied_now());
        took.push(t.elapsed());
    }
    let mean = took.iter().sum::<Duration>() / n as u32;
    took.sort_unstable();
    (mean, took[n / 2])
}

async fn growth(fx: &Fixture, opts: &Options, backend: &str) {
    let (url, _pg, _dir) = fresh_database(backend).await;
    let ledger = Ledger::open(&url).await.unwrap();
    let gate = fx.gate(ledger.clone());
    let n = opts.n(1000);
    let big: u64 = if opts.quick { 100_000 } else { 1_000_000 };
    grow_to(&url, 1_000).await;
    let (small_mean, small_median) = consume_latency(fx, &gate, &ledger, 10_000_000, n).await;
    let t = Instant::now();
    grow_to(&url, big).await;
    let filled = t.elapsed();
    let (big_mean, big_median) = consume_latency(fx, &gate, &ledger, 20_000_000, n).await;
    // The median: on a shared machine one stall moves the mean.
    let ratio = big_median.as_secs_f64() / small_median.as_secs_f64();
    println!("## {backend}: consume latency as consumed nonces grow ({n} consumes each)");
    println!("10^3 nonces: mean {small_mean:?}, median {small_median:?}");
    println!(
        "{big} nonces: mean {big_mean:?}, median {big_median:?} (bulk insert took {filled:?})"
    );
    println!(
        "ratio of medians {ratio:.2}x (target <= 1.2x) {}",
        verdict(ratio <= 1.2)
    );
    println!();
}

fn main() {
    // The child half of the latency section's fresh-process commit floor.
    if let Some(at) = std::env::args().position(|a| a == ONE_COMMIT) {
        return one_commit_child(&std::env::args().skip(at + 1).collect::<Vec<_>>());
    }
    // The watch section's watcher process.
    if let Some(at) = std::env::args().position(|a| a == watch::WATCH_CHILD) {
        return watch::child(&std::env::args().skip(at + 1).collect::<Vec<_>>());
    }
    let opts = Options::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let fx = Fixture::new();
    println!(
        "# countersign load tool ({}; {} CPUs)",
        if opts.quick { "quick" } else { "full" },
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
    println!();
    if opts.latency_only {
        return runtime.block_on(latency_section(&fx, &opts));
    }
    if opts.netns_only {
        return runtime.block_on(netns_section(&fx, &opts));
    }
    if opts.gateway_only {
        return runtime.block_on(gateway_section(&fx, &opts));
    }
    if opts.watch_only {
        return runtime.block_on(watch_section(&opts));
    }
    if opts.watch_across_only {
        return runtime.block_on(watch_across_section(&opts));
    }
    if opts.hook_only {
        return runtime.block_on(hook_section(&fx, &opts));
    }
    if opts.evidence_only {
        return evidence_section(&opts);
    }
    if opts.policy_only {
        return runtime.block_on(policy_section(&opts));
    }
    verification(&fx, &opts);
    if std::env::args().any(|a| a == "--verification-only") {
        return;
    }
    runtime.block_on(async {
        let backends: Vec<&str> = [("sqlite", opts.sqlite), ("postgres", opts.postgres)]
            .into_iter()
            .filter_map(|(b, on)| on.then_some(b))
            .collect();
        for backend in &backends {
            backend_run(&fx, &opts, backend).await;
        }
        if opts.growth {
            for backend in &backends {
                growth(&fx, &opts, backend).await;
            }
        }
        if opts.latency {
            latency_section(&fx, &opts).await;
            watch_section(&opts).await;
            if opts.postgres {
                watch_across_section(&opts).await;
            }
            hook_section(&fx, &opts).await;
            evidence_section(&opts);
            policy_section(&opts).await;
        }
        if opts.netns {
            netns_section(&fx, &opts).await;
        }
    });
}

/// The section with the database a round trip away; a failure ends the
/// run with the reason.
/// The gateway section; a missing binary, upstream or failed call ends
/// the run with the reason.
async fn gateway_section(fx: &Fixture, opts: &Options) {
    if let Err(e) = gateway::run(fx, opts).await {
        eprintln!("gateway section: {e}");
        std::process::exit(1);
    }
}

async fn netns_section(fx: &Fixture, opts: &Options) {
    if let Err(e) = netns::run(fx, opts).await {
        eprintln!("netns section: {e}");
        std::process::exit(1);
    }
}

/// The latency section; a missing binary or a failed command ends the
/// run with the reason.
/// The evidence section; a failure ends the run with the reason.
fn evidence_section(opts: &Options) {
    if let Err(e) = evidence::run(opts) {
        eprintln!("evidence section: {e}");
        std::process::exit(1);
    }
}

/// The hook section; a failure ends the run with the reason.
async fn hook_section(fx: &Fixture, opts: &Options) {
    if let Err(e) = hook::run(fx, opts).await {
        eprintln!("hook section: {e}");
        std::process::exit(1);
    }
}

/// The policy section; a failure ends the run with the reason.
async fn policy_section(opts: &Options) {
    if let Err(e) = policy::run(opts).await {
        eprintln!("policy section: {e}");
        std::process::exit(1);
    }
}

/// The watch section; a failure ends the run with the reason.
async fn watch_section(opts: &Options) {
    if let Err(e) = watch::run(opts).await {
        eprintln!("watch section: {e}");
        std::process::exit(1);
    }
}

/// The watch section across two signers; a failure ends the run with the
/// reason.
async fn watch_across_section(opts: &Options) {
    if let Err(e) = watch_across::run(opts).await {
        eprintln!("watch across signers section: {e}");
        std::process::exit(1);
    }
}

async fn latency_section(fx: &Fixture, opts: &Options) {
    if let Err(e) = latency::run(fx, opts).await {
        eprintln!("latency section: {e}");
        std::process::exit(1);
    }
}
