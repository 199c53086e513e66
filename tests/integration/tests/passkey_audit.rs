//! `countersign audit --verify` rechecks every stored passkey assertion
//! from public data (the `countersign` binary, against a real signer's
//! SQLite ledger): an approval's assertion verifies; the same row with its
//! signature altered, or with its delivery changed so that it no longer
//! derives the challenge the authenticator signed, is reported by id and
//! fails the audit. Each quorum approver's assertion likewise, and a
//! passkey rewritten as another approver's.
#![allow(clippy::unwrap_used)]

use std::process::{Command, Output};

use countersign_identity::Role;
use countersign_integration_tests::bin;
use countersign_proto::v1::{BeginDecisionRequest, DecideRequest, Delivery, ProposeRequest};
use countersign_registry::Registry;
use countersign_signer::testing::TestSigner;
use countersign_webauthn::testing::SoftAuthenticator;
use sqlx::Connection as _;

mod support;

use support::passkeys::{enrol, named, wire};

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

    enrol(&signer, &mut approver, &key, None, "laptop").await;
    let pid = head
        .propose(ProposeRequest {
            operation: "schedule.create".into(),
            arguments_json: r#"{"name":"nightly","cron":"0 3 * * *"}"#.into(),
            session: "s1".into(),
            note: String::new(),
            idempotency_key: String::new(),
            head: "cli".into(),
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
        // Each approver enrols with the code drawn for them.
        enrol(&signer, &mut client, &key, Some(name), name).await;
        people.push((client, key, name));
    }
    let pid = head
        .propose(ProposeRequest {
            operation: "schedule.create".into(),
            arguments_json: r#"{"name":"nightly","cron":"0 3 * * *"}"#.into(),
            session: "s1".into(),
            note: String::new(),
            idempotency_key: String::new(),
            head: "cli".into(),
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
