//! Quorum decisions: each approver's approval recorded with its event, the
//! proposal pending until the required-th, which writes the issuance in the
//! same transaction; nobody approves twice; a denial ends it; two approvers
//! at the same instant yield exactly one issuance; the schema and the audit
//! hold the same again. On both backends.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Kind, PRINCIPAL, TestLedger, create_schedule, issue_with_provenance, verified};
use countersign_ledger::{
    ConsumeStart, Ledger, LedgerError, ProposalStatus, QuorumApproval, QuorumOutcome, QuorumVerdict,
};

fn path(name: &str) -> String {
    format!("{PRINCIPAL}/{name}")
}

fn provenance(names: &[&str]) -> String {
    let paths: Vec<String> = names.iter().map(|n| path(n)).collect();
    format!("human:quorum:{}", paths.join(","))
}

/// What the signer does for one approval: read the approvals, sign when
/// this one completes the quorum, record; read again when they moved.
/// Returns the outcome and, when issued, the proof.
async fn approve_as(
    ledger: &Ledger,
    p: &countersign_ledger::Proposal,
    name: &str,
    required: u32,
    n: u32,
) -> Result<(QuorumOutcome, Option<String>), LedgerError> {
    let approver = path(name);
    loop {
        let prior: Vec<String> = ledger
            .quorum_decisions(&p.id)
            .await?
            .into_iter()
            .map(|d| d.approver)
            .collect();
        let issued = (prior.len() + 1 == required as usize).then(|| {
            let mut names: Vec<&str> = prior
                .iter()
                .map(|a| a.rsplit_once('/').unwrap().1)
                .collect();
            names.push(name);
            issue_with_provenance(p, n, 300, &provenance(&names))
        });
        let outcome = ledger
            .record_quorum_approval(&QuorumApproval {
                proposal_id: &p.id,
                principal: PRINCIPAL,
                approver: &approver,
                required,
                prior: &prior,
                issuance: issued.as_ref().map(|(_, record)| record),
                handoff: false,
                passkey: None,
            })
            .await;
        match outcome {
            Err(LedgerError::QuorumMoved(_)) => continue,
            Err(e) => return Err(e),
            Ok(outcome) => return Ok((outcome, issued.map(|(token, _)| token))),
        }
    }
}

async fn counts(t: &TestLedger) -> (i64, i64, i64, i64) {
    (
        t.count("quorum_decisions").await,
        t.count("decisions").await,
        t.count("issuances").await,
        t.count("events").await,
    )
}

on_both_backends!(the_required_th_distinct_approval_issues_the_proof_and_not_before);
async fn the_required_th_distinct_approval_issues_the_proof_and_not_before(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    t.ledger.insert_proposal(&p).await.unwrap();
    let (first, proof) = approve_as(&t.ledger, &p, "alice", 2, 1).await.unwrap();
    assert_eq!(
        (first, proof),
        (QuorumOutcome::Counted { approvals: 1 }, None)
    );
    let record = t.ledger.proposal(&p.id).await.unwrap().unwrap();
    assert_eq!(record.status, ProposalStatus::Pending);
    assert_eq!(record.issuance, None);
    assert_eq!(t.ledger.pending(PRINCIPAL).await.unwrap().len(), 1);

    let (second, proof) = approve_as(&t.ledger, &p, "bob", 2, 1).await.unwrap();
    assert_eq!(second, QuorumOutcome::Issued);
    let record = t.ledger.proposal(&p.id).await.unwrap().unwrap();
    assert_eq!(record.status, ProposalStatus::Approved);
    assert_eq!(
        record.issuance.unwrap().provenance,
        provenance(&["alice", "bob"])
    );
    let decisions = t.ledger.quorum_decisions(&p.id).await.unwrap();
    let seen: Vec<_> = decisions
        .iter()
        .map(|d| (d.approver.as_str(), d.seq, d.required, d.verdict))
        .collect();
    assert_eq!(
        seen,
        [
            (path("alice").as_str(), 1, 2, QuorumVerdict::Approve),
            (path("bob").as_str(), 2, 2, QuorumVerdict::Approve),
        ]
    );
    // A third approver finds it decided.
    assert_eq!(
        approve_as(&t.ledger, &p, "carol", 2, 1).await,
        Err(LedgerError::NotPending(p.id.to_string()))
    );
    // The proof is consumed once, as any other; the chain and the facts agree.
    let proof = verified(&p, &proof.unwrap());
    assert!(matches!(
        t.ledger
            .begin_consume(&proof, common::NO_LEASE)
            .await
            .unwrap(),
        ConsumeStart::Fresh(_)
    ));
    assert!(matches!(
        t.ledger
            .begin_consume(&proof, common::NO_LEASE)
            .await
            .unwrap(),
        ConsumeStart::Replay(_)
    ));
    let report = t.ledger.verify_chain().await.unwrap();
    assert!(report.is_intact(), "{report:?}");
    let kinds: Vec<String> = t
        .ledger
        .events()
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        kinds,
        [
            "proposed",
            "quorum_approved",
            "quorum_approved",
            "approved",
            "intent"
        ]
    );
}

on_both_backends!(refuses_a_second_approval_by_the_same_approver_and_writes_nothing);
async fn refuses_a_second_approval_by_the_same_approver_and_writes_nothing(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    t.ledger.insert_proposal(&p).await.unwrap();
    approve_as(&t.ledger, &p, "alice", 3, 1).await.unwrap();
    let before = counts(&t).await;
    assert_eq!(
        approve_as(&t.ledger, &p, "alice", 3, 1).await,
        Err(LedgerError::AlreadyApproved(
            p.id.to_string(),
            path("alice")
        ))
    );
    // Nor with the count the ledger would now accept (prior = [alice]).
    let prior = [path("alice")];
    assert_eq!(
        t.ledger
            .record_quorum_approval(&QuorumApproval {
                proposal_id: &p.id,
                principal: PRINCIPAL,
                approver: &path("alice"),
                required: 3,
                prior: &prior,
                issuance: None,
                handoff: false,
                passkey: None,
            })
            .await,
        Err(LedgerError::AlreadyApproved(
            p.id.to_string(),
            path("alice")
        ))
    );
    assert_eq!(counts(&t).await, before);
    assert_eq!(
        t.ledger.proposal(&p.id).await.unwrap().unwrap().status,
        ProposalStatus::Pending
    );
}

on_both_backends!(refuses_stale_approvals_or_a_misplaced_issuance_and_writes_nothing);
async fn refuses_stale_approvals_or_a_misplaced_issuance_and_writes_nothing(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    t.ledger.insert_proposal(&p).await.unwrap();
    approve_as(&t.ledger, &p, "alice", 2, 1).await.unwrap();
    let before = counts(&t).await;
    let (_, issuance) = issue_with_provenance(&p, 1, 300, &provenance(&["alice", "bob"]));
    let approval = |prior, issuance| QuorumApproval {
        proposal_id: &p.id,
        principal: PRINCIPAL,
        approver: "",
        required: 2,
        prior,
        issuance,
        handoff: false,
        passkey: None,
    };
    let bob = path("bob");
    let none: &[String] = &[];
    let alice = [path("alice")];
    // bob read no approvals, but alice's is recorded: read again.
    let stale = QuorumApproval {
        approver: &bob,
        ..approval(none, None)
    };
    assert_eq!(
        t.ledger.record_quorum_approval(&stale).await,
        Err(LedgerError::QuorumMoved(p.id.to_string()))
    );
    // The second of two approvals without the issuance it must write.
    let unissued = QuorumApproval {
        approver: &bob,
        ..approval(&alice, None)
    };
    assert_eq!(
        t.ledger.record_quorum_approval(&unissued).await,
        Err(LedgerError::IssuanceMismatch(p.id.to_string()))
    );
    // An issuance with an approval that is not the last.
    let early = QuorumApproval {
        approver: &bob,
        required: 3,
        ..approval(&alice, Some(&issuance))
    };
    assert_eq!(
        t.ledger.record_quorum_approval(&early).await,
        Err(LedgerError::IssuanceMismatch(p.id.to_string()))
    );
    assert_eq!(counts(&t).await, before);
    assert_eq!(
        t.ledger.proposal(&p.id).await.unwrap().unwrap().status,
        ProposalStatus::Pending
    );
}

on_both_backends!(a_denial_by_an_approver_ends_the_proposal_with_its_reason);
async fn a_denial_by_an_approver_ends_the_proposal_with_its_reason(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    t.ledger.insert_proposal(&p).await.unwrap();
    approve_as(&t.ledger, &p, "alice", 2, 1).await.unwrap();
    // alice approved: she cannot take it back by denying.
    assert_eq!(
        t.ledger
            .record_quorum_denial(&p.id, PRINCIPAL, &path("alice"), 2, "changed my mind")
            .await,
        Err(LedgerError::AlreadyApproved(
            p.id.to_string(),
            path("alice")
        ))
    );
    t.ledger
        .record_quorum_denial(&p.id, PRINCIPAL, &path("bob"), 2, "wrong cron")
        .await
        .unwrap();
    let record = t.ledger.proposal(&p.id).await.unwrap().unwrap();
    assert_eq!(
        (record.status, record.reason.as_deref(), record.issuance),
        (ProposalStatus::Denied, Some("wrong cron"), None)
    );
    let decisions = t.ledger.quorum_decisions(&p.id).await.unwrap();
    assert_eq!(decisions[1].verdict, QuorumVerdict::Deny);
    assert_eq!(decisions[1].reason.as_deref(), Some("wrong cron"));
    let before = counts(&t).await;
    assert_eq!(
        approve_as(&t.ledger, &p, "carol", 2, 1).await,
        Err(LedgerError::NotPending(p.id.to_string()))
    );
    assert_eq!(
        t.ledger
            .record_quorum_denial(&p.id, PRINCIPAL, &path("carol"), 2, "too")
            .await,
        Err(LedgerError::NotPending(p.id.to_string()))
    );
    assert_eq!(counts(&t).await, before);
    assert_eq!(t.count("issuances").await, 0);
    let report = t.ledger.verify_chain().await.unwrap();
    assert!(report.is_intact(), "{report:?}");
}

on_both_backends!(two_approvers_at_the_same_instant_produce_exactly_one_issuance);
async fn two_approvers_at_the_same_instant_produce_exactly_one_issuance(kind: Kind) {
    let t = TestLedger::on(kind).await;
    // Each approver through its own ledger handle (its own connections and,
    // on SQLite, its own writer), as two signer requests would be.
    let other = Ledger::open(&t.url).await.unwrap();
    for round in 0..8u32 {
        let p = create_schedule(round + 1, &format!("s{round}"));
        t.ledger.insert_proposal(&p).await.unwrap();
        // M = 2 of 3, both approving at once: one counts, one issues.
        // M = 1 of 2 (odd rounds): both would complete it; exactly one does,
        // the other finds it decided.
        let required = if round % 2 == 0 { 2 } else { 1 };
        let barrier = tokio::sync::Barrier::new(2);
        let (a, b) = tokio::join!(
            async {
                barrier.wait().await;
                approve_as(&t.ledger, &p, "alice", required, 2 * round + 1).await
            },
            async {
                barrier.wait().await;
                approve_as(&other, &p, "bob", required, 2 * round + 2).await
            }
        );
        let outcomes = [a, b];
        let issued = outcomes
            .iter()
            .filter(|o| matches!(o, Ok((QuorumOutcome::Issued, Some(_)))))
            .count();
        assert_eq!(issued, 1, "round {round}: {outcomes:?}");
        let other_outcome = outcomes
            .iter()
            .find(|o| !matches!(o, Ok((QuorumOutcome::Issued, _))))
            .unwrap();
        if required == 2 {
            assert!(
                matches!(
                    other_outcome,
                    Ok((QuorumOutcome::Counted { approvals: 1 }, None))
                ),
                "{other_outcome:?}"
            );
        } else {
            assert_eq!(
                other_outcome,
                &Err(LedgerError::NotPending(p.id.to_string()))
            );
        }
        let record = t.ledger.proposal(&p.id).await.unwrap().unwrap();
        assert_eq!(record.status, ProposalStatus::Approved);
        let approvers: Vec<String> = t
            .ledger
            .quorum_decisions(&p.id)
            .await
            .unwrap()
            .into_iter()
            .map(|d| d.approver)
            .collect();
        assert_eq!(approvers.len(), required as usize);
        let names: Vec<&str> = approvers
            .iter()
            .map(|a| a.rsplit_once('/').unwrap().1)
            .collect();
        assert_eq!(record.issuance.unwrap().provenance, provenance(&names));
    }
    assert_eq!(t.count("issuances").await, 8);
    let report = t.ledger.verify_chain().await.unwrap();
    assert!(report.is_intact(), "{report:?}");
}

on_both_backends!(the_schema_refuses_an_approval_short_of_its_quorum_or_out_of_order);
async fn the_schema_refuses_an_approval_short_of_its_quorum_or_out_of_order(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    t.ledger.insert_proposal(&p).await.unwrap();
    approve_as(&t.ledger, &p, "alice", 2, 1).await.unwrap();
    let mut raw = t.raw().await;
    let id = &p.id;
    let short = format!(
        "INSERT INTO decisions (proposal_id, decision, principal, reason, decided_at)
         VALUES ('{id}', 'approve', '{PRINCIPAL}', NULL, '2026-01-01T00:00:00Z')"
    );
    let err = raw.exec(&short).await.unwrap_err();
    assert!(
        err.contains("approved only by its required approvals"),
        "{err}"
    );
    for (approver, seq) in [(path("bob"), 3), (path("bob"), 1)] {
        let out_of_order = format!(
            "INSERT INTO quorum_decisions
                 (proposal_id, approver, seq, required, decision, reason, passkey, decided_at)
             VALUES ('{id}', '{approver}', {seq}, 2, 'approve', NULL, NULL, '2026-01-01T00:00:00Z')"
        );
        let err = raw.exec(&out_of_order).await.unwrap_err();
        assert!(
            err.contains("in order") || err.contains("the key exists") || err.contains("duplicate"),
            "{err}"
        );
    }
    let foreign = format!(
        "INSERT INTO quorum_decisions
             (proposal_id, approver, seq, required, decision, reason, passkey, decided_at)
         VALUES ('{id}', 'pr_00000000000000000000000000000bad/bob', 2, 2, 'approve', NULL, NULL,
                 '2026-01-01T00:00:00Z')"
    );
    let err = raw.exec(&foreign).await.unwrap_err();
    assert!(err.contains("of its principal"), "{err}");
    for edit in [
        "UPDATE quorum_decisions SET approver = 'x'",
        "DELETE FROM quorum_decisions",
    ] {
        let err = raw.exec(edit).await.unwrap_err();
        assert!(err.contains("quorum decisions are append-only"), "{err}");
    }
    raw.close().await;
    assert_eq!(t.count("quorum_decisions").await, 1);
}

on_both_backends!(the_audit_catches_a_quorum_approval_without_its_event);
async fn the_audit_catches_a_quorum_approval_without_its_event(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    t.ledger.insert_proposal(&p).await.unwrap();
    approve_as(&t.ledger, &p, "alice", 3, 1).await.unwrap();
    // A direct writer (the owner) adds bob's approval with no event.
    let mut raw = t.raw().await;
    raw.exec(&format!(
        "INSERT INTO quorum_decisions
             (proposal_id, approver, seq, required, decision, reason, passkey, decided_at)
         VALUES ('{}', '{}', 2, 3, 'approve', NULL, NULL, '2026-01-01T00:00:00Z')",
        p.id,
        path("bob")
    ))
    .await
    .unwrap();
    raw.close().await;
    let report = t.ledger.verify_chain().await.unwrap();
    let detail = format!("{:?}", report.first_break);
    assert!(
        detail.contains(&format!("quorum approve {} {}", p.id, path("bob"))),
        "{detail}"
    );
}

on_both_backends!(the_record_after_the_completing_approval_is_the_one_read_back);
async fn the_record_after_the_completing_approval_is_the_one_read_back(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    t.ledger.insert_proposal(&p).await.unwrap();
    approve_as(&t.ledger, &p, "alice", 2, 1).await.unwrap();
    // What the signer holds when bob decides: the proposal, still pending.
    let pending = t.ledger.proposal(&p.id).await.unwrap().unwrap();
    assert_eq!(pending.status, ProposalStatus::Pending);
    let (_, issuance) = issue_with_provenance(&p, 1, 300, &provenance(&["alice", "bob"]));
    let outcome = t
        .ledger
        .record_quorum_approval(&QuorumApproval {
            proposal_id: &p.id,
            principal: PRINCIPAL,
            approver: &path("bob"),
            required: 2,
            prior: &[path("alice")],
            issuance: Some(&issuance),
            handoff: false,
            passkey: None,
        })
        .await
        .unwrap();
    assert_eq!(outcome, QuorumOutcome::Issued);
    let read = t.ledger.proposal(&p.id).await.unwrap().unwrap();
    assert_eq!(pending.after_approval(issuance).unwrap(), read);
}
