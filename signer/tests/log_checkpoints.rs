//! The signer's transparency log checkpoints, on both backends: the events
//! it records are sequenced into the tree, each checkpoint is a C2SP note
//! signed by the log key the signer publishes in `PublicKeys`, every
//! event's inclusion proof and the consistency between successive
//! checkpoints verify, and nothing is signed once a stored leaf or the
//! latest checkpoint was changed.
#![allow(clippy::unwrap_used)]

mod support;

use countersign_ledger::TreeBreak;
use countersign_ledger::testing::TempPgDatabase;
use countersign_ledger::tlog::event_leaf_hash;
use countersign_proto::v1::PublicKeysRequest;
use countersign_signer::log_checkpoint::{LogCheckpointError, sign_new_checkpoint};
use countersign_signer::testing::TestSigner;
use countersign_tlog::{
    ProofError, VerifierKey, open_checkpoint, verify_consistency, verify_inclusion,
};
use sqlx::Connection as _;

use support::{head, propose};

/// A signer on a fresh SQLite ledger in its home, or on a fresh
/// PostgreSQL database (kept alive beside it).
async fn signer_on(postgres: bool) -> (TestSigner, Option<TempPgDatabase>) {
    let db = if postgres {
        Some(TempPgDatabase::create().await.unwrap())
    } else {
        None
    };
    let registry = countersign_registry::Registry::default_toml();
    let signer = TestSigner::start_with(registry, db.as_ref().map(|d| d.url()))
        .await
        .unwrap();
    (signer, db)
}

/// Runs `sql` on a raw connection to the signer's ledger.
async fn raw(signer: &TestSigner, db: &Option<TempPgDatabase>, sql: &[&str]) {
    match db {
        Some(db) => {
            let mut conn = sqlx::PgConnection::connect(db.url()).await.unwrap();
            for s in sql {
                sqlx::raw_sql(sqlx::AssertSqlSafe(s.to_string()))
                    .execute(&mut conn)
                    .await
                    .unwrap();
            }
            conn.close().await.unwrap();
        }
        None => {
            let url = format!("sqlite://{}", signer.home().ledger_path().display());
            let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
            for s in sql {
                sqlx::raw_sql(sqlx::AssertSqlSafe(s.to_string()))
                    .execute(&mut conn)
                    .await
                    .unwrap();
            }
            conn.close().await.unwrap();
        }
    }
}

/// The log key the signer publishes.
async fn published_log_key(signer: &TestSigner) -> VerifierKey {
    let keys = head(signer)
        .await
        .public_keys(PublicKeysRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(!keys.keys.is_empty());
    keys.log_key.parse().unwrap()
}

macro_rules! on_both_backends {
    ($name:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name(false).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name(true).await
            }
        }
    };
}

on_both_backends!(signs_consistent_checkpoints_under_the_published_log_key);
async fn signs_consistent_checkpoints_under_the_published_log_key(postgres: bool) {
    let (mut signer, _db) = signer_on(postgres).await;
    let log_key = published_log_key(&signer).await;
    let origin = format!("countersign/{}", signer.principal());
    assert_eq!(log_key.name().as_str(), origin);
    let proof_keys = head(&signer)
        .await
        .public_keys(PublicKeysRequest {})
        .await
        .unwrap()
        .into_inner()
        .keys;
    assert!(
        proof_keys
            .iter()
            .all(|k| k.public_key != log_key.public_key().as_bytes())
    );

    for _ in 0..3 {
        propose(&mut head(&signer).await).await;
    }
    let ledger = signer.state().ledger().clone();
    let key = signer.state().log_key().unwrap();
    let first = sign_new_checkpoint(&ledger, key).await.unwrap().unwrap();
    assert_eq!(first.size, 3);
    // Nothing new: nothing signed.
    assert_eq!(sign_new_checkpoint(&ledger, key).await, Ok(None));
    let opened = open_checkpoint(first.note.as_bytes(), &origin, &log_key, &[]).unwrap();
    assert_eq!(opened.checkpoint().size(), 3);
    assert_eq!(*opened.checkpoint().root(), first.root);
    for event in ledger.events().await.unwrap() {
        let index = ledger.leaf_of_event(&event.chain, event.seq).await.unwrap();
        let index = index.unwrap();
        let proof = ledger.inclusion_proof(index, first.size).await.unwrap();
        let leaf = event_leaf_hash(&event.chain, event.seq, &event.hash);
        verify_inclusion(&leaf, index, first.size, &proof, &first.root).unwrap();
    }

    for _ in 0..2 {
        propose(&mut head(&signer).await).await;
    }
    // Stopping writes the chains' checkpoint, then signs the tree with it.
    signer.halt().await.unwrap();
    let latest = ledger.latest_log_checkpoint().await.unwrap().unwrap();
    let events = ledger.events().await.unwrap();
    assert_eq!(latest.size, events.len() as u64);
    assert_eq!(events.last().unwrap().kind, "checkpoint");
    open_checkpoint(latest.note.as_bytes(), &origin, &log_key, &[]).unwrap();
    let proof = ledger
        .consistency_proof(first.size, latest.size)
        .await
        .unwrap();
    verify_consistency(first.size, latest.size, &proof, &first.root, &latest.root).unwrap();
    let report = ledger.verify_tree().await.unwrap();
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.latest, Some(latest));
}

on_both_backends!(signs_nothing_once_a_stored_leaf_was_changed);
async fn signs_nothing_once_a_stored_leaf_was_changed(postgres: bool) {
    let (mut signer, db) = signer_on(postgres).await;
    for _ in 0..3 {
        propose(&mut head(&signer).await).await;
    }
    let ledger = signer.state().ledger().clone();
    let key = signer.state().log_key().unwrap();
    let first = sign_new_checkpoint(&ledger, key).await.unwrap().unwrap();
    propose(&mut head(&signer).await).await;
    let grown = ledger.sequence_events().await.unwrap();
    assert_eq!(grown.size, 4);
    let unguard = if postgres {
        "ALTER TABLE tlog_leaves DISABLE TRIGGER tlog_leaves_append_only"
    } else {
        "DROP TRIGGER tlog_leaves_no_update"
    };
    let zero = "0".repeat(64);
    let edit = format!("UPDATE tlog_leaves SET leaf_hash = '{zero}' WHERE leaf_index = 3");
    raw(&signer, &db, &[unguard, &edit]).await;

    assert_eq!(
        sign_new_checkpoint(&ledger, key).await,
        Err(LogCheckpointError::Inconsistent {
            old_size: 3,
            new_size: 4,
            error: ProofError::RootMismatch
        })
    );
    // Nor at shutdown.
    signer.halt().await.unwrap();
    assert_eq!(ledger.log_checkpoints().await.unwrap(), vec![first]);
    assert_eq!(
        ledger.verify_tree().await.unwrap().first_break,
        Some(TreeBreak::LeafMismatch {
            index: 3,
            event_id: ledger.events().await.unwrap()[3].id
        })
    );
}

on_both_backends!(signs_nothing_once_the_latest_checkpoint_was_changed);
async fn signs_nothing_once_the_latest_checkpoint_was_changed(postgres: bool) {
    let (signer, db) = signer_on(postgres).await;
    for _ in 0..3 {
        propose(&mut head(&signer).await).await;
    }
    let ledger = signer.state().ledger().clone();
    let key = signer.state().log_key().unwrap();
    let first = sign_new_checkpoint(&ledger, key).await.unwrap().unwrap();
    let unguard = if postgres {
        "ALTER TABLE tlog_checkpoints DISABLE TRIGGER tlog_checkpoints_append_only"
    } else {
        "DROP TRIGGER tlog_checkpoints_no_update"
    };
    let forged = countersign_tlog::leaf_hash(b"forged");
    let edit = format!("UPDATE tlog_checkpoints SET root = '{forged}'");
    raw(&signer, &db, &[unguard, &edit]).await;
    propose(&mut head(&signer).await).await;
    assert_eq!(
        sign_new_checkpoint(&ledger, key).await,
        Err(LogCheckpointError::LatestUnverified(
            TreeBreak::CheckpointSignature {
                size: 3,
                reason: format!(
                    "the note signs size 3 and root {}, not the stored 3 and {forged}",
                    first.root
                )
            }
        ))
    );
    assert_eq!(ledger.log_checkpoints().await.unwrap().len(), 1);
}

/// `countersign-signer log-key rotate`: the same log (origin) goes on under
/// a new key from the signer's next start; the retired key stays published
/// and verifies the checkpoints it signed, and the first checkpoint of the
/// new key is consistent with the last of the old one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_log_key_signs_the_same_log_and_the_old_one_stays_published() {
    let (mut signer, _db) = signer_on(false).await;
    let old_key = published_log_key(&signer).await;
    let origin = format!("countersign/{}", signer.principal());
    for _ in 0..2 {
        propose(&mut head(&signer).await).await;
    }
    signer.halt().await.unwrap();
    let ledger = signer.state().ledger().clone();
    let before = ledger.latest_log_checkpoint().await.unwrap().unwrap();
    open_checkpoint(before.note.as_bytes(), &origin, &old_key, &[]).unwrap();

    let (retired, new_key) =
        countersign_signer::log_key::rotate(&signer.home().signer_dir(), signer.principal())
            .unwrap();
    assert_eq!(retired, old_key);
    let signer = signer.restart().await.unwrap();
    let published = head(&signer)
        .await
        .public_keys(PublicKeysRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(published.log_key, new_key.to_string());
    assert_eq!(published.retired_log_keys, [old_key.to_string()]);

    propose(&mut head(&signer).await).await;
    let key = signer.state().log_key().unwrap();
    let after = sign_new_checkpoint(&ledger, key).await.unwrap().unwrap();
    assert!(after.size > before.size);
    open_checkpoint(after.note.as_bytes(), &origin, &new_key, &[]).unwrap();
    assert!(open_checkpoint(after.note.as_bytes(), &origin, &old_key, &[]).is_err());
    let proof = ledger
        .consistency_proof(before.size, after.size)
        .await
        .unwrap();
    verify_consistency(before.size, after.size, &proof, &before.root, &after.root).unwrap();
    // The old checkpoint still verifies under the retired key.
    open_checkpoint(before.note.as_bytes(), &origin, &old_key, &[]).unwrap();
}
