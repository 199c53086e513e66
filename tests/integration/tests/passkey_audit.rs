//! `countersign audit --verify` rechecks every stored passkey assertion
//! from public data (the `countersign` binary, against a real signer's
//! SQLite ledger): an approval's assertion verifies; the same row with its
//! signature altered, or with its delivery changed so that it no longer
//! derives the challenge the authenticator signed, is reported by id and
//! fails the audit.
#![allow(clippy::unwrap_used)]

use std::process::{Command, Output};

use countersign_identity::Role;
use countersign_integration_tests::bin;
use countersign_proto::v1::{
    BeginDecisionRequest, BeginEnrolmentRequest, DecideRequest, Delivery, EnrolRequest,
    PasskeyAssertion, ProposeRequest,
};
use countersign_registry::Registry;
use countersign_signer::passkeys::code::EnrolmentCodes;
use countersign_signer::testing::TestSigner;
use countersign_webauthn::testing::SoftAuthenticator;
use sqlx::Connection as _;
use time::OffsetDateTime;

const PASSKEYS: &str = "[passkeys]\nrequired = true\norigins = [\"http://localhost:7444\"]\n";

fn audit(signer: &TestSigner) -> Output {
    Command::new(bin("countersign"))
        .args(["--home"])
        .arg(signer.home().root())
        .args(["audit", "--verify"])
        .env_remove("COUNTERSIGN_HOME")
        .output()
        .unwrap()
}

/// Runs `sql` on the signer's SQLite ledger with the append-only triggers
/// of `passkey_assertions` dropped (what a writer of the file can do).
async fn tamper(signer: &TestSigner, sql: &'static str) {
    let url = format!("sqlite://{}", signer.home().ledger_path().display());
    let mut db = sqlx::SqliteConnection::connect(&url).await.unwrap();
    let triggers: Vec<(String,)> = sqlx::query_as(
        "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'passkey_assertions'",
    )
    .fetch_all(&mut db)
    .await
    .unwrap();
    for (name,) in triggers {
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP TRIGGER {name}")))
            .execute(&mut db)
            .await
            .unwrap();
    }
    sqlx::raw_sql(sql).execute(&mut db).await.unwrap();
    db.close().await.unwrap();
}

#[tokio::test]
async fn audit_verify_rechecks_each_stored_assertion_and_names_a_bad_one() {
    let signer = TestSigner::start_configured(Registry::default_toml(), None, PASSKEYS)
        .await
        .unwrap();
    let mut approver = signer.client(Role::Approver).await.unwrap();
    let mut head = signer.client(Role::Head).await.unwrap();
    let mut key = SoftAuthenticator::new(3, "localhost", "http://localhost:7444");

    let c = approver
        .begin_enrolment(BeginEnrolmentRequest {})
        .await
        .unwrap()
        .into_inner();
    let (attestation_object, client_data_json) = key.register(&c.creation_challenge);
    let code = EnrolmentCodes::in_dir(&signer.home().signer_dir())
        .issue(OffsetDateTime::now_utc())
        .unwrap()
        .0;
    approver
        .enrol(EnrolRequest {
            challenge_id: c.challenge_id,
            name: "laptop".into(),
            attestation_object,
            client_data_json,
            enrolment_code: code,
            authorization: None,
        })
        .await
        .unwrap();
    let pid = head
        .propose(ProposeRequest {
            operation: "schedule.create".into(),
            arguments_json: r#"{"name":"nightly","cron":"0 3 * * *"}"#.into(),
            session: "s1".into(),
            note: String::new(),
        })
        .await
        .unwrap()
        .into_inner()
        .id;
    let c = approver
        .begin_decision(BeginDecisionRequest {
            proposal_id: pid.clone(),
            delivery: Delivery::Direct.into(),
            execute_in_session: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    let a = key.assert(&c.challenge);
    approver
        .decide(DecideRequest {
            proposal_id: pid.clone(),
            approve: true,
            delivery: Delivery::Direct.into(),
            passkey: Some(PasskeyAssertion {
                challenge_id: c.challenge_id,
                credential_id: a.credential_id,
                authenticator_data: a.authenticator_data,
                client_data_json: a.client_data_json,
                signature: a.signature,
            }),
            ..Default::default()
        })
        .await
        .unwrap();

    let out = audit(&signer);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout.contains("passkey assertions: 1 verified, 0 refused"),
        "{stdout}"
    );

    // The delivery the person approved, changed: the stored answer no
    // longer derives from the facts.
    tamper(
        &signer,
        "UPDATE passkey_assertions SET delivery = 'handoff'",
    )
    .await;
    let out = audit(&signer);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(
        stdout.contains(&format!(
            "REFUSED: passkey assertion 1 (decision {pid}): its stored challenge is not the one its subject derives"
        )),
        "{stdout}"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "countersign: a stored passkey assertion does not verify\n"
    );

    // Back to the facts, but with another signature.
    tamper(
        &signer,
        "UPDATE passkey_assertions SET delivery = 'direct', \
         signature = 'AAAA' || substr(signature, 5)",
    )
    .await;
    let out = audit(&signer);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(
        stdout.contains(&format!(
            "REFUSED: passkey assertion 1 (decision {pid}): the assertion's signature does not verify"
        )),
        "{stdout}"
    );
}
