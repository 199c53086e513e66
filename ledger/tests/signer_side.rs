//! The signer's side: proposals, decisions, issuances, revocation, and the
//! derived status, on a real SQLite file.
#![allow(clippy::unwrap_used)]

mod common;

use common::Kind;

use common::{PRINCIPAL, TestLedger, approve, create_schedule, issue};
use countersign_ledger::{Ledger, LedgerError, ProposalStatus, RevokeOutcome};
use countersign_verifier::Premise;

on_both_backends!(a_new_proposal_is_pending_and_stored_verbatim);
async fn a_new_proposal_is_pending_and_stored_verbatim(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    t.ledger.insert_proposal(&p).await.unwrap();
    let got = t.ledger.proposal(&p.id).await.unwrap().unwrap();
    assert_eq!(got.status, ProposalStatus::Pending);
    assert_eq!(got.proposal.arguments_json, p.arguments_json);
    assert_eq!(got.proposal.created_at, p.created_at);
    assert_eq!(got.issuance, None);
    let pending = t.ledger.pending(PRINCIPAL).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert!(
        t.ledger
            .pending("pr_someone_else")
            .await
            .unwrap()
            .is_empty()
    );
    assert!(t.ledger.proposal("prop_missing").await.unwrap().is_none());
}

on_both_backends!(refuses_a_duplicate_proposal_id);
async fn refuses_a_duplicate_proposal_id(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    t.ledger.insert_proposal(&p).await.unwrap();
    assert_eq!(
        t.ledger.insert_proposal(&p).await,
        Err(LedgerError::DuplicateProposal(p.id.to_string()))
    );
}

on_both_backends!(a_denied_proposal_cannot_be_decided_again);
async fn a_denied_proposal_cannot_be_decided_again(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    t.ledger.insert_proposal(&p).await.unwrap();
    t.ledger
        .record_denial(&p.id, PRINCIPAL, "not now")
        .await
        .unwrap();
    let got = t.ledger.proposal(&p.id).await.unwrap().unwrap();
    assert_eq!(
        (got.status, got.reason.as_deref()),
        (ProposalStatus::Denied, Some("not now"))
    );
    assert!(t.ledger.pending(PRINCIPAL).await.unwrap().is_empty());
    assert_eq!(
        t.ledger.record_denial(&p.id, PRINCIPAL, "again").await,
        Err(LedgerError::NotPending(p.id.to_string()))
    );
    let (_, record) = issue(&p, 1, 300);
    assert_eq!(
        t.ledger.record_approval(&record).await,
        Err(LedgerError::NotPending(p.id.to_string()))
    );
}

on_both_backends!(a_withdrawn_proposal_cannot_be_approved_and_only_its_owner_withdraws);
async fn a_withdrawn_proposal_cannot_be_approved_and_only_its_owner_withdraws(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    t.ledger.insert_proposal(&p).await.unwrap();
    assert_eq!(
        t.ledger
            .record_withdrawal(&p.id, "pr_other", "mine now")
            .await,
        Err(LedgerError::UnknownProposal(p.id.to_string()))
    );
    t.ledger
        .record_withdrawal(&p.id, PRINCIPAL, "withdrawn by the proposer")
        .await
        .unwrap();
    let got = t.ledger.proposal(&p.id).await.unwrap().unwrap();
    assert_eq!(got.status, ProposalStatus::Withdrawn);
    assert!(t.ledger.pending(PRINCIPAL).await.unwrap().is_empty());
    let (_, record) = issue(&p, 1, 300);
    assert_eq!(
        t.ledger.record_approval(&record).await,
        Err(LedgerError::NotPending(p.id.to_string()))
    );
    assert_eq!(
        t.ledger.record_withdrawal(&p.id, PRINCIPAL, "again").await,
        Err(LedgerError::NotPending(p.id.to_string()))
    );
}

on_both_backends!(proposals_of_lists_only_the_principals_own_newest_first);
async fn proposals_of_lists_only_the_principals_own_newest_first(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let first = create_schedule(1, "first");
    let second = create_schedule(2, "second");
    t.ledger.insert_proposal(&first).await.unwrap();
    t.ledger.insert_proposal(&second).await.unwrap();
    let listed: Vec<countersign_verifier::ProposalId> = t
        .ledger
        .proposals_of(PRINCIPAL, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.proposal.id)
        .collect();
    assert_eq!(listed.len(), 2);
    assert!(listed.contains(&first.id) && listed.contains(&second.id));
    assert_eq!(t.ledger.proposals_of(PRINCIPAL, 1).await.unwrap().len(), 1);
    assert!(
        t.ledger
            .proposals_of("pr_other", 10)
            .await
            .unwrap()
            .is_empty()
    );
}

on_both_backends!(another_principal_cannot_decide_or_revoke);
async fn another_principal_cannot_decide_or_revoke(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    t.ledger.insert_proposal(&p).await.unwrap();
    let other = "pr_ffffffffffffffffffffffffffffffff";
    let unknown = Err(LedgerError::UnknownProposal(p.id.to_string()));
    assert_eq!(t.ledger.record_denial(&p.id, other, "x").await, unknown);
    assert_eq!(
        t.ledger.revoke(&p.id, other, "x").await.map(|_| ()),
        unknown
    );
    assert_eq!(
        t.ledger.record_denial("prop_nope", PRINCIPAL, "x").await,
        Err(LedgerError::UnknownProposal("prop_nope".into()))
    );
}

#[tokio::test]
async fn an_approval_records_the_issuance_and_never_the_proof() {
    let t = TestLedger::new().await;
    let p = create_schedule(1, "nightly");
    let token = approve(&t.ledger, &p, 1).await;
    let got = t.ledger.proposal(&p.id).await.unwrap().unwrap();
    assert_eq!(got.status, ProposalStatus::Approved);
    let issuance = got.issuance.unwrap();
    assert_eq!(issuance.nonce, format!("{:0>42}A", 1));
    let raw = std::fs::read(t.path()).unwrap();
    let wal = std::fs::read(t.dir.path().join("ledger.db-wal")).unwrap_or_default();
    for bytes in [raw, wal] {
        assert!(!bytes.windows(token.len()).any(|w| w == token.as_bytes()));
    }
}

on_both_backends!(refuses_an_issuance_that_does_not_match_the_proposal);
async fn refuses_an_issuance_that_does_not_match_the_proposal(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    t.ledger.insert_proposal(&p).await.unwrap();
    let (_, mut record) = issue(&p, 1, 300);
    record.arguments_sha256 = "0".repeat(64);
    assert_eq!(
        t.ledger.record_approval(&record).await,
        Err(LedgerError::IssuanceMismatch(p.id.to_string()))
    );
    assert_eq!(
        t.ledger.proposal(&p.id).await.unwrap().unwrap().status,
        ProposalStatus::Pending
    );
}

on_both_backends!(a_handoff_approval_is_told_apart_from_a_direct_one);
async fn a_handoff_approval_is_told_apart_from_a_direct_one(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let (direct, handoff) = (create_schedule(1, "nightly"), create_schedule(2, "weekly"));
    t.ledger.insert_proposal(&direct).await.unwrap();
    t.ledger.insert_proposal(&handoff).await.unwrap();
    let (_, direct_record) = issue(&direct, 1, 300);
    let (_, handoff_record) = issue(&handoff, 2, 300);
    t.ledger.record_approval(&direct_record).await.unwrap();
    t.ledger
        .record_handoff_approval(&handoff_record, None)
        .await
        .unwrap();
    let asked = |id: &str, sha: &str| {
        let (id, sha) = (id.to_owned(), sha.to_owned());
        let ledger = t.ledger.clone();
        async move { ledger.approved_for_handoff(&id, &sha).await.unwrap() }
    };
    assert!(!asked(&direct.id, &direct_record.proof_sha256).await);
    assert!(asked(&handoff.id, &handoff_record.proof_sha256).await);
    // Only the approval that issued this proof counts.
    assert!(!asked(&handoff.id, &direct_record.proof_sha256).await);
    assert!(!asked("prop_nope", &handoff_record.proof_sha256).await);
    // The event records it; the chain and its facts still agree.
    let event = t
        .ledger
        .events()
        .await
        .unwrap()
        .into_iter()
        .find(|e| e.kind == "approved" && e.proposal_id.as_deref() == Some(handoff.id.as_str()))
        .unwrap();
    assert_eq!(event.details["delivery"], "handoff");
    assert!(t.ledger.verify_chain().await.unwrap().first_break.is_none());
}

on_both_backends!(an_unused_proof_past_its_expiry_reads_as_expired);
async fn an_unused_proof_past_its_expiry_reads_as_expired(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    t.ledger.insert_proposal(&p).await.unwrap();
    let (_, mut record) = issue(&p, 1, 300);
    record.expires_at = record.issued_at - time::Duration::seconds(1);
    t.ledger.record_approval(&record).await.unwrap();
    let got = t.ledger.proposal(&p.id).await.unwrap().unwrap();
    assert_eq!(got.status, ProposalStatus::Expired);
}

on_both_backends!(revoke_reports_what_happened);
async fn revoke_reports_what_happened(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    t.ledger.insert_proposal(&p).await.unwrap();
    assert_eq!(
        t.ledger.revoke(&p.id, PRINCIPAL, "r").await,
        Ok(RevokeOutcome::NothingToRevoke)
    );
    let (_, record) = issue(&p, 1, 300);
    t.ledger.record_approval(&record).await.unwrap();
    assert_eq!(
        t.ledger.revoke(&p.id, PRINCIPAL, "changed my mind").await,
        Ok(RevokeOutcome::Revoked)
    );
    let got = t.ledger.proposal(&p.id).await.unwrap().unwrap();
    assert_eq!(
        (got.status, got.reason.as_deref()),
        (ProposalStatus::Revoked, Some("changed my mind"))
    );
    assert_eq!(
        t.ledger.revoke(&p.id, PRINCIPAL, "again").await,
        Ok(RevokeOutcome::NothingToRevoke)
    );
}

#[tokio::test]
async fn refuses_urls_it_does_not_support() {
    for url in [
        "sqlite::memory:",
        "sqlite://relative/path.db",
        "mysql://x/y",
        "postgres-ish://x/y",
        "sqlite://",
    ] {
        assert_eq!(
            Ledger::open(url).await.map(|_| ()),
            Err(LedgerError::UnsupportedUrl),
            "{url}"
        );
    }
}

#[tokio::test]
async fn reopening_an_existing_file_keeps_its_data_and_creates_it_private() {
    let t = TestLedger::new().await;
    let p = create_schedule(1, "nightly");
    t.ledger.insert_proposal(&p).await.unwrap();
    let again = Ledger::open(&t.url).await.unwrap();
    assert!(again.proposal(&p.id).await.unwrap().is_some());
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(t.path()).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

on_both_backends!(a_write_returns_the_record_a_read_gets_back);
async fn a_write_returns_the_record_a_read_gets_back(kind: Kind) {
    let t = TestLedger::on(kind).await;
    // A fraction of a second the ledger does not keep, and a premise it
    // stores as canonical text.
    let mut direct = create_schedule(1, "nightly");
    direct.created_at = direct.created_at.replace_nanosecond(123_456_789).unwrap();
    let mut handoff = create_schedule(2, "weekly");
    let shown = t
        .ledger
        .read_premise(PRINCIPAL, "schedules", "weekly")
        .await
        .unwrap();
    handoff.premise = Some(Premise::State(shown));
    for (n, p, for_handoff) in [(1, &direct, false), (2, &handoff, true)] {
        let inserted = t.ledger.insert_proposal(p).await.unwrap();
        let read = t.ledger.proposal(&p.id).await.unwrap().unwrap();
        assert_eq!(inserted, read);
        assert_eq!(inserted.status, ProposalStatus::Pending);

        let (_, issuance) = issue(p, n, 300);
        if for_handoff {
            t.ledger
                .record_handoff_approval(&issuance, None)
                .await
                .unwrap();
        } else {
            t.ledger.record_approval(&issuance).await.unwrap();
        }
        let approved = inserted.after_approval(issuance).unwrap();
        let read = t.ledger.proposal(&p.id).await.unwrap().unwrap();
        assert_eq!(approved, read);
        assert_eq!(approved.status, ProposalStatus::Approved);
    }
}

on_both_backends!(the_record_after_an_approval_is_refused_for_another_state);
async fn the_record_after_an_approval_is_refused_for_another_state(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = create_schedule(1, "nightly");
    let other = create_schedule(2, "weekly");
    let pending = t.ledger.insert_proposal(&p).await.unwrap();
    let (_, issuance) = issue(&p, 1, 300);
    let (_, foreign) = issue(&other, 2, 300);
    assert!(matches!(
        pending.clone().after_approval(foreign),
        Err(LedgerError::IssuanceMismatch(id)) if id == p.id
    ));
    t.ledger.record_approval(&issuance).await.unwrap();
    let approved = pending.after_approval(issuance.clone()).unwrap();
    assert!(matches!(
        approved.after_approval(issuance),
        Err(LedgerError::NotPending(id)) if id == p.id
    ));
}
