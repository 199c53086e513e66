//! Each RPC accepts only the roles `signer.proto` names, and only the
//! proposal's own principal.
#![allow(clippy::unwrap_used)]

mod support;

use countersign_identity::Role;
use countersign_proto::v1::{
    ClaimHandoffRequest, Delivery, GetProposalRequest, ListPendingRequest, ListProposalsRequest,
    PublicKeysRequest, ReleaseHandoffRequest, ResolveUncertainRequest, RevokeRequest,
    WithdrawRequest,
};
use tonic::{Code, Status};

use support::{
    OTHER_PRINCIPAL, SESSION, approve, approver, client_as, head, propose, propose_request, start,
};

fn assert_denied(status: Status, message: &str) {
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
    assert_eq!(status.message(), message);
}

#[tokio::test]
async fn refuses_head_calling_approver_rpcs() {
    let signer = start().await;
    let mut head = head(&signer).await;
    let proposal = propose(&mut head).await;

    let status = head
        .decide(approve(&proposal.id, Delivery::Direct))
        .await
        .unwrap_err();
    assert_denied(status, "role head may not call Decide");
    let status = head.list_pending(ListPendingRequest {}).await.unwrap_err();
    assert_denied(status, "role head may not call ListPending");
    let status = head
        .revoke(RevokeRequest {
            proposal_id: proposal.id.clone(),
            reason: "x".into(),
        })
        .await
        .unwrap_err();
    assert_denied(status, "role head may not call Revoke");
    // Whether an uncertain execution happened is a person's judgement.
    let status = head
        .resolve_uncertain(ResolveUncertainRequest {
            proposal_id: proposal.id.clone(),
            applied: true,
        })
        .await
        .unwrap_err();
    assert_denied(status, "role head may not call ResolveUncertain");

    let record = signer
        .state()
        .ledger()
        .proposal(&proposal.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.status.as_str(), "pending");
}

#[tokio::test]
async fn refuses_approver_calling_head_rpcs() {
    let signer = start().await;
    let mut approver = approver(&signer).await;
    let status = approver
        .propose(propose_request(SESSION))
        .await
        .unwrap_err();
    assert_denied(status, "role approver may not call Propose");
    let status = approver
        .claim_handoff(ClaimHandoffRequest {
            proposal_id: format!("prop_{}", "0".repeat(32)),
            session: SESSION.into(),
        })
        .await
        .unwrap_err();
    assert_denied(status, "role approver may not call ClaimHandoff");
    let status = approver
        .release_handoff(ReleaseHandoffRequest {
            proposal_id: format!("prop_{}", "0".repeat(32)),
            session: SESSION.into(),
        })
        .await
        .unwrap_err();
    assert_denied(status, "role approver may not call ReleaseHandoff");
    let status = approver
        .withdraw(WithdrawRequest {
            proposal_id: format!("prop_{}", "0".repeat(32)),
        })
        .await
        .unwrap_err();
    assert_denied(status, "role approver may not call Withdraw");
    // An approver interface's history: its own principal's proposals.
    approver
        .list_proposals(ListProposalsRequest::default())
        .await
        .unwrap();
}

#[tokio::test]
async fn refuses_admin_everything_but_public_keys() {
    let signer = start().await;
    let mut admin = client_as(&signer, Role::Admin, signer.principal()).await;
    admin.public_keys(PublicKeysRequest {}).await.unwrap();
    let status = admin.propose(propose_request(SESSION)).await.unwrap_err();
    assert_denied(status, "role admin may not call Propose");
    let status = admin.list_pending(ListPendingRequest {}).await.unwrap_err();
    assert_denied(status, "role admin may not call ListPending");
    let status = admin
        .get_proposal(GetProposalRequest {
            proposal_id: format!("prop_{}", "0".repeat(32)),
        })
        .await
        .unwrap_err();
    assert_denied(status, "role admin may not call GetProposal");
}

#[tokio::test]
async fn refuses_head_of_another_principal() {
    let signer = start().await;
    let mut ours = head(&signer).await;
    let proposal = propose(&mut ours).await;
    let mut approver = approver(&signer).await;
    approver
        .decide(approve(&proposal.id, Delivery::Handoff))
        .await
        .unwrap();

    let mut theirs = client_as(&signer, Role::Head, OTHER_PRINCIPAL).await;
    let status = theirs
        .get_proposal(GetProposalRequest {
            proposal_id: proposal.id.clone(),
        })
        .await
        .unwrap_err();
    assert_denied(status, "proposal belongs to another principal");
    let status = theirs
        .claim_handoff(ClaimHandoffRequest {
            proposal_id: proposal.id.clone(),
            session: SESSION.into(),
        })
        .await
        .unwrap_err();
    assert_denied(status, "proposal belongs to another principal");
    let status = theirs
        .release_handoff(ReleaseHandoffRequest {
            proposal_id: proposal.id.clone(),
            session: SESSION.into(),
        })
        .await
        .unwrap_err();
    assert_denied(status, "proposal belongs to another principal");
    let status = theirs
        .withdraw(WithdrawRequest {
            proposal_id: proposal.id.clone(),
        })
        .await
        .unwrap_err();
    assert_denied(status, "proposal belongs to another principal");
    let listed = theirs
        .list_proposals(ListProposalsRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert!(
        listed.proposals.is_empty(),
        "another principal's proposals are not listed"
    );

    // The refused claims did not consume the handoff.
    let claimed = ours
        .claim_handoff(ClaimHandoffRequest {
            proposal_id: proposal.id,
            session: SESSION.into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!claimed.proof.is_empty());
}

#[tokio::test]
async fn refuses_approver_of_another_principal() {
    let signer = start().await;
    let proposal = propose(&mut head(&signer).await).await;
    let mut theirs = client_as(&signer, Role::Approver, OTHER_PRINCIPAL).await;
    let status = theirs
        .decide(approve(&proposal.id, Delivery::Direct))
        .await
        .unwrap_err();
    assert_denied(status, "proposal belongs to another principal");
    let status = theirs
        .resolve_uncertain(ResolveUncertainRequest {
            proposal_id: proposal.id.clone(),
            applied: false,
        })
        .await
        .unwrap_err();
    assert_denied(status, "proposal belongs to another principal");
    let pending = theirs
        .list_pending(ListPendingRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(pending.proposals.is_empty());
    let pending = approver(&signer)
        .await
        .list_pending(ListPendingRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(pending.proposals.len(), 1);
    assert_eq!(pending.proposals[0].id, proposal.id);
}

#[tokio::test]
async fn refuses_certificate_without_countersign_identity() {
    use countersign_identity::pki::{CaMaterial, issue_client_cert_with_uris};
    use countersign_identity::tls;
    use time::{Duration, OffsetDateTime};

    let signer = start().await;
    let ca = CaMaterial::load(signer.home()).unwrap();
    let now = OffsetDateTime::now_utc();
    let cert =
        issue_client_cert_with_uris(&ca, &[], now - Duration::hours(1), now + Duration::hours(1))
            .unwrap();
    let config = tls::client_config_from_pem(ca.cert_pem(), &cert.cert_pem, &cert.key_pem);
    let mut client = signer.client_with(config).await.unwrap();
    let status = client.public_keys(PublicKeysRequest {}).await.unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    assert_eq!(
        status.message(),
        "client certificate names no countersign identity: peer certificate has no countersign URI SAN"
    );
}

/// Provenance is what the signer checked, the approver certificate's
/// principal; the request's `interface` is a claim and is ignored.
#[tokio::test]
async fn provenance_comes_from_the_approver_certificate_not_the_interface_field() {
    use countersign_proto::v1::Interface;
    let signer = start().await;
    let mut head = head(&signer).await;
    let mut approver = approver(&signer).await;
    let expected = format!("human:cert:{}", signer.principal());
    for interface in [Interface::Cli, Interface::Web, Interface::Unspecified] {
        let proposal = propose(&mut head).await;
        let mut request = approve(&proposal.id, Delivery::Direct);
        request.interface = interface as i32;
        let decided = approver.decide(request).await.unwrap().into_inner();
        let ledger = signer.state().ledger();
        let issuance = ledger
            .proposal(&proposal.id)
            .await
            .unwrap()
            .unwrap()
            .issuance;
        assert_eq!(issuance.unwrap().provenance, expected, "{interface:?}");
        assert!(!decided.proof.is_empty());
    }
}
