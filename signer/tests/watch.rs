//! `WatchProposal` and `WatchPending` through the real gRPC server over
//! mTLS: a watcher hears each decision as it is made and the stream ends
//! after it; a decision made right as a watch opens is never lost; the
//! refusals are exactly those of the unary twins; the principal's bound,
//! and the signer's stop, end or refuse a watch with their own reason.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use countersign_identity::Role;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{
    Delivery, GetProposalRequest, ListPendingResponse, ProposalStatus, ProposalView,
    WatchPendingRequest, WatchProposalRequest, WithdrawRequest,
};
use countersign_registry::Registry;
use countersign_signer::testing::TestSigner;
use tonic::transport::Channel;
use tonic::{Code, Status, Streaming};

use support::{
    OTHER_PRINCIPAL, approve, approver, client_as, deny, head, named_approver, propose, reason_of,
    start,
};

/// Longest wait for one message; a decision takes milliseconds.
const PATIENCE: Duration = Duration::from_secs(10);

async fn watch(
    client: &mut SignerClient<Channel>,
    id: &str,
) -> Result<Streaming<ProposalView>, Status> {
    client
        .watch_proposal(WatchProposalRequest {
            proposal_id: id.into(),
        })
        .await
        .map(tonic::Response::into_inner)
}

/// The next message of `stream` (`None`: the stream ended with OK).
async fn next<T>(stream: &mut Streaming<T>) -> Option<Result<T, Status>> {
    tokio::time::timeout(PATIENCE, stream.message())
        .await
        .expect("a message or the end within the patience")
        .transpose()
}

async fn next_view(stream: &mut Streaming<ProposalView>) -> ProposalView {
    next(stream).await.expect("a view").unwrap()
}

async fn ended<T: std::fmt::Debug>(stream: &mut Streaming<T>) {
    assert!(next(stream).await.is_none(), "the stream ends OK");
}

/// A head of `signer`, its new proposal, and a watch of it past the
/// first view (which is the proposal as proposed).
async fn watched(
    signer: &TestSigner,
) -> (SignerClient<Channel>, ProposalView, Streaming<ProposalView>) {
    let mut head = head(signer).await;
    let proposal = propose(&mut head).await;
    let mut views = watch(&mut head, &proposal.id).await.unwrap();
    assert_eq!(
        next_view(&mut views).await,
        proposal,
        "the current view at once"
    );
    (head, proposal, views)
}

/// The next view, which has `status`, and the end of the stream after it.
async fn ends_with(views: &mut Streaming<ProposalView>, status: ProposalStatus) -> ProposalView {
    let last = next_view(views).await;
    assert_eq!(last.status(), status);
    ended(views).await;
    last
}

#[tokio::test]
async fn a_watcher_sees_the_approval_as_it_happens_and_the_stream_ends() {
    let signer = start().await;
    let (_, proposal, mut views) = watched(&signer).await;
    let decided = approver(&signer)
        .await
        .decide(approve(&proposal.id, Delivery::Handoff))
        .await
        .unwrap()
        .into_inner();
    let approved = ends_with(&mut views, ProposalStatus::Approved).await;
    assert_eq!(Some(&approved), decided.proposal.as_ref());
    assert!(approved.handoff_waiting);
}

#[tokio::test]
async fn a_watcher_sees_a_denial_with_its_reason_and_the_stream_ends() {
    let signer = start().await;
    let proposal = propose(&mut head(&signer).await).await;
    // An approver may watch too.
    let mut approver = approver(&signer).await;
    let mut views = watch(&mut approver, &proposal.id).await.unwrap();
    assert_eq!(
        next_view(&mut views).await.status(),
        ProposalStatus::Pending
    );
    approver
        .decide(deny(&proposal.id, "not tonight"))
        .await
        .unwrap();
    let denied = ends_with(&mut views, ProposalStatus::Denied).await;
    assert_eq!(denied.reason, "not tonight");
}

#[tokio::test]
async fn a_watcher_sees_a_withdrawal_and_the_stream_ends() {
    let signer = start().await;
    let (mut head, proposal, mut views) = watched(&signer).await;
    head.withdraw(WithdrawRequest {
        proposal_id: proposal.id,
    })
    .await
    .unwrap();
    ends_with(&mut views, ProposalStatus::Withdrawn).await;
}

#[tokio::test]
async fn a_dry_run_is_not_a_change_and_sends_nothing() {
    let signer = start().await;
    let (_, proposal, mut views) = watched(&signer).await;
    let mut dry = approve(&proposal.id, Delivery::Handoff);
    dry.dry_run = true;
    let mut approver = approver(&signer).await;
    approver.decide(dry).await.unwrap();
    approver
        .decide(approve(&proposal.id, Delivery::Handoff))
        .await
        .unwrap();
    // The next message is the approval: nothing was sent for the dry run.
    ends_with(&mut views, ProposalStatus::Approved).await;
}

#[tokio::test]
async fn a_decided_proposal_is_sent_once_and_the_stream_ends() {
    let signer = start().await;
    let mut head = head(&signer).await;
    let proposal = propose(&mut head).await;
    approver(&signer)
        .await
        .decide(deny(&proposal.id, "no"))
        .await
        .unwrap();
    let mut views = watch(&mut head, &proposal.id).await.unwrap();
    ends_with(&mut views, ProposalStatus::Denied).await;
}

#[tokio::test]
async fn a_watcher_sees_each_quorum_approval_then_the_proof() {
    let registry = Registry::default_toml().replacen(
        "[[operation]]\nname = \"schedule.create\"",
        "[[operation]]\nname = \"schedule.create\"\nquorum = { required = 2, approvers = [\"alice\", \"bob\"] }",
        1,
    );
    let signer = TestSigner::start_with_registry(&registry).await.unwrap();
    let (_, proposal, mut views) = watched(&signer).await;
    assert!(proposal.quorum.unwrap().decisions.is_empty());

    let mut alice = named_approver(&signer, "alice").await;
    alice
        .decide(approve(&proposal.id, Delivery::Handoff))
        .await
        .unwrap();
    let progress = next_view(&mut views).await;
    assert_eq!(progress.status(), ProposalStatus::Pending);
    let decided: Vec<String> = progress
        .quorum
        .unwrap()
        .decisions
        .into_iter()
        .map(|d| d.approver)
        .collect();
    assert_eq!(decided, ["alice"]);

    let mut bob = named_approver(&signer, "bob").await;
    bob.decide(approve(&proposal.id, Delivery::Handoff))
        .await
        .unwrap();
    let approved = ends_with(&mut views, ProposalStatus::Approved).await;
    assert_eq!(approved.quorum.unwrap().decisions.len(), 2);
}

/// A decision made while watches open, over another connection, many
/// times: 16 watches per round open a little apart, straddling the
/// decision, and every one of them ends with it, whichever came first.
#[tokio::test]
async fn a_decision_made_as_the_watch_opens_is_never_lost() {
    const WATCHERS: u64 = 16;
    let signer = start().await;
    let mut head = head(&signer).await;
    let mut watchers = Vec::new();
    for _ in 0..4 {
        watchers.push(support::head(&signer).await);
    }
    let approver = approver(&signer).await;
    for round in 0..40u64 {
        let proposal = propose(&mut head).await;
        let approving = round % 2 == 0;
        let mut decider = approver.clone();
        let id = proposal.id.clone();
        let decision = tokio::spawn(async move {
            // Somewhere inside the watches' opening, a little later each round.
            tokio::time::sleep(Duration::from_micros(100 * (round % 20))).await;
            if approving {
                decider.decide(approve(&id, Delivery::Handoff)).await
            } else {
                decider.decide(deny(&id, "race")).await
            }
        });
        let mut watches = Vec::new();
        for i in 0..WATCHERS {
            let mut client = watchers[(i % 4) as usize].clone();
            let id = proposal.id.clone();
            watches.push(tokio::spawn(async move {
                tokio::time::sleep(Duration::from_micros(150 * i)).await;
                let mut views = watch(&mut client, &id).await.unwrap();
                let mut last = next_view(&mut views).await;
                while last.status() == ProposalStatus::Pending {
                    last = next_view(&mut views).await;
                }
                ended(&mut views).await;
                last.status()
            }));
        }
        decision.await.unwrap().unwrap();
        let expected = if approving {
            ProposalStatus::Approved
        } else {
            ProposalStatus::Denied
        };
        for watch in watches {
            assert_eq!(watch.await.unwrap(), expected, "round {round}");
        }
    }
}

/// The window itself, held open: a decision committed after a watch's
/// first read and before its first message is sent right after it.
#[tokio::test]
async fn a_decision_committed_right_after_the_first_read_is_sent() {
    let signer = start().await;
    let mut head = head(&signer).await;
    let proposal = propose(&mut head).await;
    signer.watch_gate().hold();
    let mut watcher = head.clone();
    let id = proposal.id.clone();
    let opening = tokio::spawn(async move { watch(&mut watcher, &id).await });
    signer.watch_gate().reached().await;
    approver(&signer)
        .await
        .decide(approve(&proposal.id, Delivery::Handoff))
        .await
        .unwrap();
    signer.watch_gate().release();
    let mut views = opening.await.unwrap().unwrap();
    assert_eq!(next_view(&mut views).await, proposal);
    ends_with(&mut views, ProposalStatus::Approved).await;
}

/// An approver's `WatchPending`, opening: held at the test gate after its
/// first read, until the gate is released.
async fn pending_held_at_the_gate(
    signer: &TestSigner,
) -> tokio::task::JoinHandle<Result<Streaming<ListPendingResponse>, Status>> {
    signer.watch_gate().hold();
    let mut approver = approver(signer).await;
    let opening = tokio::spawn(async move {
        approver
            .watch_pending(WatchPendingRequest {})
            .await
            .map(tonic::Response::into_inner)
    });
    signer.watch_gate().reached().await;
    opening
}

#[tokio::test]
async fn a_proposal_made_right_after_the_lists_first_read_is_sent() {
    let signer = start().await;
    let opening = pending_held_at_the_gate(&signer).await;
    let proposal = propose(&mut head(&signer).await).await;
    signer.watch_gate().release();
    let mut lists = opening.await.unwrap().unwrap();
    assert!(next_list(&mut lists).await.is_empty());
    assert_eq!(next_list(&mut lists).await, [proposal.id]);
}

/// What GetProposal and WatchProposal answer `client` for `id`: code,
/// message and reason code.
async fn both_refuse(client: &mut SignerClient<Channel>, id: &str) -> (Code, String, String) {
    let got = client
        .get_proposal(GetProposalRequest {
            proposal_id: id.into(),
        })
        .await
        .unwrap_err();
    let watched = watch(client, id).await.unwrap_err();
    let refusal = |s: &Status| (s.code(), s.message().to_owned(), reason_of(s));
    assert_eq!(refusal(&watched), refusal(&got), "as GetProposal refuses");
    refusal(&watched)
}

#[tokio::test]
async fn refuses_another_principals_proposal_exactly_as_get_proposal_does() {
    let signer = start().await;
    let proposal = propose(&mut head(&signer).await).await;
    for role in [Role::Head, Role::Approver] {
        let mut theirs = client_as(&signer, role, OTHER_PRINCIPAL).await;
        assert_eq!(
            both_refuse(&mut theirs, &proposal.id).await,
            (
                Code::PermissionDenied,
                "proposal belongs to another principal".into(),
                "not_your_proposal".into()
            )
        );
    }
}

#[tokio::test]
async fn refuses_an_unknown_or_malformed_proposal_id_exactly_as_get_proposal_does() {
    let signer = start().await;
    let mut head = head(&signer).await;
    let unknown = format!("prop_{}", "0".repeat(32));
    assert_eq!(
        both_refuse(&mut head, &unknown).await,
        (
            Code::NotFound,
            format!("unknown proposal {unknown}"),
            "unknown_proposal".into()
        )
    );
    let (code, _, reason) = both_refuse(&mut head, "prop_x").await;
    assert_eq!(
        (code, reason.as_str()),
        (Code::InvalidArgument, "invalid_field")
    );
}

#[tokio::test]
async fn refuses_roles_the_proto_does_not_name() {
    let signer = start().await;
    let proposal = propose(&mut head(&signer).await).await;
    let mut admin = client_as(&signer, Role::Admin, signer.principal()).await;
    let status = watch(&mut admin, &proposal.id).await.unwrap_err();
    assert_eq!(
        (status.code(), status.message(), reason_of(&status).as_str()),
        (
            Code::PermissionDenied,
            "role admin may not call WatchProposal",
            "role_not_allowed"
        )
    );
    let status = head(&signer)
        .await
        .watch_pending(WatchPendingRequest {})
        .await
        .unwrap_err();
    assert_eq!(
        (status.code(), status.message(), reason_of(&status).as_str()),
        (
            Code::PermissionDenied,
            "role head may not call WatchPending",
            "role_not_allowed"
        )
    );
}

/// The ids of the next list, sorted (proposals of the same second are
/// listed in no particular order).
async fn next_list(stream: &mut Streaming<ListPendingResponse>) -> Vec<String> {
    let list = next(stream).await.expect("a list").unwrap();
    sorted(list.proposals.into_iter().map(|p| p.id).collect())
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids
}

#[tokio::test]
async fn the_pending_list_follows_proposals_decisions_and_withdrawals() {
    let signer = start().await;
    let mut head = head(&signer).await;
    let earlier = propose(&mut head).await;
    let mut approver = approver(&signer).await;
    let mut lists = approver
        .watch_pending(WatchPendingRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(next_list(&mut lists).await, [earlier.id.as_str()]);

    let later = propose(&mut head).await;
    assert_eq!(
        next_list(&mut lists).await,
        sorted(vec![earlier.id.clone(), later.id.clone()])
    );
    approver
        .decide(approve(&earlier.id, Delivery::Handoff))
        .await
        .unwrap();
    assert_eq!(next_list(&mut lists).await, [later.id.as_str()]);
    head.withdraw(WithdrawRequest {
        proposal_id: later.id.clone(),
    })
    .await
    .unwrap();
    assert!(next_list(&mut lists).await.is_empty());

    // Another principal's proposal is no change to this list: the next
    // message is this principal's next proposal.
    let mut theirs = client_as(&signer, Role::Head, OTHER_PRINCIPAL).await;
    propose(&mut theirs).await;
    let third = propose(&mut head).await;
    assert_eq!(next_list(&mut lists).await, [third.id]);
}

#[tokio::test]
async fn a_burst_of_proposals_never_sends_the_same_list_twice() {
    let signer = start().await;
    let mut lists = approver(&signer)
        .await
        .watch_pending(WatchPendingRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(next_list(&mut lists).await.is_empty());
    let mut head = head(&signer).await;
    let mut ids = Vec::new();
    for _ in 0..20 {
        ids.push(propose(&mut head).await.id);
    }
    ids.sort();
    let mut seen = vec![Vec::new()];
    while seen.last().map(Vec::len) != Some(ids.len()) {
        let list = next_list(&mut lists).await;
        assert_ne!(seen.last(), Some(&list), "an unchanged list was sent");
        seen.push(list);
    }
    assert_eq!(seen.last(), Some(&ids));
    assert!(seen.len() <= ids.len() + 1, "{} lists", seen.len());
}

/// A watch held (at the test gate) while more changes are announced than
/// a subscription keeps (1024): its own principal's proposal first, so
/// that its announcement is among those dropped, then another
/// principal's. Told it lagged, the watch reads again, and the list it
/// sends next has the proposal.
#[tokio::test]
async fn a_watch_that_fell_behind_reads_again_and_loses_nothing() {
    let signer = start().await;
    let opening = pending_held_at_the_gate(&signer).await;
    let ours = propose(&mut head(&signer).await).await;
    let mut theirs = client_as(&signer, Role::Head, OTHER_PRINCIPAL).await;
    for _ in 0..1100 {
        propose(&mut theirs).await;
    }
    signer.watch_gate().release();
    let mut lists = opening.await.unwrap().unwrap();
    assert!(next_list(&mut lists).await.is_empty());
    assert_eq!(next_list(&mut lists).await, [ours.id]);
}

#[tokio::test]
async fn refuses_a_watch_beyond_the_principals_bound_until_one_ends() {
    const BOUND: usize = 256;
    let signer = start().await;
    let mut head = head(&signer).await;
    let proposal = propose(&mut head).await;
    // Over several connections, as many heads would hold them.
    let mut clients = Vec::new();
    for _ in 0..4 {
        clients.push(support::head(&signer).await);
    }
    let mut open = Vec::new();
    for i in 0..BOUND {
        let mut views = watch(&mut clients[i % 4], &proposal.id).await.unwrap();
        next_view(&mut views).await;
        open.push(views);
    }
    let status = watch(&mut head, &proposal.id).await.unwrap_err();
    assert_eq!(
        (status.code(), status.message(), reason_of(&status).as_str()),
        (
            Code::Unavailable,
            "this principal's head certificates already have 256 watches open, the most the signer allows one role; try again once one has ended",
            "too_many_watchers"
        )
    );
    // Another principal is not held back by this one's watches.
    let mut theirs = client_as(&signer, Role::Approver, OTHER_PRINCIPAL).await;
    theirs.watch_pending(WatchPendingRequest {}).await.unwrap();
    // Nor are this principal's approvers by its heads: the person's live
    // list and a watch of the proposal still open, and hear the decision.
    let mut person = approver(&signer).await;
    let mut lists = person
        .watch_pending(WatchPendingRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        next_list(&mut lists).await,
        std::slice::from_ref(&proposal.id)
    );
    let mut views = watch(&mut person, &proposal.id).await.unwrap();
    assert_eq!(next_view(&mut views).await.id, proposal.id);

    // A client that goes away gives its place back.
    drop(open.pop());
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        match watch(&mut head, &proposal.id).await {
            Ok(_) => break,
            Err(status) if reason_of(&status) == "too_many_watchers" => {
                assert!(tokio::time::Instant::now() < deadline, "no place freed");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(other) => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn a_stopping_signer_ends_its_watches_with_signer_stopping() {
    let signer = start().await;
    let mut head = head(&signer).await;
    let proposal = propose(&mut head).await;
    let mut views = watch(&mut head, &proposal.id).await.unwrap();
    next_view(&mut views).await;
    let mut lists = approver(&signer)
        .await
        .watch_pending(WatchPendingRequest {})
        .await
        .unwrap()
        .into_inner();
    next(&mut lists).await.unwrap().unwrap();

    // The graceful shutdown waits for open streams: it ends them first.
    tokio::time::timeout(PATIENCE, signer.stop())
        .await
        .expect("the signer stops with watches open")
        .unwrap();
    for status in [
        next(&mut views).await.unwrap().unwrap_err(),
        next(&mut lists).await.unwrap().unwrap_err(),
    ] {
        assert_eq!(
            (status.code(), status.message(), reason_of(&status).as_str()),
            (
                Code::Unavailable,
                "the signer is shutting down; watch again",
                "signer_stopping"
            )
        );
    }
}
