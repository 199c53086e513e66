//! A head configured with two signers of one PostgreSQL ledger (`[signer]
//! addr`, then `[signer] fallback_addrs`) goes on through the second when
//! the first does not answer: at connect time, for a connection that broke
//! (the first signer stopped), and for a watch, which is opened again on
//! the second and hears the decision made there. TLS still checks the
//! signer's certificate, whatever address answers: an address where
//! something else listens is not a signer, and one that accepts and never
//! answers (a paused signer) is passed over after its handshake's bound.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use countersign_gate::signer_client::{self, ConnectError};
use countersign_identity::{ClientCredential, Role};
use countersign_proto::v1::{
    DecideRequest, Delivery, ListProposalsRequest, ProposalStatus, ProposeRequest,
};
use countersign_registry::Registry;
use countersign_service::{Waited, wait_for_decision};
use countersign_signer::testing::TestSigner;
use countersign_verifier::ProposalId;
use support::failover::{configure_fallbacks, pair};
use support::{Backend, Harness};
use tokio::time::Instant;

const ARGS: &str = r#"{"name":"nightly","cron":"0 3 * * *"}"#;

/// An address nothing listens on: bound, then closed.
fn dead_addr() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// A head client of A, then B.
async fn head_of_both(
    h: &Harness,
    b: &TestSigner,
) -> countersign_proto::v1::signer_client::SignerClient<tonic::transport::Channel> {
    let addrs = [h.signer.addr().to_string(), b.addr().to_string()];
    signer_client::connect_any(h.signer.home(), &addrs, &ClientCredential::Role(Role::Head))
        .await
        .unwrap()
}

fn propose_request() -> ProposeRequest {
    ProposeRequest {
        operation: "schedule.create".into(),
        arguments_json: ARGS.into(),
        session: "s".into(),
        note: String::new(),
        idempotency_key: String::new(),
        head: "cli".into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_reaches_the_second_signer_when_the_first_does_not_answer() {
    let (h, b) = pair().await;
    let home = h.signer.home().clone();
    let credential = ClientCredential::Role(Role::Head);
    // The first address answers nothing: the second does.
    let mut head =
        signer_client::connect_any(&home, &[dead_addr(), b.addr().to_string()], &credential)
            .await
            .unwrap();
    let view = head.propose(propose_request()).await.unwrap().into_inner();
    assert_eq!(view.status(), ProposalStatus::Pending);
    // None answers: one error naming both.
    let (x, y) = (dead_addr(), dead_addr());
    let err = signer_client::connect_any(&home, &[x.clone(), y.clone()], &credential)
        .await
        .unwrap_err();
    let ConnectError::Unreachable { addr, reason } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(addr, &format!("{x}, {y}"));
    assert!(reason.contains("no signer reachable"), "{reason}");
    // Something that is not a signer (no certificate of the installation's
    // CA) at the first address fails its TLS handshake: it is passed over,
    // never trusted for its address, and the signer after it answers.
    let impostor = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let impostor_addr = impostor.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = impostor.accept().await {
            use tokio::io::AsyncWriteExt as _;
            let _ = conn.write_all(b"HTTP/1.1 200 OK\r\n\r\n").await;
        }
    });
    let mut head = signer_client::connect_any(
        &home,
        &[impostor_addr.clone(), b.addr().to_string()],
        &credential,
    )
    .await
    .unwrap();
    let view = head.propose(propose_request()).await.unwrap().into_inner();
    assert_eq!(view.status(), ProposalStatus::Pending);
    // With no signer after it, the impostor's failed handshake is the error.
    let dead = dead_addr();
    let err = signer_client::connect_any(&home, &[impostor_addr.clone(), dead], &credential)
        .await
        .map(|_| ())
        .unwrap_err();
    let ConnectError::Unreachable { reason, .. } = &err else {
        panic!("{err:?}");
    };
    assert!(reason.contains(&format!("{impostor_addr}: ")), "{reason}");
}

/// A listener that accepts connections and never answers: a paused signer
/// process (SIGSTOP) or a frozen host looks like this, since the kernel
/// completes the TCP handshake for it.
async fn frozen_addr() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((conn, _)) = listener.accept().await {
            held.push(conn);
        }
    });
    (addr, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signer_that_accepts_and_never_answers_is_passed_over() {
    let (h, b) = pair().await;
    let home = h.signer.home().clone();
    let credential = ClientCredential::Role(Role::Head);
    let (frozen, _task) = frozen_addr().await;
    let started = Instant::now();
    let mut head =
        signer_client::connect_any(&home, &[frozen.clone(), b.addr().to_string()], &credential)
            .await
            .unwrap();
    let view = head.propose(propose_request()).await.unwrap().into_inner();
    let waited = started.elapsed();
    assert_eq!(view.status(), ProposalStatus::Pending);
    // The frozen address was tried first, for its handshake's bound.
    assert!(
        waited >= countersign_identity::failover::CONNECT_EACH_WITHIN,
        "{waited:?}"
    );
    // Both frozen: one error naming the handshake that never came.
    let (other, _task) = frozen_addr().await;
    let err = signer_client::connect_any(&home, &[frozen, other], &credential)
        .await
        .map(|_| ())
        .unwrap_err();
    let ConnectError::Unreachable { reason, .. } = &err else {
        panic!("{err:?}");
    };
    assert!(reason.contains("no TLS answer within 2 s"), "{reason}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_to_a_stopped_signer_is_made_again_to_the_other() {
    let (mut h, b) = pair().await;
    let mut head = head_of_both(&h, &b).await;
    let first = head.propose(propose_request()).await.unwrap().into_inner();
    h.signer.halt().await.unwrap();
    // The same client, its connection to A gone: the next call goes to B.
    let listed = head
        .list_proposals(ListProposalsRequest::default())
        .await
        .expect("answered by the second signer")
        .into_inner();
    assert!(listed.proposals.iter().any(|p| p.id == first.id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_on_a_stopped_signer_is_opened_again_on_the_other_and_hears_it() {
    let (mut h, b) = pair().await;
    let mut head = head_of_both(&h, &b).await;
    let view = head.propose(propose_request()).await.unwrap().into_inner();
    let id = ProposalId::parse(view.id.clone()).unwrap();
    let waiting = tokio::spawn(async move {
        wait_for_decision(&mut head, &id, Instant::now() + Duration::from_secs(30)).await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    h.signer.halt().await.unwrap();
    let decided = b
        .client(Role::Approver)
        .await
        .unwrap()
        .decide(DecideRequest {
            proposal_id: view.id.clone(),
            approve: true,
            delivery: Delivery::Handoff as i32,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let waited = tokio::time::timeout(Duration::from_secs(15), waiting)
        .await
        .expect("answered once decided on the second signer")
        .unwrap()
        .unwrap();
    assert_eq!(waited, Waited::Decided(decided.proposal.unwrap()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_goes_on_through_the_fallback_signer() {
    let (mut h, b) = pair().await;
    let a_addr = h.signer.addr().to_string();
    configure_fallbacks(h.signer.home(), &a_addr, &[b.addr().to_string()]);
    let id = h.propose("schedule.create", ARGS).await;
    h.signer.halt().await.unwrap();
    let listed = h.cli(&["list", "--json"]).await;
    assert!(listed.result.is_ok(), "{}", listed.stderr);
    assert!(listed.stdout.contains(&id), "{}", listed.stdout);
}

/// The doctor's `signers` check of `h`'s home, as JSON.
async fn signers_check(h: &Harness) -> (bool, serde_json::Value) {
    let run = h.cli(&["--json", "doctor"]).await;
    let doc = run.json();
    let check = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "signers")
        .cloned()
        .unwrap_or(serde_json::Value::Null);
    (run.result.is_ok(), check)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_doctor_checks_every_signer_serves_one_key_set() {
    let h = Harness::start_on(Backend::Postgres, Registry::default_toml()).await;
    let a_addr = h.signer.addr().to_string();
    // No fallbacks: no `signers` check.
    assert_eq!(signers_check(&h).await.1, serde_json::Value::Null);
    // Two hosts, each with its own key: both answer, one key set.
    let b = h.signer.on_another_host().await.unwrap();
    configure_fallbacks(h.signer.home(), &a_addr, &[b.addr().to_string()]);
    let (_, check) = signers_check(&h).await;
    assert_eq!(check["status"], "ok", "{check}");
    let detail = check["detail"].as_str().unwrap();
    assert!(detail.starts_with("2 signers answer"), "{detail}");
    for kid in [
        h.signer.state().key_id().unwrap(),
        b.state().key_id().unwrap(),
    ] {
        assert!(detail.contains(&kid), "{detail}");
    }
    // A second signer with a copy of the first one's key: a warning.
    let copy = h.signer.another_on_this_home().await.unwrap();
    configure_fallbacks(h.signer.home(), &a_addr, &[copy.addr().to_string()]);
    let (_, check) = signers_check(&h).await;
    assert_eq!(check["status"], "warn", "{check}");
    assert!(
        check["detail"]
            .as_str()
            .unwrap()
            .contains("a copied proof key"),
        "{check}"
    );
    // A fallback that does not answer fails the doctor.
    let dead = dead_addr();
    configure_fallbacks(h.signer.home(), &a_addr, std::slice::from_ref(&dead));
    let (ok, check) = signers_check(&h).await;
    assert!(!ok);
    assert_eq!(check["status"], "fail", "{check}");
    assert!(
        check["detail"].as_str().unwrap().starts_with(&dead),
        "{check}"
    );
}

/// Two signers, each with a key of its own (as on two hosts): the person
/// approves at the terminal through A for a later head execution, and A
/// stops holding the proof. `countersign exec --handoff` goes on through
/// B, which signs the recorded claims again under its own key: applied
/// once, a second execution gets the recorded result, and the audit trail
/// records the proof signed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_executes_through_the_other_signer_a_handoff_the_stopped_one_held() {
    let mut h = Harness::start_on(Backend::Postgres, Registry::default_toml()).await;
    let b = h.signer.on_another_host().await.unwrap();
    let a_addr = h.signer.addr().to_string();
    configure_fallbacks(h.signer.home(), &a_addr, &[b.addr().to_string()]);
    let id = h.propose_in("schedule.create", ARGS, "s1").await;
    h.approve_for_mcp(&id).await;
    h.signer.halt().await.unwrap();

    let run = h.exec_handoff(&id, "s1").await;
    assert_eq!(run.result, Ok(()), "{}", run.stdout);
    assert_eq!(run.json()["applied"], true, "{}", run.stdout);
    assert_eq!(h.schedules().await.len(), 1);
    let events = h.ledger().events().await.unwrap();
    let resigned: Vec<_> = events
        .iter()
        .filter(|e| e.kind == "proof_resigned" && e.proposal_id.as_deref() == Some(id.as_str()))
        .collect();
    assert_eq!(resigned.len(), 1, "{events:?}");
    assert_eq!(
        resigned[0].details["key_id"].as_str(),
        Some(b.state().key_id().unwrap().as_str())
    );
    assert_eq!(
        resigned[0].details["replaces_key_id"].as_str(),
        Some(h.signer.state().key_id().unwrap().as_str())
    );
    let again = h.exec_handoff(&id, "s1").await;
    support::assert_refused(&again, "already_used");
    assert_eq!(h.schedules().await.len(), 1);
    let audit = h.cli(&["audit", "--verify"]).await;
    assert_eq!(audit.result, Ok(()), "{}", audit.stdout);
}
