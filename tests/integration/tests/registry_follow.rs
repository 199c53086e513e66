//! A running signer follows the registry file, as the heads do: an approval
//! of a proposal whose operation changed since is refused with the signer's
//! own reason (`contract_changed`), and nothing is recorded; proposals made
//! after the change carry the current contract revision and can be
//! approved and applied. On both ledger backends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use countersign_ledger::ProposalStatus;
use countersign_registry::Registry;
use support::{Backend, CREATE_NIGHTLY, Harness, Person};

/// The contract revision of `schedule.create` as the registry file says now.
fn current_create_revision(h: &Harness) -> String {
    let text = std::fs::read_to_string(h.signer.home().registry_path()).unwrap();
    let registry = Registry::from_toml_str(&text).unwrap();
    registry
        .get("schedule.create")
        .unwrap()
        .contract_revision()
        .to_string()
}

async fn status_of(h: &Harness, id: &str) -> ProposalStatus {
    h.ledger().proposal(id).await.unwrap().unwrap().status
}

async fn the_signer_follows_the_registry_file(backend: Backend) {
    let h = Harness::start_on(backend, Registry::default_toml()).await;
    let before = h.propose("schedule.create", CREATE_NIGHTLY).await;
    h.change_the_create_contract();

    let approve = h
        .cli_with(
            &["approve", &before, "--for-mcp"],
            "",
            Person::TypesTheChallenge,
        )
        .await;
    let Err(countersign::CliError::Refused(message)) = &approve.result else {
        panic!("{:?}", approve.result)
    };
    assert!(message.contains("(contract_changed)"), "{message}");
    assert_eq!(status_of(&h, &before).await, ProposalStatus::Pending);

    let after = h.propose("schedule.create", CREATE_NIGHTLY).await;
    let record = h.ledger().proposal(&after).await.unwrap().unwrap();
    assert_eq!(
        record.proposal.contract_revision,
        current_create_revision(&h)
    );
    let proof = h.approve_to_file(&after).await;
    let run = h.exec(&after, &proof, &[]).await;
    assert_eq!(run.result, Ok(()), "{}{}", run.stdout, run.stderr);
    assert_eq!(h.schedules().await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_signer_follows_the_registry_file_on_sqlite() {
    the_signer_follows_the_registry_file(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_signer_follows_the_registry_file_on_postgres() {
    the_signer_follows_the_registry_file(Backend::Postgres).await;
}
