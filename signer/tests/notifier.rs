//! The notification outbox and the `notifier` role: with `[notify]` the
//! signer records a waiting proposal (and nothing without it), and serves
//! it to the notifier certificate only, which can acknowledge it and do
//! nothing else. Every other RPC refuses the notifier with
//! PERMISSION_DENIED `role_not_allowed`, and nothing it tries has an effect.
#![allow(clippy::unwrap_used)]

mod support;

use countersign_identity::Role;
use countersign_proto::v1::outbox_notification::About;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{
    AckNotificationsRequest, BeginDecisionRequest, BeginEnrolmentRequest, BeginRemovalRequest,
    ClaimHandoffRequest, CreateRuleRequest, Delivery, EnrolRequest, GetProposalRequest,
    ListPasskeysRequest, ListPendingRequest, ListProposalsRequest, ListRulesRequest,
    OutboxNotification, PendingNotificationsRequest, ProposalWaiting, PublicKeysRequest,
    ReissueForReconcileRequest, ReleaseHandoffRequest, RemovePasskeyRequest,
    ResolveUncertainRequest, ReviseRuleRequest, RevokeRequest, RevokeRuleRequest, WithdrawRequest,
};
use countersign_registry::Registry;
use countersign_signer::testing::TestSigner;
use support::{approve, approver, head, propose, propose_request, reason_of};
use tonic::Code;
use tonic::transport::Channel;

/// A signer that records notifications (`[notify]` with no channel: the
/// channels are the notify process's).
async fn recording() -> TestSigner {
    TestSigner::start_configured(
        Registry::default_toml(),
        None,
        "\n[console]\naddr = \"127.0.0.1:7997\"\n[notify]\n",
    )
    .await
    .unwrap()
}

async fn notifier(signer: &TestSigner) -> SignerClient<Channel> {
    signer.client(Role::Notifier).await.unwrap()
}

/// What waits for `notifier` (at most `limit`; 0: 100).
async fn waiting_for(notifier: &mut SignerClient<Channel>, limit: u32) -> Vec<OutboxNotification> {
    notifier
        .pending_notifications(PendingNotificationsRequest { limit })
        .await
        .unwrap()
        .into_inner()
        .notifications
}

/// The exact refusal of a role on an RPC.
fn assert_role_refused(result: Result<(), tonic::Status>, role: &str, rpc: &str) {
    let status = result.unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied, "{rpc}: {status:?}");
    assert_eq!(status.message(), format!("role {role} may not call {rpc}"));
    assert_eq!(reason_of(&status), "role_not_allowed", "{rpc}");
}

/// `Ok(())` or the status of one call.
macro_rules! call {
    ($client:expr, $rpc:ident($request:expr)) => {
        $client.$rpc($request).await.map(|_| ())
    };
}

#[tokio::test]
async fn a_waiting_proposal_is_recorded_for_the_notifier_and_acknowledged_once() {
    let signer = recording().await;
    let view = propose(&mut head(&signer).await).await;
    let mut notifier = notifier(&signer).await;

    let waiting = waiting_for(&mut notifier, 0).await;
    let [one] = waiting.as_slice() else {
        panic!("{waiting:?}")
    };
    assert_eq!(
        one.about,
        Some(About::Proposal(ProposalWaiting {
            proposal_id: view.id.clone(),
            operation: "schedule.create".into(),
            arguments_sha256: view.arguments_sha256.clone(),
            console_url: format!("https://console.localhost:7997/proposals/{}", view.id),
            decide_by: time::OffsetDateTime::parse(
                &view.decide_by,
                &time::format_description::well_known::Rfc3339
            )
            .unwrap()
            .unix_timestamp(),
            escalation: None,
        }))
    );
    assert!(!format!("{one:?}").contains("v4.public."));

    // Still there for a restarted signer: the outbox is in the ledger.
    let signer = signer.restart().await.unwrap();
    let mut notifier = self::notifier(&signer).await;
    let again = waiting_for(&mut notifier, 1).await;
    assert_eq!(again, waiting);
    let acked = notifier
        .ack_notifications(AckNotificationsRequest {
            ids: vec![one.id.clone(), one.id.clone()],
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(acked.acknowledged, 1);
    let after = waiting_for(&mut notifier, 0).await;
    assert!(after.is_empty(), "{after:?}");
}

#[tokio::test]
async fn without_a_notify_section_nothing_is_recorded() {
    let signer = TestSigner::start().await.unwrap();
    propose(&mut head(&signer).await).await;
    let waiting = waiting_for(&mut notifier(&signer).await, 0).await;
    assert!(waiting.is_empty(), "{waiting:?}");
}

#[tokio::test]
async fn refuses_an_acknowledgement_of_something_that_is_not_a_notification_id() {
    let signer = recording().await;
    propose(&mut head(&signer).await).await;
    let mut notifier = notifier(&signer).await;
    let refused = notifier
        .ack_notifications(AckNotificationsRequest {
            ids: vec!["prop_00".into()],
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert_eq!(reason_of(&refused), "invalid_field");
    let refused = notifier
        .pending_notifications(PendingNotificationsRequest { limit: 101 })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert_eq!(reason_of(&refused), "invalid_field");
    // Nothing was removed.
    let waiting = waiting_for(&mut notifier, 0).await;
    assert_eq!(waiting.len(), 1);
}

/// The notifier certificate is refused by every RPC but its two, with the
/// role named, and none of its attempts changes anything: the proposal
/// stays pending, nothing is issued, withdrawn or revoked, and no rule or
/// passkey appears.
#[tokio::test]
async fn the_notifier_is_refused_by_every_other_rpc_and_changes_nothing() {
    let signer = recording().await;
    let view = propose(&mut head(&signer).await).await;
    let mut n = notifier(&signer).await;
    let id = || view.id.clone();
    let refusals = [
        ("Propose", call!(n, propose(propose_request("s")))),
        (
            "GetProposal",
            call!(n, get_proposal(GetProposalRequest { proposal_id: id() })),
        ),
        ("ListPending", call!(n, list_pending(ListPendingRequest {}))),
        (
            "ListProposals",
            call!(n, list_proposals(ListProposalsRequest::default())),
        ),
        (
            "Withdraw",
            call!(n, withdraw(WithdrawRequest { proposal_id: id() })),
        ),
        ("Decide", call!(n, decide(approve(&id(), Delivery::Direct)))),
        (
            "ClaimHandoff",
            call!(
                n,
                claim_handoff(ClaimHandoffRequest {
                    proposal_id: id(),
                    session: support::SESSION.into(),
                })
            ),
        ),
        (
            "ReleaseHandoff",
            call!(n, release_handoff(ReleaseHandoffRequest::default())),
        ),
        (
            "Revoke",
            call!(
                n,
                revoke(RevokeRequest {
                    proposal_id: id(),
                    reason: "x".into(),
                })
            ),
        ),
        (
            "ResolveUncertain",
            call!(
                n,
                resolve_uncertain(ResolveUncertainRequest {
                    proposal_id: id(),
                    applied: true,
                })
            ),
        ),
        (
            "ReissueForReconcile",
            call!(
                n,
                reissue_for_reconcile(ReissueForReconcileRequest::default())
            ),
        ),
        ("PublicKeys", call!(n, public_keys(PublicKeysRequest {}))),
        (
            "BeginDecision",
            call!(n, begin_decision(BeginDecisionRequest::default())),
        ),
        (
            "BeginEnrolment",
            call!(n, begin_enrolment(BeginEnrolmentRequest::default())),
        ),
        ("Enrol", call!(n, enrol(EnrolRequest::default()))),
        (
            "BeginRemoval",
            call!(n, begin_removal(BeginRemovalRequest::default())),
        ),
        (
            "RemovePasskey",
            call!(n, remove_passkey(RemovePasskeyRequest::default())),
        ),
        (
            "ListPasskeys",
            call!(n, list_passkeys(ListPasskeysRequest {})),
        ),
        (
            "CreateRule",
            call!(n, create_rule(CreateRuleRequest::default())),
        ),
        (
            "ReviseRule",
            call!(n, revise_rule(ReviseRuleRequest::default())),
        ),
        (
            "RevokeRule",
            call!(n, revoke_rule(RevokeRuleRequest::default())),
        ),
        (
            "ListRules",
            call!(n, list_rules(ListRulesRequest::default())),
        ),
    ];
    for (rpc, result) in refusals {
        assert_role_refused(result, "notifier", rpc);
    }

    let record = signer
        .state()
        .ledger()
        .proposal(&view.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.status.as_str(), "pending");
    assert_eq!(record.proposal.arguments_sha256, view.arguments_sha256);
    let still = approver(&signer)
        .await
        .list_pending(ListPendingRequest {})
        .await
        .unwrap()
        .into_inner()
        .proposals;
    assert_eq!(still.len(), 1);
    assert!(
        signer
            .state()
            .ledger()
            .passkeys(signer.principal())
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        signer
            .state()
            .ledger()
            .rules(signer.principal())
            .await
            .unwrap()
            .is_empty()
    );
}

/// The notifier's two RPCs refuse every other role, and a head or an
/// approver can neither read nor drop what waits for the person.
#[tokio::test]
async fn the_notifier_rpcs_refuse_heads_and_approvers() {
    let signer = recording().await;
    propose(&mut head(&signer).await).await;
    for (role, mut client) in [
        ("head", head(&signer).await),
        ("approver", approver(&signer).await),
    ] {
        assert_role_refused(
            call!(
                client,
                pending_notifications(PendingNotificationsRequest::default())
            ),
            role,
            "PendingNotifications",
        );
        assert_role_refused(
            call!(
                client,
                ack_notifications(AckNotificationsRequest::default())
            ),
            role,
            "AckNotifications",
        );
    }
    let waiting = waiting_for(&mut notifier(&signer).await, 0).await;
    assert_eq!(waiting.len(), 1);
}
