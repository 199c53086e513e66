//! A decision reaching a watcher that watches through another signer of
//! the same PostgreSQL ledger (`LISTEN`/`NOTIFY`), beside its floor: the
//! same decision reaching a watcher of the signer it was made through.
//!
//! Two signers run in this process (`TestSigner`s: real mTLS on
//! 127.0.0.1, each its own server, one fresh PostgreSQL database on
//! `$COUNTERSIGN_TEST_PG`, dropped afterwards). Two watchers are other
//! processes (this binary run again with `--watch-child`, as in
//! `watch.rs`), one a head of signer A, one a head of signer B. For each
//! iteration this process proposes through A, both watchers open
//! `WatchProposal` and say when their first (pending) view arrived, this
//! process approves with `Decide` through A over its kept approver
//! channel, and each watcher reports when the approved view arrived.
//! The figures are those instants minus the instant `Decide` returned
//! here (the system clock, which the processes share): through B is what
//! crossing signers costs (A's `pg_notify` after its commit, B's listener,
//! B's read of the ledger); through A, in the same loop and for the same
//! decision, is its floor.

use std::time::{Duration, Instant};

use countersign_gate::signer_client;
use countersign_identity::Role;
use countersign_ledger::testing::TempPgDatabase;
use countersign_registry::Registry;
use countersign_signer::testing::TestSigner;

use super::watch::{TARGET_P50, WARM_UP, Watcher, approve, ms, now_nanos, print_rows, propose};
use super::{Options, verdict};

/// The watch-across-signers section; an error says what went wrong.
pub(super) async fn run(opts: &Options) -> Result<(), String> {
    let n = opts.latency_n.unwrap_or(opts.n(300)).max(1);
    let db = TempPgDatabase::create()
        .await
        .map_err(|e| format!("database: {e}"))?;
    let a = TestSigner::start_with(Registry::default_toml(), Some(db.url()))
        .await
        .map_err(|e| format!("signer A: {e}"))?;
    let b = a
        .another_on_this_home()
        .await
        .map_err(|e| format!("signer B: {e}"))?;
    let home = a.home();
    let (addr_a, addr_b) = (a.addr().to_string(), b.addr().to_string());
    let connect = |role| signer_client::connect(home, &addr_a, role);
    let mut head = connect(Role::Head).await.map_err(|e| e.to_string())?;
    let mut approver = connect(Role::Approver).await.map_err(|e| e.to_string())?;
    let mut on_a = Watcher::start(home, &addr_a)?;
    let mut on_b = Watcher::start(home, &addr_b)?;

    let mut decide = Vec::with_capacity(n);
    let mut floor = Vec::with_capacity(n);
    let mut across = Vec::with_capacity(n);
    let started = Instant::now();
    for i in 0..n + WARM_UP {
        let proposal = propose(&mut head, &format!("across-{i}")).await?;
        for watcher in [&mut on_a, &mut on_b] {
            watcher.watch(&proposal.id).await?;
        }
        for watcher in [&mut on_a, &mut on_b] {
            watcher.ready().await?;
        }
        let decided = approve(&mut approver, &proposal.id).await?;
        let returned = now_nanos();
        let through_a = on_a.hear_number("approved").await?;
        let through_b = on_b.hear_number("approved").await?;
        if i >= WARM_UP {
            decide.push(decided.as_nanos() as i128);
            floor.push(through_a - returned);
            across.push(through_b - returned);
        }
    }
    let elapsed = started.elapsed();
    on_a.quit().await?;
    on_b.quit().await?;
    b.stop().await.map_err(|e| format!("signer B: {e}"))?;
    a.stop().await.map_err(|e| format!("signer A: {e}"))?;

    println!("## WatchProposal across two signers of one PostgreSQL ledger");
    let p50s = print_rows(vec![
        (
            "Decide (approve, handoff) round trip, through A",
            &mut decide,
        ),
        (
            "watcher through A has it, after Decide returned (floor)",
            &mut floor,
        ),
        (
            "watcher through B has it, after Decide returned",
            &mut across,
        ),
    ]);
    println!("({n} iterations in {elapsed:.1?}; p99 is the nearest-rank percentile)");
    let p50 = Duration::from_nanos(u64::try_from(p50s[2].max(0)).unwrap_or(0));
    println!("Targets:");
    println!(
        "  a decision made through one signer reaches a watcher of another: p50 {:.2} ms after Decide returned, {} beyond the same watch through the deciding signer (target <= 100 ms) {}",
        p50.as_secs_f64() * 1e3,
        ms(p50s[2] - p50s[1]),
        verdict(p50 <= TARGET_P50)
    );
    println!();
    Ok(())
}
