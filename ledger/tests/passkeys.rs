//! Passkeys: enrolment by code and by an enrolled credential, removal,
//! approvals stored with their assertion in one transaction, single-use
//! challenges, append-only rows, and the audit's cross-check, on both
//! backends.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Kind, OpensChallenges as _, PRINCIPAL, TestLedger, create_schedule, issue};
use countersign_ledger::{
    AssertionPurpose, ChainBreak, ENROLMENT_CODE, Ledger, LedgerError, PasskeyAssertionRecord,
    PasskeyEnrolment, PasskeyRemoval, ProposalStatus, SIGNER_ADMIN,
};

const OTHER: &str = "pr_ffffffffffffffffffffffffffffffff";

/// Credential `n`'s id.
fn credential(n: u32) -> String {
    format!("Y3JlZGVudGlhbC{n:04}")
}

/// Credential `n` of `principal`, authorized by `authorized_by`, counter `count`.
fn enrolment_of(principal: &str, n: u32, authorized_by: &str, count: u32) -> PasskeyEnrolment {
    PasskeyEnrolment {
        credential_id: credential(n),
        principal: principal.into(),
        name: format!("key {n}"),
        public_key: format!("pQECAyYgASFYI{n:04}"),
        sign_count: count,
        attestation_object: "o2NmbXRkbm9uZQ".into(),
        client_data_json: "eyJ0eXBlIjoid2ViYXV0aG4uY3JlYXRlIn0".into(),
        enrolled_by: format!("{principal}/console"),
        authorized_by: authorized_by.into(),
        challenge: format!("ZW5yb2xtZW50{n:04}"),
    }
}

fn enrolment(n: u32, authorized_by: &str) -> PasskeyEnrolment {
    enrolment_of(PRINCIPAL, n, authorized_by, 0)
}

/// An assertion by credential `by` for `purpose` about `subject`, with
/// challenge number `challenge` and counter `count`.
fn assertion(
    by: u32,
    purpose: AssertionPurpose,
    subject: &str,
    challenge: u32,
    count: u32,
) -> PasskeyAssertionRecord {
    PasskeyAssertionRecord {
        credential_id: credential(by),
        purpose,
        subject: subject.into(),
        challenge: format!("Y2hhbGxlbmdl{challenge:032}"),
        challenge_random: format!("cmFuZG9t{challenge:032}"),
        delivery: match purpose {
            AssertionPurpose::Decision => "direct".into(),
            AssertionPurpose::Enrol | AssertionPurpose::Remove => String::new(),
        },
        authenticator_data: "SZYN5YgOjGh0NBcPZHZgW4_krrmihjLHmVzzuoMdl2MFAAAAAQ".into(),
        client_data_json: "eyJ0eXBlIjoid2ViYXV0aG4uZ2V0In0".into(),
        signature: "MEUCIQ".into(),
        sign_count: count,
    }
}

/// A ledger with credential 1 enrolled by code.
async fn with_first_passkey(kind: Kind) -> TestLedger {
    let t = TestLedger::on(kind).await;
    t.ledger
        .enrol_opened(&enrolment(1, ENROLMENT_CODE), None)
        .await
        .unwrap();
    t
}

/// Propose schedule `n` and approve it with `a`.
async fn approve_by_passkey(
    ledger: &Ledger,
    n: u32,
    a: &PasskeyAssertionRecord,
) -> Result<(), LedgerError> {
    let p = create_schedule(n, &format!("s{n}"));
    ledger.insert_proposal(&p).await.unwrap();
    let (_, record) = issue(&p, n, 300);
    ledger.approve_opened(&record, a).await
}

fn proposal_id(n: u32) -> String {
    create_schedule(n, "x").id.into()
}

async fn assert_intact(ledger: &Ledger) {
    let report = ledger.verify_chain().await.unwrap();
    assert!(report.is_intact(), "{report:?}");
}

on_both_backends!(the_first_passkey_is_enrolled_by_code_and_authorizes_the_next);
async fn the_first_passkey_is_enrolled_by_code_and_authorizes_the_next(kind: Kind) {
    let t = with_first_passkey(kind).await;
    let by_first = assertion(1, AssertionPurpose::Enrol, &credential(2), 1, 3);
    t.ledger
        .enrol_opened(&enrolment(2, &credential(1)), Some(&by_first))
        .await
        .unwrap();

    let keys = t.ledger.passkeys(PRINCIPAL).await.unwrap();
    let ids: Vec<(&str, &str)> = keys
        .iter()
        .map(|k| (k.credential_id.as_str(), k.authorized_by.as_str()))
        .collect();
    assert_eq!(
        ids,
        [
            (credential(1).as_str(), ENROLMENT_CODE),
            (credential(2).as_str(), credential(1).as_str())
        ]
    );
    assert!(keys.iter().all(|k| k.is_active()));
    assert_eq!(keys[1].public_key, enrolment(2, "").public_key);
    assert_eq!(keys[1].enrolled_by, format!("{PRINCIPAL}/console"));
    assert!(t.ledger.passkeys(OTHER).await.unwrap().is_empty());

    let stored = t.ledger.passkey_assertions().await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].assertion, by_first);

    let events = t.ledger.events().await.unwrap();
    let enrolled: Vec<_> = events
        .iter()
        .filter(|e| e.kind == "passkey_enrolled")
        .collect();
    assert_eq!(enrolled.len(), 2);
    assert_eq!(enrolled[1].actor, format!("{PRINCIPAL}/console"));
    assert_eq!(enrolled[1].details["credential_id"], credential(2));
    assert_eq!(enrolled[1].details["name"], "key 2");
    assert_eq!(enrolled[1].details["authorized_by"], credential(1));
    assert_intact(&t.ledger).await;
}

on_both_backends!(a_removed_passkey_is_listed_and_authorizes_nothing_more);
async fn a_removed_passkey_is_listed_and_authorizes_nothing_more(kind: Kind) {
    let t = with_first_passkey(kind).await;
    let enrol = assertion(1, AssertionPurpose::Enrol, &credential(2), 1, 1);
    t.ledger
        .enrol_opened(&enrolment(2, &credential(1)), Some(&enrol))
        .await
        .unwrap();
    let remove = assertion(1, AssertionPurpose::Remove, &credential(2), 2, 2);
    let removed = t
        .ledger
        .remove_opened(
            &credential(2),
            "someone/console",
            &credential(1),
            Some(&remove),
        )
        .await
        .unwrap();
    assert_eq!(removed, PasskeyRemoval::Removed);

    let two = t.ledger.passkey(&credential(2)).await.unwrap().unwrap();
    assert!(two.removed_at.is_some());
    assert!(!two.is_active());
    assert_eq!(t.ledger.passkeys(PRINCIPAL).await.unwrap().len(), 2);

    // Again, or unknown: an outcome, nothing written.
    let events = t.ledger.events().await.unwrap().len();
    assert_eq!(
        t.ledger
            .remove_opened(&credential(2), SIGNER_ADMIN, SIGNER_ADMIN, None)
            .await,
        Ok(PasskeyRemoval::AlreadyRemoved)
    );
    assert_eq!(
        t.ledger
            .remove_opened(&credential(9), SIGNER_ADMIN, SIGNER_ADMIN, None)
            .await,
        Ok(PasskeyRemoval::Unknown)
    );
    assert_eq!(t.ledger.events().await.unwrap().len(), events);

    // The removed credential signs nothing more.
    let by_removed = assertion(2, AssertionPurpose::Enrol, &credential(3), 3, 5);
    assert_eq!(
        t.ledger
            .enrol_opened(&enrolment(3, &credential(2)), Some(&by_removed))
            .await,
        Err(LedgerError::UnusablePasskey(credential(2)))
    );
    let decision = assertion(2, AssertionPurpose::Decision, &proposal_id(1), 4, 5);
    assert_eq!(
        approve_by_passkey(&t.ledger, 1, &decision).await,
        Err(LedgerError::UnusablePasskey(credential(2)))
    );
    assert_eq!(t.ledger.passkey(&credential(3)).await.unwrap(), None);

    // A credential may sign its own removal; the admin path needs none.
    let enrol = assertion(1, AssertionPurpose::Enrol, &credential(3), 5, 6);
    t.ledger
        .enrol_opened(&enrolment(3, &credential(1)), Some(&enrol))
        .await
        .unwrap();
    let itself = assertion(3, AssertionPurpose::Remove, &credential(3), 6, 1);
    assert_eq!(
        t.ledger
            .remove_opened(&credential(3), "x/console", &credential(3), Some(&itself))
            .await,
        Ok(PasskeyRemoval::Removed)
    );
    assert_eq!(
        t.ledger
            .remove_opened(&credential(1), SIGNER_ADMIN, SIGNER_ADMIN, None)
            .await,
        Ok(PasskeyRemoval::Removed)
    );
    let removals: Vec<_> = t
        .ledger
        .events()
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "passkey_removed")
        .collect();
    assert_eq!(removals.len(), 3);
    assert_eq!(removals[2].actor, SIGNER_ADMIN);
    assert_eq!(removals[2].details["authorized_by"], SIGNER_ADMIN);
    assert_intact(&t.ledger).await;
}

on_both_backends!(the_sign_count_is_the_greatest_recorded);
async fn the_sign_count_is_the_greatest_recorded(kind: Kind) {
    let t = TestLedger::on(kind).await;
    t.ledger
        .enrol_opened(&enrolment_of(PRINCIPAL, 1, ENROLMENT_CODE, 5), None)
        .await
        .unwrap();
    assert_eq!(
        t.ledger
            .passkey(&credential(1))
            .await
            .unwrap()
            .unwrap()
            .sign_count,
        5
    );
    let a = assertion(1, AssertionPurpose::Decision, &proposal_id(1), 1, 9);
    approve_by_passkey(&t.ledger, 1, &a).await.unwrap();
    // The ledger compares counters again, under the credential's row
    // lock: one that does not increase is refused and nothing is written.
    for (n, count) in [(2, 7), (3, 9)] {
        let a = assertion(1, AssertionPurpose::Decision, &proposal_id(n), n, count);
        assert_eq!(
            approve_by_passkey(&t.ledger, n, &a).await,
            Err(LedgerError::CounterNotIncreased {
                stored: 9,
                received: count
            })
        );
        let p = t.ledger.proposal(&proposal_id(n)).await.unwrap().unwrap();
        assert_eq!(p.status, ProposalStatus::Pending);
    }
    assert_eq!(t.count("passkey_assertions").await, 1);
    let key = t.ledger.passkey(&credential(1)).await.unwrap().unwrap();
    assert_eq!(key.sign_count, 9);
    assert_eq!(t.ledger.passkeys(PRINCIPAL).await.unwrap()[0].sign_count, 9);
    t.ledger
        .enrol_opened(&enrolment_of(PRINCIPAL, 2, ENROLMENT_CODE, u32::MAX), None)
        .await
        .unwrap();
    assert_eq!(
        t.ledger
            .passkey(&credential(2))
            .await
            .unwrap()
            .unwrap()
            .sign_count,
        u32::MAX
    );
}

on_both_backends!(an_approval_by_passkey_stores_the_issuance_and_the_assertion);
async fn an_approval_by_passkey_stores_the_issuance_and_the_assertion(kind: Kind) {
    let t = with_first_passkey(kind).await;
    let mut a = assertion(1, AssertionPurpose::Decision, &proposal_id(1), 1, 1);
    a.delivery = "handoff".into();
    approve_by_passkey(&t.ledger, 1, &a).await.unwrap();

    let pid = proposal_id(1);
    let got = t.ledger.proposal(&pid).await.unwrap().unwrap();
    assert_eq!(got.status, ProposalStatus::Approved);
    let stored = t.ledger.passkey_assertion_for(&pid).await.unwrap().unwrap();
    assert_eq!(stored.assertion, a);
    assert_eq!(t.ledger.passkey_assertions().await.unwrap(), [stored]);
    let approved = t
        .ledger
        .events()
        .await
        .unwrap()
        .into_iter()
        .find(|e| e.kind == "approved")
        .unwrap();
    assert_eq!(approved.details["passkey"], credential(1));

    // Without a passkey: no assertion, and the event as before.
    common::approve(&t.ledger, &create_schedule(2, "b"), 2).await;
    assert_eq!(
        t.ledger
            .passkey_assertion_for(&proposal_id(2))
            .await
            .unwrap(),
        None
    );
    let plain = t.ledger.events().await.unwrap().pop().unwrap();
    assert_eq!(plain.details.get("passkey"), None);
    assert_intact(&t.ledger).await;
}

on_both_backends!(refuses_a_reused_challenge_and_writes_nothing);
async fn refuses_a_reused_challenge_and_writes_nothing(kind: Kind) {
    let t = with_first_passkey(kind).await;
    let first = assertion(1, AssertionPurpose::Decision, &proposal_id(1), 7, 1);
    approve_by_passkey(&t.ledger, 1, &first).await.unwrap();
    let events = t.ledger.events().await.unwrap().len();

    // The same challenge for another approval: refused, and the issuance
    // that came with it is not stored either.
    let replayed = assertion(1, AssertionPurpose::Decision, &proposal_id(2), 7, 2);
    assert_eq!(
        approve_by_passkey(&t.ledger, 2, &replayed).await,
        Err(LedgerError::ChallengeUsed)
    );
    let second = t.ledger.proposal(&proposal_id(2)).await.unwrap().unwrap();
    assert_eq!(second.status, ProposalStatus::Pending);
    assert_eq!(second.issuance, None);
    assert_eq!(t.count("issuances").await, 1);
    assert_eq!(t.count("decisions").await, 1);
    assert_eq!(t.count("passkey_assertions").await, 1);
    // One `proposed` event more, nothing else.
    assert_eq!(t.ledger.events().await.unwrap().len(), events + 1);

    // Nor for an enrolment or a removal.
    let enrol = assertion(1, AssertionPurpose::Enrol, &credential(2), 7, 3);
    assert_eq!(
        t.ledger
            .enrol_opened(&enrolment(2, &credential(1)), Some(&enrol))
            .await,
        Err(LedgerError::ChallengeUsed)
    );
    assert_eq!(t.ledger.passkey(&credential(2)).await.unwrap(), None);
    let remove = assertion(1, AssertionPurpose::Remove, &credential(1), 7, 3);
    assert_eq!(
        t.ledger
            .remove_opened(&credential(1), "x/console", &credential(1), Some(&remove))
            .await,
        Err(LedgerError::ChallengeUsed)
    );
    assert!(
        t.ledger
            .passkey(&credential(1))
            .await
            .unwrap()
            .unwrap()
            .is_active()
    );

    // A fresh challenge goes through.
    let fresh = assertion(1, AssertionPurpose::Decision, &proposal_id(2), 8, 2);
    let (_, record) = issue(&create_schedule(2, "s2"), 2, 300);
    t.ledger.approve_opened(&record, &fresh).await.unwrap();
    assert_intact(&t.ledger).await;
}

on_both_backends!(refuses_an_assertion_that_does_not_fit_its_write);
async fn refuses_an_assertion_that_does_not_fit_its_write(kind: Kind) {
    let t = with_first_passkey(kind).await;
    t.ledger
        .enrol_opened(&enrolment_of(OTHER, 5, ENROLMENT_CODE, 0), None)
        .await
        .unwrap();
    let pid = proposal_id(1);
    let mismatch = || Err(LedgerError::AssertionMismatch(format!("approval of {pid}")));

    // Another proposal, another purpose, a delivery that is not one.
    let other_subject = assertion(1, AssertionPurpose::Decision, &proposal_id(9), 1, 1);
    assert_eq!(
        approve_by_passkey(&t.ledger, 1, &other_subject).await,
        mismatch()
    );
    let enrol_purpose = assertion(1, AssertionPurpose::Enrol, &pid, 2, 1);
    let (_, record) = issue(&create_schedule(1, "s1"), 1, 300);
    assert_eq!(
        t.ledger.approve_opened(&record, &enrol_purpose).await,
        mismatch()
    );
    let mut no_delivery = assertion(1, AssertionPurpose::Decision, &pid, 3, 1);
    no_delivery.delivery = String::new();
    assert_eq!(
        t.ledger.approve_opened(&record, &no_delivery).await,
        mismatch()
    );
    // Another principal's credential, an unknown one.
    for by in [5, 6] {
        let a = assertion(by, AssertionPurpose::Decision, &pid, 10 + by, 1);
        assert_eq!(
            t.ledger.approve_opened(&record, &a).await,
            Err(LedgerError::UnusablePasskey(credential(by)))
        );
    }
    assert_eq!(
        t.ledger.proposal(&pid).await.unwrap().unwrap().status,
        ProposalStatus::Pending
    );

    // An enrolment: authority and assertion must agree.
    let enrol = assertion(1, AssertionPurpose::Enrol, &credential(2), 20, 1);
    let expect = Err(LedgerError::AssertionMismatch(format!(
        "enrolment of {}",
        credential(2)
    )));
    assert_eq!(
        t.ledger
            .enrol_opened(&enrolment(2, &credential(1)), None)
            .await,
        expect
    );
    assert_eq!(
        t.ledger
            .enrol_opened(&enrolment(2, ENROLMENT_CODE), Some(&enrol))
            .await,
        expect
    );
    let by_other = assertion(5, AssertionPurpose::Enrol, &credential(2), 21, 1);
    assert_eq!(
        t.ledger
            .enrol_opened(&enrolment(2, &credential(5)), Some(&by_other))
            .await,
        Err(LedgerError::UnusablePasskey(credential(5)))
    );
    assert_eq!(
        t.ledger
            .enrol_opened(&enrolment(1, ENROLMENT_CODE), None)
            .await,
        Err(LedgerError::DuplicatePasskey(credential(1)))
    );
    // A removal without an assertion is the admin's only.
    assert_eq!(
        t.ledger
            .remove_opened(&credential(1), "x/console", &credential(1), None)
            .await,
        Err(LedgerError::AssertionMismatch(format!(
            "removal of {}",
            credential(1)
        )))
    );
    assert_eq!(t.count("passkey_assertions").await, 0);
    assert_eq!(t.count("passkeys").await, 2);
    assert_eq!(t.count("passkey_removals").await, 0);
    assert_intact(&t.ledger).await;
}

/// A ledger with every passkey table holding a row.
async fn one_of_each(kind: Kind) -> TestLedger {
    let t = with_first_passkey(kind).await;
    let a = assertion(1, AssertionPurpose::Decision, &proposal_id(1), 1, 1);
    approve_by_passkey(&t.ledger, 1, &a).await.unwrap();
    t.ledger
        .enrol_opened(&enrolment(2, ENROLMENT_CODE), None)
        .await
        .unwrap();
    t.ledger
        .remove_opened(&credential(2), SIGNER_ADMIN, SIGNER_ADMIN, None)
        .await
        .unwrap();
    t
}

on_both_backends!(refuses_update_and_delete_of_passkey_rows);
async fn refuses_update_and_delete_of_passkey_rows(kind: Kind) {
    let t = one_of_each(kind).await;
    let mut raw = t.raw().await;
    for (table, message) in [
        ("passkeys", "passkeys are append-only"),
        ("passkey_removals", "passkey removals are append-only"),
        ("passkey_assertions", "passkey assertions are append-only"),
    ] {
        for sql in [
            format!("UPDATE {table} SET credential_id = credential_id"),
            format!("DELETE FROM {table}"),
        ] {
            let err = raw.exec(&sql).await.expect_err(&sql);
            assert!(err.contains(message), "{sql}: {err}");
        }
    }
    raw.close().await;
    assert_eq!(t.count("passkeys").await, 2);
    assert_eq!(t.count("passkey_removals").await, 1);
    assert_eq!(t.count("passkey_assertions").await, 1);
}

/// `INSERT OR REPLACE` would delete the conflicting row without a DELETE
/// trigger firing; each passkey table refuses an existing key, and a
/// challenge accepted before under its own message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_or_replace_cannot_remove_a_passkey_row_on_sqlite() {
    let t = one_of_each(Kind::Sqlite).await;
    let mut raw = t.raw().await;
    for table in ["passkeys", "passkey_removals", "passkey_assertions"] {
        for verb in ["INSERT OR REPLACE", "REPLACE"] {
            let err = raw
                .exec(&format!("{verb} INTO {table} SELECT * FROM {table}"))
                .await
                .expect_err(table);
            assert!(err.contains(": the key exists"), "{table}: {err}");
        }
    }
    let err = raw
        .exec(
            "INSERT OR REPLACE INTO passkey_assertions (credential_id, purpose, subject,
                 challenge, challenge_random, delivery, authenticator_data, client_data_json,
                 signature, sign_count, at)
             SELECT credential_id, 'enrol', credential_id, challenge, challenge_random, '',
                 authenticator_data, client_data_json, signature, sign_count, at
             FROM passkey_assertions",
        )
        .await
        .unwrap_err();
    assert!(err.contains("passkey challenges are single-use"), "{err}");
    raw.close().await;
    assert_eq!(t.count("passkey_assertions").await, 1);
    assert_intact(&t.ledger).await;
}

fn disagreement(report: countersign_ledger::ChainReport) -> String {
    match report.first_break {
        Some(ChainBreak::Disagrees { detail }) => detail,
        other => panic!("expected a disagreement, got {other:?}"),
    }
}

on_both_backends!(the_audit_reports_a_passkey_enrolled_without_its_event);
async fn the_audit_reports_a_passkey_enrolled_without_its_event(kind: Kind) {
    let t = with_first_passkey(kind).await;
    assert_intact(&t.ledger).await;
    let mut raw = t.raw().await;
    raw.exec(&format!(
        "INSERT INTO passkeys (credential_id, principal, name, public_key, sign_count,
             attestation_object, client_data_json, enrolled_at, enrolled_by, authorized_by)
         VALUES ('forged', '{PRINCIPAL}', 'mine', 'cGs', 0, 'a', 'c', '2026-01-01T00:00:00Z',
             'x', 'enrolment-code')"
    ))
    .await
    .unwrap();
    raw.close().await;
    // SHA-256 of the stored public key text "cGs".
    let key = "acb7298138007cca5358c9279cad48d0eabef59c250ec92812867e5417e67fa4";
    let got = disagreement(t.ledger.verify_chain().await.unwrap());
    assert_eq!(
        got,
        format!(
            "the ledger records `passkey_enrolled forged {PRINCIPAL} enrolment-code {key}` \
             1 time(s) but the event log 0"
        )
    );
}

on_both_backends!(the_audit_reports_a_removal_or_an_assertion_without_its_event);
async fn the_audit_reports_a_removal_or_an_assertion_without_its_event(kind: Kind) {
    let t = with_first_passkey(kind).await;
    let mut raw = t.raw().await;
    raw.exec(&format!(
        "INSERT INTO passkey_removals (credential_id, removed_at, removed_by, authorized_by)
         VALUES ('{}', '2026-01-01T00:00:00Z', 'x', 'signer-admin')",
        credential(1)
    ))
    .await
    .unwrap();
    raw.close().await;
    assert_eq!(
        disagreement(t.ledger.verify_chain().await.unwrap()),
        format!(
            "the ledger records `passkey_removed {} signer-admin` 1 time(s) but the event log 0",
            credential(1)
        )
    );

    // A decision assertion for a proposal never issued, the schema's
    // trigger lifted as only the owner can.
    let t = with_first_passkey(kind).await;
    let lift = match kind {
        Kind::Sqlite => "DROP TRIGGER passkey_assertions_need_subject",
        Kind::Postgres => {
            "ALTER TABLE passkey_assertions DISABLE TRIGGER passkey_assertions_need_subject"
        }
    };
    let mut raw = t.raw().await;
    raw.exec(lift).await.unwrap();
    raw.exec(&format!(
        "INSERT INTO passkey_assertions (credential_id, purpose, subject, challenge,
             challenge_random, delivery, authenticator_data, client_data_json, signature,
             sign_count, at)
         VALUES ('{}', 'decision', 'prop_none', 'c', 'r', 'direct', 'a', 'j', 's', 1,
             '2026-01-01T00:00:00Z')",
        credential(1)
    ))
    .await
    .unwrap();
    raw.close().await;
    assert_eq!(
        disagreement(t.ledger.verify_chain().await.unwrap()),
        format!(
            "the passkey assertion of {} approves prop_none, which has no issuance",
            credential(1)
        )
    );
}

on_both_backends!(the_schema_refuses_an_assertion_without_its_subject);
async fn the_schema_refuses_an_assertion_without_its_subject(kind: Kind) {
    let t = with_first_passkey(kind).await;
    let mut raw = t.raw().await;
    let err = raw
        .exec(&format!(
            "INSERT INTO passkey_assertions (credential_id, purpose, subject, challenge,
                 challenge_random, delivery, authenticator_data, client_data_json, signature,
                 sign_count, at)
             VALUES ('{}', 'decision', 'prop_none', 'c', 'r', 'direct', 'a', 'j', 's', 1,
                 '2026-01-01T00:00:00Z')",
            credential(1)
        ))
        .await
        .unwrap_err();
    assert!(
        err.contains("a passkey assertion needs an enrolled passkey"),
        "{err}"
    );
    let err = raw
        .exec(&format!(
            "INSERT INTO passkeys (credential_id, principal, name, public_key, sign_count,
                 attestation_object, client_data_json, enrolled_at, enrolled_by, authorized_by)
             VALUES ('x', '{OTHER}', 'n', 'k', 0, 'a', 'c', '2026-01-01T00:00:00Z', 'x', '{}')",
            credential(1)
        ))
        .await
        .unwrap_err();
    assert!(
        err.contains("a passkey needs an enrolment code or an enrolled passkey"),
        "{err}"
    );
    raw.close().await;
}
