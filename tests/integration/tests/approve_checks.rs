//! `approve` checks everything it can before the person commits: the
//! proposal still pending, its contract and policy current (the signer's
//! `Decide` dry run), and the proof's output path writable. Each case is
//! refused before the terminal shows the preview or the challenge, and
//! nothing is recorded. On both ledger backends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use countersign::CliError;
use countersign_ledger::ProposalStatus;
use countersign_registry::Registry;
use support::{Backend, CREATE_NIGHTLY, Harness, Person};

/// `approve ID EXTRA...` as a person who would type the challenge: refused
/// with a message containing `expected`, before anything was shown, and
/// the proposal is still pending without an issuance.
async fn refused_before_the_challenge(h: &Harness, id: &str, extra: &[&str], expected: &str) {
    let mut args = vec!["approve", id];
    args.extend_from_slice(extra);
    let run = h.cli_with(&args, "", Person::TypesTheChallenge).await;
    let Err(CliError::Refused(message)) = &run.result else {
        panic!("{extra:?}: {:?} {}", run.result, run.stdout)
    };
    assert!(message.contains(expected), "{extra:?}: {message}");
    assert!(run.shown.is_empty(), "{extra:?}: shown {:?}", run.shown);
    let record = h.ledger().proposal(id).await.unwrap().unwrap();
    assert!(
        record.issuance.is_none(),
        "{extra:?}: an approval was recorded"
    );
    if expected != "withdrawn" {
        assert_eq!(record.status, ProposalStatus::Pending, "{extra:?}");
    }
}

async fn approve_refuses_before_the_challenge(backend: Backend) {
    let h = Harness::start_on(backend, Registry::default_toml()).await;
    let id = h.propose("schedule.create", CREATE_NIGHTLY).await;
    let scratch = h.scratch.path();

    let a_file = scratch.join("a-file");
    std::fs::write(&a_file, "x").unwrap();
    for (path, expected) in [
        (
            scratch.join("no-such-dir").join("proof.txt"),
            "cannot write the proof to",
        ),
        (a_file.join("proof.txt"), "is not a directory"),
        (a_file.clone(), "already exists"),
    ] {
        let extra = ["--proof-out", path.to_str().unwrap()];
        refused_before_the_challenge(&h, &id, &extra, expected).await;
    }

    h.change_the_create_contract();
    for extra in [
        &[][..],
        &["--for-mcp"],
        &["--proof-out", "/tmp/never-written"],
    ] {
        refused_before_the_challenge(&h, &id, extra, "(contract_changed)").await;
    }

    let other = h.propose("schedule.create", CREATE_NIGHTLY).await;
    let withdrawn = h.cli(&["withdraw", &other]).await;
    assert_eq!(withdrawn.result, Ok(()));
    refused_before_the_challenge(&h, &other, &[], "withdrawn").await;
    assert_eq!(h.schedules().await, vec![]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_refuses_before_the_challenge_on_sqlite() {
    approve_refuses_before_the_challenge(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_refuses_before_the_challenge_on_postgres() {
    approve_refuses_before_the_challenge(Backend::Postgres).await;
}
