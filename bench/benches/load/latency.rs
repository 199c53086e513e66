//! End-to-end latency, each figure beside its floor, all in one loop so
//! that whatever else the machine does falls on figures and floors alike.
//!
//! A signer runs in this process (`TestSigner`: real mTLS on 127.0.0.1, a
//! fresh home with a SQLite ledger) and every head is a real `countersign`
//! process of `target/<profile>/`:
//!
//! - the CLI as one process per command (`propose`, `show`, `exec` of a
//!   proof on stdin), against process start (`ops list`, no signer call)
//!   and process start plus one fresh mTLS call (`show`); `exec` against
//!   `show` plus one durable SQLite commit made by a fresh process (this
//!   binary run again: it opens the ledger and commits once);
//! - `Propose` and `Decide` (approve, direct) over one kept gRPC channel,
//!   against a kept-channel round trip (`PublicKeys`) plus one commit;
//! - `countersign api serve`: POST propose and POST execute over one kept
//!   HTTP/1.1 connection, against the same floor;
//! - `countersign mcp` over stdio: `propose_schedule_create` and
//!   `execute_approved` (of a handoff), against the same floor.
//!
//! One commit is the raw single-transaction write the consume section
//! measures (chain head, nonce, event, commit), on a fresh SQLite ledger
//! with the same settings, in the same temporary directory tree.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use countersign_gate::signer_client;
use countersign_identity::Role;
use countersign_ledger::Ledger;
use countersign_proto::v1::{
    DecideRequest, Delivery, GetProposalRequest, ProposeRequest, PublicKeysRequest,
};
use countersign_signer::testing::TestSigner;
use serde_json::{Value, json};

use super::heads::{Cli, Http, binary};
use super::{Fixture, Options, RawDb, fresh_commit, fresh_database, prepare, verdict};

/// Iterations before the measured ones.
const WARM_UP: usize = 3;

/// Samples by figure name.
#[derive(Default)]
pub(super) struct Samples(BTreeMap<&'static str, Vec<Duration>>);

impl Samples {
    pub(super) fn add(&mut self, name: &'static str, took: Duration, keep: bool) {
        if keep {
            self.0.entry(name).or_default().push(took);
        }
    }

    /// The nearest-rank percentile `q` of `name`.
    fn pct(&self, name: &str, q: f64) -> Duration {
        let mut v = self.0.get(name).cloned().unwrap_or_default();
        assert!(!v.is_empty(), "no samples of {name}");
        v.sort_unstable();
        let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
        v[rank - 1]
    }

    pub(super) fn p50(&self, name: &str) -> Duration {
        self.pct(name, 0.5)
    }

    pub(super) fn p99(&self, name: &str) -> Duration {
        self.pct(name, 0.99)
    }
}

/// Time one future.
async fn timed<T>(f: impl std::future::Future<Output = T>) -> (Duration, T) {
    let start = Instant::now();
    let out = f.await;
    (start.elapsed(), out)
}

fn args(i: usize, head: &str) -> Value {
    json!({"name": format!("lat-{i}-{head}"), "cron": "0 3 * * *"})
}

/// An error as text.
fn text(e: impl std::fmt::Display) -> String {
    e.to_string()
}

pub(super) fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// The latency section; an error says what is missing.
pub(super) async fn run(fx: &Fixture, opts: &Options) -> Result<(), String> {
    let n = opts.latency_n.unwrap_or(opts.n(300)).max(1);
    let countersign = binary("countersign")?;
    let signer = TestSigner::start()
        .await
        .map_err(|e| format!("signer: {e}"))?;
    let home = signer.home();
    let addr = signer.addr().to_string();
    let cli = Cli::new(countersign.clone(), home.root());
    let connect = |role| signer_client::connect(home, &addr, role);
    let mut head = connect(Role::Head).await.map_err(|e| e.to_string())?;
    let mut approver = connect(Role::Approver).await.map_err(|e| e.to_string())?;

    // The commit floor: its own ledger, proposals approved beforehand.
    let (url, _pg, _dir) = fresh_database("sqlite").await;
    let ledger = Ledger::open(&url).await.map_err(|e| e.to_string())?;
    let raw = RawDb::open(&url).await;
    // Two per iteration: one for the kept connection, one for a fresh process.
    let mut commits = prepare(fx, &ledger, 90_000_000, 2 * (n + WARM_UP)).await;

    let (_, token) = cli
        .run(
            &[
                "--json", "api", "token", "create", "--ttl", "1h", "--stdout",
            ],
            "",
        )
        .await?;
    let token: Value = serde_json::from_str(&token).map_err(|e| e.to_string())?;
    let token = token["token"].as_str().ok_or("no API token")?.to_string();
    let (mut api_child, api_addr) = cli.api_serve().await?;
    let mut http = Http::connect(api_addr, &token).await?;
    let mut mcp = cli.mcp().await?;

    let (_, seed) = cli
        .run(
            &["--json", "propose", "schedule.create", "--args-file", "-"],
            &args(0, "seed").to_string(),
        )
        .await?;
    let seed: Value = serde_json::from_str(&seed).map_err(|e| e.to_string())?;
    let seed = seed["id"].as_str().ok_or("no proposal id")?.to_string();

    let decide = |id: &str, delivery: Delivery| DecideRequest {
        proposal_id: id.to_string(),
        approve: true,
        delivery: delivery.into(),
        ..Default::default()
    };
    let id_of = |v: &Value| {
        v["id"]
            .as_str()
            .map(str::to_string)
            .ok_or(format!("no id: {v}"))
    };

    println!(
        "## End-to-end latency ({n} iterations after {WARM_UP} warm-up, each figure beside its floor)"
    );
    let started = Instant::now();
    let mut s = Samples::default();
    for i in 0..WARM_UP + n {
        let keep = i >= WARM_UP;
        // Floors.
        let (t, r) = timed(cli.run(&["--json", "ops", "list"], "")).await;
        r?;
        s.add("cli ops list (process start)", t, keep);
        let (t, r) = timed(cli.run(&["--json", "show", &seed], "")).await;
        r?;
        s.add("cli show (start + mTLS call)", t, keep);
        let (t, r) = timed(head.public_keys(PublicKeysRequest {})).await;
        r.map_err(text)?;
        s.add("kept-channel PublicKeys", t, keep);
        let get = GetProposalRequest {
            proposal_id: seed.clone(),
        };
        let (t, r) = timed(head.get_proposal(get)).await;
        r.map_err(text)?;
        s.add("kept-channel GetProposal", t, keep);
        let (id, proof) = commits.pop().ok_or("out of prepared proposals")?;
        let (t, ()) = timed(raw.consume(id.into(), &proof)).await;
        s.add("one SQLite commit", t, keep);
        let (id, proof) = commits.pop().ok_or("out of prepared proposals")?;
        let t = fresh_commit(&url, &id, &proof).await?;
        s.add(FRESH_COMMIT, t, keep);

        // The CLI, one process per command.
        let body = args(i, "cli").to_string();
        let propose = ["--json", "propose", "schedule.create", "--args-file", "-"];
        let (t, r) = timed(cli.run(&propose, &body)).await;
        let id = id_of(&serde_json::from_str(&r?.1).map_err(|e| e.to_string())?)?;
        s.add("cli propose", t, keep);
        let proof = approver
            .decide(decide(&id, Delivery::Direct))
            .await
            .map_err(text)?
            .into_inner()
            .proof;
        let exec = ["--json", "exec", &id, "--proof-file", "-"];
        let (t, r) = timed(cli.run(&exec, &proof)).await;
        let done: Value = serde_json::from_str(&r?.1).map_err(|e| e.to_string())?;
        if done["applied"] != true {
            return Err(format!("cli exec did not apply: {done}"));
        }
        s.add("cli exec (proof on stdin)", t, keep);

        // Issuance over the kept channel.
        let request = ProposeRequest {
            operation: "schedule.create".into(),
            arguments_json: args(i, "grpc").to_string(),
            session: "bench".into(),
            note: String::new(),
            idempotency_key: String::new(),
            head: "cli".into(),
        };
        let (t, r) = timed(head.propose(request)).await;
        let id = r.map_err(text)?.into_inner().id;
        s.add("grpc Propose", t, keep);
        let (t, r) = timed(approver.decide(decide(&id, Delivery::Direct))).await;
        r.map_err(text)?;
        s.add("grpc Decide (approve, direct)", t, keep);

        // The API head over one kept connection.
        let body = json!({"arguments": args(i, "api")}).to_string();
        let (t, r) = timed(http.post("/v1/operations/schedule.create/proposals", body)).await;
        let id = id_of(&r?)?;
        s.add("api POST propose", t, keep);
        let proof = approver
            .decide(decide(&id, Delivery::Direct))
            .await
            .map_err(text)?
            .into_inner()
            .proof;
        let path = format!("/v1/proposals/{id}/execute");
        let body = json!({"proof": proof}).to_string();
        let (t, r) = timed(http.post(&path, body)).await;
        let done = r?;
        if done["applied"] != true {
            return Err(format!("api execute did not apply: {done}"));
        }
        s.add("api POST execute", t, keep);

        // The MCP head over stdio.
        let (t, r) = timed(mcp.call(
            "propose_schedule_create",
            json!({"arguments": args(i, "mcp")}),
        ))
        .await;
        let id = id_of(&r?)?;
        s.add("mcp propose_schedule_create", t, keep);
        approver
            .decide(decide(&id, Delivery::Handoff))
            .await
            .map_err(text)?;
        let (t, r) = timed(mcp.call("execute_approved", json!({"proposal_id": id}))).await;
        let done = r?;
        if done["applied"] != true {
            return Err(format!("mcp execute_approved did not apply: {done}"));
        }
        s.add("mcp execute_approved (handoff)", t, keep);
    }
    let elapsed = started.elapsed();

    mcp.stop().await;
    drop(http);
    let _ = api_child.kill().await;
    report(&s, n, elapsed);
    Ok(())
}

/// One durable SQLite commit as a fresh process makes it: opening the
/// ledger, then the commit (`fresh_commit`).
const FRESH_COMMIT: &str = "one SQLite commit, fresh process";

/// The table, and the targets with their verdicts.
fn report(s: &Samples, n: usize, elapsed: Duration) {
    let start = "cli ops list (process start)";
    let show = "cli show (start + mTLS call)";
    let rpc = "kept-channel PublicKeys";
    let commit = "one SQLite commit";
    let rpc_commit = s.p50(rpc) + s.p50(commit);
    // `exec` does what `show` does and one durable commit of its own, in
    // a process that has just opened its ledger.
    let show_commit = s.p50(show) + s.p50(FRESH_COMMIT);
    let floor = |name: &str| match name {
        "cli show (start + mTLS call)" => Some((start, s.p50(start))),
        "cli propose" => Some((show, s.p50(show))),
        "cli exec (proof on stdin)" => Some(("show + fresh commit", show_commit)),
        "kept-channel GetProposal" => Some((rpc, s.p50(rpc))),
        "grpc Propose"
        | "grpc Decide (approve, direct)"
        | "api POST propose"
        | "api POST execute"
        | "mcp propose_schedule_create"
        | "mcp execute_approved (handoff)" => Some(("PublicKeys + commit", rpc_commit)),
        _ => None,
    };
    let order = [
        start,
        show,
        "cli propose",
        "cli exec (proof on stdin)",
        rpc,
        "kept-channel GetProposal",
        commit,
        FRESH_COMMIT,
        "grpc Propose",
        "grpc Decide (approve, direct)",
        "api POST propose",
        "api POST execute",
        "mcp propose_schedule_create",
        "mcp execute_approved (handoff)",
    ];
    println!(
        "{:<32} {:>10} {:>10}   {:<28} {:>10} {:>6}",
        "what", "p50", "p99", "floor", "floor p50", "ratio"
    );
    for name in order {
        let (p50, p99) = (s.p50(name), s.p99(name));
        let (floor_name, floor_p50, ratio) = match floor(name) {
            Some((f, fp)) => (
                f,
                ms(fp),
                format!("{:.2}x", p50.as_secs_f64() / fp.as_secs_f64()),
            ),
            None => ("(floor)", String::new(), String::new()),
        };
        println!(
            "{name:<32} {:>10} {:>10}   {floor_name:<28} {floor_p50:>10} {ratio:>6}",
            ms(p50),
            ms(p99)
        );
    }
    println!("({n} iterations in {elapsed:.1?}; p99 is the nearest-rank percentile)");
    println!("Targets:");
    let name = "cli propose";
    let ratio = s.p50(name).as_secs_f64() / s.p50(show).as_secs_f64();
    println!(
        "  {name}: p50 {ratio:.2}x start + mTLS call (target <= 1.5x) {}",
        verdict(ratio <= 1.5)
    );
    let name = "cli exec (proof on stdin)";
    let ratio = s.p50(name).as_secs_f64() / show_commit.as_secs_f64();
    println!(
        "  {name}: p50 {ratio:.2}x show + one durable commit in a fresh process (target <= 1.3x) {}",
        verdict(ratio <= 1.3)
    );
    for name in [start, show, "cli propose", "cli exec (proof on stdin)"] {
        let ratio = s.p99(name).as_secs_f64() / s.p50(name).as_secs_f64();
        println!(
            "  {name}: p99 {ratio:.2}x its p50 (target <= 3x) {}",
            verdict(ratio <= 3.0)
        );
    }
    for name in ["grpc Propose", "grpc Decide (approve, direct)"] {
        let ratio = s.p50(name).as_secs_f64() / rpc_commit.as_secs_f64();
        println!(
            "  {name}: p50 {ratio:.2}x kept-channel RPC + one commit (target <= 1.5x) {}",
            verdict(ratio <= 1.5)
        );
    }
    println!();
}
