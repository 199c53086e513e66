//! `countersign_service::wait_for_decision`, the one wait every head (a
//! coding agent's hook) uses, against a real signer over mTLS: it answers
//! with a decision as soon as it is made, at once for one made before,
//! with the last pending view at its deadline, and with the signer's own
//! refusal for another principal's proposal; a signer whose watch places
//! are full hears the decision within one retry interval, and one that is
//! gone is waited out until the deadline.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use countersign_gate::signer_client::{SignerCallError, SignerRefusal};
use countersign_identity::Role;
use countersign_proto::reason::{Code, Reason};
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{
    DecideRequest, Delivery, ProposalStatus, ProposalView, ProposeRequest, WatchProposalRequest,
};
use countersign_service::{Waited, wait_for_decision};
use countersign_signer::testing::TestSigner;
use countersign_verifier::ProposalId;
use tokio::time::Instant;
use tonic::transport::Channel;

async fn propose(head: &mut SignerClient<Channel>) -> ProposalView {
    head.propose(ProposeRequest {
        operation: "schedule.create".into(),
        arguments_json: r#"{"name":"nightly","cron":"0 3 * * *"}"#.into(),
        session: "hook".into(),
        note: String::new(),
        idempotency_key: String::new(),
        head: "cli".into(),
    })
    .await
    .unwrap()
    .into_inner()
}

fn approve(id: &str) -> DecideRequest {
    DecideRequest {
        proposal_id: id.into(),
        approve: true,
        delivery: Delivery::Handoff as i32,
        ..Default::default()
    }
}

fn id_of(view: &ProposalView) -> ProposalId {
    ProposalId::parse(view.id.clone()).unwrap()
}

fn in_secs(secs: u64) -> Instant {
    Instant::now() + Duration::from_secs(secs)
}

#[tokio::test]
async fn answers_with_the_approval_as_soon_as_a_person_makes_it() {
    let signer = TestSigner::start().await.unwrap();
    let mut head = signer.client(Role::Head).await.unwrap();
    let proposal = propose(&mut head).await;
    let id = id_of(&proposal);
    let mut waiting_head = head.clone();
    let waiting =
        tokio::spawn(async move { wait_for_decision(&mut waiting_head, &id, in_secs(30)).await });
    // Still waiting: nobody decided.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiting.is_finished());
    let decided = signer
        .client(Role::Approver)
        .await
        .unwrap()
        .decide(approve(&proposal.id))
        .await
        .unwrap()
        .into_inner();
    let waited = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("answered once decided")
        .unwrap()
        .unwrap();
    assert_eq!(waited, Waited::Decided(decided.proposal.unwrap()));
}

#[tokio::test]
async fn answers_at_once_for_a_proposal_decided_before() {
    let signer = TestSigner::start().await.unwrap();
    let mut head = signer.client(Role::Head).await.unwrap();
    let proposal = propose(&mut head).await;
    signer
        .client(Role::Approver)
        .await
        .unwrap()
        .decide(DecideRequest {
            proposal_id: proposal.id.clone(),
            reason: "no".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let Waited::Decided(view) = wait_for_decision(&mut head, &id_of(&proposal), in_secs(30))
        .await
        .unwrap()
    else {
        panic!("not decided");
    };
    assert_eq!(
        (view.status(), view.reason.as_str()),
        (ProposalStatus::Denied, "no")
    );
}

#[tokio::test]
async fn times_out_at_the_deadline_with_the_last_pending_view() {
    let signer = TestSigner::start().await.unwrap();
    let mut head = signer.client(Role::Head).await.unwrap();
    let proposal = propose(&mut head).await;
    let started = Instant::now();
    let deadline = started + Duration::from_millis(400);
    let waited = wait_for_decision(&mut head, &id_of(&proposal), deadline)
        .await
        .unwrap();
    assert_eq!(
        waited,
        Waited::TimedOut {
            last: Some(proposal)
        }
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn refuses_another_principals_proposal_as_the_signer_does() {
    let signer = TestSigner::start().await.unwrap();
    let proposal = propose(&mut signer.client(Role::Head).await.unwrap()).await;
    let ca = countersign_identity::pki::CaMaterial::load(signer.home()).unwrap();
    let now = time::OffsetDateTime::now_utc();
    let cert = countersign_identity::pki::issue_client_cert(
        &ca,
        Role::Head,
        "pr_00000000000000000000000000000bad",
        now - time::Duration::hours(1),
        now + time::Duration::hours(1),
    )
    .unwrap();
    let tls = countersign_identity::tls::client_config_from_pem(
        ca.cert_pem(),
        &cert.cert_pem,
        &cert.key_pem,
    );
    let mut theirs = signer.client_with(tls).await.unwrap();
    let refused = wait_for_decision(&mut theirs, &id_of(&proposal), in_secs(30))
        .await
        .unwrap_err();
    assert_eq!(
        refused,
        SignerCallError::Refused(SignerRefusal {
            code: Code::Known(Reason::NotYourProposal),
            message: "proposal belongs to another principal".into(),
        })
    );
}

/// The principal's heads hold every watch place the signer allows them:
/// the wait keeps trying and reads the proposal between attempts, so a
/// decision reaches it at most one retry interval (2 s) after it is made,
/// though no place ever frees.
#[tokio::test]
async fn a_head_at_its_watch_cap_hears_a_decision_within_one_retry_interval() {
    let signer = TestSigner::start().await.unwrap();
    let mut head = signer.client(Role::Head).await.unwrap();
    let proposal = propose(&mut head).await;
    let other = propose(&mut head).await;
    let mut taken = Vec::new();
    for _ in 0..256 {
        let mut views = head
            .watch_proposal(WatchProposalRequest {
                proposal_id: other.id.clone(),
            })
            .await
            .unwrap()
            .into_inner();
        views.message().await.unwrap();
        taken.push(views);
    }
    let id = id_of(&proposal);
    let mut waiting_head = signer.client(Role::Head).await.unwrap();
    let waiting =
        tokio::spawn(async move { wait_for_decision(&mut waiting_head, &id, in_secs(60)).await });
    // Long enough for the pause between attempts to reach its longest.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(!waiting.is_finished(), "nobody decided yet");
    signer
        .client(Role::Approver)
        .await
        .unwrap()
        .decide(approve(&proposal.id))
        .await
        .unwrap();
    let decided_at = Instant::now();
    let waited = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("answered while every place is still taken")
        .unwrap()
        .unwrap();
    let heard_after = decided_at.elapsed();
    assert!(
        matches!(&waited, Waited::Decided(v) if v.status() == ProposalStatus::Approved),
        "{waited:?}"
    );
    // One retry interval (2 s), and the time of one read.
    assert!(
        heard_after <= Duration::from_millis(2500),
        "heard {heard_after:?} after the decision"
    );
    drop(taken);
}

/// A signer that stops while the wait is open: the stream ends with
/// `signer_stopping`, the signer cannot be reached any more, and the wait
/// keeps trying until its deadline instead of failing.
#[tokio::test]
async fn waits_out_a_signer_that_stopped_until_the_deadline() {
    let signer = TestSigner::start().await.unwrap();
    let mut head = signer.client(Role::Head).await.unwrap();
    let proposal = propose(&mut head).await;
    let id = id_of(&proposal);
    let deadline = Instant::now() + Duration::from_secs(2);
    let waiting = tokio::spawn(async move { wait_for_decision(&mut head, &id, deadline).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    signer.stop().await.unwrap();
    let waited = waiting.await.unwrap().unwrap();
    assert_eq!(
        waited,
        Waited::TimedOut {
            last: Some(proposal)
        }
    );
    assert!(Instant::now() >= deadline);
}

/// The shipped registry with a decision window of `secs` on `schedule.create`.
fn windowed(secs: u64) -> String {
    countersign_registry::Registry::default_toml().replacen(
        "[[operation]]\nname = \"schedule.create\"\n",
        &format!("[[operation]]\nname = \"schedule.create\"\ndecision_window_secs = {secs}\n"),
        1,
    )
}

/// An expiry is derived, never written, so nothing announces it: a wait
/// and a pending-list watch still hear of it when the window closes, and
/// the signer's approver API refuses to decide it (`expired`).
#[tokio::test]
async fn a_wait_and_a_pending_watch_hear_a_window_close_and_decide_refuses_it() {
    let signer = TestSigner::start_with_registry(&windowed(2)).await.unwrap();
    let mut head = signer.client(Role::Head).await.unwrap();
    let mut approver = signer.client(Role::Approver).await.unwrap();
    let proposal = propose(&mut head).await;
    assert!(!proposal.decide_by.is_empty(), "{proposal:?}");
    let mut pending = approver
        .watch_pending(countersign_proto::v1::WatchPendingRequest {})
        .await
        .unwrap()
        .into_inner();
    let first = pending.message().await.unwrap().unwrap();
    assert_eq!(first.proposals.len(), 1);

    let started = Instant::now();
    let Waited::Decided(view) = wait_for_decision(&mut head, &id_of(&proposal), in_secs(60))
        .await
        .unwrap()
    else {
        panic!("the wait ran out");
    };
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(
        (view.status(), view.reason.as_str()),
        (
            ProposalStatus::Expired,
            "no one decided it within its decision window"
        )
    );
    let next = tokio::time::timeout(Duration::from_secs(10), pending.message())
        .await
        .expect("the watch sends the list without it")
        .unwrap()
        .unwrap();
    assert!(next.proposals.is_empty(), "{next:?}");

    let refused = approver.decide(approve(&proposal.id)).await.unwrap_err();
    assert_eq!(
        SignerCallError::from_status(&refused),
        SignerCallError::Refused(SignerRefusal {
            code: Code::Known(Reason::Expired),
            message: format!(
                "proposal {} expired at {}: no one decided it within its decision window",
                proposal.id, proposal.decide_by
            ),
        })
    );
    // Nor can its proposer withdraw it any more: it is over.
    let withdrawn = head
        .withdraw(countersign_proto::v1::WithdrawRequest {
            proposal_id: proposal.id.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(
        SignerCallError::from_status(&withdrawn),
        SignerCallError::Refused(SignerRefusal {
            code: Code::Known(Reason::Expired),
            message: refused.message().to_owned(),
        })
    );
}
