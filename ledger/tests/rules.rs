//! Auto-approval rules in the ledger, on both backends: versions written
//! with their events, the use counted in the approval's own transaction
//! (so concurrent approvals never exceed the uses or the hourly rate), and
//! the consume transaction refusing a proof whose rule is no longer live at
//! the version it names, burning nothing.
#![allow(clippy::unwrap_used)]

mod common;

use common::{
    Kind, PRINCIPAL, TestLedger, create_schedule, issue_under, now, schedule_keys, verified,
};
use countersign_ledger::{
    Consumed, Ledger, LedgerError, LedgerRefusal, ProposalStatus, RuleChange, RuleStatus,
};
use countersign_verifier::Grant;
use time::Duration;

const RULE: &str = "rule_0123456789abcdef0123456789abcdef";
const BY: &str = "pr_0123456789abcdef0123456789abcdef/console";

fn change(max_uses: u64, per_hour: u64, expires_in: Duration) -> RuleChange {
    RuleChange {
        id: RULE.into(),
        principal: PRINCIPAL.into(),
        definition: r#"{"rule":"as the signer checked it"}"#.into(),
        definition_sha256: "d".repeat(64),
        max_uses,
        per_hour,
        expires_at: now() + expires_in,
        by: BY.into(),
    }
}

fn grant(version: u64) -> Grant {
    Grant {
        rule: RULE.into(),
        version,
    }
}

/// Proposal `n` recorded, and the proof the signer would issue for it
/// under `version` of [`RULE`].
async fn proposed_under(
    ledger: &Ledger,
    n: u32,
    version: u64,
) -> (
    String,
    countersign_ledger::IssuanceRecord,
    countersign_ledger::Proposal,
) {
    let p = create_schedule(n, &format!("s{n}"));
    ledger.insert_proposal(&p).await.unwrap();
    let (token, record) = issue_under(&p, n, 300, Some(grant(version)));
    (token, record, p)
}

async fn assert_audit_clean(ledger: &Ledger) {
    let report = ledger.verify_chain().await.unwrap();
    assert_eq!(report.first_break, None);
}

/// Proposals `1..=n` approved under the rule all at once: how many were
/// approved, and the errors of the others.
async fn approve_concurrently(t: &TestLedger, n: u32) -> (usize, Vec<LedgerError>) {
    let mut records = Vec::new();
    for i in 1..=n {
        records.push(proposed_under(&t.ledger, i, 1).await.1);
    }
    let tasks: Vec<_> = records
        .into_iter()
        .map(|record| {
            let ledger = t.ledger.clone();
            tokio::spawn(async move { ledger.record_rule_approval(&record).await })
        })
        .collect();
    let mut approved = 0;
    let mut refused = Vec::new();
    for task in tasks {
        match task.await.unwrap() {
            Ok(()) => approved += 1,
            Err(e) => refused.push(e),
        }
    }
    (approved, refused)
}

on_both_backends!(concurrent_approvals_never_exceed_the_rules_uses);
async fn concurrent_approvals_never_exceed_the_rules_uses(kind: Kind) {
    let t = TestLedger::on(kind).await;
    t.ledger
        .create_rule(&change(3, 100, Duration::hours(1)))
        .await
        .unwrap();
    let (approved, refused) = approve_concurrently(&t, 12).await;
    assert_eq!(approved, 3);
    assert_eq!(refused.len(), 9);
    assert!(
        refused
            .iter()
            .all(|e| *e == LedgerError::RuleExhausted(RULE.into())),
        "{refused:?}"
    );
    let rule = t.ledger.rule(RULE).await.unwrap().unwrap();
    assert_eq!((rule.uses, rule.remaining(now())), (3, 0));
    // Nothing of the refused ones was written: they are still pending.
    assert_eq!(t.count("rule_uses").await, 3);
    assert_eq!(t.count("issuances").await, 3);
    assert_eq!(t.count("decisions").await, 3);
    assert_eq!(t.ledger.pending(PRINCIPAL).await.unwrap().len(), 9);
    assert_audit_clean(&t.ledger).await;
}

on_both_backends!(concurrent_approvals_never_exceed_the_rules_hourly_rate);
async fn concurrent_approvals_never_exceed_the_rules_hourly_rate(kind: Kind) {
    let t = TestLedger::on(kind).await;
    t.ledger
        .create_rule(&change(100, 2, Duration::hours(1)))
        .await
        .unwrap();
    let (approved, refused) = approve_concurrently(&t, 8).await;
    assert_eq!(approved, 2);
    assert!(
        refused
            .iter()
            .all(|e| *e == LedgerError::RuleRateLimited(RULE.into())),
        "{refused:?}"
    );
    let rule = t.ledger.rule(RULE).await.unwrap().unwrap();
    assert_eq!((rule.uses, rule.uses_last_hour), (2, 2));
    assert_eq!(rule.remaining(now()), 0);
    assert_eq!(t.count("rule_uses").await, 2);
    assert_eq!(t.count("issuances").await, 2);
    assert_audit_clean(&t.ledger).await;
}

on_both_backends!(a_proof_of_a_rule_revoked_before_consumption_is_refused_and_burns_nothing);
async fn a_proof_of_a_rule_revoked_before_consumption_is_refused_and_burns_nothing(kind: Kind) {
    let t = TestLedger::on(kind).await;
    t.ledger
        .create_rule(&change(10, 10, Duration::hours(1)))
        .await
        .unwrap();
    let (token, record, p) = proposed_under(&t.ledger, 1, 1).await;
    t.ledger.record_rule_approval(&record).await.unwrap();
    let revoked = t
        .ledger
        .revoke_rule(RULE, PRINCIPAL, BY, "too broad")
        .await
        .unwrap();
    assert_eq!((revoked.version, revoked.status), (2, RuleStatus::Revoked));
    let proof = verified(&p, &token);
    for _ in 0..2 {
        assert_eq!(
            t.ledger.consume_builtin(&proof, "schedule.create").await,
            Err(LedgerError::Refused(LedgerRefusal::RuleRevoked))
        );
        assert_eq!(
            t.ledger
                .begin_consume(&proof, common::NO_LEASE)
                .await
                .map(|_| ()),
            Err(LedgerError::Refused(LedgerRefusal::RuleRevoked))
        );
    }
    // Nothing consumed, nothing applied: the nonce is not burned.
    assert_eq!(t.count("consumed_nonces").await, 0);
    assert_eq!(t.count("intents").await, 0);
    assert!(schedule_keys(&t.ledger).await.is_empty());
    let status = t.ledger.proposal(&p.id).await.unwrap().unwrap().status;
    assert_eq!(status, ProposalStatus::Approved);
    // A revoked rule approves nothing more and cannot be revoked again.
    let (_, next, _) = proposed_under(&t.ledger, 2, 1).await;
    assert_eq!(
        t.ledger.record_rule_approval(&next).await,
        Err(LedgerError::RuleNotLive(RULE.into()))
    );
    assert_eq!(
        t.ledger.revoke_rule(RULE, PRINCIPAL, BY, "again").await,
        Err(LedgerError::RuleNotLive(RULE.into()))
    );
    assert_audit_clean(&t.ledger).await;
}

on_both_backends!(a_revision_retires_the_proofs_and_the_approvals_of_the_earlier_version);
async fn a_revision_retires_the_proofs_and_the_approvals_of_the_earlier_version(kind: Kind) {
    let t = TestLedger::on(kind).await;
    t.ledger
        .create_rule(&change(10, 10, Duration::hours(1)))
        .await
        .unwrap();
    let (old_token, old_record, old_p) = proposed_under(&t.ledger, 1, 1).await;
    t.ledger.record_rule_approval(&old_record).await.unwrap();
    // A revision from a stale version is refused; from the current one it
    // makes version 2.
    assert_eq!(
        t.ledger
            .revise_rule(&change(5, 5, Duration::hours(1)), 7)
            .await,
        Err(LedgerError::RuleChanged(RULE.into()))
    );
    let revised = t
        .ledger
        .revise_rule(&change(5, 5, Duration::hours(1)), 1)
        .await
        .unwrap();
    assert_eq!((revised.version, revised.uses, revised.max_uses), (2, 1, 5));
    assert_eq!(
        t.ledger
            .consume_builtin(&verified(&old_p, &old_token), "schedule.create")
            .await,
        Err(LedgerError::Refused(LedgerRefusal::RuleRevoked))
    );
    let (_, stale, _) = proposed_under(&t.ledger, 2, 1).await;
    assert_eq!(
        t.ledger.record_rule_approval(&stale).await,
        Err(LedgerError::RuleNotLive(RULE.into()))
    );
    // Under version 2: approved and consumed once, applied once.
    let (token, record, p) = proposed_under(&t.ledger, 3, 2).await;
    t.ledger.record_rule_approval(&record).await.unwrap();
    let proof = verified(&p, &token);
    assert!(matches!(
        t.ledger.consume_builtin(&proof, "schedule.create").await,
        Ok(Consumed::Completed(_))
    ));
    // Revoked after its use: a replay reads the recorded disposition.
    t.ledger
        .revoke_rule(RULE, PRINCIPAL, BY, "done")
        .await
        .unwrap();
    assert!(matches!(
        t.ledger.consume_builtin(&proof, "schedule.create").await,
        Ok(Consumed::Replay(_))
    ));
    assert_eq!(schedule_keys(&t.ledger).await, ["s3"]);
    assert_audit_clean(&t.ledger).await;
}

on_both_backends!(a_proof_of_a_rule_that_expired_before_consumption_is_refused);
async fn a_proof_of_a_rule_that_expired_before_consumption_is_refused(kind: Kind) {
    let t = TestLedger::on(kind).await;
    t.ledger
        .create_rule(&change(10, 10, Duration::seconds(2)))
        .await
        .unwrap();
    let (token, record, p) = proposed_under(&t.ledger, 1, 1).await;
    t.ledger.record_rule_approval(&record).await.unwrap();
    // The proof lives 300 s; the rule 2 s.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let proof = verified(&p, &token);
    assert_eq!(
        t.ledger.consume_builtin(&proof, "schedule.create").await,
        Err(LedgerError::Refused(LedgerRefusal::RuleExpired))
    );
    assert_eq!(t.count("consumed_nonces").await, 0);
    let (_, next, _) = proposed_under(&t.ledger, 2, 1).await;
    assert_eq!(
        t.ledger.record_rule_approval(&next).await,
        Err(LedgerError::RuleNotLive(RULE.into()))
    );
}

on_both_backends!(a_rule_approves_only_for_its_own_principal_and_only_as_itself);
async fn a_rule_approves_only_for_its_own_principal_and_only_as_itself(kind: Kind) {
    let t = TestLedger::on(kind).await;
    // No such rule.
    let (_, record, _) = proposed_under(&t.ledger, 1, 1).await;
    assert_eq!(
        t.ledger.record_rule_approval(&record).await,
        Err(LedgerError::UnknownRule(RULE.into()))
    );
    // Another principal's rule.
    let mut theirs = change(10, 10, Duration::hours(1));
    theirs.principal = "pr_00000000000000000000000000000bad".into();
    t.ledger.create_rule(&theirs).await.unwrap();
    assert_eq!(
        t.ledger.record_rule_approval(&record).await,
        Err(LedgerError::UnknownRule(RULE.into()))
    );
    assert_eq!(
        t.ledger.revoke_rule(RULE, PRINCIPAL, BY, "mine?").await,
        Err(LedgerError::UnknownRule(RULE.into()))
    );
    assert_eq!(
        t.ledger
            .create_rule(&change(1, 1, Duration::hours(1)))
            .await,
        Err(LedgerError::DuplicateRule(RULE.into()))
    );
    // A person's issuance is not a rule approval.
    let (_, human, _) = {
        let p = create_schedule(2, "s2");
        t.ledger.insert_proposal(&p).await.unwrap();
        let (token, record) = common::issue(&p, 2, 300);
        (token, record, p)
    };
    assert_eq!(
        t.ledger.record_rule_approval(&human).await,
        Err(LedgerError::IssuanceMismatch(human.proposal_id.clone()))
    );
    assert_eq!(t.count("decisions").await, 0);
    assert!(t.ledger.rules(PRINCIPAL).await.unwrap().is_empty());
    assert_audit_clean(&t.ledger).await;
}

on_both_backends!(the_schema_keeps_versions_in_order_and_uses_tied_to_their_issuance);
async fn the_schema_keeps_versions_in_order_and_uses_tied_to_their_issuance(kind: Kind) {
    let t = TestLedger::on(kind).await;
    t.ledger
        .create_rule(&change(10, 10, Duration::hours(1)))
        .await
        .unwrap();
    let (_, record, p) = proposed_under(&t.ledger, 1, 1).await;
    t.ledger.record_rule_approval(&record).await.unwrap();
    let mut raw = t.raw().await;
    let row = |version: i64, status: &str| {
        format!(
            "INSERT INTO rules (id, version, principal, status, definition, definition_sha256,
                 max_uses, per_hour, expires_at, changed_by, changed_at, reason)
             VALUES ('{RULE}', {version}, '{PRINCIPAL}', '{status}', '{{}}', 'x', 1000, 1000,
                     '2099-01-01T00:00:00Z', 'x', '2026-01-01T00:00:00Z', '')"
        )
    };
    // A skipped version, a second version 1, an edit, a deletion.
    for sql in [
        row(3, "active"),
        row(1, "active"),
        format!("UPDATE rules SET max_uses = 1000 WHERE id = '{RULE}'"),
        format!("DELETE FROM rules WHERE id = '{RULE}'"),
        format!("DELETE FROM rule_uses WHERE proposal_id = '{}'", p.id),
        // A use for a person's issuance.
        "INSERT INTO rule_uses (proposal_id, rule_id, version, principal, used_at)
         VALUES ('prop_nothing', 'rule_x', 1, 'pr_x', '2026-01-01T00:00:00Z')"
            .to_string(),
    ] {
        assert!(raw.exec(&sql).await.is_err(), "{sql}");
    }
    // A version written past the signer, without its event: the audit
    // reports it.
    raw.exec(&row(2, "active")).await.unwrap();
    raw.close().await;
    let report = t.ledger.verify_chain().await.unwrap();
    let text = format!("{:?}", report.first_break);
    assert!(text.contains("rule_revised"), "{text}");
}

on_both_backends!(listed_rules_show_their_uses_and_remaining_budget);
async fn listed_rules_show_their_uses_and_remaining_budget(kind: Kind) {
    let t = TestLedger::on(kind).await;
    t.ledger
        .create_rule(&change(5, 3, Duration::hours(1)))
        .await
        .unwrap();
    for n in 1..=2 {
        let (_, record, _) = proposed_under(&t.ledger, n, 1).await;
        t.ledger.record_rule_approval(&record).await.unwrap();
    }
    let rules = t.ledger.rules(PRINCIPAL).await.unwrap();
    assert_eq!(rules.len(), 1);
    let rule = &rules[0];
    assert_eq!(
        (rule.uses, rule.uses_last_hour, rule.remaining(now())),
        (2, 2, 1)
    );
    assert_eq!((rule.created_by.as_str(), rule.version), (BY, 1));
    let events = t.ledger.events().await.unwrap();
    let approved: Vec<_> = events.iter().filter(|e| e.kind == "approved").collect();
    assert_eq!(approved.len(), 2);
    assert!(
        approved.iter().all(|e| e.details["rule"] == RULE
            && e.details["rule_version"] == 1
            && e.details["delivery"] == "handoff"),
        "{approved:?}"
    );
    assert_eq!(
        events.iter().filter(|e| e.kind == "rule_created").count(),
        1
    );
}

on_both_backends!(approving_a_rule_create_proposal_creates_exactly_its_rule_once);
async fn approving_a_rule_create_proposal_creates_exactly_its_rule_once(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let definition = serde_json::json!({"rule": "as proposed"});
    let p = common::proposal(1, "rule.create", definition.clone());
    t.ledger.insert_proposal(&p).await.unwrap();
    let mut from_proposal = change(10, 10, Duration::hours(1));
    // Not the proposal's arguments: refused, nothing written.
    assert_eq!(
        t.ledger
            .create_rule_from_proposal(&from_proposal, &p.id)
            .await,
        Err(LedgerError::IssuanceMismatch(p.id.to_string()))
    );
    from_proposal.definition = p.arguments_json.clone();
    from_proposal.definition_sha256 = p.arguments_sha256.clone();
    // Another operation's proposal: refused.
    let other = create_schedule(2, "s2");
    t.ledger.insert_proposal(&other).await.unwrap();
    assert_eq!(
        t.ledger
            .create_rule_from_proposal(&from_proposal, &other.id)
            .await,
        Err(LedgerError::IssuanceMismatch(other.id.to_string()))
    );
    assert_eq!(t.count("rules").await, 0);
    assert_eq!(t.count("decisions").await, 0);

    let created = t
        .ledger
        .create_rule_from_proposal(&from_proposal, &p.id)
        .await
        .unwrap();
    assert_eq!((created.version, created.uses), (1, 0));
    let status = t.ledger.proposal(&p.id).await.unwrap().unwrap().status;
    assert_eq!(status, ProposalStatus::Applied);
    assert_eq!(
        t.ledger
            .create_rule_from_proposal(&from_proposal, &p.id)
            .await,
        Err(LedgerError::NotPending(p.id.to_string()))
    );
    assert_eq!(t.count("rules").await, 1);
    assert_audit_clean(&t.ledger).await;
}

on_both_backends!(a_proposal_and_its_rule_approval_commit_together_or_not_at_all);
async fn a_proposal_and_its_rule_approval_commit_together_or_not_at_all(kind: Kind) {
    let t = TestLedger::on(kind).await;
    t.ledger
        .create_rule(&change(1, 10, Duration::hours(1)))
        .await
        .unwrap();
    let p = create_schedule(1, "s1");
    let (_, issuance) = issue_under(&p, 1, 300, Some(grant(1)));
    let record = t
        .ledger
        .insert_rule_approved_proposal(&p, &issuance)
        .await
        .unwrap();
    assert_eq!(record.status, ProposalStatus::Approved);
    assert_eq!(t.ledger.proposal(&p.id).await.unwrap(), Some(record));
    assert_eq!(t.count("rule_uses").await, 1);

    // The rule's one use is spent: the next proposal is not recorded
    // either, so the signer can record it alone for a person.
    let q = create_schedule(2, "s2");
    let (_, spent) = issue_under(&q, 2, 300, Some(grant(1)));
    assert_eq!(
        t.ledger.insert_rule_approved_proposal(&q, &spent).await,
        Err(LedgerError::RuleExhausted(RULE.into()))
    );
    assert_eq!(t.ledger.proposal(&q.id).await.unwrap(), None);
    assert_eq!(t.count("proposals").await, 1);
    assert_eq!(t.count("issuances").await, 1);
    // A person's approval is not a rule's: refused before anything.
    let (_, human) = issue_under(&q, 2, 300, None);
    assert_eq!(
        t.ledger.insert_rule_approved_proposal(&q, &human).await,
        Err(LedgerError::IssuanceMismatch(q.id.to_string()))
    );
    assert_eq!(t.count("proposals").await, 1);
    // The same id again: a duplicate, nothing written.
    assert!(matches!(
        t.ledger.insert_rule_approved_proposal(&p, &issuance).await,
        Err(LedgerError::DuplicateProposal(_))
    ));
    assert_audit_clean(&t.ledger).await;
}
