//! Witnesses' cosignatures on both backends: only a cosignature by the
//! witness key over the exact stored checkpoint is stored, the cosigned
//! checkpoint verifies under a tlog-policy naming that witness, the
//! client's state never goes back, and its events enter the log.
#![allow(clippy::unwrap_used)]

// The private keys live in the signer crate (no other crate names a
// signing key); its file is compiled into these tests as it is.
#[allow(dead_code, unreachable_pub)]
#[path = "../../signer/src/note_keys.rs"]
mod note_keys;

mod common;

use common::{Kind, TestLedger, approve, create_schedule};
use countersign_ledger::witness::WITNESS_GAP_EVENT;
use countersign_ledger::{CosignatureRefusal, LedgerError, TreeHead, WitnessState};
use countersign_tlog::{Checkpoint, KeyName, Note, Policy, sign_note};
use note_keys::{Cosigner, Ed25519Signer};
use serde_json::json;

fn log_key() -> Ed25519Signer {
    Ed25519Signer::from_seed(KeyName::new("countersign/test").unwrap(), &[7; 32])
}

fn witness(name: &str, seed: u8) -> Cosigner {
    Cosigner::from_seed(KeyName::new(name).unwrap(), &[seed; 32])
}

fn body(head: TreeHead) -> Checkpoint {
    Checkpoint::new("countersign/test", head.size, head.root).unwrap()
}

/// A ledger with a stored checkpoint of 4 events; its head.
async fn with_checkpoint(kind: Kind) -> (TestLedger, TreeHead) {
    let t = TestLedger::on(kind).await;
    for i in 1..=2 {
        approve(&t.ledger, &create_schedule(i, &format!("s{i}")), i).await;
    }
    let head = t.ledger.sequence_events().await.unwrap();
    let note = sign_note(&body(head).to_string(), &[&log_key()]).unwrap();
    t.ledger
        .store_log_checkpoint(None, head, &note.to_string())
        .await
        .unwrap();
    (t, head)
}

fn line(witness: &Cosigner, checkpoint: &Checkpoint, timestamp: u64) -> String {
    witness.cosign(checkpoint, timestamp).unwrap().to_string()
}

on_both_backends!(stores_a_cosignature_that_verifies_under_the_policy);
async fn stores_a_cosignature_that_verifies_under_the_policy(kind: Kind) {
    let (t, head) = with_checkpoint(kind).await;
    let w1 = witness("witness.example/w1", 1);
    let w2 = witness("witness.example/w2", 2);
    let stored = t
        .ledger
        .store_cosignature(
            head.size,
            &w1.verifier_key(),
            &line(&w1, &body(head), 1700000000),
        )
        .await
        .unwrap();
    assert_eq!(stored.timestamp, 1700000000);
    assert!(!stored.line.ends_with('\n'));
    // The same witness again: the first is kept.
    let again = t
        .ledger
        .store_cosignature(
            head.size,
            &w1.verifier_key(),
            &line(&w1, &body(head), 1700000001),
        )
        .await
        .unwrap();
    assert_eq!(again, stored);
    t.ledger
        .store_cosignature(
            head.size,
            &w2.verifier_key(),
            &line(&w2, &body(head), 1700000002),
        )
        .await
        .unwrap();
    assert_eq!(t.ledger.cosignatures(head.size).await.unwrap().len(), 2);

    let note = t
        .ledger
        .cosigned_checkpoint(head.size)
        .await
        .unwrap()
        .unwrap();
    let (size, latest) = t
        .ledger
        .latest_cosigned_checkpoint()
        .await
        .unwrap()
        .unwrap();
    assert_eq!((size, &latest), (head.size, &note));
    let policy = Policy::parse(
        format!(
            "log {}\nwitness w1 {}\nwitness w2 {}\ngroup both all w1 w2\nquorum both\n",
            log_key().verifier_key(),
            w1.verifier_key(),
            w2.verifier_key()
        )
        .as_bytes(),
    )
    .unwrap();
    let verified = policy
        .verify_checkpoint(&Note::parse(note.as_bytes()).unwrap())
        .unwrap();
    assert_eq!(verified.checkpoint().size(), head.size);
    // Stable order: the log's signature, then by witness key.
    let parsed = Note::parse(note.as_bytes()).unwrap();
    let names: Vec<&str> = parsed
        .signatures()
        .iter()
        .map(|s| s.name().as_str())
        .collect();
    let mut keys = [w1.verifier_key().to_string(), w2.verifier_key().to_string()];
    keys.sort();
    let expected: Vec<&str> = std::iter::once("countersign/test")
        .chain(keys.iter().map(|k| k.split('+').next().unwrap()))
        .collect();
    assert_eq!(names, expected);
    assert_eq!(t.ledger.cosigned_checkpoint(99).await.unwrap(), None);
}

on_both_backends!(refuses_a_cosignature_that_does_not_verify_over_the_checkpoint);
async fn refuses_a_cosignature_that_does_not_verify_over_the_checkpoint(kind: Kind) {
    let (t, head) = with_checkpoint(kind).await;
    let w1 = witness("witness.example/w1", 1);
    let other = witness("witness.example/other", 3);
    let key = w1.verifier_key();
    let refused = |reason| LedgerError::CosignatureRefused {
        size: head.size,
        witness: key.to_string(),
        reason,
    };
    // Over another checkpoint (another root).
    let forged = Checkpoint::new(
        "countersign/test",
        head.size,
        countersign_tlog::leaf_hash(b"x"),
    )
    .unwrap();
    assert_eq!(
        t.ledger
            .store_cosignature(head.size, &key, &line(&w1, &forged, 1700000000))
            .await,
        Err(refused(CosignatureRefusal::DoesNotVerify))
    );
    // By another witness, sent as this one's.
    assert_eq!(
        t.ledger
            .store_cosignature(head.size, &key, &line(&other, &body(head), 1700000000))
            .await,
        Err(refused(CosignatureRefusal::OtherKey))
    );
    // Timestamp zero.
    assert_eq!(
        t.ledger
            .store_cosignature(head.size, &key, &line(&w1, &body(head), 0))
            .await,
        Err(refused(CosignatureRefusal::ZeroTimestamp))
    );
    // Not a signature line at all.
    assert!(matches!(
        t.ledger.store_cosignature(head.size, &key, "hello").await,
        Err(LedgerError::CosignatureRefused {
            reason: CosignatureRefusal::Malformed(_),
            ..
        })
    ));
    // A log (0x01) key is not a witness key.
    assert_eq!(
        t.ledger
            .store_cosignature(
                head.size,
                &log_key().verifier_key(),
                &line(&w1, &body(head), 1)
            )
            .await,
        Err(LedgerError::CosignatureRefused {
            size: head.size,
            witness: log_key().verifier_key().to_string(),
            reason: CosignatureRefusal::NotACosignatureKey,
        })
    );
    assert_eq!(
        t.ledger
            .store_cosignature(head.size + 1, &key, &line(&w1, &body(head), 1))
            .await,
        Err(LedgerError::NoSuchCheckpoint(head.size + 1))
    );
    assert!(t.ledger.cosignatures(head.size).await.unwrap().is_empty());
    assert_eq!(t.ledger.latest_cosigned_checkpoint().await.unwrap(), None);
}

on_both_backends!(keeps_the_witness_state_and_records_its_events);
async fn keeps_the_witness_state_and_records_its_events(kind: Kind) {
    let (t, _) = with_checkpoint(kind).await;
    let w1 = witness("witness.example/w1", 1);
    let mut state = WitnessState::new(&w1.verifier_key());
    assert!(t.ledger.witness_states().await.unwrap().is_empty());
    state.acknowledged = 4;
    t.ledger.save_witness_state(&state).await.unwrap();
    assert_eq!(
        t.ledger.witness_states().await.unwrap(),
        vec![state.clone()]
    );
    // The acknowledged size never goes back.
    let mut back = state.clone();
    back.acknowledged = 3;
    assert!(matches!(
        t.ledger.save_witness_state(&back).await,
        Err(LedgerError::Database(_))
    ));
    state.unreachable_since = Some("2026-12-06T10:00:00Z".into());
    state.gap_recorded = true;
    let details = json!({ "witness": "w1", "key": w1.verifier_key().to_string() });
    t.ledger
        .record_witness_event(&state, WITNESS_GAP_EVENT, &details)
        .await
        .unwrap();
    assert_eq!(t.ledger.witness_states().await.unwrap(), vec![state]);
    let event = t.ledger.events().await.unwrap().pop().unwrap();
    assert_eq!(event.kind, WITNESS_GAP_EVENT);
    assert_eq!(event.chain, countersign_ledger::GLOBAL_CHAIN);
    assert_eq!(event.details, details);
    assert_eq!(t.ledger.verify_chain().await.unwrap().first_break, None);
    // It enters the tree.
    let before = t.ledger.tree_head().await.unwrap().size;
    assert_eq!(t.ledger.sequence_events().await.unwrap().size, before + 1);
}

on_both_backends!(a_witnessing_client_that_lost_its_lease_writes_nothing);
async fn a_witnessing_client_that_lost_its_lease_writes_nothing(kind: Kind) {
    use countersign_ledger::leases::WITNESSING_CHORE;
    let (t, head) = with_checkpoint(kind).await;
    let w1 = witness("witness.example/w1", 1);
    let key = w1.verifier_key();
    // Client A's lease runs out (it was paused); client B takes the chore.
    let a = t
        .ledger
        .take_lease(WITNESSING_CHORE, "a", time::Duration::ZERO)
        .await
        .unwrap()
        .unwrap();
    let b = t
        .ledger
        .take_lease(WITNESSING_CHORE, "b", time::Duration::minutes(1))
        .await
        .unwrap()
        .unwrap();
    let events = t.ledger.events().await.unwrap().len();
    let mut state = WitnessState::new(&key);
    state.acknowledged = head.size;
    let lost = |r: Result<(), LedgerError>| {
        assert!(
            matches!(&r, Err(LedgerError::LeaseLost { chore, token: 1 }) if chore == WITNESSING_CHORE),
            "{r:?}"
        );
    };
    lost(
        t.ledger
            .store_cosignature_under(&a, head.size, &key, &line(&w1, &body(head), 1))
            .await
            .map(|_| ()),
    );
    lost(t.ledger.save_witness_state_under(&a, &state).await);
    let details = json!({ "witness": "w1", "key": key.to_string() });
    lost(
        t.ledger
            .record_witness_event_under(&a, &state, WITNESS_GAP_EVENT, &details)
            .await,
    );
    // Nothing of A's was written.
    assert!(t.ledger.cosignatures(head.size).await.unwrap().is_empty());
    assert!(t.ledger.witness_states().await.unwrap().is_empty());
    assert_eq!(t.ledger.events().await.unwrap().len(), events);
    // B's writes go through.
    t.ledger
        .store_cosignature_under(&b, head.size, &key, &line(&w1, &body(head), 1))
        .await
        .unwrap();
    t.ledger.save_witness_state_under(&b, &state).await.unwrap();
    assert_eq!(t.ledger.witness_states().await.unwrap(), vec![state]);
}
