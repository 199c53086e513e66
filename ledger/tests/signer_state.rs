//! The signer's open decision state in the ledger: passkey challenges
//! taken by the write that records their answer, the signature counter
//! compared again under the credential's row lock, and enrolment codes
//! kept as hashes and redeemed once; on both backends, and with two ledger
//! handles (two signers) racing on one PostgreSQL database.
#![allow(clippy::unwrap_used)]

mod common;

use common::{
    Kind, OpensChallenges as _, PRINCIPAL, TestLedger, create_schedule, issue, open_challenge,
    open_enrolment_challenge,
};
use countersign_ledger::{
    AssertionPurpose, CodeRedemption, ENROLMENT_CODE, Ledger, LedgerError, PasskeyAssertionRecord,
    PasskeyChallenge, PasskeyEnrolment, ProposalStatus,
};
use time::{Duration, OffsetDateTime};

fn enrolment(n: u32) -> PasskeyEnrolment {
    PasskeyEnrolment {
        credential_id: format!("Y3JlZA{n:04}"),
        principal: PRINCIPAL.into(),
        name: format!("key {n}"),
        public_key: "pQECAyYgAQ".into(),
        sign_count: 0,
        attestation_object: "o2NmbXRkbm9uZQ".into(),
        client_data_json: "eyJ0eXBlIjoid2ViYXV0aG4uY3JlYXRlIn0".into(),
        enrolled_by: format!("{PRINCIPAL}/console"),
        authorized_by: ENROLMENT_CODE.into(),
        challenge: format!("Y3JlYXRl{n:04}"),
    }
}

/// A decision about proposal `n` by credential 1, with challenge `c` and
/// counter `count`.
fn decision(n: u32, c: u32, count: u32) -> PasskeyAssertionRecord {
    PasskeyAssertionRecord {
        credential_id: enrolment(1).credential_id,
        purpose: AssertionPurpose::Decision,
        subject: create_schedule(n, "x").id.into(),
        challenge: format!("Y2hhbGxlbmdl{c:032}"),
        challenge_random: format!("cmFuZG9t{c:032}"),
        delivery: "direct".into(),
        authenticator_data: "YXV0aA".into(),
        client_data_json: "eyJ0eXBlIjoid2ViYXV0aG4uZ2V0In0".into(),
        signature: "c2ln".into(),
        sign_count: count,
    }
}

/// Proposal `n` recorded, and its issuance (not yet recorded).
async fn proposed(ledger: &Ledger, n: u32) -> countersign_ledger::IssuanceRecord {
    let p = create_schedule(n, &format!("s{n}"));
    ledger.insert_proposal(&p).await.unwrap();
    issue(&p, n, 300).1
}

async fn with_passkey(kind: Kind) -> TestLedger {
    let t = TestLedger::on(kind).await;
    t.ledger.enrol_opened(&enrolment(1), None).await.unwrap();
    t
}

async fn assert_nothing_approved(t: &TestLedger, n: u32) {
    let id = create_schedule(n, "x").id.to_string();
    let p = t.ledger.proposal(&id).await.unwrap().unwrap();
    assert_eq!(p.status, ProposalStatus::Pending);
    assert_eq!(t.ledger.passkey_assertion_for(&id).await.unwrap(), None);
}

on_both_backends!(refuses_an_answer_to_a_challenge_that_is_not_open_and_writes_nothing);
async fn refuses_an_answer_to_a_challenge_that_is_not_open_and_writes_nothing(kind: Kind) {
    let t = with_passkey(kind).await;
    let issuance = proposed(&t.ledger, 1).await;
    let events = t.ledger.events().await.unwrap().len();

    // Never issued.
    let a = decision(1, 1, 1);
    assert_eq!(
        t.ledger.record_passkey_approval(&issuance, &a).await,
        Err(LedgerError::ChallengeUsed)
    );
    // Issued for another proposal.
    let mut elsewhere = decision(2, 2, 1);
    open_challenge(&t.ledger, &elsewhere).await;
    elsewhere.subject = a.subject.clone();
    assert_eq!(
        t.ledger
            .record_passkey_approval(&issuance, &elsewhere)
            .await,
        Err(LedgerError::ChallengeUsed)
    );
    // Expired.
    let stale = decision(1, 3, 1);
    t.ledger
        .issue_passkey_challenge(&PasskeyChallenge {
            id: "stale".into(),
            challenge: stale.challenge.clone(),
            random: stale.challenge_random.clone(),
            approver: "x".into(),
            purpose: AssertionPurpose::Decision,
            subject: stale.subject.clone(),
            delivery: "direct".into(),
            session: String::new(),
            expires_at: OffsetDateTime::now_utc() - Duration::seconds(1),
        })
        .await
        .unwrap();
    assert_eq!(
        t.ledger.record_passkey_approval(&issuance, &stale).await,
        Err(LedgerError::ChallengeUsed)
    );
    // An enrolment whose creation challenge is not open.
    assert_eq!(
        t.ledger.enrol_passkey(&enrolment(2), None).await,
        Err(LedgerError::ChallengeUsed)
    );
    assert_nothing_approved(&t, 1).await;
    assert_eq!(
        t.ledger.passkey(&enrolment(2).credential_id).await.unwrap(),
        None
    );
    assert_eq!(t.count("passkey_assertions").await, 0);
    assert_eq!(t.ledger.events().await.unwrap().len(), events);

    // An open one is taken by the write that records its answer.
    open_challenge(&t.ledger, &a).await;
    t.ledger
        .record_passkey_approval(&issuance, &a)
        .await
        .unwrap();
    assert_eq!(
        t.count("passkey_challenges").await,
        1,
        "only the other proposal's"
    );
    // Issuing a challenge drops the expired ones.
    assert_eq!(t.ledger.passkey_challenge("stale").await.unwrap(), None);
}

on_both_backends!(a_code_is_redeemed_once_as_its_hash_and_only_by_its_approver);
async fn a_code_is_redeemed_once_as_its_hash_and_only_by_its_approver(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let (alice, bob) = ("1".repeat(64), "2".repeat(64));
    let later = OffsetDateTime::now_utc() + Duration::minutes(30);
    let issue = |who: &'static str, sha: &str, until| {
        let (ledger, sha) = (t.ledger.clone(), sha.to_owned());
        async move { ledger.issue_enrolment_code(who, &sha, until).await.unwrap() }
    };
    let redeem = |who: &'static str, sha: &str| {
        let (ledger, sha) = (t.ledger.clone(), sha.to_owned());
        async move { ledger.redeem_enrolment_code(who, &sha).await.unwrap() }
    };
    let refused = |leaked: &[&str]| CodeRedemption::Refused {
        leaked_from: leaked.iter().map(|s| s.to_string()).collect(),
    };
    issue("alice", &alice, later).await;
    issue("bob", &bob, later).await;
    // Bob presents alice's code: refused, bob's own is spent, and alice's
    // has leaked, so it is spent too.
    assert_eq!(redeem("bob", &alice).await, refused(&["alice"]));
    assert_eq!(t.count("enrolment_codes").await, 0);
    issue("alice", &alice, later).await;
    assert_eq!(redeem("alice", &alice).await, CodeRedemption::Accepted);
    assert_eq!(redeem("alice", &alice).await, refused(&[]), "once");
    // A wrong guess spends the approver's code.
    issue("", &alice, later).await;
    assert_eq!(redeem("", &bob).await, refused(&[]));
    assert_eq!(redeem("", &alice).await, refused(&[]));
    // Expired.
    let past = OffsetDateTime::now_utc() - Duration::seconds(1);
    issue("alice", &alice, past).await;
    assert_eq!(redeem("alice", &alice).await, refused(&[]));
    // A new code replaces the approver's last.
    issue("bob", &alice, later).await;
    issue("bob", &bob, later).await;
    assert_eq!(redeem("bob", &alice).await, refused(&[]));
    assert_eq!(t.count("enrolment_codes").await, 0);
}

/// The refusal of the one of two raced writes that lost; the other must
/// have won.
fn the_loser(raced: (Result<(), LedgerError>, Result<(), LedgerError>)) -> LedgerError {
    match raced {
        (Ok(()), Err(e)) | (Err(e), Ok(())) => e,
        other => panic!("both or neither accepted: {other:?}"),
    }
}

/// Two signers (two handles on one PostgreSQL database) racing answers:
/// each race runs both writes at once, many times over.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_signers_cannot_both_accept_one_challenge_or_one_counter() {
    let t = with_passkey(Kind::Postgres).await;
    let a = &t.ledger;
    let b = &Ledger::open(&t.url).await.unwrap();
    for round in 0..8u32 {
        // One creation challenge, answered through both signers at once
        // with two different credentials.
        let (x, mut y) = (enrolment(10 + round), enrolment(50 + round));
        y.challenge = x.challenge.clone();
        open_enrolment_challenge(a, &x).await;
        let raced = tokio::join!(a.enrol_passkey(&x, None), b.enrol_passkey(&y, None));
        assert_eq!(the_loser(raced), LedgerError::ChallengeUsed);
        // Two challenges with one counter value, one through each signer.
        let (one, two) = (2 * round + 1, 2 * round + 2);
        let (first, second) = (proposed(a, one).await, proposed(b, two).await);
        let count = 10 * round + 5;
        let p = decision(one, 200 + 2 * round, count);
        let q = decision(two, 201 + 2 * round, count);
        open_challenge(a, &p).await;
        open_challenge(b, &q).await;
        let raced = tokio::join!(
            a.record_passkey_approval(&first, &p),
            b.record_passkey_approval(&second, &q)
        );
        let stored = count;
        assert_eq!(
            the_loser(raced),
            LedgerError::CounterNotIncreased {
                stored,
                received: count
            }
        );
    }
    assert_eq!(t.count("passkey_assertions").await, 8);
    assert_eq!(t.count("passkeys").await, 9);
    assert!(a.verify_chain().await.unwrap().is_intact());
}
