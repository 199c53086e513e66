//! The transparency log over the events, on both backends: the sequencer
//! gives every event one leaf, proofs built from the stored leaf hashes
//! verify with the tlog verifier, checkpoints are stored only in sequence,
//! and the audit's walk names the leaf of a tampered event.
#![allow(clippy::unwrap_used)]

// The private keys live in the signer crate (no other crate names a
// signing key); its file is compiled into these tests as it is.
#[allow(dead_code, unreachable_pub)]
#[path = "../../signer/src/note_keys.rs"]
mod note_keys;

mod common;

use common::{Kind, TestLedger, approve, create_schedule, proposal};
use countersign_ledger::tlog::event_leaf_hash;
use countersign_ledger::{
    LedgerError, StoredCheckpoint, TreeBreak, TreeHead, verify_checkpoint_signature,
};
use countersign_tlog::{
    Checkpoint, KeyName, TreeError, sign_note, verify_consistency, verify_inclusion,
};
use note_keys::Ed25519Signer;
use serde_json::json;

/// `n` proposals of one principal, approved: two events each.
async fn with_events(kind: Kind, n: u32) -> TestLedger {
    let t = TestLedger::on(kind).await;
    for i in 1..=n {
        approve(&t.ledger, &create_schedule(i, &format!("s{i}")), i).await;
    }
    t
}

/// Every event's inclusion proof at `head` verifies against its root.
async fn every_event_included(t: &TestLedger, head: TreeHead) {
    let events = t.ledger.events().await.unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for event in &events {
        let index = t
            .ledger
            .leaf_of_event(&event.chain, event.seq)
            .await
            .unwrap();
        let Some(index) = index.filter(|i| *i < head.size) else {
            continue;
        };
        assert!(seen.insert(index), "leaf {index} given twice");
        let proof = t.ledger.inclusion_proof(index, head.size).await.unwrap();
        let leaf = event_leaf_hash(&event.chain, event.seq, &event.hash);
        verify_inclusion(&leaf, index, head.size, &proof, &head.root).unwrap();
    }
    assert_eq!(seen.len() as u64, head.size);
}

on_both_backends!(sequences_every_event_once_with_verifying_proofs);
async fn sequences_every_event_once_with_verifying_proofs(kind: Kind) {
    let t = with_events(kind, 3).await;
    assert_eq!(t.ledger.tree_head().await.unwrap().size, 0);
    let first = t.ledger.sequence_events().await.unwrap();
    assert_eq!(first.size, 6);
    assert_eq!(t.ledger.tree_head().await.unwrap(), first);
    every_event_included(&t, first).await;
    // Nothing new: the same tree.
    assert_eq!(t.ledger.sequence_events().await.unwrap(), first);

    for i in 4..=8 {
        approve(&t.ledger, &create_schedule(i, &format!("s{i}")), i).await;
    }
    let event = t.ledger.events().await.unwrap().pop().unwrap();
    assert_eq!(
        t.ledger
            .leaf_of_event(&event.chain, event.seq)
            .await
            .unwrap(),
        None
    );
    let before = t.ledger.leaf_indexes().await.unwrap();
    assert_eq!(before.len(), 6);
    assert!(
        !before.contains_key(&event.id),
        "an unsequenced event has no leaf"
    );
    let second = t.ledger.sequence_events().await.unwrap();
    assert_eq!(second.size, 16);
    // The bulk read agrees with the per-event one, for every event.
    let indexes = t.ledger.leaf_indexes().await.unwrap();
    assert_eq!(indexes.len(), 16);
    for e in t.ledger.events().await.unwrap() {
        let one = t.ledger.leaf_of_event(&e.chain, e.seq).await.unwrap();
        assert_eq!(indexes.get(&e.id).copied(), one, "event {}", e.id);
    }
    assert_eq!(
        t.ledger
            .leaf_of_event(&event.chain, event.seq)
            .await
            .unwrap(),
        Some(15)
    );
    every_event_included(&t, second).await;
    // A proof at the earlier size still verifies against the earlier root.
    every_event_included(&t, first).await;
    let proof = t
        .ledger
        .consistency_proof(first.size, second.size)
        .await
        .unwrap();
    verify_consistency(first.size, second.size, &proof, &first.root, &second.root).unwrap();
    for old in 1..second.size {
        let proof = t.ledger.consistency_proof(old, second.size).await.unwrap();
        let old_root = countersign_tlog::root(&leaves(&t, old).await);
        verify_consistency(old, second.size, &proof, &old_root, &second.root).unwrap();
    }
    let report = t.ledger.verify_tree().await.unwrap();
    assert!(report.is_intact(), "{report:?}");
    assert_eq!((report.head, report.pending), (second, 0));
}

/// The first `size` leaf hashes, recomputed from the events.
async fn leaves(t: &TestLedger, size: u64) -> Vec<countersign_tlog::Hash> {
    let mut by_index = Vec::new();
    for event in t.ledger.events().await.unwrap() {
        if let Some(index) = t
            .ledger
            .leaf_of_event(&event.chain, event.seq)
            .await
            .unwrap()
        {
            by_index.push((index, event_leaf_hash(&event.chain, event.seq, &event.hash)));
        }
    }
    by_index.sort();
    by_index
        .into_iter()
        .take(size as usize)
        .map(|(_, h)| h)
        .collect()
}

on_both_backends!(refuses_proofs_the_tree_cannot_give);
async fn refuses_proofs_the_tree_cannot_give(kind: Kind) {
    let t = with_events(kind, 2).await;
    let head = t.ledger.sequence_events().await.unwrap();
    assert_eq!(head.size, 4);
    assert_eq!(
        t.ledger.inclusion_proof(0, 5).await,
        Err(LedgerError::BeyondTree { asked: 5, size: 4 })
    );
    assert_eq!(
        t.ledger.inclusion_proof(4, 4).await,
        Err(LedgerError::Proof(TreeError::IndexOutOfRange {
            index: 4,
            size: 4
        }))
    );
    assert_eq!(
        t.ledger.consistency_proof(0, 4).await,
        Err(LedgerError::Proof(TreeError::OldTreeEmpty))
    );
    assert_eq!(
        t.ledger.consistency_proof(3, 2).await,
        Err(LedgerError::Proof(TreeError::OldSizeExceedsNewSize {
            old: 3,
            new: 2
        }))
    );
    assert_eq!(
        t.ledger.consistency_proof(2, 5).await,
        Err(LedgerError::BeyondTree { asked: 5, size: 4 })
    );
    assert_eq!(t.ledger.consistency_proof(4, 4).await, Ok(vec![]));
}

/// A note signing `head` with the test log key.
fn signed(key: &Ed25519Signer, head: TreeHead) -> String {
    let body = Checkpoint::new(key.verifier_key().name().as_str(), head.size, head.root).unwrap();
    sign_note(&body.to_string(), &[key]).unwrap().to_string()
}

fn log_key(seed: u8) -> Ed25519Signer {
    Ed25519Signer::from_seed(KeyName::new("countersign/test").unwrap(), &[seed; 32])
}

on_both_backends!(stores_checkpoints_only_in_the_sequence_checked);
async fn stores_checkpoints_only_in_the_sequence_checked(kind: Kind) {
    let t = with_events(kind, 2).await;
    let key = log_key(1);
    let head = t.ledger.sequence_events().await.unwrap();
    assert_eq!(t.ledger.latest_log_checkpoint().await.unwrap(), None);
    let beyond = TreeHead {
        size: 5,
        root: head.root,
    };
    assert_eq!(
        t.ledger
            .store_log_checkpoint(None, beyond, &signed(&key, beyond))
            .await,
        Err(LedgerError::BeyondTree { asked: 5, size: 4 })
    );
    let stored = t
        .ledger
        .store_log_checkpoint(None, head, &signed(&key, head))
        .await
        .unwrap();
    assert_eq!(
        t.ledger.latest_log_checkpoint().await.unwrap(),
        Some(stored.clone())
    );
    verify_checkpoint_signature(&stored, &key.verifier_key()).unwrap();
    // The same size again, or checked against no checkpoint: refused.
    assert_eq!(
        t.ledger
            .store_log_checkpoint(Some(4), head, &signed(&key, head))
            .await,
        Err(LedgerError::BeyondTree { asked: 4, size: 4 })
    );
    approve(&t.ledger, &create_schedule(3, "s3"), 3).await;
    let next = t.ledger.sequence_events().await.unwrap();
    assert_eq!(
        t.ledger
            .store_log_checkpoint(None, next, &signed(&key, next))
            .await,
        Err(LedgerError::CheckpointSuperseded {
            expected: None,
            latest: Some(4)
        })
    );
    t.ledger
        .store_log_checkpoint(Some(4), next, &signed(&key, next))
        .await
        .unwrap();
    let sizes: Vec<u64> = t
        .ledger
        .log_checkpoints()
        .await
        .unwrap()
        .iter()
        .map(|c| c.size)
        .collect();
    assert_eq!(sizes, [4, 6]);
    assert!(t.ledger.verify_tree().await.unwrap().is_intact());
}

#[test]
fn refuses_a_checkpoint_signed_by_another_key_or_for_another_tree() {
    let key = log_key(1);
    let head = TreeHead {
        size: 3,
        root: countersign_tlog::leaf_hash(b"x"),
    };
    let stored = StoredCheckpoint {
        size: 3,
        root: head.root,
        note: signed(&log_key(2), head),
        signed_at: "2026-12-06T00:00:00Z".into(),
    };
    assert_eq!(
        verify_checkpoint_signature(&stored, &key.verifier_key()),
        Err(TreeBreak::CheckpointSignature {
            size: 3,
            reason: "the checkpoint is not signed by the log's key".into()
        })
    );
    let other_size = StoredCheckpoint {
        size: 4,
        note: signed(&key, head),
        ..stored
    };
    assert_eq!(
        verify_checkpoint_signature(&other_size, &key.verifier_key()),
        Err(TreeBreak::CheckpointSignature {
            size: 4,
            reason: format!(
                "the note signs size 3 and root {}, not the stored 4 and {}",
                head.root, head.root
            )
        })
    );
}

/// Run `statements` on a raw connection with the guards of events and
/// leaves lifted, then walk the tree.
async fn tampered(t: &TestLedger, statements: &[&str]) -> Option<TreeBreak> {
    let mut raw = t.raw().await;
    let unguard: &[&str] = match t.kind {
        Kind::Sqlite => &[
            "DROP TRIGGER IF EXISTS events_no_update",
            "DROP TRIGGER IF EXISTS tlog_leaves_no_update",
            "DROP TRIGGER IF EXISTS tlog_leaves_no_delete",
            "DROP TRIGGER IF EXISTS tlog_nodes_no_update",
            "DROP TRIGGER IF EXISTS tlog_nodes_no_delete",
        ],
        Kind::Postgres => &[
            "ALTER TABLE events DISABLE TRIGGER events_append_only",
            "ALTER TABLE tlog_leaves DISABLE TRIGGER tlog_leaves_append_only",
            "ALTER TABLE tlog_nodes DISABLE TRIGGER tlog_nodes_append_only",
        ],
    };
    for sql in unguard.iter().chain(statements) {
        raw.exec(sql).await.unwrap();
    }
    raw.close().await;
    t.ledger.verify_tree().await.unwrap().first_break
}

on_both_backends!(names_the_leaf_of_an_edited_event);
async fn names_the_leaf_of_an_edited_event(kind: Kind) {
    let t = with_events(kind, 2).await;
    t.ledger.sequence_events().await.unwrap();
    let id: i64 = t.ledger.events().await.unwrap()[2].id;
    let index = {
        let e = &t.ledger.events().await.unwrap()[2];
        t.ledger
            .leaf_of_event(&e.chain, e.seq)
            .await
            .unwrap()
            .unwrap()
    };
    let edit = format!("UPDATE events SET actor = 'someone else' WHERE id = {id}");
    assert_eq!(
        tampered(&t, &[&edit]).await,
        Some(TreeBreak::EventEdited {
            index,
            event_id: id
        })
    );
}

on_both_backends!(names_a_leaf_whose_hash_was_changed);
async fn names_a_leaf_whose_hash_was_changed(kind: Kind) {
    let t = with_events(kind, 2).await;
    t.ledger.sequence_events().await.unwrap();
    let zero = "0".repeat(64);
    let edit = format!("UPDATE tlog_leaves SET leaf_hash = '{zero}' WHERE leaf_index = 1");
    let expected_event: i64 = {
        let mut raw = t.raw().await;
        let v = raw
            .scalar_i64("SELECT event_id FROM tlog_leaves WHERE leaf_index = 1")
            .await
            .unwrap();
        raw.close().await;
        v
    };
    assert_eq!(
        tampered(&t, &[&edit]).await,
        Some(TreeBreak::LeafMismatch {
            index: 1,
            event_id: expected_event
        })
    );
}

on_both_backends!(a_changed_node_fails_the_audit_and_its_proofs);
async fn a_changed_node_fails_the_audit_and_its_proofs(kind: Kind) {
    let t = with_events(kind, 3).await;
    let head = t.ledger.sequence_events().await.unwrap();
    assert_eq!((head.size, t.count("tlog_nodes").await), (6, 3 + 1));
    let zero = "0".repeat(64);
    let edit = format!("UPDATE tlog_nodes SET hash = '{zero}' WHERE end_size = 4 AND level = 1");
    assert_eq!(
        tampered(&t, &[&edit]).await,
        Some(TreeBreak::NodeMismatch {
            end_size: 4,
            level: 1
        })
    );
    // Leaf 0's proof at size 6 holds the changed node [2, 4).
    let event = &t.ledger.events().await.unwrap()[0];
    let proof = t.ledger.inclusion_proof(0, head.size).await.unwrap();
    let leaf = event_leaf_hash(&event.chain, event.seq, &event.hash);
    assert_eq!(
        verify_inclusion(&leaf, 0, head.size, &proof, &head.root),
        Err(countersign_tlog::ProofError::RootMismatch)
    );
    let missing = tampered(
        &t,
        &["DELETE FROM tlog_nodes WHERE end_size = 4 AND level = 2"],
    )
    .await;
    assert_eq!(
        missing,
        Some(TreeBreak::NodeMismatch {
            end_size: 4,
            level: 1
        })
    );
    assert_eq!(
        t.ledger.inclusion_proof(5, head.size).await,
        Err(LedgerError::Corrupt(
            "the tree has no stored hash of leaves [0, 4)".into()
        ))
    );
}

on_both_backends!(notices_a_node_missing_or_beyond_the_tree);
async fn notices_a_node_missing_or_beyond_the_tree(kind: Kind) {
    let t = with_events(kind, 3).await;
    t.ledger.sequence_events().await.unwrap();
    let zero = "0".repeat(64);
    let beyond = format!("INSERT INTO tlog_nodes (end_size, level, hash) VALUES (8, 1, '{zero}')");
    assert_eq!(
        tampered(&t, &[&beyond]).await,
        Some(TreeBreak::NodeMismatch {
            end_size: 8,
            level: 1
        })
    );
    assert_eq!(
        tampered(
            &t,
            &[
                "DELETE FROM tlog_nodes WHERE end_size = 8",
                "DELETE FROM tlog_nodes WHERE end_size = 2"
            ]
        )
        .await,
        Some(TreeBreak::NodeMismatch {
            end_size: 2,
            level: 1
        })
    );
}

on_both_backends!(notices_a_truncated_tree);
async fn notices_a_truncated_tree(kind: Kind) {
    let t = with_events(kind, 2).await;
    t.ledger.sequence_events().await.unwrap();
    assert_eq!(
        tampered(&t, &["DELETE FROM tlog_leaves WHERE leaf_index = 3"]).await,
        Some(TreeBreak::LeafMissing { missing: 3 })
    );
    assert_eq!(
        tampered(&t, &["DELETE FROM tlog_leaves WHERE leaf_index = 1"]).await,
        Some(TreeBreak::LeafMissing { missing: 1 })
    );
}

on_both_backends!(writers_and_the_sequencer_at_once_sequence_each_event_once);
async fn writers_and_the_sequencer_at_once_sequence_each_event_once(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let mut writers = Vec::new();
    for task in 0..4u32 {
        let ledger = t.ledger.clone();
        writers.push(tokio::spawn(async move {
            for i in 0..15u32 {
                let n = task * 1000 + i + 1;
                let mut p = proposal(n, "schedule.create", json!({"name": format!("s{n}")}));
                p.principal = format!("pr_{:032x}", task + 1).parse().unwrap();
                ledger.insert_proposal(&p).await.unwrap();
            }
        }));
    }
    let sequencer = {
        let ledger = t.ledger.clone();
        tokio::spawn(async move {
            let mut sizes = Vec::new();
            for _ in 0..20 {
                sizes.push(ledger.sequence_events().await.unwrap().size);
                tokio::task::yield_now().await;
            }
            sizes
        })
    };
    for writer in writers {
        writer.await.unwrap();
    }
    let sizes = sequencer.await.unwrap();
    assert!(sizes.windows(2).all(|w| w[0] <= w[1]), "{sizes:?}");
    let head = t.ledger.sequence_events().await.unwrap();
    assert_eq!(head.size, 60);
    assert_eq!(t.count("tlog_leaves").await, 60);
    assert_eq!(t.count("tlog_pending").await, 0);
    let mut raw = t.raw().await;
    let distinct = raw
        .scalar_i64("SELECT COUNT(DISTINCT event_id) FROM tlog_leaves")
        .await
        .unwrap();
    let top = raw
        .scalar_i64("SELECT MAX(leaf_index) FROM tlog_leaves")
        .await
        .unwrap();
    raw.close().await;
    assert_eq!((distinct, top), (60, 59));
    every_event_included(&t, head).await;
    let report = t.ledger.verify_tree().await.unwrap();
    assert!(report.is_intact(), "{report:?}");
}

on_both_backends!(two_sequencers_at_once_never_give_an_event_two_leaves);
async fn two_sequencers_at_once_never_give_an_event_two_leaves(kind: Kind) {
    let t = TestLedger::on(kind).await;
    // A second handle with its own connections: another signer process.
    let other = countersign_ledger::Ledger::open(&t.url).await.unwrap();
    let writer = {
        let ledger = t.ledger.clone();
        tokio::spawn(async move {
            for n in 1..=40u32 {
                let mut p = proposal(n, "schedule.create", json!({"name": format!("s{n}")}));
                p.principal = format!("pr_{:032x}", n % 3 + 1).parse().unwrap();
                ledger.insert_proposal(&p).await.unwrap();
            }
        })
    };
    let sequencers: Vec<_> = [t.ledger.clone(), other]
        .into_iter()
        .map(|ledger| {
            tokio::spawn(async move {
                for _ in 0..15 {
                    ledger.sequence_events().await.unwrap();
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    writer.await.unwrap();
    for sequencer in sequencers {
        sequencer.await.unwrap();
    }
    let head = t.ledger.sequence_events().await.unwrap();
    assert_eq!(head.size, 40);
    assert_eq!(t.count("tlog_pending").await, 0);
    let mut raw = t.raw().await;
    let distinct = raw
        .scalar_i64("SELECT COUNT(DISTINCT event_id) FROM tlog_leaves")
        .await
        .unwrap();
    raw.close().await;
    assert_eq!(distinct, 40);
    every_event_included(&t, head).await;
    let report = t.ledger.verify_tree().await.unwrap();
    assert!(report.is_intact(), "{report:?}");
}

on_both_backends!(evidence_events_are_a_proposals_own_and_the_chains_enrolments);
/// `evidence_events` reads, by index, exactly one proposal's events on its
/// principal's chain (and that chain's passkey enrolments), in row order.
async fn evidence_events_are_a_proposals_own_and_the_chains_enrolments(kind: Kind) {
    let t = with_events(kind, 3).await;
    let all = t.ledger.events().await.unwrap();
    let second = all[2].proposal_id.clone().unwrap();
    let principal = all[2].chain.clone();
    let mine = t.ledger.evidence_events(&principal, &second).await.unwrap();
    let expected: Vec<_> = all
        .iter()
        .filter(|e| e.proposal_id.as_deref() == Some(second.as_str()))
        .cloned()
        .collect();
    assert_eq!(expected.len(), 2);
    assert_eq!(mine, expected);
    // Another chain's name finds nothing of it.
    assert!(
        t.ledger
            .evidence_events("pr_00000000000000000000000000000bad", &second)
            .await
            .unwrap()
            .is_empty()
    );
}
