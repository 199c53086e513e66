//! `Ledger::consume_recorded`: a proof whose effect is only its record (a
//! coding agent's hook answering "allow") is consumed with its applied
//! completion in one transaction: once, with no intent left open and no
//! state written, a replay answered with the recorded disposition, and a
//! refusal writing nothing.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Kind, PRINCIPAL, TestLedger, approve, proposal, verified};
use countersign_ledger::{
    Consumed, DispositionStatus, LedgerError, LedgerRefusal, ProposalStatus, RevokeOutcome,
};
use serde_json::json;

/// An approved `agent.shell` proposal on `t`, and its proof.
async fn approved_call(t: &TestLedger, n: u32) -> (countersign_ledger::Proposal, String) {
    let p = proposal(
        n,
        "agent.shell",
        json!({"agent": "claude-code", "tool_name": "Bash",
               "tool_input": {"command": "git status"}, "cwd": "/w"}),
    );
    let token = approve(&t.ledger, &p, n).await;
    (p, token)
}

on_both_backends!(consumes_once_with_its_answer_and_leaves_no_intent_open);
async fn consumes_once_with_its_answer_and_leaves_no_intent_open(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let (p, token) = approved_call(&t, 1).await;
    let proof = verified(&p, &token);
    let answer = json!({"answer": "allow"});

    let Consumed::Completed(done) = t.ledger.consume_recorded(&proof, &answer).await.unwrap()
    else {
        panic!("expected a completed consumption");
    };
    assert_eq!(done.status, DispositionStatus::Applied);
    assert_eq!(done.result, answer);
    let record = t.ledger.proposal(&p.id).await.unwrap().unwrap();
    assert_eq!(record.status, ProposalStatus::Applied);
    assert!(t.ledger.interrupted().await.unwrap().is_empty());
    assert_eq!(t.count("intents").await, 1);
    assert_eq!(t.count("completions").await, 1);
    // The answer is the effect: nothing in the state store.
    assert_eq!(t.count("effect_applied").await, 0);
    assert_eq!(t.count("state").await, 0);

    // Presented again: the recorded answer, nothing written.
    assert_eq!(
        t.ledger.consume_recorded(&proof, &answer).await.unwrap(),
        Consumed::Replay(done)
    );
    assert_eq!(t.count("consumed_nonces").await, 1);
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());
}

on_both_backends!(concurrent_presentations_consume_once);
async fn concurrent_presentations_consume_once(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let (p, token) = approved_call(&t, 2).await;
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (ledger, proof) = (t.ledger.clone(), verified(&p, &token));
        tasks.push(tokio::spawn(async move {
            ledger
                .consume_recorded(&proof, &json!({"answer": "allow"}))
                .await
                .unwrap()
        }));
    }
    let mut completed = 0;
    for task in tasks {
        if matches!(task.await.unwrap(), Consumed::Completed(_)) {
            completed += 1;
        }
    }
    assert_eq!(completed, 1);
    assert_eq!(t.count("consumed_nonces").await, 1);
    assert_eq!(t.count("completions").await, 1);
}

on_both_backends!(a_revoked_approval_is_refused_and_nothing_is_written);
async fn a_revoked_approval_is_refused_and_nothing_is_written(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let (p, token) = approved_call(&t, 3).await;
    assert_eq!(
        t.ledger.revoke(&p.id, PRINCIPAL, "no").await,
        Ok(RevokeOutcome::Revoked)
    );
    assert_eq!(
        t.ledger
            .consume_recorded(&verified(&p, &token), &json!({"answer": "allow"}))
            .await,
        Err(LedgerError::Refused(LedgerRefusal::Revoked))
    );
    assert_eq!(t.count("consumed_nonces").await, 0);
    assert_eq!(t.count("intents").await, 0);
    assert_eq!(t.ledger.disposition(&p.id).await.unwrap(), None);
}
