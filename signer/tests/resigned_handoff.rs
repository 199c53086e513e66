//! Two signers of one PostgreSQL ledger, each with a key of its own: a
//! handoff approval whose issuing signer is lost before a head claims it
//! is signed again by the other under its own key, recorded beside the
//! issuance, handed over, and consumed once whichever of the two proofs a
//! head presents. So is one a head claims through the other signer while
//! the issuer still serves. A key retired in the ledger, an issuance that
//! does not name its key, and a SQLite ledger are not signed again for.
#![allow(clippy::unwrap_used)]

mod support;

use countersign_ledger::Consumed;
use countersign_ledger::testing::TempPgDatabase;
use countersign_proto::v1::{ClaimHandoffRequest, ClaimHandoffResponse, Delivery};
use countersign_registry::Registry;
use countersign_signer::testing::TestSigner;
use countersign_verifier::Proof;
use countersign_verifier::canonical::sha256_hex;
use countersign_verifier::verify::footer_key_id;
use sqlx::{Connection as _, PgConnection};
use tonic::Code;

use support::*;

async fn claimed(signer: &TestSigner, id: &str) -> ClaimHandoffResponse {
    head(signer)
        .await
        .claim_handoff(ClaimHandoffRequest {
            proposal_id: id.into(),
            session: SESSION.into(),
        })
        .await
        .unwrap()
        .into_inner()
}

async fn refused(signer: &TestSigner, id: &str) -> (Code, String) {
    let status = head(signer)
        .await
        .claim_handoff(ClaimHandoffRequest {
            proposal_id: id.into(),
            session: SESSION.into(),
        })
        .await
        .unwrap_err();
    (status.code(), reason_of(&status))
}

fn kid_of(proof: &str) -> String {
    footer_key_id(&Proof::from_text(proof.to_owned()).unwrap()).unwrap()
}

/// `(resigned rows, proof_resigned events)` in `db`.
async fn resigned(db: &TempPgDatabase) -> (i64, i64) {
    let mut conn = PgConnection::connect(db.url()).await.unwrap();
    let rows = sqlx::query_scalar("SELECT COUNT(*) FROM resigned_proofs")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let events = sqlx::query_scalar("SELECT COUNT(*) FROM events WHERE kind = 'proof_resigned'")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    (rows, events)
}

/// A, then B on another host (its own key), of one new database; a
/// proposal approved through A for a handoff; A halted, its memory gone.
async fn lost_with_a_handoff() -> (TempPgDatabase, TestSigner, TestSigner, String, String) {
    let db = TempPgDatabase::create().await.unwrap();
    let mut a = TestSigner::start_with(Registry::default_toml(), Some(db.url()))
        .await
        .unwrap();
    let b = a.on_another_host().await.unwrap();
    let view = propose(&mut head(&a).await).await;
    let decided = approved(&a, &view.id, Delivery::Handoff).await;
    assert!(
        decided.proof.is_empty(),
        "a handoff's proof stays in the signer"
    );
    a.halt().await.unwrap();
    (db, a, b, view.id, decided.proof_sha256)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handoff_of_a_lost_signer_is_signed_again_by_the_other_and_used_once() {
    let (db, a, b, id, issued_sha256) = lost_with_a_handoff().await;
    let (ka, kb) = (a.state().key_id().unwrap(), b.state().key_id().unwrap());
    assert_ne!(ka, kb);

    let got = claimed(&b, &id).await;
    assert_ne!(got.proof_sha256, issued_sha256);
    assert_eq!(sha256_hex(got.proof.as_bytes()), got.proof_sha256);
    assert_eq!(kid_of(&got.proof), kb, "signed again under B's own key");
    assert_eq!(resigned(&db).await, (1, 1));
    let record = b.state().ledger().proposal(&id).await.unwrap().unwrap();
    let issuance = record.issuance.unwrap();
    let again = issuance.resigned.clone().unwrap();
    assert_eq!(
        (
            again.proof_sha256.as_str(),
            again.key_id.as_str(),
            again.replaces_key_id.as_str()
        ),
        (got.proof_sha256.as_str(), kb.as_str(), ka.as_str())
    );
    assert_eq!(issuance.key_id.as_deref(), Some(ka.as_str()));

    // Released and claimed again, and after B restarts: the same proof,
    // reproduced by B's key, never a third.
    head(&b)
        .await
        .release_handoff(countersign_proto::v1::ReleaseHandoffRequest {
            proposal_id: id.clone(),
            session: SESSION.into(),
        })
        .await
        .unwrap();
    let b = b.restart().await.unwrap();
    let again_claimed = claimed(&b, &id).await;
    assert_eq!(again_claimed.proof, got.proof);
    assert_eq!(resigned(&db).await, (1, 1));

    // The head verifies it with B's key set and consumes it once.
    let proof = verified(&b, &id, &got.proof).await;
    let ledger = b.state().ledger();
    let done = ledger
        .consume_builtin(&proof, "schedule.create")
        .await
        .unwrap();
    assert!(matches!(done, Consumed::Completed(_)), "{done:?}");
    // A comes back and re-derives the proof it issued: a replay, nothing
    // applied twice.
    let a = a.restart().await.unwrap();
    let (code, reason) = refused(&a, &id).await;
    assert_eq!(
        (code, reason.as_str()),
        (Code::FailedPrecondition, "handoff_in_use")
    );
    let mut conn = PgConnection::connect(db.url()).await.unwrap();
    let consumed: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM consumed_nonces")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(consumed, 1);
    let report = ledger.verify_chain().await.unwrap();
    assert!(report.is_intact(), "{:?}", report.first_break);
    drop(a);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proof_the_lost_signer_issued_still_consumes_the_nonce_once() {
    // A is back before the head presented B's proof: it hands over its
    // own, which is consumed; B's is then a replay.
    let (db, a, b, id, issued_sha256) = lost_with_a_handoff().await;
    let from_b = claimed(&b, &id).await;
    let a = a.restart().await.unwrap();
    let from_a = claimed(&a, &id).await;
    assert_eq!(from_a.proof_sha256, issued_sha256);
    let ledger = a.state().ledger();
    let first = ledger
        .consume_builtin(&verified(&a, &id, &from_a.proof).await, "schedule.create")
        .await
        .unwrap();
    let second = ledger
        .consume_builtin(&verified(&a, &id, &from_b.proof).await, "schedule.create")
        .await
        .unwrap();
    match (first, second) {
        (Consumed::Completed(done), Consumed::Replay(replay)) => assert_eq!(done, replay),
        other => panic!("expected one consumption and a replay, got {other:?}"),
    }
    assert_eq!(resigned(&db).await, (1, 1));
    assert!(ledger.verify_chain().await.unwrap().is_intact());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handoff_whose_key_the_ledger_retired_is_not_signed_again() {
    let (db, a, b, id, _) = lost_with_a_handoff().await;
    let ka = a.state().key_id().unwrap();
    assert!(b.state().ledger().retire_signer_key(&ka).await.unwrap());
    let (code, reason) = refused(&b, &id).await;
    assert_eq!(
        (code, reason.as_str()),
        (Code::FailedPrecondition, "handoff_unrecoverable")
    );
    assert_eq!(resigned(&db).await, (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_through_the_other_signer_while_the_issuer_serves_is_signed_again_once() {
    // The head's first address is B's: B signs again while A still holds
    // its proof; both proofs are live, and the nonce is consumed once.
    let db = TempPgDatabase::create().await.unwrap();
    let a = TestSigner::start_with(Registry::default_toml(), Some(db.url()))
        .await
        .unwrap();
    let b = a.on_another_host().await.unwrap();
    let view = propose(&mut head(&a).await).await;
    let decided = approved(&a, &view.id, Delivery::Handoff).await;
    let from_b = claimed(&b, &view.id).await;
    assert_ne!(from_b.proof_sha256, decided.proof_sha256);
    assert_eq!(kid_of(&from_b.proof), b.state().key_id().unwrap());
    let from_a = claimed(&a, &view.id).await;
    assert_eq!(from_a.proof_sha256, decided.proof_sha256);
    assert_eq!(resigned(&db).await, (1, 1));
    let ledger = b.state().ledger();
    let first = ledger
        .consume_builtin(
            &verified(&b, &view.id, &from_b.proof).await,
            "schedule.create",
        )
        .await
        .unwrap();
    let second = ledger
        .consume_builtin(
            &verified(&a, &view.id, &from_a.proof).await,
            "schedule.create",
        )
        .await
        .unwrap();
    match (first, second) {
        (Consumed::Completed(done), Consumed::Replay(replay)) => assert_eq!(done, replay),
        other => panic!("expected one consumption and a replay, got {other:?}"),
    }
    assert!(ledger.verify_chain().await.unwrap().is_intact());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issuance_recorded_without_its_key_is_not_signed_again() {
    // Issued before the ledger kept the issuing key (schema version 18):
    // nobody can say that key is still served, so B does not sign again.
    let (db, _a, b, id, _) = lost_with_a_handoff().await;
    let mut conn = PgConnection::connect(db.url()).await.unwrap();
    for sql in [
        "ALTER TABLE issuances DISABLE TRIGGER ALL",
        "UPDATE issuances SET key_id = NULL",
        "ALTER TABLE issuances ENABLE TRIGGER ALL",
    ] {
        sqlx::raw_sql(sql).execute(&mut conn).await.unwrap();
    }
    let (code, reason) = refused(&b, &id).await;
    assert_eq!(
        (code, reason.as_str()),
        (Code::FailedPrecondition, "handoff_unrecoverable")
    );
    assert_eq!(resigned(&db).await, (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_ledger_is_never_signed_again_for() {
    // The issuing key leaves the home (a new one is made at the next
    // start) but is not retired: on PostgreSQL a claim would be signed
    // again; a SQLite file's owner could have written any row, so never.
    let mut a = TestSigner::start_with(Registry::default_toml(), None)
        .await
        .unwrap();
    let issued_by = a.state().key_id().unwrap();
    let view = propose(&mut head(&a).await).await;
    approved(&a, &view.id, Delivery::Handoff).await;
    a.halt().await.unwrap();
    let signer_dir = a.home().signer_dir();
    for file in ["keys.json", "keys.json.lock", "ed25519.key"] {
        let _ = std::fs::remove_file(signer_dir.join(file));
    }
    let _ = std::fs::remove_dir_all(signer_dir.join("keys"));
    let a = a.restart().await.unwrap();
    assert_ne!(a.state().key_id().unwrap(), issued_by, "a new key");
    let (code, reason) = refused(&a, &view.id).await;
    assert_eq!(
        (code, reason.as_str()),
        (Code::FailedPrecondition, "handoff_unrecoverable")
    );
    let record = a
        .state()
        .ledger()
        .proposal(&view.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.issuance.unwrap().resigned, None);
    let events = a.state().ledger().events().await.unwrap();
    assert!(!events.iter().any(|e| e.kind == "proof_resigned"));
}
