//! The notification outbox on both backends: the signer records, a
//! notifier reads its principal's rows oldest first (never another
//! principal's), and an acknowledgement removes exactly the rows named
//! that are its own; the rows survive a reopened ledger; a proposal and
//! its notification are committed in one transaction.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Kind, TestLedger};
use countersign_ledger::{Ledger, OutboxNotification};
use time::OffsetDateTime;

const OTHER: &str = "pr_ffffffffffffffffffffffffffffffff";

fn row(n: u32, principal: &str, at: i64) -> OutboxNotification {
    OutboxNotification {
        id: format!("ntf_{n:032x}"),
        principal: principal.into(),
        created_at: OffsetDateTime::from_unix_timestamp(1_700_000_000 + at).unwrap(),
        body: format!("{{\"kind\":\"proposal.waiting\",\"n\":{n}}}"),
        not_before: None,
        escalates: None,
    }
}

fn ids(rows: &[OutboxNotification]) -> Vec<String> {
    rows.iter().map(|r| r.id.clone()).collect()
}

on_both_backends!(notifications_wait_in_order_per_principal_until_acknowledged);
async fn notifications_wait_in_order_per_principal_until_acknowledged(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let mine = [
        row(3, common::PRINCIPAL, 0),
        row(1, common::PRINCIPAL, 5),
        row(2, common::PRINCIPAL, 5),
    ];
    for n in &mine {
        t.ledger.record_notification(n).await.unwrap();
    }
    t.ledger
        .record_notification(&row(9, OTHER, 1))
        .await
        .unwrap();

    let waiting = t.ledger.notifications(common::PRINCIPAL, 10).await.unwrap();
    assert_eq!(
        waiting,
        vec![mine[0].clone(), mine[1].clone(), mine[2].clone()]
    );
    assert_eq!(
        ids(&t.ledger.notifications(common::PRINCIPAL, 2).await.unwrap()),
        ids(&mine[..2])
    );

    // Another principal's id and an unknown one are ignored.
    let acked = t
        .ledger
        .acknowledge_notifications(
            common::PRINCIPAL,
            &[
                mine[0].id.clone(),
                row(9, OTHER, 1).id,
                "ntf_unknown".into(),
            ],
        )
        .await
        .unwrap();
    assert_eq!(acked, 1);
    assert_eq!(
        ids(&t.ledger.notifications(OTHER, 10).await.unwrap()),
        vec![row(9, OTHER, 1).id]
    );

    // Durable: a reopened ledger still holds what was not acknowledged.
    let reopened = Ledger::open(&t.url).await.unwrap();
    assert_eq!(
        ids(&reopened.notifications(common::PRINCIPAL, 10).await.unwrap()),
        ids(&mine[1..])
    );
    assert_eq!(
        reopened
            .acknowledge_notifications(common::PRINCIPAL, &ids(&mine))
            .await
            .unwrap(),
        2
    );
    assert!(
        reopened
            .notifications(common::PRINCIPAL, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

on_both_backends!(a_proposal_and_its_notification_commit_together_or_not_at_all);
async fn a_proposal_and_its_notification_commit_together_or_not_at_all(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let p = common::create_schedule(1, "nightly");
    let first = row(1, common::PRINCIPAL, 0);
    t.ledger
        .insert_announced_proposal(&p, std::slice::from_ref(&first))
        .await
        .unwrap();
    assert_eq!(
        t.ledger.notifications(common::PRINCIPAL, 10).await.unwrap(),
        vec![first.clone()]
    );
    // A proposal that is not recorded records no notification: the second
    // insert of the same id fails, and its notification goes with it.
    assert_eq!(
        t.ledger
            .insert_announced_proposal(&p, &[row(2, common::PRINCIPAL, 1)])
            .await,
        Err(countersign_ledger::LedgerError::DuplicateProposal(
            p.id.to_string()
        ))
    );
    assert_eq!(
        ids(&t.ledger.notifications(common::PRINCIPAL, 10).await.unwrap()),
        vec![first.id]
    );
}

/// Proposal `n`, made now with a window of `window` seconds, and its
/// escalation row, due `after` seconds from now.
fn escalated(
    n: u32,
    window: i64,
    after: i64,
) -> (countersign_ledger::Proposal, OutboxNotification) {
    let now = common::now();
    let p = countersign_ledger::Proposal {
        decide_by: Some(now + time::Duration::seconds(window)),
        ..common::create_schedule(n, &format!("nightly-{n}"))
    };
    let escalation = OutboxNotification {
        not_before: Some(now + time::Duration::seconds(after)),
        escalates: Some(p.id.to_string()),
        ..row(100 + n, common::PRINCIPAL, 0)
    };
    (p, escalation)
}

on_both_backends!(an_escalation_is_given_once_due_and_only_while_its_proposal_waits);
async fn an_escalation_is_given_once_due_and_only_while_its_proposal_waits(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let first = row(1, common::PRINCIPAL, 0);
    // Not due for an hour: not given.
    let (later, later_row) = escalated(1, 7200, 3600);
    t.ledger
        .insert_announced_proposal(&later, &[first.clone(), later_row.clone()])
        .await
        .unwrap();
    // Due now, its proposal still waiting: given.
    let (waiting, waiting_row) = escalated(2, 3600, 0);
    t.ledger
        .insert_announced_proposal(&waiting, std::slice::from_ref(&waiting_row))
        .await
        .unwrap();
    // Due now, its proposal denied meanwhile: deleted, never given.
    let (denied, denied_row) = escalated(3, 3600, 0);
    t.ledger
        .insert_announced_proposal(&denied, std::slice::from_ref(&denied_row))
        .await
        .unwrap();
    t.ledger
        .record_denial(&denied.id, common::PRINCIPAL, "no")
        .await
        .unwrap();
    // Due now, its window closed: deleted, never given.
    let (closed, closed_row) = escalated(4, -1, 0);
    t.ledger
        .insert_announced_proposal(&closed, std::slice::from_ref(&closed_row))
        .await
        .unwrap();

    let given = t.ledger.notifications(common::PRINCIPAL, 10).await.unwrap();
    assert_eq!(given, vec![first.clone(), waiting_row.clone()]);
    assert_eq!(
        t.count("notification_outbox").await,
        3,
        "the stale two are gone"
    );
    // The one not due yet stays for its time.
    t.ledger
        .acknowledge_notifications(common::PRINCIPAL, &ids(&given))
        .await
        .unwrap();
    assert!(
        t.ledger
            .notifications(common::PRINCIPAL, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(t.count("notification_outbox").await, 1);
}
