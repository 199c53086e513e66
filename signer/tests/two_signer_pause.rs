//! A signer of a pair paused longer than its chore's lease (`SIGSTOP`, as
//! a frozen host or VM), then resumed: signer A, checkpointing every
//! second (`[signer] checkpoint_every_secs = 1`, so the checkpoint chore's
//! lease runs 3 s), pauses itself holding that lease, just before its
//! checkpoint write (`COUNTERSIGN_FAULT=signer_paused_in_checkpoint`,
//! `countersign_ledger::fault::pause_point`). Meanwhile clients connected
//! to [A, B] the way heads connect pass A over (it accepts TCP and never
//! completes a TLS handshake) and decide through B, and B takes the chore
//! over with the next fencing token and writes checkpoints. Resumed, A
//! finishes the write it began with the old token: refused, nothing
//! written, and it serves again without taking the chore back. Then A is
//! paused by the test while a client's connection to it is open: the
//! client's call fails once its PING goes unanswered, and its next call
//! goes to B. The chains and the log's tree stay intact throughout.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::{Duration, Instant};

use countersign_identity::{Home, Role};
use countersign_ledger::Ledger;
use countersign_ledger::testing::TempPgDatabase;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{Delivery, ProposalStatus};
use sqlx::{Connection as _, PgConnection};
use tonic::transport::Channel;

use support::pair::{Serving, configure, failover_client, free_port, unanswered};
use support::{approve, process_client, process_home, propose};

const BIN: &str = env!("CARGO_BIN_EXE_countersign-signer");

/// The checkpoint interval both signers run with: the lease is three.
const EVERY: &str = "checkpoint_every_secs = 1\n";

/// How long the test waits for anything it polls for.
const PATIENCE: Duration = Duration::from_secs(30);

/// Polls `done` every 50 ms until it holds; panics naming `what` after
/// [`PATIENCE`].
async fn until<F: AsyncFnMut() -> bool>(what: &str, mut done: F) {
    let deadline = Instant::now() + PATIENCE;
    while !done().await {
        assert!(Instant::now() < deadline, "waited too long: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The checkpoint chore's lease row: holder and token.
async fn lease(conn: &mut PgConnection) -> Option<(String, i64)> {
    sqlx::query_as("SELECT holder, token FROM chore_leases WHERE chore = 'checkpoints'")
        .fetch_optional(conn)
        .await
        .unwrap()
}

/// How many chain checkpoints the ledger holds.
async fn checkpoints(conn: &mut PgConnection) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM events WHERE kind = 'checkpoint'")
        .fetch_one(conn)
        .await
        .unwrap()
}

/// Proposes and approves one proposal through `head` and `approver`.
async fn decide_one(head: &mut SignerClient<Channel>, approver: &mut SignerClient<Channel>) {
    let proposal = propose(head).await;
    let decided = approver
        .decide(approve(&proposal.id, Delivery::Direct))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(decided.proposal.unwrap().status(), ProposalStatus::Approved);
}

/// `[signer]` on `port` with the short interval, the ledger at `url`.
fn configure_pair_member(home: &Home, port: u16, url: &str) {
    configure(home, port, url, "");
    let path = home.config_path();
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text.replacen("[ledger]", &format!("{EVERY}[ledger]"), 1);
    std::fs::write(path, text).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signer_paused_past_its_lease_is_passed_over_and_its_resumed_write_is_refused() {
    let db = TempPgDatabase::create().await.unwrap();
    let mut conn = PgConnection::connect(db.url()).await.unwrap();
    let (dir, home_a) = process_home();
    configure_pair_member(&home_a, free_port(), db.url());
    let home_b = Home::at(dir.path().join("home-b")).unwrap();

    // A takes the chore first, and pauses in its first checkpoint write.
    let a = Serving::start(BIN, &home_a, Some("signer_paused_in_checkpoint"));
    until("A pauses", async || a.is_stopped()).await;
    let (holder_a, token_a) = lease(&mut conn).await.unwrap();
    assert_eq!(checkpoints(&mut conn).await, 0, "A paused before writing");

    countersign_signer::testing::copy_tree(home_a.root(), home_b.root()).unwrap();
    configure_pair_member(&home_b, free_port(), db.url());
    let b = Serving::start(BIN, &home_b, None);
    let addrs = [a.addr.clone(), b.addr.clone()];

    // Clients of [A, B] pass the paused A over: its kernel accepts the
    // connection, and no TLS handshake comes within the bound.
    let asked = Instant::now();
    let mut head = failover_client(&home_a, &addrs, Role::Head).await;
    let mut approver = failover_client(&home_a, &addrs, Role::Approver).await;
    decide_one(&mut head, &mut approver).await;
    let unavailable = asked.elapsed();
    assert!(
        unavailable >= countersign_identity::failover::CONNECT_EACH_WITHIN,
        "{unavailable:?}"
    );
    eprintln!("paused signer: the first decision through B after {unavailable:.1?}");

    // B takes the chore over once A's lease ran out, with the next token,
    // and writes checkpoints.
    let mut holder_b = String::new();
    let mut token_b = 0;
    until("B takes the chore over", async || {
        if let Some((holder, token)) = lease(&mut conn).await {
            (holder_b, token_b) = (holder, token);
        }
        holder_b != holder_a
    })
    .await;
    assert_eq!(token_b, token_a + 1);
    until("B checkpoints", async || checkpoints(&mut conn).await > 0).await;
    decide_one(&mut head, &mut approver).await;

    // Resumed, A's write under the old token is refused, and it serves.
    a.signal("-CONT");
    let refusal = format!(
        "the lease of chore \"checkpoints\" was taken over (token {token_a} is no longer current): nothing written"
    );
    until("A's write is refused", async || a.log().contains(&refusal)).await;
    let mut head_of_a = process_client(&a.addr, &home_a, Role::Head).await;
    let view = propose(&mut head_of_a).await;
    assert_eq!(view.status(), ProposalStatus::Pending);
    // B keeps the chore: A's rounds find it held.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(lease(&mut conn).await, Some((holder_b.clone(), token_b)));

    // A paused while a client's connection to it is open: the call fails
    // when its PING goes unanswered, and the next goes to B.
    let mut on_a = failover_client(&home_a, &addrs, Role::Head).await;
    propose(&mut on_a).await;
    a.signal("-STOP");
    let paused = Instant::now();
    let status = on_a
        .propose(support::propose_request(support::SESSION))
        .await
        .unwrap_err();
    assert!(unanswered(&status), "{status:?}");
    let dropped_after = paused.elapsed();
    // A PING goes out within one interval and is given up after its
    // timeout: sooner than the request's own 30 s limit.
    let bound = countersign_identity::tls::KEEPALIVE_EVERY
        + countersign_identity::tls::KEEPALIVE_WITHIN
        + Duration::from_secs(5);
    assert!(dropped_after < bound, "{dropped_after:?}");
    let view = propose(&mut on_a).await;
    assert_eq!(view.status(), ProposalStatus::Pending);
    eprintln!("an open connection to a paused signer dropped after {dropped_after:.1?}");
    a.signal("-CONT");

    let ledger = Ledger::open(db.url()).await.unwrap();
    assert_eq!(ledger.verify_chain().await.unwrap().first_break, None);
    let tree = ledger.verify_tree().await.unwrap();
    assert!(tree.is_intact(), "{:?}", tree.first_break);
    assert!(tree.latest.is_some(), "B signed the log's checkpoints");
    a.stop().await;
    b.stop().await;
}
