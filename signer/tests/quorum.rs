//! Quorum approvals through the real gRPC server: only the named approvers
//! an operation's quorum lists decide, each once; the proof exists only
//! from the required-th approval, names every approver and counts its
//! lifetime from that approval; a denial ends it; two approvers deciding
//! at the same instant produce exactly one proof.
#![allow(clippy::unwrap_used)]

mod support;

use countersign_ledger::testing::TempPgDatabase;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{
    ClaimHandoffRequest, Delivery, GetProposalRequest, ProposalView, QuorumView, RevokeRequest,
};
use countersign_registry::Registry;
use countersign_signer::testing::TestSigner;
use countersign_verifier::timestamp;
use time::OffsetDateTime;
use tonic::Code;
use tonic::transport::Channel;

use support::{SESSION, approve, approver, claims_of, deny, head, propose, reason_of};

/// The default registry with `schedule.create` requiring 2 of alice, bob
/// and carol.
fn registry() -> String {
    Registry::default_toml().replacen(
        "[[operation]]\nname = \"schedule.create\"",
        "[[operation]]\nname = \"schedule.create\"\nquorum = { required = 2, approvers = [\"alice\", \"bob\", \"carol\"] }",
        1,
    )
}

async fn start() -> TestSigner {
    TestSigner::start_with_registry(&registry()).await.unwrap()
}

async fn view(signer: &TestSigner, id: &str) -> ProposalView {
    approver(signer)
        .await
        .get_proposal(GetProposalRequest {
            proposal_id: id.into(),
        })
        .await
        .unwrap()
        .into_inner()
}

fn decisions(quorum: &QuorumView) -> Vec<(String, String, String)> {
    quorum
        .decisions
        .iter()
        .map(|d| {
            (
                d.approver.clone(),
                d.decision().name().to_owned(),
                d.reason.clone(),
            )
        })
        .collect()
}

fn decision(name: &str, verdict: &str, reason: &str) -> (String, String, String) {
    (name.into(), verdict.into(), reason.into())
}

/// `prov`, `iat` and `exp` of a proof (read, not verified: the flow tests verify).
fn claims(proof: &str) -> (String, OffsetDateTime, OffsetDateTime) {
    let claims = claims_of(proof);
    let field = |name: &str| claims[name].as_str().unwrap().to_owned();
    let time = |name: &str| timestamp::parse(&field(name)).unwrap();
    (field("prov"), time("iat"), time("exp"))
}

async fn named(signer: &TestSigner, name: &str) -> SignerClient<Channel> {
    support::named_approver(signer, name).await
}

async fn chain_intact(signer: &TestSigner) {
    let report = signer.state().ledger().verify_chain().await.unwrap();
    assert!(report.is_intact(), "{report:?}");
}

/// Nothing about the proposal changed: pending, no decision, no issuance.
async fn nothing_recorded(signer: &TestSigner, id: &str, approvals: usize) {
    let record = signer.state().ledger().proposal(id).await.unwrap().unwrap();
    assert_eq!(record.status.as_str(), "pending");
    assert_eq!(record.issuance, None);
    let recorded = signer.state().ledger().quorum_decisions(id).await.unwrap();
    assert_eq!(recorded.len(), approvals);
}

#[tokio::test]
async fn the_second_of_two_required_approvals_issues_one_proof_naming_both() {
    let signer = start().await;
    let p = propose(&mut head(&signer).await).await;
    let quorum = p.quorum.clone().unwrap();
    assert_eq!(quorum.required, 2);
    assert_eq!(quorum.approvers, ["alice", "bob", "carol"]);
    assert!(quorum.decisions.is_empty());

    let first = named(&signer, "alice")
        .await
        .decide(approve(&p.id, Delivery::Direct))
        .await
        .unwrap()
        .into_inner();
    assert!(first.proof.is_empty() && first.proof_sha256.is_empty());
    let shown = first.proposal.unwrap();
    assert_eq!(shown.status().name(), "pending");
    assert_eq!(
        decisions(shown.quorum.as_ref().unwrap()),
        [decision("alice", "approve", "")]
    );
    // The others see alice's decision in every view of the proposal.
    let seen = view(&signer, &p.id).await;
    assert_eq!(seen.quorum, shown.quorum);
    nothing_recorded(&signer, &p.id, 1).await;

    let before_last = OffsetDateTime::now_utc().replace_nanosecond(0).unwrap();
    let second = named(&signer, "bob")
        .await
        .decide(approve(&p.id, Delivery::Direct))
        .await
        .unwrap()
        .into_inner();
    assert!(!second.proof.is_empty());
    let shown = second.proposal.unwrap();
    assert_eq!(shown.status().name(), "approved");
    assert_eq!(
        decisions(shown.quorum.as_ref().unwrap()),
        [
            decision("alice", "approve", ""),
            decision("bob", "approve", "")
        ]
    );
    let (prov, iat, exp) = claims(&second.proof);
    let principal = signer.principal();
    let expected = format!("human:quorum:{principal}/alice,{principal}/bob");
    assert_eq!(prov, expected);
    assert_eq!(shown.provenance, expected);
    // The lifetime counts from the last approval.
    assert!(iat >= before_last, "{iat} < {before_last}");
    let lifetime = signer.state().policy().lifetime_for(
        signer
            .state()
            .registry()
            .last_loaded()
            .get("schedule.create")
            .unwrap(),
    );
    assert_eq!(
        (exp - iat).whole_seconds(),
        i64::try_from(lifetime).unwrap()
    );
    // A third approver finds it decided, and nothing more is issued.
    let late = named(&signer, "carol")
        .await
        .decide(approve(&p.id, Delivery::Direct))
        .await
        .unwrap_err();
    assert_eq!(reason_of(&late), "not_pending");
    chain_intact(&signer).await;
}

#[tokio::test]
async fn refuses_an_approver_the_quorum_does_not_list_and_an_unnamed_one() {
    let signer = start().await;
    let p = propose(&mut head(&signer).await).await;
    for client in [named(&signer, "dave").await, approver(&signer).await] {
        for request in [
            approve(&p.id, Delivery::Direct),
            deny(&p.id, "not mine to deny"),
            countersign_proto::v1::DecideRequest {
                dry_run: true,
                ..approve(&p.id, Delivery::Direct)
            },
        ] {
            let err = client.clone().decide(request).await.unwrap_err();
            assert_eq!(err.code(), Code::PermissionDenied);
            assert_eq!(reason_of(&err), "not_a_quorum_approver");
        }
    }
    nothing_recorded(&signer, &p.id, 0).await;
}

#[tokio::test]
async fn refuses_a_second_decision_by_the_same_approver() {
    let signer = start().await;
    let p = propose(&mut head(&signer).await).await;
    let mut alice = named(&signer, "alice").await;
    alice
        .decide(approve(&p.id, Delivery::Direct))
        .await
        .unwrap();
    for request in [
        approve(&p.id, Delivery::Direct),
        approve(&p.id, Delivery::Handoff),
        deny(&p.id, "changed my mind"),
    ] {
        let err = alice.decide(request).await.unwrap_err();
        assert_eq!(err.code(), Code::FailedPrecondition);
        assert_eq!(reason_of(&err), "already_approved");
    }
    nothing_recorded(&signer, &p.id, 1).await;
}

#[tokio::test]
async fn a_denial_by_any_listed_approver_ends_it_with_its_reason() {
    let signer = start().await;
    let p = propose(&mut head(&signer).await).await;
    named(&signer, "alice")
        .await
        .decide(approve(&p.id, Delivery::Direct))
        .await
        .unwrap();
    let denied = named(&signer, "carol")
        .await
        .decide(deny(&p.id, "wrong cron"))
        .await
        .unwrap()
        .into_inner();
    let shown = denied.proposal.unwrap();
    assert_eq!(
        (shown.status().name(), shown.reason.as_str()),
        ("denied", "wrong cron")
    );
    assert!(denied.proof.is_empty());
    assert_eq!(
        decisions(shown.quorum.as_ref().unwrap()),
        [
            decision("alice", "approve", ""),
            decision("carol", "deny", "wrong cron")
        ]
    );
    let err = named(&signer, "bob")
        .await
        .decide(approve(&p.id, Delivery::Direct))
        .await
        .unwrap_err();
    assert_eq!(reason_of(&err), "not_pending");
    let record = signer
        .state()
        .ledger()
        .proposal(&p.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.issuance, None);
    chain_intact(&signer).await;
}

#[tokio::test]
async fn a_quorum_approval_cannot_move_the_proof_to_another_session() {
    let signer = start().await;
    let p = propose(&mut head(&signer).await).await;
    let request = countersign_proto::v1::DecideRequest {
        execute_in_session: "other-session".into(),
        ..approve(&p.id, Delivery::Handoff)
    };
    let err = named(&signer, "alice")
        .await
        .decide(request)
        .await
        .unwrap_err();
    assert_eq!(reason_of(&err), "invalid_field");
    nothing_recorded(&signer, &p.id, 0).await;
}

#[tokio::test]
async fn the_last_approver_chooses_the_delivery_and_a_head_claims_it_once() {
    let signer = start().await;
    let mut head = head(&signer).await;
    let p = propose(&mut head).await;
    named(&signer, "bob")
        .await
        .decide(approve(&p.id, Delivery::Direct))
        .await
        .unwrap();
    let last = named(&signer, "carol")
        .await
        .decide(approve(&p.id, Delivery::Handoff))
        .await
        .unwrap()
        .into_inner();
    assert!(last.proof.is_empty() && !last.proof_sha256.is_empty());
    let claim = ClaimHandoffRequest {
        proposal_id: p.id.clone(),
        session: SESSION.into(),
    };
    let claimed = head
        .claim_handoff(claim.clone())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(claimed.proof_sha256, last.proof_sha256);
    let principal = signer.principal();
    assert_eq!(
        claims(&claimed.proof).0,
        format!("human:quorum:{principal}/bob,{principal}/carol")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_approvers_deciding_at_the_same_instant_produce_exactly_one_proof_on_sqlite() {
    two_approvers_at_once(start().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_approvers_deciding_at_the_same_instant_produce_exactly_one_proof_on_postgres() {
    let db = TempPgDatabase::create().await.unwrap();
    let signer = TestSigner::start_with(&registry(), Some(db.url()))
        .await
        .unwrap();
    two_approvers_at_once(signer).await;
}

async fn two_approvers_at_once(signer: TestSigner) {
    let mut head = head(&signer).await;
    let alice = named(&signer, "alice").await;
    let bob = named(&signer, "bob").await;
    for _ in 0..6 {
        let p = propose(&mut head).await;
        let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(2));
        let decide = |mut client: SignerClient<Channel>,
                      barrier: std::sync::Arc<tokio::sync::Barrier>| {
            let request = approve(&p.id, Delivery::Direct);
            tokio::spawn(async move {
                barrier.wait().await;
                client.decide(request).await.map(|r| r.into_inner())
            })
        };
        let a = decide(alice.clone(), barrier.clone());
        let b = decide(bob.clone(), barrier);
        let (a, b) = (a.await.unwrap().unwrap(), b.await.unwrap().unwrap());
        let proofs = [&a, &b].iter().filter(|r| !r.proof.is_empty()).count();
        assert_eq!(proofs, 1, "exactly one of the two issues the proof");
        let record = signer
            .state()
            .ledger()
            .proposal(&p.id)
            .await
            .unwrap()
            .unwrap();
        let issued = record.issuance.unwrap();
        let principal = signer.principal();
        assert!(
            [
                format!("human:quorum:{principal}/alice,{principal}/bob"),
                format!("human:quorum:{principal}/bob,{principal}/alice"),
            ]
            .contains(&issued.provenance),
            "{}",
            issued.provenance
        );
    }
    chain_intact(&signer).await;
}

#[tokio::test]
async fn a_quorum_handoff_survives_a_restart_and_a_revoked_one_is_not_handed_over() {
    let signer = start().await;
    let mut head = head(&signer).await;
    let kept = propose(&mut head).await;
    let revoked = propose(&mut head).await;
    for id in [&kept.id, &revoked.id] {
        named(&signer, "alice")
            .await
            .decide(approve(id, Delivery::Handoff))
            .await
            .unwrap();
        named(&signer, "bob")
            .await
            .decide(approve(id, Delivery::Handoff))
            .await
            .unwrap();
    }
    let issued = |id: &str| {
        let ledger = signer.state().ledger().clone();
        let id = id.to_owned();
        async move {
            ledger
                .proposal(&id)
                .await
                .unwrap()
                .unwrap()
                .issuance
                .unwrap()
        }
    };
    let kept_issuance = issued(&kept.id).await;
    approver(&signer)
        .await
        .revoke(RevokeRequest {
            proposal_id: revoked.id.clone(),
            reason: "second thoughts".into(),
        })
        .await
        .unwrap();
    let signer = signer.restart().await.unwrap();
    let mut head = support::head(&signer).await;
    let claim = |id: &str| ClaimHandoffRequest {
        proposal_id: id.into(),
        session: SESSION.into(),
    };
    // The restarted signer hands over the very proof the quorum issued, once.
    let claimed = head
        .claim_handoff(claim(&kept.id))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(claimed.proof_sha256, kept_issuance.proof_sha256);
    let principal = signer.principal();
    assert_eq!(
        claims(&claimed.proof).0,
        format!("human:quorum:{principal}/alice,{principal}/bob")
    );
    let again = head.claim_handoff(claim(&kept.id)).await.unwrap_err();
    assert_eq!(reason_of(&again), "handoff_in_use");
    // A revoked quorum approval is never handed over.
    let refused = head.claim_handoff(claim(&revoked.id)).await.unwrap_err();
    assert_eq!(reason_of(&refused), "no_live_handoff");
}

#[tokio::test]
async fn with_an_unreadable_registry_the_quorum_still_holds_and_a_member_can_deny() {
    let signer = start().await;
    let p = propose(&mut head(&signer).await).await;
    std::fs::write(signer.home().registry_path(), "not = [toml").unwrap();
    let err = named(&signer, "dave")
        .await
        .decide(deny(&p.id, "not mine"))
        .await
        .unwrap_err();
    assert_eq!(reason_of(&err), "not_a_quorum_approver");
    // An approval fails closed on the broken file; nothing is recorded.
    let err = named(&signer, "alice")
        .await
        .decide(approve(&p.id, Delivery::Direct))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Internal);
    nothing_recorded(&signer, &p.id, 0).await;
    let denied = named(&signer, "carol")
        .await
        .decide(deny(&p.id, "the registry is broken"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(denied.proposal.unwrap().status().name(), "denied");
}
