//! Decision windows: a proposal no one decided by its `decide_by` reads
//! `expired`, leaves the pending list, and no decision of it is recorded,
//! on either backend; the `proposed` event commits to the window.
#![allow(clippy::unwrap_used)]

mod common;

use common::Kind;

use common::{PRINCIPAL, TestLedger, create_schedule, issue, issue_with_provenance, now};
use countersign_ledger::{LedgerError, Proposal, ProposalStatus, QuorumApproval};
use time::Duration;

/// Proposal `n`, made `age` seconds ago with a window of `window` seconds.
fn windowed(n: u32, age: i64, window: i64) -> Proposal {
    let created_at = now() - Duration::seconds(age);
    Proposal {
        created_at,
        decide_by: Some(created_at + Duration::seconds(window)),
        ..create_schedule(n, &format!("nightly-{n}"))
    }
}

/// Rows of every table a decision writes.
async fn written(t: &TestLedger) -> [i64; 4] {
    [
        t.count("decisions").await,
        t.count("issuances").await,
        t.count("quorum_decisions").await,
        t.count("events").await,
    ]
}

on_both_backends!(an_undecided_proposal_past_its_window_is_expired_and_not_pending);
async fn an_undecided_proposal_past_its_window_is_expired_and_not_pending(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let open = windowed(1, 10, 3600);
    let closed = windowed(2, 10, 5);
    for p in [&open, &closed] {
        t.ledger.insert_proposal(p).await.unwrap();
    }
    let got = t.ledger.proposal(&closed.id).await.unwrap().unwrap();
    assert_eq!(
        (got.status, got.reason.as_deref()),
        (
            ProposalStatus::Expired,
            Some("no one decided it within its decision window")
        )
    );
    assert_eq!(got.proposal.decide_by, closed.decide_by);
    assert_eq!(got.issuance, None);
    let pending = t.ledger.pending(PRINCIPAL).await.unwrap();
    let ids: Vec<&str> = pending.iter().map(|r| r.proposal.id.as_str()).collect();
    assert_eq!(ids, [open.id.as_str()]);
    // The chain commits to each window.
    let proposed: Vec<String> = t
        .ledger
        .events()
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "proposed")
        .map(|e| e.details["decide_by"].as_str().unwrap().to_owned())
        .collect();
    let format = |p: &Proposal| {
        p.decide_by
            .unwrap()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap()
    };
    assert_eq!(proposed, [format(&open), format(&closed)]);
}

on_both_backends!(no_decision_of_a_proposal_past_its_window_is_recorded);
async fn no_decision_of_a_proposal_past_its_window_is_recorded(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = windowed(1, 10, 5);
    t.ledger.insert_proposal(&p).await.unwrap();
    let before = written(&t).await;
    let closed = || {
        Err(LedgerError::WindowClosed(
            p.id.to_string(),
            p.decide_by.unwrap(),
        ))
    };
    assert_eq!(
        t.ledger.record_denial(&p.id, PRINCIPAL, "late").await,
        closed()
    );
    assert_eq!(
        t.ledger
            .record_withdrawal(&p.id, PRINCIPAL, "withdrawn by the proposer")
            .await,
        closed()
    );
    let (_, issuance) = issue(&p, 1, 300);
    assert_eq!(t.ledger.record_approval(&issuance).await, closed());
    assert_eq!(
        t.ledger.record_handoff_approval(&issuance, None).await,
        closed()
    );
    // A quorum's first approval and its denial alike.
    let approver = format!("{PRINCIPAL}/alice");
    let first = QuorumApproval {
        proposal_id: &p.id,
        principal: PRINCIPAL,
        approver: &approver,
        required: 2,
        prior: &[],
        issuance: None,
        handoff: false,
        passkey: None,
    };
    assert_eq!(
        t.ledger.record_quorum_approval(&first).await.map(|_| ()),
        closed()
    );
    let (_, last) = issue_with_provenance(&p, 2, 300, &format!("human:quorum:{approver}"));
    let only = QuorumApproval {
        required: 1,
        issuance: Some(&last),
        ..first
    };
    assert_eq!(
        t.ledger.record_quorum_approval(&only).await.map(|_| ()),
        closed()
    );
    assert_eq!(
        t.ledger
            .record_quorum_denial(&p.id, PRINCIPAL, &approver, 2, "late")
            .await,
        closed()
    );
    assert_eq!(written(&t).await, before, "nothing was written");
    let got = t.ledger.proposal(&p.id).await.unwrap().unwrap();
    assert_eq!(got.status, ProposalStatus::Expired);
}

on_both_backends!(a_proposal_decided_within_its_window_keeps_its_decision_after_it);
async fn a_proposal_decided_within_its_window_keeps_its_decision_after_it(kind: Kind) {
    let t = TestLedger::on(kind).await;
    // Decided one second before its window closes; read after it closed.
    let p = windowed(1, 2, 3);
    t.ledger.insert_proposal(&p).await.unwrap();
    t.ledger
        .record_denial(&p.id, PRINCIPAL, "not now")
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let got = t.ledger.proposal(&p.id).await.unwrap().unwrap();
    assert_eq!(got.status, ProposalStatus::Denied);
    // A proposal without a window (recorded before windows existed)
    // waits for good.
    let old = Proposal {
        decide_by: None,
        created_at: now() - Duration::days(30),
        ..create_schedule(2, "old")
    };
    t.ledger.insert_proposal(&old).await.unwrap();
    assert_eq!(t.ledger.pending(PRINCIPAL).await.unwrap().len(), 1);
    t.ledger
        .record_denial(&old.id, PRINCIPAL, "stale")
        .await
        .unwrap();
}
