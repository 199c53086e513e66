//! Faults across two signer processes of one PostgreSQL ledger: signer A
//! dies at a point of an approval, and clients connected to [A, B] the
//! way heads connect (`countersign_identity::failover::signer_channel`,
//! what `countersign_gate::signer_client::connect_any` builds) carry on
//! through B with the operation's safe continuation: read the proposal
//! again; approve it if it is still pending, else see a second approval
//! refused (`not_pending`, or `already_approved` for a quorum approver
//! whose approval counted); claim its handoff, which B re-derives from the
//! ledger when A held it. A then restarts on its port for the next round.
//!
//! The points: A kills itself (`COUNTERSIGN_FAULT`, SIGKILL) inside an
//! issuance, after an issuance commits and before its handoff is kept,
//! after a decision commits and before its answer, and between two
//! approvals of a two-approver quorum (after the first commits, before its
//! answer); and the test kills A during a passkey ceremony, between the
//! challenge A drew and the assertion, which B then checks against the
//! challenge in the ledger.
//!
//! A and B serve copies of one home: the same CA and certificates, and
//! each a proof key of its own (B's copy leaves A's key out, and B makes
//! one at its first start). So B cannot re-derive a handoff proof A
//! issued: it signs the recorded claims again under its own key and
//! records that proof beside the issuance (`recover.rs`), which the
//! claim's checks below accept only through that record.
//!
//! In the first round a watch held through B from before each approval
//! hears it, within one announcement sweep where A died between its
//! commit and its `NOTIFY`.
//!
//! After every round the ledger, read directly, holds at most one decision,
//! one issuance and one approval event per proposal, every decision the
//! client saw acknowledged, no proof hash twice, and intact chains.
//!
//! Rounds: `COUNTERSIGN_FAULT_ROUNDS` (default 40: 200 kills), each round
//! one pass over the fault points; the time per round is printed, as is
//! each fault point's unavailability (from the failed request, or the
//! kill, to the next request answered).
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::{BTreeMap, HashMap};
use std::os::unix::process::ExitStatusExt as _;
use std::time::{Duration, Instant};

use countersign_identity::tls::SignerTls;
use countersign_identity::{ApproverName, Home, Role};
use countersign_ledger::Ledger;
use countersign_ledger::testing::TempPgDatabase;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{ClaimHandoffRequest, Delivery, ProposalStatus, ProposeRequest};
use countersign_registry::Registry;
use countersign_signer::passkeys::code::EnrolmentCodes;
use countersign_verifier::canonical::sha256_hex;
use sqlx::{Connection as _, PgConnection};
use tonic::Code;
use tonic::transport::Channel;

use support::pair::{
    PATIENCE, Serving, configure, failover_client, failover_with, free_port, named_approver_tls,
    read_again, unanswered,
};
use support::passkey::{ORIGIN, challenge_for, decide_with, enrol_with, soft, wire};
use support::{
    SESSION, approve, next, process_client, process_home, propose, reason_of, watch_past_pending,
};

const BIN: &str = env!("CARGO_BIN_EXE_countersign-signer");

/// The fault points A kills itself at, in the order a round visits them,
/// and whether the proposal is still pending after a kill there.
const POINTS: [(&str, bool); 3] = [
    ("signer_in_issuance", true),
    ("signer_after_issuance_commit", false),
    ("signer_after_decision_commit", false),
];

/// The fault point between two approvals of a quorum.
const QUORUM_POINT: &str = "signer_after_quorum_approval_commit";

/// The test's own kill, during a passkey ceremony.
const PASSKEY_POINT: &str = "passkey ceremony (SIGKILL by the test)";

/// Points per round.
const PER_ROUND: usize = POINTS.len() + 2;

/// The operation a two-approver quorum decides (`demo.echo` with a quorum).
const QUORUM_OPERATION: &str = "demo.echo";

/// The operation whose approval needs a passkey (a copy of `demo.echo`).
const PASSKEY_OPERATION: &str = "demo.passkey";

/// The default registry with a quorum of alice and bob on `demo.echo`,
/// and `demo.passkey`, which requires a passkey.
fn registry() -> String {
    let base = Registry::default_toml();
    let echo_at = base.find("[[operation]]\nname = \"demo.echo\"").unwrap();
    let echo_end = base[echo_at + 1..]
        .find("[[operation]]")
        .map_or(base.len(), |i| echo_at + 1 + i);
    let passkey_op = base[echo_at..echo_end].replacen(
        "name = \"demo.echo\"",
        "name = \"demo.passkey\"\nrequire_passkey = true",
        1,
    );
    let with_quorum = base.replacen(
        "[[operation]]\nname = \"demo.echo\"",
        "[[operation]]\nname = \"demo.echo\"\nquorum = { required = 2, approvers = [\"alice\", \"bob\"] }",
        1,
    );
    assert_ne!(with_quorum, base);
    format!("{with_quorum}\n{passkey_op}")
}

/// Sections beside `[signer]` and `[ledger]` in both homes' configuration.
fn passkeys_section() -> String {
    format!("[passkeys]\norigins = [\"{ORIGIN}\"]\n")
}

/// A proposal of `operation` with a fresh message.
fn echo_request(operation: &str) -> ProposeRequest {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    ProposeRequest {
        operation: operation.into(),
        arguments_json: format!(r#"{{"message":"round {n}"}}"#),
        session: SESSION.into(),
        note: String::new(),
        idempotency_key: String::new(),
        head: "cli".into(),
    }
}

/// Everything a round needs: the home A serves (B serves a copy), both
/// addresses, and the named approvers' and the passkey approver's TLS.
struct Pair {
    home: Home,
    addrs: [String; 2],
    alice: SignerTls,
    bob: SignerTls,
    /// The software passkey the home's approver certificate enrolled.
    key: countersign_webauthn::testing::SoftAuthenticator,
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

impl Seen {
    /// Claims `id`'s handoff through `head`: the proof B (or A, when it
    /// still serves) hands over, whose hash is kept.
    async fn claim(&mut self, head: &mut SignerClient<Channel>, id: &str) {
        let claimed = head
            .claim_handoff(ClaimHandoffRequest {
                proposal_id: id.into(),
                session: SESSION.into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(sha256_hex(claimed.proof.as_bytes()), claimed.proof_sha256);
        self.claimed.insert(id.to_owned(), claimed.proof_sha256);
        self.approved.push(id.to_owned());
    }
}

/// Waits for A, killed at `point`, to have ended with SIGKILL.
async fn killed(a: &mut Serving, point: &str) {
    let exit = a.ended().await;
    assert_eq!(exit.signal(), Some(9), "killed at {point}: {exit:?}");
}

/// `approver` approves `id` for a handoff through A, which dies at `point`
/// before it answers; the proposal read again through B, and the time
/// from the failed call to that answer counted as `point`'s unavailability.
async fn dies_approving(
    a: &mut Serving,
    approver: &mut SignerClient<Channel>,
    id: &str,
    point: &'static str,
    seen: &mut Seen,
) -> countersign_proto::v1::ProposalView {
    let status = approver
        .decide(approve(id, Delivery::Handoff))
        .await
        .expect_err("A dies before it answers");
    let failed = Instant::now();
    assert!(unanswered(&status), "{status:?}");
    let view = read_again(approver, id).await;
    seen.unavailable
        .entry(point)
        .or_default()
        .push(failed.elapsed());
    killed(a, point).await;
    view
}

/// One round at `point`: A (serving with the fault) dies approving; the
/// client continues through B.
/// With `watch_b`, a watch of the proposal is held through B from before
/// the approval A is killed in, and must see it approved: within one
/// announcement sweep (`countersign_signer::SWEEP_EVERY`) when A died
/// between its commit and its `NOTIFY`.
async fn round(pair: &Pair, point: &'static str, watch_b: bool, seen: &mut Seen) {
    let (home, addrs) = (&pair.home, &pair.addrs);
    let mut a = Serving::start(BIN, home, Some(point));
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

    let view = dies_approving(&mut a, &mut approver, &proposal.id, point, seen).await;

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
    if let Some(views) = &mut views_on_b {
        let view =
            tokio::time::timeout(countersign_signer::SWEEP_EVERY + PATIENCE, views.message())
                .await
                .unwrap_or_else(|_| panic!("{point}: B's watch heard nothing"))
                .unwrap()
                .expect("the watch goes on");
        assert_eq!(view.status(), ProposalStatus::Approved, "{point}");
    }
    seen.claim(&mut head, &proposal.id).await;
}

/// A round between two quorum approvals: alice approves through A, which
/// dies once her approval is recorded and before it answers. Read again
/// through B, the proposal is pending with her approval counted; her
/// second approval is refused `already_approved`; bob's, through B,
/// completes the quorum.
async fn quorum_round(pair: &Pair, seen: &mut Seen) {
    let (home, addrs) = (&pair.home, &pair.addrs);
    let mut a = Serving::start(BIN, home, Some(QUORUM_POINT));
    let mut head = failover_client(home, addrs, Role::Head).await;
    let mut alice = failover_with(addrs, &pair.alice).await;
    let mut bob = failover_with(addrs, &pair.bob).await;
    let proposal = head
        .propose(echo_request(QUORUM_OPERATION))
        .await
        .unwrap()
        .into_inner();
    let view = dies_approving(&mut a, &mut alice, &proposal.id, QUORUM_POINT, seen).await;

    assert_eq!(view.status(), ProposalStatus::Pending);
    let decided: Vec<&str> = view
        .quorum
        .as_ref()
        .unwrap()
        .decisions
        .iter()
        .map(|d| d.approver.as_str())
        .collect();
    assert_eq!(decided, ["alice"], "{view:?}");
    let again = alice
        .decide(approve(&proposal.id, Delivery::Handoff))
        .await
        .unwrap_err();
    assert_eq!(
        (again.code(), reason_of(&again).as_str()),
        (Code::FailedPrecondition, "already_approved"),
        "{again:?}"
    );
    let completed = bob
        .decide(approve(&proposal.id, Delivery::Handoff))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        completed.proposal.unwrap().status(),
        ProposalStatus::Approved
    );
    seen.claim(&mut head, &proposal.id).await;
}

/// A round during a passkey ceremony: the approver draws a decision
/// challenge through A, the test kills A while the person would touch
/// the key, and the assertion goes to B, which checks it against the
/// challenge in the ledger and approves. The first attempt may still be
/// sent on the connection A's death closed (no signer answers it); the
/// proposal is read, and the same assertion sent again, which is safe:
/// its challenge is taken once, by the write that records it.
async fn passkey_round(pair: &mut Pair, seen: &mut Seen) {
    let (home, addrs) = (&pair.home, &pair.addrs);
    let mut a = Serving::start(BIN, home, None);
    let mut head = failover_client(home, addrs, Role::Head).await;
    let mut approver = failover_client(home, addrs, Role::Approver).await;
    let proposal = head
        .propose(echo_request(PASSKEY_OPERATION))
        .await
        .unwrap()
        .into_inner();
    let (challenge_id, challenge) =
        challenge_for(&mut approver, &proposal.id, Delivery::Handoff).await;
    a.signal("-KILL");
    let killed_at = Instant::now();
    killed(&mut a, PASSKEY_POINT).await;
    let assertion = wire(&challenge_id, pair.key.assert(&challenge));
    let request = decide_with(&proposal.id, Delivery::Handoff, Some(assertion));
    let decided = match approver.decide(request.clone()).await {
        Ok(decided) => decided.into_inner(),
        Err(status) => {
            assert!(unanswered(&status), "{status:?}");
            let view = read_again(&mut approver, &proposal.id).await;
            assert_eq!(view.status(), ProposalStatus::Pending);
            approver.decide(request).await.unwrap().into_inner()
        }
    };
    seen.unavailable
        .entry(PASSKEY_POINT)
        .or_default()
        .push(killed_at.elapsed());
    assert_eq!(decided.proposal.unwrap().status(), ProposalStatus::Approved);
    seen.claim(&mut head, &proposal.id).await;
}

/// Through A, with a watch through B: B hears A's approval.
async fn b_hears_a_decision(pair: &Pair, seen: &mut Seen) {
    let (home, addrs) = (&pair.home, &pair.addrs);
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

/// Enrols `pair.key` as the passkey of `home`'s approver certificate,
/// with an enrolment code drawn from the ledger at `url`.
async fn enrol(pair: &Pair, url: &str) {
    let ledger = Ledger::open(url).await.unwrap();
    let (code, _) = EnrolmentCodes::in_ledger(ledger)
        .issue(None::<&ApproverName>, time::OffsetDateTime::now_utc())
        .await
        .unwrap();
    let mut approver = failover_client(&pair.home, &pair.addrs, Role::Approver).await;
    enrol_with(&mut approver, &pair.key, &code).await.unwrap();
}

/// The number `sql` selects.
async fn count(conn: &mut PgConnection, sql: &'static str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(conn).await.unwrap()
}

/// What the ledger holds after all rounds.
async fn assert_ledger(db: &TempPgDatabase, seen: &Seen) {
    let ledger = Ledger::open(db.url()).await.unwrap();
    let mut resigned = 0_usize;
    for id in &seen.approved {
        let record = ledger.proposal(id).await.unwrap().unwrap();
        assert_eq!(record.status, countersign_ledger::ProposalStatus::Approved);
        if let Some(hash) = seen.claimed.get(id) {
            // A's proof, or B's signed again and recorded for the nonce.
            let issuance = record.issuance.unwrap();
            assert!(issuance.names_proof(hash), "{id}");
            if issuance.proof_sha256 != *hash {
                resigned += 1;
            }
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
    // Every handoff B handed over for A, signed again under B's key: one
    // record each, none that no claim asked for.
    let recorded = count(&mut conn, "SELECT COUNT(*) FROM resigned_proofs").await;
    println!("handoffs B signed again for A: {resigned}");
    assert!(resigned > 0, "no round had B sign a handoff again");
    assert_eq!(usize::try_from(recorded).unwrap(), resigned);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signer_killed_at_each_point_of_an_approval_leaves_one_decision_carried_on_by_the_other()
{
    let rounds: usize = std::env::var("COUNTERSIGN_FAULT_ROUNDS")
        .map(|n| n.parse().unwrap())
        .unwrap_or(40);
    let db = TempPgDatabase::create().await.unwrap();
    let (dir, home_a) = process_home();
    std::fs::write(home_a.registry_path(), registry()).unwrap();
    configure(&home_a, free_port(), db.url(), &passkeys_section());
    // A makes its proof key at its first start; B's home is a copy made
    // then, without that key: B makes its own.
    let a = Serving::start(BIN, &home_a, None);
    let home_b = Home::at(dir.path().join("home-b")).unwrap();
    countersign_signer::testing::copy_without_proof_key(&home_a, &home_b).unwrap();
    configure(&home_b, free_port(), db.url(), &passkeys_section());
    let b = Serving::start(BIN, &home_b, None);
    let mut pair = Pair {
        addrs: [a.addr.clone(), b.addr.clone()],
        alice: named_approver_tls(&home_a, "alice"),
        bob: named_approver_tls(&home_a, "bob"),
        key: soft(7),
        home: home_a,
    };
    let mut seen = Seen::default();

    enrol(&pair, db.url()).await;
    b_hears_a_decision(&pair, &mut seen).await;
    // Each round starts A again, with the fault of its point.
    a.stop().await;
    let started = Instant::now();
    for at in 0..rounds {
        for (point, _) in POINTS {
            // The first round also holds a watch through B at each point.
            round(&pair, point, at == 0, &mut seen).await;
        }
        quorum_round(&pair, &mut seen).await;
        passkey_round(&mut pair, &mut seen).await;
    }
    let elapsed = started.elapsed();
    // A restarted without a fault serves again, and B still hears it.
    let a = Serving::start(BIN, &pair.home, None);
    b_hears_a_decision(&pair, &mut seen).await;
    eprintln!(
        "{rounds} rounds of {PER_ROUND} kills in {elapsed:.1?}, {:.1?} per round",
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
