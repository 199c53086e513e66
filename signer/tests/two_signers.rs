//! Two signers of one ledger. On PostgreSQL every piece of a passkey
//! decision in progress is in the ledger: a challenge one signer issued is
//! answered through the other, and only once; an enrolment code drawn on
//! one signer's host is redeemed through the other; a counter one signer
//! accepted is the one the other compares against. A SQLite ledger stays
//! single-signer: a second signer refuses to start and says so.
#![allow(clippy::unwrap_used)]

mod support;

use countersign_ledger::LedgerError;
use countersign_ledger::testing::TempPgDatabase;
use countersign_proto::v1::{BeginRemovalRequest, Delivery, RemovePasskeyRequest};
use countersign_registry::Registry;
use countersign_signer::StartError;
use countersign_signer::testing::TestSigner;
use support::passkey::*;
use support::*;
use tonic::Code;

/// What is left open in the shared ledger: no challenge once each was
/// answered or refused.
async fn open_challenges(db: &TempPgDatabase) -> i64 {
    use sqlx::Connection as _;
    let mut conn = sqlx::PgConnection::connect(db.url()).await.unwrap();
    sqlx::query_scalar("SELECT COUNT(*) FROM passkey_challenges")
        .fetch_one(&mut conn)
        .await
        .unwrap()
}

/// Makes the open challenge `id` one that expired (rows are never
/// updated: it is replaced, as the ledger's owner).
async fn expire(db: &TempPgDatabase, id: &str) {
    use sqlx::Connection as _;
    let mut conn = sqlx::PgConnection::connect(db.url()).await.unwrap();
    sqlx::query(
        "WITH old AS (DELETE FROM passkey_challenges WHERE id = $1 RETURNING *)
         INSERT INTO passkey_challenges
         SELECT id, challenge, random, approver, purpose, subject, delivery, session,
                issued_at, '2000-01-01T00:00:00Z' FROM old",
    )
    .bind(id)
    .execute(&mut conn)
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passkey_decision_begun_on_one_signer_is_finished_on_the_other_once() {
    let db = TempPgDatabase::create().await.unwrap();
    let a = TestSigner::start_configured(Registry::default_toml(), Some(db.url()), REQUIRED)
        .await
        .unwrap();
    let b = a.another_on_this_home().await.unwrap();
    let (mut on_a, mut on_b) = (approver(&a).await, approver(&b).await);
    let mut head = head(&a).await;

    // Enrolment: the code drawn on A's host, the challenge from A, the
    // answer through B.
    let mut person = soft(1);
    let c = on_a
        .begin_enrolment(countersign_proto::v1::BeginEnrolmentRequest {})
        .await
        .unwrap()
        .into_inner();
    let (attestation_object, client_data_json) = person.register(&c.creation_challenge);
    let enrol = countersign_proto::v1::EnrolRequest {
        challenge_id: c.challenge_id,
        name: "laptop".into(),
        attestation_object,
        client_data_json,
        enrolment_code: code(&a).await,
    };
    on_b.enrol(enrol.clone()).await.unwrap();
    // Not again, through either.
    for client in [&mut on_a, &mut on_b] {
        refused(
            client.enrol(enrol.clone()).await,
            Code::FailedPrecondition,
            "challenge_unknown",
        );
    }

    // A decision: the challenge from A, the answer through B.
    let pid = propose(&mut head).await.id;
    let (cid, challenge) = challenge_for(&mut on_a, &pid, Delivery::Direct).await;
    let answer = wire(&cid, person.assert(&challenge));
    let decided = on_b
        .decide(decide_with(&pid, Delivery::Direct, Some(answer.clone())))
        .await
        .unwrap()
        .into_inner();
    assert!(!decided.proof.is_empty());
    let stored = a
        .state()
        .ledger()
        .passkey_assertion_for(&pid)
        .await
        .unwrap();
    assert!(stored.is_some(), "recorded in the shared ledger");
    // The same answer for another proposal, through A: the challenge is
    // gone, and nothing is recorded.
    let other = propose(&mut head).await.id;
    refused(
        on_a.decide(decide_with(&other, Delivery::Direct, Some(answer)))
            .await,
        Code::FailedPrecondition,
        "challenge_unknown",
    );
    nothing_issued(&a, &other).await;

    // A counter one signer accepted is the one the other compares
    // against: an older assertion of the same authenticator is refused.
    let (old_id, old_challenge) = challenge_for(&mut on_a, &other, Delivery::Direct).await;
    let older = wire(&old_id, person.assert(&old_challenge));
    let third = propose(&mut head).await.id;
    let (new_id, new_challenge) = challenge_for(&mut on_b, &third, Delivery::Direct).await;
    let newer = wire(&new_id, person.assert(&new_challenge));
    on_b.decide(decide_with(&third, Delivery::Direct, Some(newer)))
        .await
        .unwrap();
    refused(
        on_a.decide(decide_with(&other, Delivery::Direct, Some(older)))
            .await,
        Code::PermissionDenied,
        "webauthn_counter_not_increased",
    );
    nothing_issued(&a, &other).await;

    // A removal: a second passkey (its code drawn through B), the
    // challenge from B, the answer through A.
    let spare = soft(2);
    let view = enrol_with(&mut on_a, &spare, &code(&b).await)
        .await
        .unwrap();
    let c = on_b
        .begin_removal(BeginRemovalRequest {
            credential_id: view.credential_id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    let removal = RemovePasskeyRequest {
        credential_id: view.credential_id.clone(),
        authorization: Some(wire(&c.challenge_id, person.assert(&c.challenge))),
    };
    let removed = on_a
        .remove_passkey(removal.clone())
        .await
        .unwrap()
        .into_inner();
    assert!(!removed.removed_at.is_empty());
    refused(
        on_b.remove_passkey(removal).await,
        Code::FailedPrecondition,
        "challenge_unknown",
    );
    assert_eq!(open_challenges(&db).await, 0);

    // An expired challenge is refused as an unknown one, through either
    // signer, and forgotten; nothing is recorded.
    let late = propose(&mut head).await.id;
    let (cid, challenge) = challenge_for(&mut on_a, &late, Delivery::Direct).await;
    expire(&db, &cid).await;
    refused(
        on_b.decide(decide_with(
            &late,
            Delivery::Direct,
            Some(wire(&cid, person.assert(&challenge))),
        ))
        .await,
        Code::FailedPrecondition,
        "challenge_unknown",
    );
    nothing_issued(&a, &late).await;
    assert_eq!(open_challenges(&db).await, 0);
    b.stop().await.unwrap();
    a.stop().await.unwrap();
}

#[tokio::test]
async fn a_second_signer_of_one_sqlite_ledger_refuses_to_start_and_says_so() {
    let mut a = TestSigner::start().await.unwrap();
    let err = a.another_on_this_home().await.unwrap_err();
    let StartError::Ledger(LedgerError::AnotherSigner(path)) = &err else {
        panic!("{err:?}");
    };
    assert!(path.ends_with(".db"), "{path}");
    assert!(
        err.to_string().contains("a SQLite ledger has one signer"),
        "{err}"
    );

    // A second signer process says so too, before it binds anything.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_countersign-signer"))
        .env("COUNTERSIGN_HOME", a.home().root())
        .arg("serve")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("already serves the SQLite ledger"),
        "{stderr}"
    );
    // The first still serves.
    approver(&a)
        .await
        .list_passkeys(countersign_proto::v1::ListPasskeysRequest {})
        .await
        .unwrap();

    // Once it stopped, another may serve.
    a.halt().await.unwrap();
    let b = a.another_on_this_home().await.unwrap();
    approver(&b)
        .await
        .list_passkeys(countersign_proto::v1::ListPasskeysRequest {})
        .await
        .unwrap();
}

/// A console connected to signer A records its browser's Web Push
/// subscription; the notify process asking signer B is told of it, and
/// of its removal through B, from the ledger (no signer reads a
/// console's files: none exists here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_one_signer_recorded_is_told_by_the_other() {
    use countersign_identity::Role;
    use countersign_proto::v1::{KeptPushDevice, PushDevicesRequest, SetPushDevicesRequest};
    let db = TempPgDatabase::create().await.unwrap();
    let a = TestSigner::start_configured(Registry::default_toml(), Some(db.url()), "")
        .await
        .unwrap();
    let b = a.another_on_this_home().await.unwrap();
    let expires_at = (time::OffsetDateTime::now_utc() + time::Duration::hours(12))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let phone = KeptPushDevice {
        session_id: "0123456789abcdef".into(),
        endpoint: "https://push.example/phone".into(),
        p256dh: "BKey".into(),
        auth: "auth".into(),
        application_server_key: "BVapid".into(),
        expires_at,
    };
    named_approver(&a, "alice")
        .await
        .set_push_devices(SetPushDevicesRequest {
            keep: vec![phone.clone()],
            remove: Vec::new(),
        })
        .await
        .unwrap();
    let told = || async {
        b.client(Role::Notifier)
            .await
            .unwrap()
            .push_devices(PushDevicesRequest {
                operation: "schedule.pause".into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
            .devices
    };
    let devices = told().await;
    assert_eq!(devices.len(), 1, "{devices:?}");
    assert_eq!(
        (
            devices[0].approver.as_str(),
            devices[0].session_id.as_str(),
            devices[0].endpoint.as_str(),
            devices[0].application_server_key.as_str()
        ),
        (
            "alice",
            "0123456789abcdef",
            "https://push.example/phone",
            "BVapid"
        )
    );
    let consoles_files = std::fs::read_dir(a.home().root())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("console-sessions-")
        })
        .count();
    assert_eq!(consoles_files, 0);
    named_approver(&b, "alice")
        .await
        .set_push_devices(SetPushDevicesRequest {
            keep: Vec::new(),
            remove: vec![phone.session_id.clone()],
        })
        .await
        .unwrap();
    assert!(told().await.is_empty());
}
