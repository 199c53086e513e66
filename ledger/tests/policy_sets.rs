//! The operator's Cedar policy in the ledger (schema version 16), on both
//! backends: a set's text is stored once under its digest and never
//! changed, a proposal's policy verdict is stored with it and committed
//! to by its `proposed` event, and a forbidden proposal is recorded with
//! its denial in one transaction or not at all.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Kind, TestLedger, create_schedule};
use countersign_ledger::{PolicyVerdict, Proposal, ProposalPolicy, ProposalStatus};
use countersign_verifier::canonical::sha256_hex;
use serde_json::json;

const SET: &str = r#"@id("no") forbid (principal, action, resource);"#;

fn forbidden(n: u32) -> Proposal {
    Proposal {
        policy: Some(ProposalPolicy {
            head: "cli".into(),
            binding: Some(PolicyVerdict {
                set: sha256_hex(SET.as_bytes()),
                verdict: "forbid".into(),
                policies: vec!["no".into()],
                quorum: None,
            }),
            shadow: None,
        }),
        ..create_schedule(n, &format!("nightly-{n}"))
    }
}

on_both_backends!(a_set_is_stored_once_under_its_digest_and_never_changed);
async fn a_set_is_stored_once_under_its_digest_and_never_changed(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let digest = t.ledger.record_policy_set(SET).await.unwrap();
    assert_eq!(digest, sha256_hex(SET.as_bytes()));
    // Stored again: the same row, no error.
    assert_eq!(t.ledger.record_policy_set(SET).await.unwrap(), digest);
    assert_eq!(t.count("policy_sets").await, 1);
    assert_eq!(
        t.ledger.policy_set(&digest).await.unwrap().as_deref(),
        Some(SET)
    );
    assert_eq!(t.ledger.policy_set(&"0".repeat(64)).await.unwrap(), None);
    let mut raw = t.raw().await;
    for sql in [
        "UPDATE policy_sets SET text = 'permit (principal, action, resource);'",
        "DELETE FROM policy_sets",
    ] {
        let err = raw.exec(sql).await.unwrap_err();
        assert!(err.contains("policy sets are append-only"), "{sql}: {err}");
    }
    raw.close().await;
    assert_eq!(
        t.ledger.policy_set(&digest).await.unwrap().as_deref(),
        Some(SET)
    );
}

on_both_backends!(a_forbidden_proposal_is_recorded_with_its_denial_and_its_verdict);
async fn a_forbidden_proposal_is_recorded_with_its_denial_and_its_verdict(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = forbidden(1);
    let record = t
        .ledger
        .insert_denied_proposal(&p, "forbidden by the operator's policy (no)")
        .await
        .unwrap();
    assert_eq!(record.status, ProposalStatus::Denied);
    assert_eq!(record.proposal.policy, p.policy);
    let read = t.ledger.proposal(p.id.as_str()).await.unwrap().unwrap();
    assert_eq!(read.proposal.policy, p.policy);
    let events = t.ledger.events().await.unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["proposed", "denied"]);
    assert_eq!(
        events[0].details["policy"],
        json!({
            "head": "cli",
            "binding": {"set": sha256_hex(SET.as_bytes()), "verdict": "forbid", "policies": ["no"]},
        })
    );
    assert_eq!(
        events[1].details,
        json!({"reason": "forbidden by the operator's policy (no)"})
    );
    assert!(t.ledger.verify_chain().await.unwrap().first_break.is_none());
}

on_both_backends!(a_forbidden_proposal_whose_denial_fails_is_not_recorded_at_all);
async fn a_forbidden_proposal_whose_denial_fails_is_not_recorded_at_all(kind: Kind) {
    let t = TestLedger::on(kind).await;
    t.inject_insert_failure("decisions", true).await;
    let p = forbidden(2);
    let err = t
        .ledger
        .insert_denied_proposal(&p, "forbidden by the operator's policy (no)")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("injected failure"), "{err}");
    assert_eq!(t.count("proposals").await, 0);
    assert_eq!(t.count("events").await, 0);
}
