//! `countersign audit --verify` rechecks every stored passkey assertion
//! from public data (the `countersign` binary, against a real signer's
//! SQLite ledger): an approval's assertion verifies; the same row with its
//! signature altered, or with its delivery changed so that it no longer
//! derives the challenge the authenticator signed, is reported by id and
//! fails the audit. Each quorum approver's assertion likewise, and a
//! passkey rewritten as another approver's.
#![allow(clippy::unwrap_used)]

use std::process::{Command, Output};

use countersign_identity::pki::{CaMaterial, issue_named_approver_cert};
use countersign_identity::{ApproverName, Role, tls};
use countersign_integration_tests::bin;
use countersign_proto::v1::signer_client::SignerClient;
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
use tonic::transport::Channel;

const PASSKEYS: &str =
    "[passkeys]\nrequired = true\norigins = [\"https://console.localhost:7444\"]\n";

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
async fn tamper(signer: &TestSigner, sql: &str) {
    tamper_table(signer, "passkey_assertions", sql).await;
}

/// Runs `sql` with the triggers of `table` dropped.
async fn tamper_table(signer: &TestSigner, table: &str, sql: &str) {
    let url = format!("sqlite://{}", signer.home().ledger_path().display());
    let mut db = sqlx::SqliteConnection::connect(&url).await.unwrap();
    let triggers: Vec<(String,)> =
        sqlx::query_as("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = $1")
            .bind(table)
            .fetch_all(&mut db)
            .await
            .unwrap();
    for (name,) in triggers {
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP TRIGGER {name}")))
            .execute(&mut db)
            .await
            .unwrap();
    }
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(&mut db)
        .await
        .unwrap();
    db.close().await.unwrap();
}

#[tokio::test]
async fn audit_verify_rechecks_each_stored_assertion_and_names_a_bad_one() {
    let signer = TestSigner::start_configured(Registry::default_toml(), None, PASSKEYS)
        .await
        .unwrap();
    let mut approver = signer.client(Role::Approver).await.unwrap();
    let mut head = signer.client(Role::Head).await.unwrap();
    let mut key = SoftAuthenticator::new(3, "console.localhost", "https://console.localhost:7444");

    let c = approver
        .begin_enrolment(BeginEnrolmentRequest {})
        .await
        .unwrap()
        .into_inner();
    let (attestation_object, client_data_json) = key.register(&c.creation_challenge);
    let code = EnrolmentCodes::in_ledger(signer.state().ledger().clone())
        .issue(None, OffsetDateTime::now_utc())
        .await
        .unwrap()
        .0;
    approver
        .enrol(EnrolRequest {
            challenge_id: c.challenge_id,
            name: "laptop".into(),
            attestation_object,
            client_data_json,
            enrolment_code: code,
        })
        .await
        .unwrap();
    let pid = head
        .propose(ProposeRequest {
            operation: "schedule.create".into(),
            arguments_json: r#"{"name":"nightly","cron":"0 3 * * *"}"#.into(),
            session: "s1".into(),
            note: String::new(),
            idempotency_key: String::new(),
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
            passkey: Some(wire(c.challenge_id, a)),
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

/// A client with the named approver certificate `name` of the signer's principal.
async fn named(signer: &TestSigner, name: &str) -> SignerClient<Channel> {
    let ca = CaMaterial::load(signer.home()).unwrap();
    let now = OffsetDateTime::now_utc();
    let cert = issue_named_approver_cert(
        &ca,
        signer.principal(),
        &ApproverName::parse(name).unwrap(),
        now - time::Duration::hours(1),
        now + time::Duration::hours(1),
    )
    .unwrap();
    let config = tls::client_config_from_pem(ca.cert_pem(), &cert.cert_pem, &cert.key_pem);
    signer.client_with(config).await.unwrap()
}

fn wire(challenge_id: String, a: countersign_webauthn::Assertion) -> PasskeyAssertion {
    PasskeyAssertion {
        challenge_id,
        credential_id: a.credential_id,
        authenticator_data: a.authenticator_data,
        client_data_json: a.client_data_json,
        signature: a.signature,
    }
}

#[tokio::test]
async fn audit_verify_rechecks_every_quorum_approvers_assertion_and_whose_passkey_it_was() {
    let registry = Registry::default_toml().replacen(
        "[[operation]]\nname = \"schedule.create\"",
        "[[operation]]\nname = \"schedule.create\"\nquorum = { required = 2, approvers = [\"alice\", \"bob\"] }",
        1,
    );
    let signer = TestSigner::start_configured(&registry, None, PASSKEYS)
        .await
        .unwrap();
    let principal = signer.principal().to_owned();
    let mut head = signer.client(Role::Head).await.unwrap();
    let mut people = Vec::new();
    for (seed, name) in [(4, "alice"), (5, "bob")] {
        let mut client = named(&signer, name).await;
        let key =
            SoftAuthenticator::new(seed, "console.localhost", "https://console.localhost:7444");
        let c = client
            .begin_enrolment(BeginEnrolmentRequest {})
            .await
            .unwrap()
            .into_inner();
        let (attestation_object, client_data_json) = key.register(&c.creation_challenge);
        // Each approver enrols with the code drawn for them.
        let enrolment_code = EnrolmentCodes::in_ledger(signer.state().ledger().clone())
            .issue(
                Some(&ApproverName::parse(name).unwrap()),
                OffsetDateTime::now_utc(),
            )
            .await
            .unwrap()
            .0;
        client
            .enrol(EnrolRequest {
                challenge_id: c.challenge_id,
                name: name.into(),
                attestation_object,
                client_data_json,
                enrolment_code,
            })
            .await
            .unwrap();
        people.push((client, key, name));
    }
    let pid = head
        .propose(ProposeRequest {
            operation: "schedule.create".into(),
            arguments_json: r#"{"name":"nightly","cron":"0 3 * * *"}"#.into(),
            session: "s1".into(),
            note: String::new(),
            idempotency_key: String::new(),
        })
        .await
        .unwrap()
        .into_inner()
        .id;
    for (client, key, _) in &mut people {
        let c = client
            .begin_decision(BeginDecisionRequest {
                proposal_id: pid.clone(),
                delivery: Delivery::Handoff.into(),
                execute_in_session: String::new(),
            })
            .await
            .unwrap()
            .into_inner();
        let a = key.assert(&c.challenge);
        client
            .decide(DecideRequest {
                proposal_id: pid.clone(),
                approve: true,
                delivery: Delivery::Handoff.into(),
                passkey: Some(wire(c.challenge_id, a)),
                ..Default::default()
            })
            .await
            .unwrap();
    }

    // The issuance's (bob's) and each approver's: 3 verified (each
    // enrolment was authorized by a code, not an assertion).
    let out = audit(&signer);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout.contains("passkey assertions: 3 verified, 0 refused"),
        "{stdout}"
    );

    // alice's answer, made for a handoff, recorded as if for direct delivery.
    tamper_table(
        &signer,
        "quorum_passkey_assertions",
        &format!("UPDATE quorum_passkey_assertions SET delivery = 'direct' WHERE approver = '{principal}/alice'"),
    )
    .await;
    let out = audit(&signer);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(
        stdout.contains(&format!(
            "REFUSED: quorum passkey assertion of {principal}/alice (decision {pid}): its stored challenge is not the one its subject derives"
        )),
        "{stdout}"
    );

    // Back, but alice's passkey rewritten as bob's.
    tamper_table(
        &signer,
        "quorum_passkey_assertions",
        "UPDATE quorum_passkey_assertions SET delivery = 'handoff'",
    )
    .await;
    tamper_table(
        &signer,
        "passkeys",
        &format!("UPDATE passkeys SET enrolled_by = '{principal}/bob'"),
    )
    .await;
    let out = audit(&signer);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(
        stdout.contains(&format!(
            "REFUSED: quorum passkey assertion of {principal}/alice (decision {pid}): credential"
        )) && stdout.contains(&format!(
            "was enrolled by {principal}/bob, not by {principal}/alice"
        )),
        "{stdout}"
    );
}
