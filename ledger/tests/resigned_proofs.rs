//! A handoff signed again by a second signer (schema version 18): either
//! proof of the nonce consumes it, once; the record is refused when the
//! issuance is not live or was signed again already, and it is in the
//! audit trail, which notices a row without its event.
#![allow(clippy::unwrap_used)]

mod common;

use common::{
    Kind, PRINCIPAL, TestLedger, approve, create_schedule, resign, resigned_row_insert, verified,
};
use countersign_ledger::{ChainBreak, Consumed, LedgerError, LedgerRefusal, RevokeOutcome};

/// How many events the ledger holds.
async fn events(t: &TestLedger) -> i64 {
    t.count("events").await
}

/// How many re-signed proofs and events the ledger holds.
async fn written(t: &TestLedger) -> (i64, i64) {
    (t.count("resigned_proofs").await, events(t).await)
}

fn completed(consumed: Consumed) -> countersign_ledger::Disposition {
    match consumed {
        Consumed::Completed(d) => d,
        Consumed::Replay(d) => panic!("expected a fresh consumption, got replay {d:?}"),
    }
}

fn replayed(consumed: Consumed) -> countersign_ledger::Disposition {
    match consumed {
        Consumed::Replay(d) => d,
        Consumed::Completed(d) => panic!("expected a replay, got a consumption {d:?}"),
    }
}

on_both_backends!(either_proof_of_a_resigned_nonce_consumes_it_once);
async fn either_proof_of_a_resigned_nonce_consumes_it_once(kind: Kind) {
    for resigned_first in [true, false] {
        let t = TestLedger::on(kind).await;
        let p = create_schedule(1, "nightly");
        let issued = approve(&t.ledger, &p, 1).await;
        let (again, record) = resign(&issued);
        assert_ne!(again, issued);
        t.ledger
            .record_resigned_proof(&record, "countersign-signer@b")
            .await
            .unwrap();
        let stored = t.ledger.proposal(&p.id).await.unwrap().unwrap();
        let issuance = stored.issuance.unwrap();
        assert_eq!(issuance.resigned.as_ref(), Some(&record));
        assert!(issuance.names_proof(&record.proof_sha256));
        assert_eq!(
            issuance.key_id.as_deref(),
            Some(record.replaces_key_id.as_str())
        );

        let (first, second) = if resigned_first {
            (&again, &issued)
        } else {
            (&issued, &again)
        };
        let done = completed(
            t.ledger
                .consume_builtin(&verified(&p, first), "schedule.create")
                .await
                .unwrap(),
        );
        let replay = replayed(
            t.ledger
                .consume_builtin(&verified(&p, second), "schedule.create")
                .await
                .unwrap(),
        );
        assert_eq!(replay, done);
        assert_eq!(t.count("consumed_nonces").await, 1);
        assert_eq!(t.count("effect_applied").await, 1);
        // Signed again after the consumption: refused, nothing written.
        let before = events(&t).await;
        assert_eq!(
            t.ledger
                .record_resigned_proof(&record, "countersign-signer@b")
                .await,
            Err(LedgerError::AlreadyResigned(p.id.to_string()))
        );
        assert_eq!(events(&t).await, before);
        let report = t.ledger.verify_chain().await.unwrap();
        assert!(report.is_intact(), "{:?}", report.first_break);
    }
}

on_both_backends!(a_proof_signed_again_for_another_nonce_consumes_nothing);
async fn a_proof_signed_again_for_another_nonce_consumes_nothing(kind: Kind) {
    // Proposal 2's proof signed again and recorded; proposal 1's record
    // does not make it consumable as proposal 1's.
    let t = TestLedger::on(kind).await;
    let p1 = create_schedule(1, "nightly");
    let p2 = create_schedule(2, "weekly");
    let _ = approve(&t.ledger, &p1, 1).await;
    let issued2 = approve(&t.ledger, &p2, 2).await;
    let (again2, record2) = resign(&issued2);
    t.ledger
        .record_resigned_proof(&record2, "countersign-signer@b")
        .await
        .unwrap();
    // Without its record, a proof signed by a trusted key is not issued.
    let p3 = create_schedule(3, "monthly");
    let issued3 = approve(&t.ledger, &p3, 3).await;
    let (again3, _) = resign(&issued3);
    assert_eq!(
        t.ledger
            .consume_builtin(&verified(&p3, &again3), "schedule.create")
            .await,
        Err(LedgerError::Refused(LedgerRefusal::NotIssued))
    );
    assert_eq!(t.count("consumed_nonces").await, 0);
    completed(
        t.ledger
            .consume_builtin(&verified(&p2, &again2), "schedule.create")
            .await
            .unwrap(),
    );
    assert_eq!(t.count("consumed_nonces").await, 1);
}

on_both_backends!(refuses_to_record_a_proof_signed_again_unless_its_issuance_is_live);
async fn refuses_to_record_a_proof_signed_again_unless_its_issuance_is_live(kind: Kind) {
    let t = TestLedger::on(kind).await;
    // Consumed.
    let p = create_schedule(1, "nightly");
    let issued = approve(&t.ledger, &p, 1).await;
    completed(
        t.ledger
            .consume_builtin(&verified(&p, &issued), "schedule.create")
            .await
            .unwrap(),
    );
    let (_, record) = resign(&issued);
    let before = written(&t).await;
    assert_eq!(
        t.ledger.record_resigned_proof(&record, "a").await,
        Err(LedgerError::NotPending(p.id.to_string()))
    );
    assert_eq!(written(&t).await, before);
    // Revoked.
    let p = create_schedule(2, "weekly");
    let issued = approve(&t.ledger, &p, 2).await;
    assert_eq!(
        t.ledger.revoke(&p.id, PRINCIPAL, "no").await,
        Ok(RevokeOutcome::Revoked)
    );
    let (_, record) = resign(&issued);
    let before = written(&t).await;
    assert_eq!(
        t.ledger.record_resigned_proof(&record, "a").await,
        Err(LedgerError::NotPending(p.id.to_string()))
    );
    assert_eq!(written(&t).await, before);
    // Another key than the issuing one named, another nonce, the issued
    // proof itself.
    let p = create_schedule(3, "monthly");
    let issued = approve(&t.ledger, &p, 3).await;
    let (_, record) = resign(&issued);
    let before = written(&t).await;
    for wrong in [
        countersign_ledger::ResignedProof {
            replaces_key_id: record.key_id.clone(),
            ..record.clone()
        },
        countersign_ledger::ResignedProof {
            nonce: "n".repeat(43),
            ..record.clone()
        },
        countersign_ledger::ResignedProof {
            proof_sha256: t
                .ledger
                .proposal(&p.id)
                .await
                .unwrap()
                .unwrap()
                .issuance
                .unwrap()
                .proof_sha256,
            ..record.clone()
        },
    ] {
        assert_eq!(
            t.ledger.record_resigned_proof(&wrong, "a").await,
            Err(LedgerError::IssuanceMismatch(p.id.to_string()))
        );
    }
    assert_eq!(written(&t).await, before);
    // Once only.
    t.ledger.record_resigned_proof(&record, "a").await.unwrap();
    let before = written(&t).await;
    assert_eq!(
        t.ledger.record_resigned_proof(&record, "a").await,
        Err(LedgerError::AlreadyResigned(p.id.to_string()))
    );
    assert_eq!(written(&t).await, before);
}

on_both_backends!(the_schema_refuses_a_resigned_row_for_a_consumed_nonce_and_any_change);
async fn the_schema_refuses_a_resigned_row_for_a_consumed_nonce_and_any_change(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    let issued = approve(&t.ledger, &p, 1).await;
    let (_, record) = resign(&issued);
    t.ledger.record_resigned_proof(&record, "a").await.unwrap();
    let q = create_schedule(2, "weekly");
    let issued = approve(&t.ledger, &q, 2).await;
    completed(
        t.ledger
            .consume_builtin(&verified(&q, &issued), "schedule.create")
            .await
            .unwrap(),
    );
    let (_, late) = resign(&issued);
    let mut raw = t.raw().await;
    let insert = raw.exec(&resigned_row_insert(&late)).await.unwrap_err();
    assert!(
        insert.contains("a resigned proof needs its unconsumed issuance"),
        "{insert}"
    );
    for change in [
        format!(
            "UPDATE resigned_proofs SET proof_sha256 = '{}' WHERE nonce = '{}'",
            "0".repeat(64),
            record.nonce
        ),
        format!(
            "DELETE FROM resigned_proofs WHERE nonce = '{}'",
            record.nonce
        ),
    ] {
        let refused = raw.exec(&change).await.unwrap_err();
        assert!(refused.contains("append-only"), "{change}: {refused}");
    }
    raw.close().await;
    assert_eq!(t.count("resigned_proofs").await, 1);
}

on_both_backends!(a_resigned_row_without_its_event_breaks_the_audit);
async fn a_resigned_row_without_its_event_breaks_the_audit(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    let issued = approve(&t.ledger, &p, 1).await;
    let (_, record) = resign(&issued);
    let mut raw = t.raw().await;
    raw.exec(&resigned_row_insert(&record)).await.unwrap();
    raw.close().await;
    match t.ledger.verify_chain().await.unwrap().first_break {
        Some(ChainBreak::Disagrees { detail }) => assert!(
            detail.starts_with(&format!("the ledger records `resigned {} ", p.id))
                && detail.ends_with("1 time(s) but the event log 0"),
            "{detail}"
        ),
        other => panic!("expected a disagreement, got {other:?}"),
    }
}
