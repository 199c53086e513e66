//! Faults across two signer processes of one PostgreSQL ledger: signer A
//! kills itself (`COUNTERSIGN_FAULT`, SIGKILL) at a point of an approval,
//! and a client connected to [A, B] the way heads connect
//! (`countersign_identity::failover::signer_channel`, what
//! `countersign_gate::signer_client::connect_any` builds) carries on
//! through B with the operation's safe continuation: read the proposal
//! again; approve it if it is still pending, else see a second approval
//! refused `not_pending`; claim its handoff, which B re-derives from the
//! ledger when A held it. A then restarts on its port for the next round.
//!
//! A and B serve copies of one home: the same CA, certificates and proof
//! key (a copy keeps the key so that B can re-derive a handoff proof A
//! issued; with a key of its own, such a claim is
//! `handoff_unrecoverable`, see `recover.rs`).
//!
//! In the first round a watch held through B from before each approval
//! hears it, within one announcement sweep where A died between its
//! commit and its `NOTIFY`.
//!
//! After every round the ledger, read directly, holds at most one decision,
//! one issuance and one approval event per proposal, every decision the
//! client saw acknowledged, no proof hash twice, and intact chains.
//!
//! Rounds: `COUNTERSIGN_FAULT_ROUNDS` (default 20), each round one pass over
//! the fault points; the time per round is printed, as is each fault
//! point's unavailability (from the failed request to the next request
//! answered).
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::{BTreeMap, HashMap};
use std::os::unix::process::ExitStatusExt as _;
use std::time::{Duration, Instant};

use countersign_identity::{Home, Role, failover, tls};
use countersign_ledger::Ledger;
use countersign_ledger::testing::TempPgDatabase;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{
    ClaimHandoffRequest, Delivery, GetProposalRequest, ProposalStatus, ProposalView,
};
use countersign_verifier::canonical::sha256_hex;
use sqlx::{Connection as _, PgConnection};
use tonic::Code;
use tonic::transport::Channel;

use support::{
    SESSION, approve, listening_on, next, process_client, process_home, propose, ready_line,
    reason_of, spawn_serve_with_fault, watch_past_pending,
};

const BIN: &str = env!("CARGO_BIN_EXE_countersign-signer");

/// The fault points of an approval, in the order a round visits them, and
/// whether the proposal is still pending after a kill there.
const POINTS: [(&str, bool); 3] = [
    ("signer_in_issuance", true),
    ("signer_after_issuance_commit", false),
    ("signer_after_decision_commit", false),
];

/// How long the client keeps retrying a read after a kill.
const PATIENCE: Duration = Duration::from_secs(20);

/// A signer process and its port; killed if the test ends first.
struct Serving {
    child: std::process::Child,
    addr: String,
}

impl Serving {
    /// Waits for the process to end by itself: its exit status.
    async fn ended(&mut self) -> std::process::ExitStatus {
        loop {
            if let Some(exit) = self.child.try_wait().unwrap() {
                return exit;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Stops it with SIGTERM; it exits successfully.
    async fn stop(mut self) {
        let pid = self.child.id().to_string();
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status();
        assert!(sent.unwrap().success());
        let exit = self.ended().await;
        assert!(exit.success(), "{exit:?}");
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        // Already ended, this does nothing.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `countersign-signer serve` of `home` (whose configuration names its
/// port), with `fault` set or not; ready once it printed its ready line.
fn serve(home: &Home, fault: Option<&str>) -> Serving {
    let (child, mut stderr) = spawn_serve_with_fault(BIN, home, fault);
    let line = ready_line(&mut stderr);
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    Serving {
        child,
        addr: listening_on(&line).0,
    }
}

/// A free port on 127.0.0.1, for a signer that restarts on the same one.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Writes `home`'s configuration: the signer on `port`, the ledger at `url`.
fn configure(home: &Home, port: u16, url: &str) {
    std::fs::remove_file(home.config_path()).unwrap();
    countersign_identity::files::write_private_new(
        &home.config_path(),
        format!("[signer]\naddr = \"127.0.0.1:{port}\"\n[ledger]\nurl = \"{url}\"\n").as_bytes(),
    )
    .unwrap();
}

/// A client of whichever of `addrs` answers, first tried first, as heads
/// connect.
async fn failover_client(home: &Home, addrs: &[String], role: Role) -> SignerClient<Channel> {
    tls::install_crypto_provider();
    let config = tls::client_config(home, role).unwrap();
    SignerClient::new(failover::signer_channel(addrs, config).await.unwrap())
}

/// The proposal `id` read through `client`, retried while no signer
/// answers (a read is always safe to send again).
async fn read_again(client: &mut SignerClient<Channel>, id: &str) -> ProposalView {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let request = GetProposalRequest {
            proposal_id: id.into(),
        };
        match client.get_proposal(request).await {
            Ok(view) => return view.into_inner(),
            Err(status) => {
                assert!(
                    matches!(
                        status.code(),
                        Code::Unavailable | Code::Unknown | Code::Cancelled
                    ),
                    "{status:?}"
                );
                assert!(Instant::now() < deadline, "no signer answered: {status:?}");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    }
}

/// What the client saw acknowledged and claimed.
#[derive(Default)]
struct Seen {
    /// Proposals whose approval a signer acknowledged.
    approved: Vec<String>,
    /// Proof hashes handed over by claims, by proposal.
    claimed: HashMap<String, String>,
    /// Unavailability after a kill at each point.
    unavailable: BTreeMap<&'static str, Vec<Duration>>,
}

/// One round at `point`: A (serving with the fault) dies approving; the
/// client continues through B.
/// With `watch_b`, a watch of the proposal is held through B from before
/// the approval A is killed in, and must see it approved: within one
/// announcement sweep (`countersign_signer::SWEEP_EVERY`) when A died
/// between its commit and its `NOTIFY`.
async fn round(home: &Home, addrs: &[String], point: &'static str, watch_b: bool, seen: &mut Seen) {
    let mut a = serve(home, Some(point));
    assert_eq!(a.addr, addrs[0]);
    let mut head = failover_client(home, addrs, Role::Head).await;
    let mut approver = failover_client(home, addrs, Role::Approver).await;
    let proposal = propose(&mut head).await;
    let mut views_on_b = match watch_b {
        true => {
            let client_of_b = process_client(&addrs[1], home, Role::Head).await;
            Some(watch_past_pending(client_of_b, &proposal.id).await)
        }
        false => None,
    };

    let status = approver
        .decide(approve(&proposal.id, Delivery::Handoff))
        .await
        .expect_err("A dies before it answers");
    let failed = Instant::now();
    assert!(
        matches!(
            status.code(),
            Code::Unavailable | Code::Unknown | Code::Cancelled
        ),
        "{status:?}"
    );
    let view = read_again(&mut approver, &proposal.id).await;
    let unavailable = failed.elapsed();
    seen.unavailable.entry(point).or_default().push(unavailable);
    let exit = a.ended().await;
    assert_eq!(exit.signal(), Some(9), "killed at {point}: {exit:?}");

    let pending = POINTS.iter().any(|(p, pending)| *p == point && *pending);
    if pending {
        // Nothing of the approval committed: B approves.
        assert_eq!(view.status(), ProposalStatus::Pending, "{point}");
        approver
            .decide(approve(&proposal.id, Delivery::Handoff))
            .await
            .unwrap();
    } else {
        // The approval committed: a second one is refused.
        assert_eq!(view.status(), ProposalStatus::Approved, "{point}");
        let refusal = approver
            .decide(approve(&proposal.id, Delivery::Handoff))
            .await
            .unwrap_err();
        assert_eq!(
            (refusal.code(), reason_of(&refusal).as_str()),
            (Code::FailedPrecondition, "not_pending"),
            "{refusal:?}"
        );
    }
    seen.approved.push(proposal.id.clone());
    if let Some(views) = &mut views_on_b {
        let view =
            tokio::time::timeout(countersign_signer::SWEEP_EVERY + PATIENCE, views.message())
                .await
                .unwrap_or_else(|_| panic!("{point}: B's watch heard nothing"))
                .unwrap()
                .expect("the watch goes on");
        assert_eq!(view.status(), ProposalStatus::Approved, "{point}");
    }

    let claimed = head
        .claim_handoff(ClaimHandoffRequest {
            proposal_id: proposal.id.clone(),
            session: SESSION.into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(sha256_hex(claimed.proof.as_bytes()), claimed.proof_sha256);
    seen.claimed.insert(proposal.id, claimed.proof_sha256);
}

/// Through A, with a watch through B: B hears A's approval.
async fn b_hears_a_decision(home: &Home, addrs: &[String], seen: &mut Seen) {
    let mut head = failover_client(home, addrs, Role::Head).await;
    let proposal = propose(&mut head).await;
    let client_of_b = process_client(&addrs[1], home, Role::Head).await;
    let mut views_on_b = watch_past_pending(client_of_b, &proposal.id).await;
    failover_client(home, addrs, Role::Approver)
        .await
        .decide(approve(&proposal.id, Delivery::Direct))
        .await
        .unwrap();
    assert_eq!(
        next(&mut views_on_b).await.status(),
        ProposalStatus::Approved
    );
    seen.approved.push(proposal.id);
}

/// The number `sql` selects.
async fn count(conn: &mut PgConnection, sql: &'static str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(conn).await.unwrap()
}

/// What the ledger holds after all rounds.
async fn assert_ledger(db: &TempPgDatabase, seen: &Seen) {
    let ledger = Ledger::open(db.url()).await.unwrap();
    for id in &seen.approved {
        let record = ledger.proposal(id).await.unwrap().unwrap();
        assert_eq!(record.status, countersign_ledger::ProposalStatus::Approved);
        if let Some(hash) = seen.claimed.get(id) {
            assert_eq!(&record.issuance.unwrap().proof_sha256, hash, "{id}");
        }
    }
    let report = ledger.verify_chain().await.unwrap();
    assert_eq!(report.first_break, None);

    let mut conn = PgConnection::connect(db.url()).await.unwrap();
    // The schema's keys already forbid a second decision or issuance row;
    // the events say whether a decision was ever made twice.
    for (what, sql) in [
        (
            "decisions per proposal",
            "SELECT COALESCE(MAX(n), 0) FROM
             (SELECT COUNT(*) AS n FROM decisions GROUP BY proposal_id) d",
        ),
        (
            "issuances per proposal",
            "SELECT COALESCE(MAX(n), 0) FROM
             (SELECT COUNT(*) AS n FROM issuances GROUP BY proposal_id) i",
        ),
        (
            "decision events per proposal",
            "SELECT COALESCE(MAX(n), 0) FROM
             (SELECT COUNT(*) AS n FROM events
              WHERE kind IN ('approved', 'denied') GROUP BY proposal_id) e",
        ),
        (
            "issuances per proof hash",
            "SELECT COALESCE(MAX(n), 0) FROM
             (SELECT COUNT(*) AS n FROM issuances GROUP BY proof_sha256) h",
        ),
    ] {
        assert!(count(&mut conn, sql).await <= 1, "{what}");
    }
    let issued = count(&mut conn, "SELECT COUNT(*) FROM issuances").await;
    assert_eq!(usize::try_from(issued).unwrap(), seen.approved.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signer_killed_at_each_point_of_an_approval_leaves_one_decision_carried_on_by_the_other()
{
    let rounds: usize = std::env::var("COUNTERSIGN_FAULT_ROUNDS")
        .map(|n| n.parse().unwrap())
        .unwrap_or(20);
    let db = TempPgDatabase::create().await.unwrap();
    let (dir, home_a) = process_home();
    configure(&home_a, free_port(), db.url());
    // A makes the proof key at its first start; B's home is a copy made then.
    let a = serve(&home_a, None);
    let home_b = Home::at(dir.path().join("home-b")).unwrap();
    countersign_signer::testing::copy_tree(home_a.root(), home_b.root()).unwrap();
    configure(&home_b, free_port(), db.url());
    let b = serve(&home_b, None);
    let addrs = [a.addr.clone(), b.addr.clone()];
    let mut seen = Seen::default();

    b_hears_a_decision(&home_a, &addrs, &mut seen).await;
    // Each round starts A again, with the fault of its point.
    a.stop().await;
    let started = Instant::now();
    for at in 0..rounds {
        for (point, _) in POINTS {
            // The first round also holds a watch through B at each point.
            round(&home_a, &addrs, point, at == 0, &mut seen).await;
        }
    }
    let elapsed = started.elapsed();
    // A restarted without a fault serves again, and B still hears it.
    let a = serve(&home_a, None);
    b_hears_a_decision(&home_a, &addrs, &mut seen).await;
    eprintln!(
        "{rounds} rounds of {} faults in {elapsed:.1?}, {:.1?} per round",
        POINTS.len(),
        elapsed / u32::try_from(rounds.max(1)).unwrap()
    );
    for (point, times) in &seen.unavailable {
        let mut sorted = times.clone();
        sorted.sort();
        eprintln!(
            "{point}: unavailable for median {:.1?}, max {:.1?} ({} kills)",
            sorted[sorted.len() / 2],
            sorted[sorted.len() - 1],
            sorted.len()
        );
    }
    assert_ledger(&db, &seen).await;
    a.stop().await;
    b.stop().await;
}
