//! A head's idempotency key: the same key in the same session names one
//! proposal, whatever happened to it since; another operation or other
//! arguments under that key are refused and propose nothing.
#![allow(clippy::unwrap_used)]

mod support;

use countersign_identity::Role;
use countersign_proto::v1::{ListProposalsRequest, ProposeRequest};
use tonic::Code;

use support::{ARGS, OTHER_PRINCIPAL, SESSION, approver, client_as, deny, head, start};

fn keyed(key: &str, session: &str, arguments: &str) -> ProposeRequest {
    ProposeRequest {
        operation: "schedule.create".into(),
        arguments_json: arguments.into(),
        session: session.into(),
        note: String::new(),
        idempotency_key: key.into(),
        head: "cli".into(),
    }
}

#[tokio::test]
async fn the_same_key_names_one_proposal_as_it_stands() {
    let signer = start().await;
    let mut head = head(&signer).await;
    let first = head
        .propose(keyed("toolu_01", SESSION, ARGS))
        .await
        .unwrap()
        .into_inner();
    // The same arguments in another key order are the same arguments.
    let reordered = r#"{"cron":"0 3 * * *","name":"nightly"}"#;
    let again = head
        .propose(keyed("toolu_01", SESSION, reordered))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again.id, first.id);
    assert_eq!(again.status().name(), "pending");

    // Denied since: the answer is the denied proposal, not a new one.
    approver(&signer)
        .await
        .decide(deny(&first.id, "not tonight"))
        .await
        .unwrap();
    let after = head
        .propose(keyed("toolu_01", SESSION, ARGS))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (after.id.as_str(), after.status().name()),
        (first.id.as_str(), "denied")
    );

    // Another session, or another principal, with the same key: its own.
    let other_session = head
        .propose(keyed("toolu_01", "other-session", ARGS))
        .await
        .unwrap();
    assert_ne!(other_session.into_inner().id, first.id);
    let mut stranger = client_as(&signer, Role::Head, OTHER_PRINCIPAL).await;
    let theirs = stranger
        .propose(keyed("toolu_01", SESSION, ARGS))
        .await
        .unwrap();
    assert_ne!(theirs.into_inner().id, first.id);

    let proposed = signer.state().ledger().events().await.unwrap();
    let proposed = proposed.iter().filter(|e| e.kind == "proposed").count();
    assert_eq!(proposed, 3, "one per key, session and principal");
    let mine = head
        .list_proposals(ListProposalsRequest {
            status: 0,
            limit: 100,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(mine.proposals.len(), 2);
}

#[tokio::test]
async fn a_key_used_for_other_arguments_or_another_operation_is_refused() {
    let signer = start().await;
    let mut head = head(&signer).await;
    let first = head
        .propose(keyed("toolu_02", SESSION, ARGS))
        .await
        .unwrap()
        .into_inner();
    let other = r#"{"name":"hourly","cron":"0 * * * *"}"#;
    let status = head
        .propose(keyed("toolu_02", SESSION, other))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert_eq!(
        status.message(),
        format!(
            "the idempotency key \"toolu_02\" was used for proposal {} of another operation or other arguments; nothing was proposed",
            first.id
        )
    );
    let mut request = keyed("toolu_02", SESSION, r#"{"name":"nightly"}"#);
    request.operation = "schedule.activate".into();
    let status = head.propose(request).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status.message().starts_with("the idempotency key"),
        "{}",
        status.message()
    );

    let status = head
        .propose(keyed("tool use 3", SESSION, ARGS))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status.message().starts_with("invalid idempotency_key"),
        "{}",
        status.message()
    );
    let events = signer.state().ledger().events().await.unwrap();
    assert_eq!(events.iter().filter(|e| e.kind == "proposed").count(), 1);
}

#[tokio::test]
async fn concurrent_proposals_with_one_key_record_one_proposal() {
    let signer = start().await;
    let mut calls = Vec::new();
    for _ in 0..8 {
        let mut head = head(&signer).await;
        calls.push(tokio::spawn(async move {
            head.propose(keyed("toolu_04", SESSION, ARGS))
                .await
                .map(|r| r.into_inner().id)
        }));
    }
    let mut ids = Vec::new();
    for call in calls {
        ids.push(call.await.unwrap().unwrap());
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "{ids:?}");
    let events = signer.state().ledger().events().await.unwrap();
    assert_eq!(events.iter().filter(|e| e.kind == "proposed").count(), 1);
}
