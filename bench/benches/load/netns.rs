//! Consume throughput with the database a round trip away: PostgreSQL in a
//! network namespace of its own (`countersign_netns`, a veth pair into a
//! bridge), its clients in this process behind a proxy that adds 0, 0.5,
//! 1 and 2 ms of round trip (`DelayProxy`; `tc netem` is not available on
//! every machine). At each delay, beside each other:
//!
//! - the floor: the raw single-chain transaction of `main.rs` (chain head
//!   locked, nonce, intent event, commit), 32 callers on one pool;
//! - full consume (`Gate::execute`, what every head runs) for 8 principals
//!   x 4 callers: 8 gates, each with its own ledger handle and pool (as 8
//!   head processes on other hosts would hold), 32 callers taking the
//!   principals' proofs in turn;
//! - the same 8 gates and 32 callers, every gate acting for one principal
//!   (1 x 32): only the principals' chains differ from the line before.
//!
//! Two targets are judged here: at 1 ms, 8 x 4 at least 3x 1 x 32 in the
//! same run (the property: principals share no lock, so a second
//! principal's consumptions do not queue behind the first's chain head);
//! with no delay added, full consume at least 3x the raw floor (measured
//! through the same veth and proxy, which cost CPU that loopback would not).
//!
//! Each figure is of pools that have already served: before it is timed,
//! both sides run a warm-up of their own ([`WARM_UP_ROUNDS`] operations
//! per caller, untimed), so that every pool has opened the connections its
//! callers keep busy and prepared its statements on them, as a head that
//! has been serving has. Without it, the 800 operations of a figure paid
//! for about forty connections (a server process forked for each, its
//! startup and authentication a few round trips away) and the first
//! preparation of every statement on each, which a running head pays once.
//!
//! The server is a throwaway of this section's own (initdb, `fsync` on as
//! on the machine's server), never the shared one; it, the namespace and
//! the bridge are removed at the end. Needs root and `ip`; the section says
//! why it is skipped otherwise.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use countersign_gate::Gate;
use countersign_ledger::Ledger;
use countersign_ledger::testing::{PgPlacement, TempPgDatabase, ThrowawayPgServer};
use countersign_netns::{DelayProxy, Topology};
use countersign_verifier::{Proof, ProposalId};

use crate::{Fixture, Options, RawDb, consume_all, throughput, verdict};

/// Round trips added between the callers and the database.
const ROUND_TRIPS_MS: [f64; 4] = [0.0, 0.5, 1.0, 2.0];
const PRINCIPALS: usize = 8;
const CALLERS_EACH: usize = 4;
/// Untimed operations per caller before each figure.
const WARM_UP_ROUNDS: usize = 4;

/// The section; errors end it with the reason.
pub(crate) async fn run(fx: &Fixture, opts: &Options) -> Result<(), String> {
    if let Some(why) = countersign_netns::unavailable() {
        println!("## Database a round trip away: skipped ({why})");
        println!();
        return Ok(());
    }
    let topology = Topology::create(&["db"])?;
    let db_host = topology.host("db");
    let pg = ThrowawayPgServer::start_in(PgPlacement {
        netns: Some(db_host.netns().to_string()),
        addr: db_host.addr().into(),
        clients: Some(topology.cidr()),
        fsync: true,
    })?;
    let db = TempPgDatabase::create_on(&pg.admin_url())
        .await
        .map_err(|e| e.to_string())?;
    let direct = SocketAddr::new(db_host.addr().into(), pg.port());
    // Proposals and approvals go in directly; only the measured work
    // crosses the proxy.
    let setup = Ledger::open(db.url()).await.map_err(|e| e.to_string())?;
    let principals: Vec<String> = (0..PRINCIPALS)
        .map(|i| format!("pr_{:032x}", i + 1))
        .collect();
    let n = (opts.n(800) / PRINCIPALS).max(4) * PRINCIPALS;
    println!(
        "## PostgreSQL a round trip away (own namespace, veth + bridge, delay proxy; {n} operations per figure)"
    );
    println!(
        "added RTT   raw single-chain tx /s (32 callers)   full /s (1 x {callers})   full /s ({PRINCIPALS} x {CALLERS_EACH})   full/raw   8x4 / 1x32   mean batch",
        callers = PRINCIPALS * CALLERS_EACH
    );
    let mut next = 50_000_000u64;
    for rtt_ms in ROUND_TRIPS_MS {
        let rtt = Duration::from_secs_f64(rtt_ms / 1000.0);
        let proxy = DelayProxy::start(SocketAddr::new(topology.gateway().into(), 0), direct, rtt)
            .map_err(|e| format!("proxy: {e}"))?;
        let url = db
            .url()
            .replace(&direct.to_string(), &proxy.addr().to_string());

        let callers = PRINCIPALS * CALLERS_EACH;
        let warm_up = callers * WARM_UP_ROUNDS;
        let mut items = crate::prepare(fx, &setup, next, n + warm_up).await;
        next += (n + warm_up) as u64;
        let raw = Arc::new(RawDb::open(&url).await);
        let raw_consume = |raw_db: Arc<RawDb>| {
            move |(id, proof): (ProposalId, Proof)| {
                let raw_db = Arc::clone(&raw_db);
                async move { raw_db.consume(id.into(), &proof).await }
            }
        };
        let warm_items = items.split_off(n);
        throughput(warm_items, callers, raw_consume(Arc::clone(&raw))).await;
        let raw_rate = throughput(items, callers, raw_consume(Arc::clone(&raw))).await;
        drop(raw);

        let (full_rate, batch) =
            full_consume_rate(fx, &setup, &url, &principals, n, warm_up, &mut next).await?;
        // The same handles and callers, every gate acting for one principal.
        let one = vec![principals[0].clone(); PRINCIPALS];
        let (one_rate, _) =
            full_consume_rate(fx, &setup, &url, &one, n, warm_up, &mut next).await?;
        let ratio = full_rate / raw_rate;
        let spread = full_rate / one_rate;
        println!(
            "{rtt_ms:>6.1} ms   {raw_rate:>34.0}   {one_rate:>24.0}   {full_rate:>22.0}   {ratio:>7.2}x   {spread:>11.2}x   {batch:>10.1}{}",
            match rtt_ms {
                0.0 => format!(" (target: full/raw >= 3x) {}", verdict(ratio >= 3.0)),
                1.0 => format!(" (target: 8 x 4 / 1 x 32 >= 3x) {}", verdict(spread >= 3.0)),
                _ => String::new(),
            }
        );
    }
    println!();
    Ok(())
}

/// Full consume (`Gate::execute`) of `n` fresh proposals through one gate
/// per entry of `principals`, each gate with its own ledger handle and pool
/// (as that many head processes on other hosts would hold), 32 callers
/// taking the proofs in turn after an untimed warm-up of `warm_up`: with 8
/// distinct principals, 8 x 4; with one principal repeated, 1 x 32 through
/// the same handles, so that only the principals' chains differ. Its rate
/// and the mean group-commit batch.
async fn full_consume_rate(
    fx: &Fixture,
    setup: &Ledger,
    url: &str,
    principals: &[String],
    n: usize,
    warm_up: usize,
    next: &mut u64,
) -> Result<(f64, f64), String> {
    let callers = PRINCIPALS * CALLERS_EACH;
    let mut gates = Vec::with_capacity(principals.len());
    let batches = crate::BatchCount::default();
    for principal in principals {
        let ledger = Ledger::open(url).await.map_err(|e| e.to_string())?;
        batches.observe(&ledger);
        gates.push(fx.gate_for(ledger, principal));
    }
    let mut items: Vec<(Gate, ProposalId, Proof)> = Vec::with_capacity(n + warm_up);
    for i in 0..n + warm_up {
        let k = i % principals.len();
        let (p, proof, record) = fx.proposal_for(&principals[k], *next + i as u64);
        setup.insert_proposal(&p).await.map_err(|e| e.to_string())?;
        setup
            .record_approval(&record)
            .await
            .map_err(|e| e.to_string())?;
        items.push((gates[k].clone(), p.id, proof));
    }
    *next += (n + warm_up) as u64;
    let full_consume = |(gate, id, proof): (Gate, ProposalId, Proof)| async move {
        assert!(consume_all(&gate, &id, &proof).await.applied_now());
    };
    // Interleaved as the timed items are: each gate's callers warm it.
    let warm_items = items.split_off(n);
    throughput(warm_items, callers, full_consume).await;
    batches.reset();
    let rate = throughput(items, callers, full_consume).await;
    Ok((rate, batches.mean()))
}
