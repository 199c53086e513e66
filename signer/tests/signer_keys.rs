//! Two signers of one PostgreSQL ledger on two hosts: each holds a proof
//! key of its own, both are in the key set either serves (so a proof one
//! issued verifies with the keys the other published), a key retired
//! through one is served by neither and its signer does not start again
//! with it; and one of them at a time runs the checkpoint chore, which
//! the other takes over when the first gives it back.
#![allow(clippy::unwrap_used)]

mod support;

use countersign_ledger::leases::CHECKPOINTS_CHORE;
use countersign_ledger::testing::TempPgDatabase;
use countersign_ledger::{Lease, LedgerError};
use countersign_proto::v1::{Delivery, PublicKeysRequest};
use countersign_registry::Registry;
use countersign_signer::StartError;
use countersign_signer::testing::TestSigner;
use support::*;

/// The key ids `signer` serves, in its order.
async fn served_kids(signer: &TestSigner) -> Vec<String> {
    head(signer)
        .await
        .public_keys(PublicKeysRequest {})
        .await
        .unwrap()
        .into_inner()
        .keys
        .into_iter()
        .map(|k| k.key_id)
        .collect()
}

/// The active key id of `signer`'s own index.
fn own_kid(signer: &TestSigner) -> String {
    signer.state().key_id().unwrap()
}

/// Two signers of one new PostgreSQL database, as on two hosts.
async fn pair() -> (TempPgDatabase, TestSigner, TestSigner) {
    let db = TempPgDatabase::create().await.unwrap();
    let a = TestSigner::start_with(Registry::default_toml(), Some(db.url()))
        .await
        .unwrap();
    let b = a.on_another_host().await.unwrap();
    (db, a, b)
}

async fn checkpoint_lease(signer: &TestSigner) -> Lease {
    let leases = signer.state().ledger().leases().await.unwrap();
    leases
        .into_iter()
        .find(|l| l.chore == CHECKPOINTS_CHORE)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_signer_has_its_own_key_and_serves_both() {
    let (_db, a, b) = pair().await;
    let (ka, kb) = (own_kid(&a), own_kid(&b));
    assert_ne!(ka, kb, "each host made a key of its own");
    // Each serves its own key first, then the other's.
    assert_eq!(served_kids(&a).await, vec![ka.clone(), kb.clone()]);
    assert_eq!(served_kids(&b).await, vec![kb.clone(), ka.clone()]);

    // A proof B issues verifies with the key set A serves, and the other
    // way round.
    let mut on_b = head(&b).await;
    let view = propose(&mut on_b).await;
    let proof = approved(&b, &view.id, Delivery::Direct).await.proof;
    verified(&a, &view.id, &proof).await;
    let mut on_a = head(&a).await;
    let view = propose(&mut on_a).await;
    let proof = approved(&a, &view.id, Delivery::Direct).await.proof;
    verified(&b, &view.id, &proof).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_signers_key_retired_through_the_other_is_served_by_neither() {
    let (_db, a, mut b) = pair().await;
    let (ka, kb) = (own_kid(&a), own_kid(&b));
    // B is lost; its key is retired from A's side (`countersign-signer
    // keys retire <kid>` on A's host does this).
    b.halt().await.unwrap();
    assert!(a.state().ledger().retire_signer_key(&kb).await.unwrap());
    assert_eq!(served_kids(&a).await, vec![ka.clone()]);
    // B comes back with its old index: it does not serve.
    let err = b.restart().await.unwrap_err();
    assert!(
        matches!(&err, StartError::Ledger(LedgerError::KeyRetired(kid)) if *kid == kb),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("was retired in the ledger's key set"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_retired_while_its_signer_serves_is_no_longer_served_by_it() {
    let (_db, a, b) = pair().await;
    let (ka, kb) = (own_kid(&a), own_kid(&b));
    assert!(a.state().ledger().retire_signer_key(&kb).await.unwrap());
    // B still holds the key, but serves only A's: a head refreshing its
    // keys through B refuses what B signs with the retired one.
    assert_eq!(served_kids(&b).await, vec![ka]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_signer_runs_the_checkpoint_chore_and_the_other_takes_it_over() {
    let (_db, a, b) = pair().await;
    assert_ne!(a.checkpoint_holder(), b.checkpoint_holder());
    // Each answers once it serves, which is after its first round.
    served_kids(&a).await;
    served_kids(&b).await;
    // A took the chore when it started; B's round finds it held.
    let first = checkpoint_lease(&a).await;
    assert_eq!(
        (first.holder.as_str(), first.token),
        (a.checkpoint_holder(), 1)
    );
    let mut on_b = head(&b).await;
    propose(&mut on_b).await;
    let events = a.state().ledger().events().await.unwrap().len();
    b.checkpoint_round().await;
    assert_eq!(a.state().ledger().events().await.unwrap().len(), events);
    assert_eq!(checkpoint_lease(&a).await.holder, a.checkpoint_holder());
    // A stops (its last checkpoint, then the chore given back); B's next
    // round takes it, with the next token, and checkpoints what moved.
    let holder_a = a.checkpoint_holder().to_owned();
    a.stop().await.unwrap();
    let after_a = b.state().ledger().events().await.unwrap();
    assert_eq!(after_a.last().unwrap().kind, "checkpoint");
    let lease = checkpoint_lease(&b).await;
    assert_eq!(lease.holder, holder_a);
    propose(&mut on_b).await;
    b.checkpoint_round().await;
    let lease = checkpoint_lease(&b).await;
    assert_eq!(
        (lease.holder.as_str(), lease.token),
        (b.checkpoint_holder(), 2)
    );
    let events = b.state().ledger().events().await.unwrap();
    assert_eq!(events.last().unwrap().kind, "checkpoint");
    assert!(events.len() > after_a.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_retire_and_rotate_on_one_host_change_the_set_both_serve() {
    let (_db, a, mut b) = pair().await;
    let (ka, kb) = (own_kid(&a), own_kid(&b));
    b.halt().await.unwrap();
    // B's key is not in A's index: retired in the ledger's set, recorded.
    let (ok, _, err) = keys_command(
        env!("CARGO_BIN_EXE_countersign-signer"),
        a.home(),
        &["retire", &kb],
    );
    assert!(ok, "{err}");
    assert!(err.contains(&format!("retired {kb}")), "{err}");
    assert_eq!(served_kids(&a).await, vec![ka.clone()]);
    let last = a.state().ledger().events().await.unwrap().pop().unwrap();
    assert_eq!(
        (last.kind.as_str(), last.details["key_id"].as_str()),
        ("key_retired", Some(kb.as_str()))
    );
    // A key no signer published is still unknown.
    let (ok, _, err) = keys_command(
        env!("CARGO_BIN_EXE_countersign-signer"),
        a.home(),
        &["retire", "k4.pid.nope"],
    );
    assert!(!ok);
    assert!(err.contains("no key k4.pid.nope in the key index"), "{err}");
    // A rotation on A is published at once.
    let (ok, new, err) = keys_command(
        env!("CARGO_BIN_EXE_countersign-signer"),
        a.home(),
        &["rotate"],
    );
    assert!(ok, "{err}");
    let published: Vec<(String, &str)> = a
        .state()
        .ledger()
        .signer_keys()
        .await
        .unwrap()
        .into_iter()
        .filter(|k| k.kid != kb)
        .map(|k| (k.kid, k.status.as_str()))
        .collect();
    let mut expected = vec![(ka.clone(), "verifying"), (new.trim().to_owned(), "active")];
    expected.sort();
    assert_eq!(published, expected);
    assert_eq!(served_kids(&a).await, vec![new.trim().to_owned(), ka]);
}
