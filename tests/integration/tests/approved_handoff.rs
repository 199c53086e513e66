//! `Gate::execute_approved_handoff`: the hook's way to run what the signer
//! has just said is approved, its claim sent together with the read of the
//! proposal. Against a real signer and ledger (the harness), each answer
//! is the one `execute_handoff` gives, and a claim whose proposal is not
//! the one the caller named is released unused, so the approval is not
//! lost.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use countersign_gate::signer_client;
use countersign_gate::{Gate, Outcome, Refused};
use countersign_identity::Home;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_verifier::{ProposalId, Session};
use support::{Harness, Person};
use tonic::transport::Channel;

const CREATE: &str = "schedule.create";

async fn head_and_gate(h: &Harness) -> (SignerClient<Channel>, Gate) {
    let ctx = countersign::Context::load(Home::at(h.home()).unwrap()).unwrap();
    let mut head = ctx.head().await.unwrap();
    let keys = signer_client::public_keys(&mut head).await.unwrap();
    let gate = ctx.gate_from(&head, keys, h.ledger().clone()).unwrap();
    (head, gate)
}

fn cli() -> Session {
    Session::parse("cli").unwrap()
}

async fn approved(h: &Harness, name: &str) -> ProposalId {
    let id = h
        .propose(
            CREATE,
            &format!(r#"{{"name":"{name}","cron":"0 3 * * *"}}"#),
        )
        .await;
    h.approve_for_mcp(&id).await;
    ProposalId::parse(id).unwrap()
}

#[tokio::test]
async fn an_approved_handoff_runs_once_then_answers_what_was_recorded() {
    let h = Harness::start().await;
    let (mut head, gate) = head_and_gate(&h).await;
    let id = approved(&h, "nightly").await;
    let outcome = gate
        .execute_approved_handoff(&mut head, &id, &cli(), CREATE)
        .await
        .unwrap();
    assert!(matches!(outcome, Outcome::Applied(_)), "{outcome:?}");
    assert_eq!(h.schedules().await.len(), 1);
    // Asked again: the claim is refused (nothing live), and the record
    // answers with what was applied; nothing runs twice.
    let again = gate
        .execute_approved_handoff(&mut head, &id, &cli(), CREATE)
        .await
        .unwrap();
    assert!(matches!(again, Outcome::Recorded(_)), "{again:?}");
    assert_eq!(h.schedules().await.len(), 1);
}

#[tokio::test]
async fn a_claim_for_another_operation_is_released_unused() {
    let h = Harness::start().await;
    let (mut head, gate) = head_and_gate(&h).await;
    let id = approved(&h, "nightly").await;
    let outcome = gate
        .execute_approved_handoff(&mut head, &id, &cli(), "schedule.pause")
        .await
        .unwrap();
    assert!(
        matches!(&outcome, Outcome::Refused(Refused::UnknownProposal(p)) if p == id.as_str()),
        "{outcome:?}"
    );
    assert_eq!(h.schedules().await.len(), 0);
    // Released: the approval still runs, once.
    let outcome = gate.execute_handoff(&mut head, &id, &cli()).await.unwrap();
    assert!(matches!(outcome, Outcome::Applied(_)), "{outcome:?}");
    assert_eq!(h.schedules().await.len(), 1);
}

#[tokio::test]
async fn refused_claims_are_answered_as_execute_handoff_answers_them() {
    let h = Harness::start().await;
    let (mut head, gate) = head_and_gate(&h).await;

    // Another session: the signer's refusal, with the way to approve it there.
    let id = approved(&h, "nightly").await;
    let other = Session::parse("other").unwrap();
    let outcome = gate
        .execute_approved_handoff(&mut head, &id, &other, CREATE)
        .await
        .unwrap();
    let Outcome::Refused(Refused::HandoffRefused(refusal)) = &outcome else {
        panic!("{outcome:?}");
    };
    assert!(
        refusal.message.ends_with(&format!(
            "`countersign approve {id} --hand-off --execute-in-session other`"
        )),
        "{}",
        refusal.message
    );

    // Never approved: no live handoff.
    let pending = ProposalId::parse(
        h.propose(CREATE, r#"{"name":"weekly","cron":"0 4 * * 1"}"#)
            .await,
    )
    .unwrap();
    let outcome = gate
        .execute_approved_handoff(&mut head, &pending, &cli(), CREATE)
        .await
        .unwrap();
    assert!(
        matches!(&outcome, Outcome::Refused(Refused::NoHandoff { proposal_id, .. }) if proposal_id == pending.as_str()),
        "{outcome:?}"
    );

    // Denied: answered from the record.
    let denied = ProposalId::parse(
        h.propose(CREATE, r#"{"name":"hourly","cron":"0 * * * *"}"#)
            .await,
    )
    .unwrap();
    let run = h
        .cli_with(
            &["deny", denied.as_str(), "--reason", "not now"],
            "",
            Person::TypesTheChallenge,
        )
        .await;
    assert_eq!(run.result, Ok(()), "{}", run.stderr);
    let outcome = gate
        .execute_approved_handoff(&mut head, &denied, &cli(), CREATE)
        .await
        .unwrap();
    assert!(
        matches!(&outcome, Outcome::Refused(Refused::Decided { status: "denied", reason, .. }) if reason == " (not now)"),
        "{outcome:?}"
    );
    assert_eq!(h.schedules().await.len(), 0);
    // The first approval is still there for its own session.
    let outcome = gate.execute_handoff(&mut head, &id, &cli()).await.unwrap();
    assert!(matches!(outcome, Outcome::Applied(_)), "{outcome:?}");
}
