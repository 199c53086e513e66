//! PostgreSQL role separation (`deploy/postgres-roles.sql`): the signer and
//! the heads each do their own work through the ledger under their own role,
//! and every write outside a role's share is refused by the server.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};

use common::{approve, create_schedule, verified};
use countersign_ledger::testing::TempPgDatabase;
use countersign_ledger::{ConsumeStart, EffectOutcome, Ledger};
use sqlx::{AssertSqlSafe, Connection as _, PgConnection};

const ROLES_SQL: &str = include_str!("../../deploy/postgres-roles.sql");

/// A migrated ledger database with the role script applied by its owner.
async fn with_roles() -> TempPgDatabase {
    let db = TempPgDatabase::create().await.unwrap();
    Ledger::open(db.url()).await.unwrap();
    let mut owner = PgConnection::connect(db.url()).await.unwrap();
    sqlx::raw_sql(ROLES_SQL).execute(&mut owner).await.unwrap();
    // Running it again changes nothing and does not fail.
    sqlx::raw_sql(ROLES_SQL).execute(&mut owner).await.unwrap();
    owner.close().await.unwrap();
    db
}

/// Run each statement as `role` and assert the server refuses it.
async fn assert_refused(db: &TempPgDatabase, role: &str, statements: &[&str]) {
    let mut conn = PgConnection::connect(&db.url_as(role)).await.unwrap();
    for sql in statements {
        let err = sqlx::raw_sql(AssertSqlSafe(sql.to_string()))
            .execute(&mut conn)
            .await
            .expect_err(sql);
        let message = err.to_string();
        assert!(
            ["permission denied", "must be owner", "append-only"]
                .iter()
                .any(|m| message.contains(m)),
            "{role}: {sql}: {message}"
        );
    }
    conn.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_role_does_its_own_work_through_the_ledger() {
    let db = with_roles().await;
    let signer = Ledger::open(&db.url_as("countersign_signer"))
        .await
        .unwrap();
    let head = Ledger::open(&db.url_as("countersign_head")).await.unwrap();

    let p = create_schedule(1, "nightly");
    let token = approve(&signer, &p, 1).await;
    let ConsumeStart::Fresh(intent) = head
        .begin_consume(&verified(&p, &token), common::NO_LEASE)
        .await
        .unwrap()
    else {
        panic!("expected a fresh intent");
    };
    let result = head.apply_builtin(&intent).await.unwrap();
    head.complete(&intent, &EffectOutcome::Applied { result })
        .await
        .unwrap();
    assert!(matches!(
        head.begin_consume(&verified(&p, &token), common::NO_LEASE)
            .await
            .unwrap(),
        ConsumeStart::Replay(_)
    ));

    // The signer revokes another proposal's proof; the head is refused it.
    let q = create_schedule(2, "weekly");
    let token = approve(&signer, &q, 2).await;
    signer.revoke(&q.id, common::PRINCIPAL, "no").await.unwrap();
    assert!(
        head.begin_consume(&verified(&q, &token), common::NO_LEASE)
            .await
            .is_err()
    );
    assert!(head.verify_chain().await.unwrap().is_intact());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_cannot_write_issuances_proposals_decisions_or_events() {
    let db = with_roles().await;
    let owner = Ledger::open(db.url()).await.unwrap();
    let p = create_schedule(1, "nightly");
    approve(&owner, &p, 1).await;
    let q = create_schedule(2, "weekly");
    owner.insert_proposal(&q).await.unwrap();

    assert_refused(
        &db,
        "countersign_head",
        &[
            // Minting an issuance, or a decision for one.
            "INSERT INTO decisions (proposal_id, decision, principal, decided_at)
             VALUES ('prop_00000000000000000000000000000002', 'approve', 'x', 'x')",
            "INSERT INTO issuances SELECT 'prop_00000000000000000000000000000002', 'h', 'n',
                 principal, session, operation, arguments_sha256, contract_revision,
                 policy_revision, 'human:cli', 'a', 'x', 'x'
             FROM issuances",
            // Changing an issuance, a proposal's canonical arguments or a decision.
            "UPDATE issuances SET expires_at = '2999-01-01T00:00:00Z'",
            "DELETE FROM issuances",
            "UPDATE proposals SET arguments_json = '{}'",
            "UPDATE proposals SET id = id",
            "INSERT INTO proposals SELECT 'prop_x', principal, session, operation,
                 arguments_json, arguments_sha256, contract_revision, policy_revision,
                 note, preview, created_at FROM proposals LIMIT 1",
            "UPDATE decisions SET decision = 'deny'",
            "DELETE FROM decisions",
            "INSERT INTO revocations (proposal_id, principal, reason, revoked_at)
             VALUES ('prop_00000000000000000000000000000001', 'x', 'x', 'x')",
            // Rewriting history.
            "UPDATE events SET actor = 'x'",
            "DELETE FROM events",
            "TRUNCATE events",
            "UPDATE chain_heads SET count = 0",
            "UPDATE chain_heads SET hash = 'x'",
            "INSERT INTO chain_heads (chain, count, hash) VALUES ('x', 5, 'x')",
            "DELETE FROM chain_heads",
            "DROP TRIGGER events_append_only ON events",
            "ALTER TABLE events DISABLE TRIGGER USER",
        ],
    )
    .await;
    assert!(owner.verify_chain().await.unwrap().is_intact());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_signer_cannot_consume_or_apply_and_nobody_edits_events() {
    let db = with_roles().await;
    let owner = Ledger::open(db.url()).await.unwrap();
    let p = create_schedule(1, "nightly");
    approve(&owner, &p, 1).await;

    assert_refused(
        &db,
        "countersign_signer",
        &[
            "INSERT INTO consumed_nonces SELECT nonce, proposal_id, 'x' FROM issuances",
            "INSERT INTO state (namespace, key, value, updated_at) VALUES ('s', 'k', '{}', 'x')",
            "UPDATE events SET actor = 'x'",
            "DELETE FROM events",
            "UPDATE chain_heads SET count = 0",
            "INSERT INTO chain_heads (chain, count, hash) VALUES ('x', 5, 'x')",
        ],
    )
    .await;
    // The owner holds every privilege; the triggers still refuse it.
    let mut conn = PgConnection::connect(db.url()).await.unwrap();
    for sql in [
        "UPDATE events SET actor = 'x'",
        "DELETE FROM events",
        "TRUNCATE events",
    ] {
        let err = sqlx::raw_sql(sql).execute(&mut conn).await.unwrap_err();
        assert!(
            err.to_string().contains("events are append-only"),
            "{sql}: {err}"
        );
    }
    conn.close().await.unwrap();
}

/// The review's forgery: as the head role, three INSERTs (consumed nonce,
/// intent, completion) made an approved, never-run proposal read
/// `applied`. A consumed nonce now needs the proof's consume key, which
/// neither the stored proof hash nor anything else a head can read gives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_cannot_consume_without_the_proof() {
    let db = with_roles().await;
    let owner = Ledger::open(db.url()).await.unwrap();
    let p = create_schedule(1, "nightly");
    let token = approve(&owner, &p, 1).await;

    let mut head = PgConnection::connect(&db.url_as("countersign_head"))
        .await
        .unwrap();
    for key in [
        "NULL",
        // The proof's SHA-256, which every role can read.
        "(SELECT proof_sha256 FROM issuances)",
        // The stored digest itself.
        "(SELECT consume_digest FROM issuances)",
        "'not hex'",
    ] {
        let forged = format!(
            "WITH n AS (
                 INSERT INTO consumed_nonces (nonce, proposal_id, consumed_at, consume_key)
                 SELECT nonce, proposal_id, 'x', {key} FROM issuances)
             INSERT INTO intents (nonce, proposal_id, principal, session, operation,
                 arguments_json, proof_sha256, recorded_at)
             SELECT nonce, proposal_id, principal, session, operation, '{{}}', proof_sha256, 'x'
             FROM issuances"
        );
        let err = sqlx::raw_sql(AssertSqlSafe(forged))
            .execute(&mut head)
            .await
            .expect_err(key)
            .to_string();
        assert!(
            err.contains("a consumption needs the issued proof"),
            "{key}: {err}"
        );
    }
    head.close().await.unwrap();
    for table in ["consumed_nonces", "intents", "completions"] {
        let n: i64 = sqlx::query_scalar(AssertSqlSafe(format!("SELECT COUNT(*) FROM {table}")))
            .fetch_one(&mut PgConnection::connect(db.url()).await.unwrap())
            .await
            .unwrap();
        assert_eq!(n, 0, "{table}");
    }

    // The holder of the proof consumes it, once; the key is not stored.
    let head = Ledger::open(&db.url_as("countersign_head")).await.unwrap();
    let done = head
        .consume_builtin(&verified(&p, &token), "schedule.create")
        .await
        .unwrap();
    assert!(matches!(done, countersign_ledger::Consumed::Completed(_)));
    let stored: Option<String> = sqlx::query_scalar("SELECT consume_key FROM consumed_nonces")
        .fetch_one(&mut PgConnection::connect(db.url()).await.unwrap())
        .await
        .unwrap();
    assert_eq!(stored, None);
    assert!(head.verify_chain().await.unwrap().is_intact());
}

/// Under the head role, a batch of consumptions takes the short way (every
/// job's writes in one statement): were a privilege missing for it, the
/// batch would quietly fall back to a write per job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_head_role_writes_a_batch_the_short_way() {
    let db = with_roles().await;
    let owner = Ledger::open(db.url()).await.unwrap();
    let head = Ledger::open(&db.url_as("countersign_head")).await.unwrap();
    let mut proofs = Vec::new();
    for n in 1..=4 {
        let p = create_schedule(n, &format!("schedule-{n}"));
        let token = approve(&owner, &p, n).await;
        proofs.push(verified(&p, &token));
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let into = Arc::clone(&seen);
    head.observe_batches(Arc::new(move |b| into.lock().unwrap().push(b)));

    // Hold the principal's chain: the first consumption waits for it, the
    // others queue behind and make the next batch.
    let mut holder = PgConnection::connect(db.url()).await.unwrap();
    let hold = format!(
        "BEGIN; SELECT count FROM countersign_lock_chain('{}')",
        common::PRINCIPAL
    );
    sqlx::raw_sql(AssertSqlSafe(hold))
        .execute(&mut holder)
        .await
        .unwrap();
    let settle = || tokio::time::sleep(std::time::Duration::from_millis(300));
    let consume = |proof: countersign_verifier::VerifiedProof| {
        let head = head.clone();
        tokio::spawn(async move { head.consume_builtin(&proof, "schedule.create").await })
    };
    let mut proofs = proofs.into_iter();
    let leader = consume(proofs.next().unwrap());
    settle().await;
    let queued: Vec<_> = proofs.map(consume).collect();
    settle().await;
    sqlx::raw_sql("ROLLBACK")
        .execute(&mut holder)
        .await
        .unwrap();
    for task in std::iter::once(leader).chain(queued) {
        let done = task.await.unwrap().unwrap();
        assert!(matches!(done, countersign_ledger::Consumed::Completed(_)));
    }
    let at_once: Vec<_> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|b| (b.size(), b.checked_at_once))
        .collect();
    assert_eq!(at_once, vec![(1, false), (3, true)]);
    assert!(head.verify_chain().await.unwrap().is_intact());
}

/// The head role may write the state store (it applies builtin effects);
/// a write that no applied effect explains is caught by the audit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_write_by_the_head_role_outside_an_effect_fails_the_audit() {
    let db = with_roles().await;
    let owner = Ledger::open(db.url()).await.unwrap();
    let mut head = PgConnection::connect(&db.url_as("countersign_head"))
        .await
        .unwrap();
    sqlx::raw_sql(
        "INSERT INTO state (principal, namespace, key, value, updated_at)
         VALUES ('pr_x', 'schedules', 'forged', '{}', 'x')",
    )
    .execute(&mut head)
    .await
    .unwrap();
    head.close().await.unwrap();
    let report = owner.verify_chain().await.unwrap();
    assert!(
        matches!(
            &report.first_break,
            Some(countersign_ledger::ChainBreak::Disagrees { detail }) if detail.contains("forged")
        ),
        "{report:?}"
    );
}

/// A person's resolution of an uncertain execution is recorded by the
/// signer (`ResolveUncertain`, approver role), under its own role.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_signer_records_a_persons_resolution() {
    let db = with_roles().await;
    let signer = Ledger::open(&db.url_as("countersign_signer"))
        .await
        .unwrap();
    let head = Ledger::open(&db.url_as("countersign_head")).await.unwrap();
    let p = common::proposal(1, "demo.echo", serde_json::json!({"message": "hi"}));
    let token = approve(&signer, &p, 1).await;
    let ConsumeStart::Fresh(_) = head
        .begin_consume(&verified(&p, &token), common::NO_LEASE)
        .await
        .unwrap()
    else {
        panic!("expected a fresh intent");
    };
    let done = signer
        .resolve_uncertain(&p.id, false, "approver:pr_x")
        .await
        .unwrap();
    assert_eq!(done.status, countersign_ledger::DispositionStatus::Failed);
    assert!(signer.verify_chain().await.unwrap().is_intact());
}

/// Passkeys are the signer's: it enrols, approves with an assertion and
/// removes under its own role (the assertions' identity column needs no
/// sequence grant); the head role may read them but not insert any.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_signer_writes_passkeys() {
    use common::OpensChallenges as _;
    use countersign_ledger::{
        AssertionPurpose, ENROLMENT_CODE, PasskeyAssertionRecord, PasskeyEnrolment, PasskeyRemoval,
        SIGNER_ADMIN,
    };
    let db = with_roles().await;
    let signer = Ledger::open(&db.url_as("countersign_signer"))
        .await
        .unwrap();
    let head = Ledger::open(&db.url_as("countersign_head")).await.unwrap();
    let enrolment = |id: &str| PasskeyEnrolment {
        credential_id: id.into(),
        principal: common::PRINCIPAL.into(),
        name: "laptop".into(),
        public_key: "pQECAyYgAQ".into(),
        sign_count: 0,
        attestation_object: "o2NmbXQ".into(),
        client_data_json: "eyJ0eXBlIjoid2ViYXV0aG4uY3JlYXRlIn0".into(),
        enrolled_by: format!("{}/console", common::PRINCIPAL),
        authorized_by: ENROLMENT_CODE.into(),
        challenge: format!("Y3JlYXRl{id}"),
    };
    signer
        .enrol_opened(&enrolment("cred1"), None)
        .await
        .unwrap();
    let p = create_schedule(1, "nightly");
    signer.insert_proposal(&p).await.unwrap();
    let (_, record) = common::issue(&p, 1, 300);
    let assertion = PasskeyAssertionRecord {
        credential_id: "cred1".into(),
        purpose: AssertionPurpose::Decision,
        subject: p.id.to_string(),
        challenge: "Y2hhbGxlbmdl".into(),
        challenge_random: "cmFuZG9t".into(),
        delivery: "direct".into(),
        authenticator_data: "YXV0aA".into(),
        client_data_json: "eyJ0eXBlIjoid2ViYXV0aG4uZ2V0In0".into(),
        signature: "c2ln".into(),
        sign_count: 1,
    };
    signer.approve_opened(&record, &assertion).await.unwrap();
    signer
        .enrol_opened(&enrolment("cred2"), None)
        .await
        .unwrap();
    assert_eq!(
        signer
            .remove_passkey("cred2", SIGNER_ADMIN, SIGNER_ADMIN, None)
            .await
            .unwrap(),
        PasskeyRemoval::Removed
    );
    // The head reads them (a head may show or audit them).
    assert_eq!(head.passkeys(common::PRINCIPAL).await.unwrap().len(), 2);
    assert!(head.passkey_assertion_for(&p.id).await.unwrap().is_some());

    let mut conn = PgConnection::connect(&db.url_as("countersign_head"))
        .await
        .unwrap();
    for sql in [
        "INSERT INTO passkeys SELECT 'forged', principal, name, public_key, sign_count,
             attestation_object, client_data_json, enrolled_at, enrolled_by, authorized_by
         FROM passkeys LIMIT 1",
        "INSERT INTO passkey_removals (credential_id, removed_at, removed_by, authorized_by)
         VALUES ('cred1', 'x', 'x', 'signer-admin')",
        "INSERT INTO passkey_assertions (credential_id, purpose, subject, challenge,
             challenge_random, delivery, authenticator_data, client_data_json, signature,
             sign_count, at)
         VALUES ('cred1', 'enrol', 'cred2', 'c', 'r', '', 'a', 'j', 's', 2, 'x')",
    ] {
        let err = sqlx::raw_sql(AssertSqlSafe(sql.to_string()))
            .execute(&mut conn)
            .await
            .expect_err(sql)
            .to_string();
        assert!(err.contains("permission denied"), "{sql}: {err}");
    }
    conn.close().await.unwrap();
    assert_refused(
        &db,
        "countersign_head",
        &[
            "UPDATE passkeys SET public_key = 'x'",
            "DELETE FROM passkey_removals",
            "DELETE FROM passkey_assertions",
        ],
    )
    .await;
    assert_refused(
        &db,
        "countersign_signer",
        &[
            "UPDATE passkeys SET public_key = 'x'",
            "DELETE FROM passkey_removals",
            "UPDATE passkey_assertions SET sign_count = 0",
        ],
    )
    .await;
    assert!(signer.verify_chain().await.unwrap().is_intact());
}

/// The signer's open decision state (passkey challenges, enrolment
/// codes) is the signer's alone: the head role can neither read nor write
/// it, and the signer role only inserts and deletes rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_signer_sees_open_challenges_and_enrolment_codes() {
    use countersign_ledger::{AssertionPurpose, CodeRedemption, PasskeyChallenge};
    let db = with_roles().await;
    let signer = Ledger::open(&db.url_as("countersign_signer"))
        .await
        .unwrap();
    let head = Ledger::open(&db.url_as("countersign_head")).await.unwrap();
    let open = PasskeyChallenge {
        id: "c1".into(),
        challenge: "Y2hhbGxlbmdl".into(),
        random: "cmFuZG9t".into(),
        approver: format!("{}/alice", common::PRINCIPAL),
        purpose: AssertionPurpose::Enrol,
        subject: String::new(),
        delivery: String::new(),
        session: String::new(),
        expires_at: common::now() + time::Duration::minutes(2),
    };
    signer.issue_passkey_challenge(&open).await.unwrap();
    assert_eq!(signer.passkey_challenge("c1").await.unwrap(), Some(open));
    let sha = "ab".repeat(32);
    let expires = common::now() + time::Duration::minutes(30);
    signer
        .issue_enrolment_code("alice", &sha, expires)
        .await
        .unwrap();
    assert!(head.passkey_challenge("c1").await.is_err());
    assert!(head.redeem_enrolment_code("alice", &sha).await.is_err());
    assert!(
        head.issue_enrolment_code("bob", &sha, expires)
            .await
            .is_err()
    );
    assert_refused(
        &db,
        "countersign_head",
        &[
            "SELECT * FROM passkey_challenges",
            "SELECT * FROM enrolment_codes",
            "INSERT INTO enrolment_codes VALUES ('bob', repeat('a', 64), 'x', 'x')",
            "DELETE FROM passkey_challenges",
            "DELETE FROM enrolment_codes",
        ],
    )
    .await;
    assert_refused(
        &db,
        "countersign_signer",
        &[
            "UPDATE passkey_challenges SET expires_at = '2999-01-01T00:00:00Z'",
            "UPDATE enrolment_codes SET expires_at = '2999-01-01T00:00:00Z'",
            "TRUNCATE passkey_challenges",
        ],
    )
    .await;
    assert_eq!(
        signer.redeem_enrolment_code("alice", &sha).await.unwrap(),
        CodeRedemption::Accepted
    );
    signer.discard_passkey_challenge("c1").await.unwrap();
    assert_eq!(signer.passkey_challenge("c1").await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_signer_records_quorum_decisions() {
    let db = with_roles().await;
    let signer = Ledger::open(&db.url_as("countersign_signer"))
        .await
        .unwrap();
    let p = create_schedule(1, "nightly");
    signer.insert_proposal(&p).await.unwrap();
    let alice = format!("{}/alice", common::PRINCIPAL);
    let outcome = signer
        .record_quorum_approval(&countersign_ledger::QuorumApproval {
            proposal_id: &p.id,
            principal: common::PRINCIPAL,
            approver: &alice,
            required: 2,
            prior: &[],
            issuance: None,
            handoff: false,
            passkey: None,
        })
        .await
        .unwrap();
    assert_eq!(
        outcome,
        countersign_ledger::QuorumOutcome::Counted { approvals: 1 }
    );
    let bob_approves = format!(
        "INSERT INTO quorum_decisions
             (proposal_id, approver, seq, required, decision, reason, passkey, decided_at)
         VALUES ('{}', '{}/bob', 2, 2, 'approve', NULL, NULL, '2026-01-01T00:00:00Z')",
        p.id,
        common::PRINCIPAL
    );
    assert_refused(
        &db,
        "countersign_head",
        &[
            bob_approves.as_str(),
            "UPDATE quorum_decisions SET decision = 'deny'",
            "DELETE FROM quorum_decisions",
            "INSERT INTO quorum_passkey_assertions SELECT proposal_id, approver, 'k', 'c', 'r',
                 'direct', 'a', 'j', 's', 0, decided_at FROM quorum_decisions",
            "DELETE FROM quorum_passkey_assertions",
        ],
    )
    .await;
    let head = Ledger::open(&db.url_as("countersign_head")).await.unwrap();
    assert_eq!(head.quorum_decisions(&p.id).await.unwrap().len(), 1);
    assert!(signer.verify_chain().await.unwrap().is_intact());
}

/// Rules are the signer's: it creates them, approves under them (counting
/// each use) and revokes them under its own role; the head role only reads
/// them, as its consume transaction must to refuse a proof whose rule was
/// revoked, and cannot write a rule or a use.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_signer_writes_rules_and_a_head_checks_them_at_consumption() {
    use countersign_ledger::{LedgerError, LedgerRefusal, RuleChange};
    use countersign_verifier::Grant;
    const RULE: &str = "rule_0123456789abcdef0123456789abcdef";
    let db = with_roles().await;
    let signer = Ledger::open(&db.url_as("countersign_signer"))
        .await
        .unwrap();
    let head = Ledger::open(&db.url_as("countersign_head")).await.unwrap();
    let by = format!("{}/console", common::PRINCIPAL);
    signer
        .create_rule(&RuleChange {
            id: RULE.into(),
            principal: common::PRINCIPAL.into(),
            definition: "{}".into(),
            definition_sha256: "d".repeat(64),
            max_uses: 5,
            per_hour: 5,
            expires_at: common::now() + time::Duration::hours(1),
            by: by.clone(),
        })
        .await
        .unwrap();
    let grant = || {
        Some(Grant {
            rule: RULE.into(),
            version: 1,
        })
    };
    let mut proofs = Vec::new();
    for n in 1..=2 {
        let p = create_schedule(n, &format!("s{n}"));
        signer.insert_proposal(&p).await.unwrap();
        let (token, record) = common::issue_under(&p, n, 300, grant());
        signer.record_rule_approval(&record).await.unwrap();
        proofs.push((p, token));
    }
    let (p, token) = &proofs[0];
    assert!(matches!(
        head.begin_consume(&verified(p, token), common::NO_LEASE)
            .await
            .unwrap(),
        ConsumeStart::Fresh(_)
    ));
    signer
        .revoke_rule(RULE, common::PRINCIPAL, &by, "no more")
        .await
        .unwrap();
    let (p, token) = &proofs[1];
    assert_eq!(
        head.begin_consume(&verified(p, token), common::NO_LEASE)
            .await
            .map(|_| ()),
        Err(LedgerError::Refused(LedgerRefusal::RuleRevoked))
    );
    assert_eq!(head.rules(common::PRINCIPAL).await.unwrap()[0].uses, 2);
    // Not even a version of a rule the head can read, with a larger budget.
    assert_refused(
        &db,
        "countersign_head",
        &[
            "INSERT INTO rules SELECT id, version + 1, principal, 'active', definition,
                 definition_sha256, 1000, 1000, expires_at, changed_by, changed_at, reason
             FROM rules WHERE version = 1",
            "INSERT INTO rule_uses (proposal_id, rule_id, version, principal, used_at)
             SELECT proposal_id, rule_id, version, principal, used_at FROM rule_uses LIMIT 1",
        ],
    )
    .await;
    for role in ["countersign_head", "countersign_signer"] {
        assert_refused(
            &db,
            role,
            &["UPDATE rules SET max_uses = 1000", "DELETE FROM rule_uses"],
        )
        .await;
    }
    assert!(signer.verify_chain().await.unwrap().is_intact());
}

/// What SECURITY.md says a role can do with `countersign_lock_chain`: any
/// name gets an empty head (no event), which the audit ignores, and the
/// role can write no head itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_locking_any_chain_name_only_leaves_an_empty_head() {
    let db = with_roles().await;
    let owner = Ledger::open(db.url()).await.unwrap();
    approve(&owner, &create_schedule(1, "nightly"), 1).await;
    let mut head = PgConnection::connect(&db.url_as("countersign_head"))
        .await
        .unwrap();
    let (count, hash): (i64, String) =
        sqlx::query_as("SELECT count, hash FROM countersign_lock_chain('made-up')")
            .fetch_one(&mut head)
            .await
            .unwrap();
    assert_eq!(
        (count, hash.as_str()),
        (0, countersign_ledger::GENESIS_HASH)
    );
    head.close().await.unwrap();
    assert_refused(
        &db,
        "countersign_head",
        &["UPDATE chain_heads SET count = 5 WHERE chain = 'made-up'"],
    )
    .await;
    let report = owner.verify_chain().await.unwrap();
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.chains, 1);
}

/// The signer records and acknowledges notifications; a head can do
/// neither, so it can neither forge a notification nor make one vanish.
#[tokio::test]
async fn only_the_signer_writes_the_notification_outbox() {
    use countersign_ledger::OutboxNotification;
    let db = with_roles().await;
    let signer = Ledger::open(&db.url_as("countersign_signer"))
        .await
        .unwrap();
    let row = OutboxNotification {
        id: "ntf_00000000000000000000000000000001".into(),
        principal: common::PRINCIPAL.into(),
        created_at: time::OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap(),
        body: "{}".into(),
        not_before: None,
        escalates: None,
    };
    signer.record_notification(&row).await.unwrap();
    assert_refused(
        &db,
        "countersign_head",
        &[
            "INSERT INTO notification_outbox (id, principal, created_at, body) VALUES ('ntf_x', 'pr_x', '2026-01-01T00:00:00Z', '{}')",
            "DELETE FROM notification_outbox",
            "UPDATE notification_outbox SET body = '{\"forged\":true}'",
        ],
    )
    .await;
    assert_eq!(
        signer
            .acknowledge_notifications(common::PRINCIPAL, std::slice::from_ref(&row.id))
            .await
            .unwrap(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_signer_sequences_events_and_stores_checkpoints() {
    let db = with_roles().await;
    let signer = Ledger::open(&db.url_as("countersign_signer"))
        .await
        .unwrap();
    let head = Ledger::open(&db.url_as("countersign_head")).await.unwrap();
    let p = create_schedule(1, "nightly");
    let token = approve(&signer, &p, 1).await;
    // The head's own events (consumption) enter the queue too.
    head.begin_consume(&verified(&p, &token), common::NO_LEASE)
        .await
        .unwrap();
    let err = head.sequence_events().await.unwrap_err().to_string();
    assert!(err.contains("permission denied"), "{err}");
    let tree = signer.sequence_events().await.unwrap();
    assert_eq!(tree.size, 3);
    assert!(head.verify_tree().await.unwrap().is_intact());
    assert_refused(
        &db,
        "countersign_head",
        &[
            "INSERT INTO tlog_leaves (leaf_index, event_id, leaf_hash) VALUES (99, 99, 'x')",
            "UPDATE tlog_tree SET size = 0, edge = ''",
            "DELETE FROM tlog_pending",
            "INSERT INTO tlog_pending (event_id) VALUES (99)",
            "INSERT INTO tlog_checkpoints (size, root, note, signed_at) VALUES (9, 'r', 'n', 't')",
        ],
    )
    .await;
    assert_refused(
        &db,
        "countersign_signer",
        &[
            "UPDATE tlog_leaves SET leaf_hash = 'x'",
            "DELETE FROM tlog_leaves",
            "DELETE FROM tlog_checkpoints",
            "DELETE FROM tlog_tree",
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn either_role_records_witnesses_and_nobody_edits_a_cosignature() {
    let db = with_roles().await;
    let signer = Ledger::open(&db.url_as("countersign_signer"))
        .await
        .unwrap();
    let head = Ledger::open(&db.url_as("countersign_head")).await.unwrap();
    approve(&signer, &create_schedule(1, "nightly"), 1).await;
    let tree = signer.sequence_events().await.unwrap();
    signer
        .store_log_checkpoint(None, tree, "note")
        .await
        .unwrap();
    let mut states = Vec::new();
    for (i, role) in [&head, &signer].into_iter().enumerate() {
        let key = format!("w{i}.example+00000000+BAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==");
        let mut state = countersign_ledger::WitnessState {
            witness_key: key.clone(),
            acknowledged: 0,
            unreachable_since: None,
            gap_recorded: false,
            halted: None,
        };
        role.save_witness_state(&state).await.unwrap();
        state.gap_recorded = true;
        role.record_witness_event(
            &state,
            countersign_ledger::witness::WITNESS_GAP_EVENT,
            &serde_json::json!({ "witness": "w", "key": key }),
        )
        .await
        .unwrap();
        states.push(state);
    }
    for (i, role) in ["countersign_head", "countersign_signer"]
        .into_iter()
        .enumerate()
    {
        let mut conn = PgConnection::connect(&db.url_as(role)).await.unwrap();
        sqlx::raw_sql(AssertSqlSafe(format!(
            "INSERT INTO tlog_cosignatures (size, witness_key, line, timestamp, stored_at)
             VALUES (2, 'k{i}', 'l', 1, 't')"
        )))
        .execute(&mut conn)
        .await
        .unwrap();
        conn.close().await.unwrap();
        assert_refused(
            &db,
            role,
            &[
                "UPDATE tlog_cosignatures SET line = 'x'",
                "DELETE FROM tlog_cosignatures",
                "TRUNCATE tlog_cosignatures",
                "DELETE FROM tlog_witnesses",
                "TRUNCATE tlog_witnesses",
            ],
        )
        .await;
    }
    states.sort_by(|a, b| a.witness_key.cmp(&b.witness_key));
    assert_eq!(head.witness_states().await.unwrap(), states);
    assert!(signer.verify_chain().await.unwrap().first_break.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_signer_checkpoints_and_publishes_keys_and_either_takes_a_chore() {
    let db = with_roles().await;
    let signer = Ledger::open(&db.url_as("countersign_signer"))
        .await
        .unwrap();
    let head = Ledger::open(&db.url_as("countersign_head")).await.unwrap();
    approve(&signer, &create_schedule(1, "nightly"), 1).await;
    // The witnessing client runs with a head's URL: it takes its chore.
    let witnessing = head
        .take_lease(
            countersign_ledger::leases::WITNESSING_CHORE,
            "head",
            time::Duration::minutes(5),
        )
        .await
        .unwrap();
    assert!(witnessing.is_some());
    // A head holding the checkpoint chore still cannot write a checkpoint.
    let lease = common::checkpoint_lease(&head).await;
    let err = head.checkpoint(&lease).await.unwrap_err().to_string();
    assert!(err.contains("permission denied"), "{err}");
    head.give_back_lease(&lease).await.unwrap();
    let lease = common::checkpoint_lease(&signer).await;
    assert_eq!(signer.checkpoint(&lease).await.unwrap(), 1);
    signer
        .publish_signer_keys(
            "host-a",
            &[(
                "k1".into(),
                "k4.public.k1".into(),
                countersign_verifier::KeyStatus::Active,
            )],
        )
        .await
        .unwrap();
    assert_eq!(head.signer_keys().await.unwrap().len(), 1);
    assert_refused(
        &db,
        "countersign_head",
        &[
            "INSERT INTO checkpointed_heads (chain, count, hash) VALUES ('x', 1, 'h')",
            "UPDATE checkpointed_heads SET count = 9",
            "INSERT INTO signer_keys (kid, public_key, status, signer, updated_at)
             VALUES ('k2', 'p', 'active', 'h', 't')",
            "UPDATE signer_keys SET status = 'retired'",
            "DELETE FROM chore_leases",
        ],
    )
    .await;
    assert_refused(
        &db,
        "countersign_signer",
        &[
            "DELETE FROM signer_keys",
            "DELETE FROM checkpointed_heads",
            "DELETE FROM chore_leases",
        ],
    )
    .await;
}

/// The consoles' Web Push devices (schema version 17) are the signer's
/// alone: the head role can neither read nor write them (a subscription
/// reaches a person's device), and the signer role records, replaces and
/// forgets them through the ledger.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_signer_reads_and_writes_push_devices() {
    let db = with_roles().await;
    let signer = Ledger::open(&db.url_as("countersign_signer"))
        .await
        .unwrap();
    let device = countersign_ledger::PushDevice {
        session_id: "s1".into(),
        endpoint: "https://push.example/1".into(),
        p256dh: "BKey".into(),
        auth: "auth".into(),
        application_server_key: "BVapid".into(),
        expires_at: time::OffsetDateTime::now_utc()
            .replace_nanosecond(0)
            .unwrap()
            + time::Duration::days(1),
    };
    let principal = "pr_00000000000000000000000000000001";
    for _ in 0..2 {
        signer
            .set_push_devices(principal, "console", std::slice::from_ref(&device), &[])
            .await
            .unwrap();
    }
    assert_eq!(signer.push_devices(principal).await.unwrap().len(), 1);
    assert_refused(
        &db,
        "countersign_head",
        &[
            "SELECT * FROM push_devices",
            "INSERT INTO push_devices VALUES ('p', 'a', 's', 'e', 'k', 'a', 'v', 'x', 'x')",
            "DELETE FROM push_devices",
        ],
    )
    .await;
    assert_eq!(
        signer
            .set_push_devices(principal, "console", &[], &["s1".into()])
            .await
            .unwrap(),
        (0, 1)
    );
}

/// A handoff signed again by a second signer (schema version 18): only the
/// signer role records it; a head holding that proof consumes the nonce
/// with it (the consume-key trigger accepts its digest), and a head
/// without it cannot, by the recorded hash or digest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_signer_records_a_resigned_proof_and_a_head_consumes_with_it() {
    let db = with_roles().await;
    let owner = Ledger::open(db.url()).await.unwrap();
    let p = create_schedule(1, "nightly");
    let token = approve(&owner, &p, 1).await;
    let (again, record) = common::resign(&token);
    let insert = common::resigned_row_insert(&record);
    assert_refused(&db, "countersign_head", &[insert.as_str()]).await;
    let signer = Ledger::open(&db.url_as("countersign_signer"))
        .await
        .unwrap();
    signer
        .record_resigned_proof(&record, "countersign-signer@b")
        .await
        .unwrap();

    let mut head = PgConnection::connect(&db.url_as("countersign_head"))
        .await
        .unwrap();
    for key in [
        "(SELECT proof_sha256 FROM resigned_proofs)",
        "(SELECT consume_digest FROM resigned_proofs)",
    ] {
        let forged = format!(
            "INSERT INTO consumed_nonces (nonce, proposal_id, consumed_at, consume_key)
             SELECT nonce, proposal_id, 'x', {key} FROM resigned_proofs"
        );
        let err = sqlx::raw_sql(AssertSqlSafe(forged))
            .execute(&mut head)
            .await
            .expect_err(key)
            .to_string();
        assert!(
            err.contains("a consumption needs the issued proof"),
            "{key}: {err}"
        );
    }
    head.close().await.unwrap();

    let head = Ledger::open(&db.url_as("countersign_head")).await.unwrap();
    let done = head
        .consume_builtin(&verified(&p, &again), "schedule.create")
        .await
        .unwrap();
    assert!(matches!(done, countersign_ledger::Consumed::Completed(_)));
    let replay = head
        .consume_builtin(&verified(&p, &token), "schedule.create")
        .await
        .unwrap();
    assert!(matches!(replay, countersign_ledger::Consumed::Replay(_)));
    assert!(head.verify_chain().await.unwrap().is_intact());
}
