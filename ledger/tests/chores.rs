//! What lets two signers share one ledger: chore leases and their fencing
//! tokens, the chains' checkpoint bookkeeping kept in the ledger (so that
//! a second handle of the same database, as another signer process is,
//! names only what moved since the first's checkpoint), and the proof keys
//! each signer publishes, of which a retired one stays retired.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Kind, PRINCIPAL, TestLedger, approve, checkpoint_lease, create_schedule};
use countersign_ledger::leases::{CHECKPOINTS_CHORE, WITNESSING_CHORE};
use countersign_ledger::{Ledger, LedgerError};
use countersign_verifier::KeyStatus;
use time::Duration;

/// Another handle of the test's database, as a second signer process
/// opens it.
async fn second_handle(t: &TestLedger) -> Ledger {
    Ledger::open(&t.url).await.unwrap()
}

on_both_backends!(a_lease_is_held_by_one_holder_until_it_runs_out);
async fn a_lease_is_held_by_one_holder_until_it_runs_out(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let other = second_handle(&t).await;
    let a = t
        .ledger
        .take_lease(CHECKPOINTS_CHORE, "a", Duration::minutes(5))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((a.holder.as_str(), a.token), ("a", 1));
    // Another holder waits while it runs; the holder renews with the same token.
    assert_eq!(
        other
            .take_lease(CHECKPOINTS_CHORE, "b", Duration::minutes(5))
            .await
            .unwrap(),
        None
    );
    let renewed = t
        .ledger
        .take_lease(CHECKPOINTS_CHORE, "a", Duration::minutes(5))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(renewed.token, 1);
    // Chores are leased apart.
    let witnessing = other
        .take_lease(WITNESSING_CHORE, "b", Duration::minutes(5))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((witnessing.holder.as_str(), witnessing.token), ("b", 1));
    // Given back, it is taken over at once, with the next token.
    t.ledger.give_back_lease(&renewed).await.unwrap();
    let b = other
        .take_lease(CHECKPOINTS_CHORE, "b", Duration::minutes(5))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((b.holder.as_str(), b.token), ("b", 2));
    // A lease that ran out is taken over too.
    let short = other
        .take_lease(WITNESSING_CHORE, "b", Duration::ZERO)
        .await
        .unwrap()
        .unwrap();
    let taken = t
        .ledger
        .take_lease(WITNESSING_CHORE, "a", Duration::minutes(5))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((short.token, taken.token), (1, 2));
    let stored = t.ledger.leases().await.unwrap();
    let holders: Vec<(&str, &str, i64)> = stored
        .iter()
        .map(|l| (l.chore.as_str(), l.holder.as_str(), l.token))
        .collect();
    assert_eq!(
        holders,
        vec![(CHECKPOINTS_CHORE, "b", 2), (WITNESSING_CHORE, "a", 2)]
    );
}

on_both_backends!(a_holder_paused_past_its_lease_writes_no_checkpoint);
async fn a_holder_paused_past_its_lease_writes_no_checkpoint(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let other = second_handle(&t).await;
    approve(&t.ledger, &create_schedule(1, "a"), 1).await;
    // A takes the chore with a lease that runs out at once (as if it was
    // stopped longer than its lease), and B takes it over.
    let a = t
        .ledger
        .take_lease(CHECKPOINTS_CHORE, "a", Duration::ZERO)
        .await
        .unwrap()
        .unwrap();
    let b = other
        .take_lease(CHECKPOINTS_CHORE, "b", Duration::minutes(5))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(b.token, a.token + 1);
    let before = t.ledger.events().await.unwrap().len();
    // A resumes: its write is refused, and nothing was written.
    let refused = t.ledger.checkpoint(&a).await.unwrap_err();
    assert!(
        matches!(&refused, LedgerError::LeaseLost { chore, token } if chore == CHECKPOINTS_CHORE && *token == a.token),
        "{refused:?}"
    );
    assert_eq!(
        refused.to_string(),
        "the lease of chore \"checkpoints\" was taken over (token 1 is no longer current): nothing written"
    );
    assert_eq!(t.ledger.events().await.unwrap().len(), before);
    // Nor may A renew it: B holds it.
    assert_eq!(
        t.ledger
            .take_lease(CHECKPOINTS_CHORE, "a", Duration::minutes(5))
            .await
            .unwrap(),
        None
    );
    // B's checkpoint is written.
    assert_eq!(other.checkpoint(&b).await.unwrap(), 1);
    assert_eq!(t.ledger.events().await.unwrap().len(), before + 1);
}

on_both_backends!(the_next_checkpoint_through_another_handle_names_only_what_moved);
async fn the_next_checkpoint_through_another_handle_names_only_what_moved(kind: Kind) {
    let t = TestLedger::on(kind).await;
    approve(&t.ledger, &create_schedule(1, "a"), 1).await;
    let first = checkpoint_lease(&t.ledger).await;
    assert_eq!(t.ledger.checkpoint(&first).await.unwrap(), 1);
    // The chore moves to another process, which kept no memory of it.
    t.ledger.give_back_lease(&first).await.unwrap();
    let other = second_handle(&t).await;
    let lease = other
        .take_lease(CHECKPOINTS_CHORE, "b", Duration::minutes(5))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(other.checkpoint(&lease).await.unwrap(), 0);
    approve(&t.ledger, &create_schedule(2, "b"), 2).await;
    assert_eq!(other.checkpoint(&lease).await.unwrap(), 1);
    let last = t.ledger.events().await.unwrap().pop().unwrap();
    assert_eq!(last.kind, "checkpoint");
    assert_eq!(last.details["heads"][PRINCIPAL]["count"], 4);
    let report = t.ledger.verify_chain().await.unwrap();
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.checkpoints, 2);
}

on_both_backends!(each_signer_publishes_its_keys_and_a_retired_one_stays_retired);
async fn each_signer_publishes_its_keys_and_a_retired_one_stays_retired(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let key = |kid: &str, status: KeyStatus| (kid.to_owned(), format!("k4.public.{kid}"), status);
    let host_a = [
        key("ka1", KeyStatus::Verifying),
        key("ka2", KeyStatus::Active),
    ];
    t.ledger
        .publish_signer_keys("host-a", &host_a)
        .await
        .unwrap();
    second_handle(&t)
        .await
        .publish_signer_keys("host-b", &[key("kb1", KeyStatus::Active)])
        .await
        .unwrap();
    let published = |keys: Vec<countersign_ledger::SignerKey>| {
        keys.into_iter()
            .map(|k| (k.kid, k.status, k.signer))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        published(t.ledger.signer_keys().await.unwrap()),
        vec![
            ("ka1".into(), KeyStatus::Verifying, "host-a".into()),
            ("ka2".into(), KeyStatus::Active, "host-a".into()),
            ("kb1".into(), KeyStatus::Active, "host-b".into()),
        ]
    );
    // Published again unchanged (a signer does so every minute): the rows
    // are left as they were; a change of status is written.
    let before = t.ledger.signer_keys().await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    t.ledger
        .publish_signer_keys("host-a", &host_a)
        .await
        .unwrap();
    assert_eq!(t.ledger.signer_keys().await.unwrap(), before);
    t.ledger
        .publish_signer_keys("host-a", &[key("ka1", KeyStatus::Retired)])
        .await
        .unwrap();
    let ka1 = t.ledger.signer_keys().await.unwrap().remove(0);
    assert_eq!(ka1.status, KeyStatus::Retired);
    assert!(ka1.updated_at > before[0].updated_at);
    // Host B is lost: its key is retired from host A's side.
    assert!(t.ledger.retire_signer_key("kb1").await.unwrap());
    assert!(!t.ledger.retire_signer_key("unknown").await.unwrap());
    // Should host B come back with its old index, it cannot publish the
    // key again, and nothing of its index is written.
    let refused = t
        .ledger
        .publish_signer_keys(
            "host-b",
            &[
                key("kb2", KeyStatus::Verifying),
                key("kb1", KeyStatus::Active),
            ],
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, LedgerError::KeyRetired(kid) if kid == "kb1"),
        "{refused:?}"
    );
    let keys = published(t.ledger.signer_keys().await.unwrap());
    assert_eq!(keys.len(), 3);
    assert_eq!(keys[2], ("kb1".into(), KeyStatus::Retired, "host-b".into()));
    // Publishing it as retired is no change.
    t.ledger
        .publish_signer_keys("host-b", &[key("kb1", KeyStatus::Retired)])
        .await
        .unwrap();
}
