//! Premises: the state read the signer binds into a proof, its version,
//! the premise command whose output is the premise, and the consume
//! transaction that refuses a proof whose premise moved or cannot be
//! established (nothing applied, nonce not burned), on both backends.
#![allow(clippy::unwrap_used)]

mod common;

use common::{
    Kind, PRINCIPAL, TestLedger, approve, create_schedule, premise_runner, proposal, verified,
};
use countersign_ledger::{
    ConsumeStart, Consumed, DispositionStatus, Ledger, LedgerError, LedgerRefusal, Proposal,
    run_premise_command,
};
use countersign_verifier::{Premise, StatePremise};
use serde_json::json;

/// Create schedule `name` (proposal `n`) and apply it.
async fn created(ledger: &Ledger, n: u32, name: &str) {
    let p = create_schedule(n, name);
    let token = approve(ledger, &p, n).await;
    let done = ledger
        .consume_builtin(&verified(&p, &token), "schedule.create")
        .await
        .unwrap();
    assert!(matches!(done, Consumed::Completed(_)), "{done:?}");
}

/// Proposal `n` of `operation` on schedule `name`, with the premise the
/// ledger holds for it now (as the signer records it at proposal).
async fn with_premise(ledger: &Ledger, n: u32, operation: &str, name: &str) -> Proposal {
    let mut p = proposal(n, operation, json!({"name": name}));
    p.premise = Some(Premise::State(
        ledger
            .read_premise(PRINCIPAL, "schedules", name)
            .await
            .unwrap(),
    ));
    p
}

on_both_backends!(a_premise_reads_the_value_and_the_version_of_the_event_that_wrote_it);
async fn a_premise_reads_the_value_and_the_version_of_the_event_that_wrote_it(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let absent = t
        .ledger
        .read_premise(PRINCIPAL, "schedules", "nightly")
        .await
        .unwrap();
    assert_eq!(
        absent,
        StatePremise {
            namespace: "schedules".into(),
            key: "nightly".into(),
            value: None,
            version: 0
        }
    );
    created(&t.ledger, 1, "nightly").await;
    let first = t
        .ledger
        .read_premise(PRINCIPAL, "schedules", "nightly")
        .await
        .unwrap();
    assert_eq!(
        first.value,
        Some(json!({"cron": "0 * * * *", "name": "nightly", "state": "created"}))
    );
    let applied = t
        .ledger
        .events()
        .await
        .unwrap()
        .into_iter()
        .rfind(|e| e.kind == "effect_applied")
        .unwrap();
    assert_eq!(first.version, u64::try_from(applied.id).unwrap());
    // Another principal's state is not this principal's premise.
    let other = t
        .ledger
        .read_premise("pr_other", "schedules", "nightly")
        .await
        .unwrap();
    assert_eq!(other.value, None);
}

on_both_backends!(refuses_a_proof_whose_premise_moved_and_applies_nothing);
async fn refuses_a_proof_whose_premise_moved_and_applies_nothing(kind: Kind) {
    let t = TestLedger::on(kind).await;
    created(&t.ledger, 1, "nightly").await;
    // Two approvals under the same premise: activate, and delete.
    let activate = with_premise(&t.ledger, 2, "schedule.activate", "nightly").await;
    let delete = with_premise(&t.ledger, 3, "schedule.delete", "nightly").await;
    let activate_token = approve(&t.ledger, &activate, 2).await;
    let delete_token = approve(&t.ledger, &delete, 3).await;
    let before = t
        .ledger
        .read_premise(PRINCIPAL, "schedules", "nightly")
        .await
        .unwrap();

    // The first one applies, and moves the premise.
    let done = t
        .ledger
        .consume_builtin(&verified(&activate, &activate_token), "schedule.activate")
        .await
        .unwrap();
    let Consumed::Completed(done) = done else {
        panic!("{done:?}")
    };
    assert_eq!(done.status, DispositionStatus::Applied);
    let after = t
        .ledger
        .read_premise(PRINCIPAL, "schedules", "nightly")
        .await
        .unwrap();
    assert!(after.version > before.version);

    // The second is refused, in both consume paths; nothing is consumed.
    let nonces = t.count("consumed_nonces").await;
    let proof = verified(&delete, &delete_token);
    refused_on_both_paths(
        &t.ledger,
        &proof,
        "schedule.delete",
        LedgerRefusal::PremiseChanged,
    )
    .await;
    assert_eq!(t.count("consumed_nonces").await, nonces);
    assert_eq!(t.ledger.disposition(&delete.id).await.unwrap(), None);
    assert_eq!(
        t.ledger
            .read_premise(PRINCIPAL, "schedules", "nightly")
            .await
            .unwrap(),
        after,
        "the schedule is still there, unchanged"
    );
}

on_both_backends!(a_value_written_back_to_what_it_was_is_still_a_moved_premise);
async fn a_value_written_back_to_what_it_was_is_still_a_moved_premise(kind: Kind) {
    let t = TestLedger::on(kind).await;
    created(&t.ledger, 1, "nightly").await;
    let delete = with_premise(&t.ledger, 2, "schedule.delete", "nightly").await;
    let delete_token = approve(&t.ledger, &delete, 2).await;
    // Deleted and created again with the same fields: the same value.
    let gone = proposal(3, "schedule.delete", json!({"name": "nightly"}));
    let gone_token = approve(&t.ledger, &gone, 3).await;
    t.ledger
        .consume_builtin(&verified(&gone, &gone_token), "schedule.delete")
        .await
        .unwrap();
    created(&t.ledger, 4, "nightly").await;
    let now = t
        .ledger
        .read_premise(PRINCIPAL, "schedules", "nightly")
        .await
        .unwrap();
    let Some(Premise::State(shown)) = &delete.premise else {
        panic!("{:?}", delete.premise)
    };
    assert_eq!(now.value, shown.value);
    assert_ne!(now.version, shown.version);
    assert_eq!(
        t.ledger
            .consume_builtin(&verified(&delete, &delete_token), "schedule.delete")
            .await,
        Err(LedgerError::Refused(LedgerRefusal::PremiseChanged))
    );
}

on_both_backends!(a_premise_that_still_holds_lets_the_proof_apply_once);
async fn a_premise_that_still_holds_lets_the_proof_apply_once(kind: Kind) {
    let t = TestLedger::on(kind).await;
    created(&t.ledger, 1, "nightly").await;
    let activate = with_premise(&t.ledger, 2, "schedule.activate", "nightly").await;
    let token = approve(&t.ledger, &activate, 2).await;
    let proof = verified(&activate, &token);
    let first = t
        .ledger
        .consume_builtin(&proof, "schedule.activate")
        .await
        .unwrap();
    assert!(matches!(first, Consumed::Completed(_)), "{first:?}");
    // Presented again: the recorded disposition, not `premise_changed`
    // (its own effect moved the premise).
    let again = t
        .ledger
        .consume_builtin(&proof, "schedule.activate")
        .await
        .unwrap();
    assert!(matches!(again, Consumed::Replay(_)), "{again:?}");
    let start = t
        .ledger
        .begin_consume(&proof, common::NO_LEASE)
        .await
        .unwrap();
    assert!(matches!(start, ConsumeStart::Replay(_)), "{start:?}");
}

on_both_backends!(a_proof_without_the_recorded_premise_does_not_match_its_proposal);
async fn a_proof_without_the_recorded_premise_does_not_match_its_proposal(kind: Kind) {
    let t = TestLedger::on(kind).await;
    created(&t.ledger, 1, "nightly").await;
    let recorded = with_premise(&t.ledger, 2, "schedule.activate", "nightly").await;
    t.ledger.insert_proposal(&recorded).await.unwrap();
    // Claims that leave the recorded premise out, or carry another one: the
    // issuance is recorded as the claims say, and still nothing matches.
    let Some(Premise::State(shown)) = recorded.premise.clone() else {
        panic!("{:?}", recorded.premise)
    };
    let other = Premise::State(StatePremise {
        version: 999_999,
        ..shown
    });
    for (n, premise) in [(2, None), (3, Some(other))] {
        let forged = Proposal {
            premise,
            ..recorded.clone()
        };
        let (token, record) = common::issue(&forged, n, 300);
        let _ = t.ledger.record_approval(&record).await;
        assert_eq!(
            t.ledger
                .consume_builtin(&verified(&forged, &token), "schedule.activate")
                .await,
            Err(LedgerError::Refused(LedgerRefusal::ProposalMismatch))
        );
    }
    assert_eq!(t.count("consumed_nonces").await, 1);
}

/// `proof` is refused with `refusal` by both consume paths.
async fn refused_on_both_paths(
    ledger: &Ledger,
    proof: &countersign_verifier::VerifiedProof,
    effect: &str,
    refusal: LedgerRefusal,
) {
    let refused = Err(LedgerError::Refused(refusal));
    let consumed = ledger.consume_builtin(proof, effect).await;
    assert_eq!(consumed.map(|_| ()), refused);
    let started = ledger.begin_consume(proof, common::NO_LEASE).await;
    assert_eq!(started.map(|_| ()), refused);
}

/// `proof` (creating schedule `nightly`) applies, then only replays.
async fn applies_once(ledger: &Ledger, proof: &countersign_verifier::VerifiedProof) {
    let done = ledger
        .consume_builtin(proof, "schedule.create")
        .await
        .unwrap();
    assert!(matches!(done, Consumed::Completed(_)), "{done:?}");
    let again = ledger
        .consume_builtin(proof, "schedule.create")
        .await
        .unwrap();
    assert!(matches!(again, Consumed::Replay(_)), "{again:?}");
    assert_eq!(common::schedule_keys(ledger).await, ["nightly"]);
}

/// A premise command that prints its stdin (the canonical arguments) and
/// then the contents of `file`: its output moves when the file does.
fn printing(file: &std::path::Path) -> Vec<String> {
    vec![
        "/bin/sh".into(),
        "-c".into(),
        r#"cat; cat "$0""#.into(),
        file.to_str().unwrap().into(),
    ]
}

/// Proposal `n` creating schedule `name` under the premise command `argv`
/// as it prints now (as the signer records it at proposal).
async fn under_command(n: u32, name: &str, argv: &[String]) -> Proposal {
    let mut p = create_schedule(n, name);
    let printed = run_premise_command(&premise_runner(), argv, &p.arguments_json)
        .await
        .unwrap();
    p.premise = Some(Premise::Command(printed));
    p
}

on_both_backends!(a_premise_command_that_prints_the_same_lets_the_proof_apply);
async fn a_premise_command_that_prints_the_same_lets_the_proof_apply(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("deployed");
    std::fs::write(&file, "v1\n").unwrap();
    let p = under_command(1, "nightly", &printing(&file)).await;
    let Some(Premise::Command(printed)) = &p.premise else {
        panic!("{:?}", p.premise)
    };
    // The canonical arguments were on its stdin.
    assert_eq!(printed.output, format!("{}v1\n", p.arguments_json));
    let token = approve(&t.ledger, &p, 1).await;
    applies_once(&t.ledger, &verified(&p, &token)).await;
}

on_both_backends!(a_premise_command_whose_output_moved_refuses_the_proof_and_burns_nothing);
async fn a_premise_command_whose_output_moved_refuses_the_proof_and_burns_nothing(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("deployed");
    std::fs::write(&file, "v1\n").unwrap();
    let p = under_command(1, "nightly", &printing(&file)).await;
    let token = approve(&t.ledger, &p, 1).await;
    let proof = verified(&p, &token);

    std::fs::write(&file, "v2\n").unwrap();
    refused_on_both_paths(
        &t.ledger,
        &proof,
        "schedule.create",
        LedgerRefusal::PremiseChanged,
    )
    .await;
    // A command that fails gives no premise at all.
    std::fs::remove_file(&file).unwrap();
    refused_on_both_paths(
        &t.ledger,
        &proof,
        "schedule.create",
        LedgerRefusal::PremiseUnavailable,
    )
    .await;
    assert_eq!(t.count("consumed_nonces").await, 0);
    assert_eq!(t.count("intents").await, 0);
    assert_eq!(t.ledger.disposition(&p.id).await.unwrap(), None);
    assert!(common::schedule_keys(&t.ledger).await.is_empty());

    // The premise is what the command prints: printed again as approved,
    // the proof applies, once.
    std::fs::write(&file, "v1\n").unwrap();
    applies_once(&t.ledger, &proof).await;
}

#[tokio::test]
async fn a_premise_command_that_fails_or_prints_too_much_gives_no_premise() {
    let run = |script: &str| {
        let argv = vec!["/bin/sh".to_owned(), "-c".to_owned(), script.to_owned()];
        async move { run_premise_command(&premise_runner(), &argv, "{}").await }
    };
    let failed = run("echo nope; exit 3").await.unwrap_err();
    assert_eq!(failed.program, "/bin/sh");
    assert_eq!(failed.reason, "the command exited with status 3");
    let long = run("head -c 4097 /dev/zero").await.unwrap_err();
    assert_eq!(long.reason, "it printed more than 4096 bytes");
    let fits = run("head -c 4096 /dev/zero").await.unwrap();
    assert_eq!(fits.output.len(), 4096);
    let missing = run_premise_command(
        &premise_runner(),
        &["/nonexistent/premise".to_owned()],
        "{}",
    )
    .await
    .unwrap_err();
    assert!(
        missing
            .reason
            .starts_with("cannot start \"/nonexistent/premise\""),
        "{missing}"
    );
}

on_both_backends!(a_slow_premise_program_stalls_no_other_consumption_of_its_principal);
/// The premise program of a consumption runs before its write transaction,
/// not under the locks: while a 2 s program runs for one proof, another
/// proof of the same principal (same chain head) is consumed at once.
/// Run under the locks, it waited for the program (a group commit shares
/// one transaction: every writer did).
async fn a_slow_premise_program_stalls_no_other_consumption_of_its_principal(kind: Kind) {
    const PROGRAM: std::time::Duration = std::time::Duration::from_secs(2);
    let t = TestLedger::on(kind).await;
    let slow_argv = vec![
        "/bin/sh".to_owned(),
        "-c".to_owned(),
        format!("sleep {}; echo ready", PROGRAM.as_secs()),
    ];
    let slow = under_command(1, "slow", &slow_argv).await;
    let slow_proof = verified(&slow, &approve(&t.ledger, &slow, 1).await);
    let quick = create_schedule(2, "quick");
    let quick_proof = verified(&quick, &approve(&t.ledger, &quick, 2).await);
    assert_eq!(slow.principal, quick.principal);

    let started = std::time::Instant::now();
    let slow_done = {
        let ledger = t.ledger.clone();
        tokio::spawn(async move {
            let done = ledger
                .consume_builtin(&slow_proof, "schedule.create")
                .await
                .unwrap();
            (done, started.elapsed())
        })
    };
    // The slow program is running by now.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let quick_started = std::time::Instant::now();
    let done = t
        .ledger
        .consume_builtin(&quick_proof, "schedule.create")
        .await
        .unwrap();
    let quick_took = quick_started.elapsed();
    assert!(matches!(done, Consumed::Completed(_)), "{done:?}");
    assert!(
        quick_took < std::time::Duration::from_millis(1000),
        "the other consumption waited {quick_took:?} for the premise program"
    );
    let (done, slow_took) = slow_done.await.unwrap();
    assert!(matches!(done, Consumed::Completed(_)), "{done:?}");
    assert!(slow_took >= PROGRAM, "{slow_took:?}");
    assert_eq!(common::schedule_keys(&t.ledger).await, ["quick", "slow"]);
}
