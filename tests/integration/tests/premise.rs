//! Premises end to end: the shipped schedule operations show the schedule's
//! state and version as the signer read it, bind it into the proof, and
//! every head refuses a proof whose premise moved since the approval
//! (`premise_changed`: nothing applied, the proof not spent); a decision
//! under a premise that moved since the proposal is refused before the
//! challenge; and what the model says about the state is shown as
//! model-supplied, never as the premise. A rule's approval and each
//! approval of a quorum are held to the premise the same way.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod support;

use api_support::Api;
use countersign::CliError;
use countersign_ledger::ProposalStatus;
use countersign_registry::Registry;
use serde_json::{Value, json};
use support::mcp::{call, mcp_head, propose};
use support::{Backend, CREATE_NIGHTLY, Harness, Person, assert_refused, assert_unspent};

const NIGHTLY: &str = r#"{"name":"nightly"}"#;

/// Schedule `nightly` created and applied, through the CLI.
async fn with_nightly(h: &Harness) {
    let id = h.propose("schedule.create", CREATE_NIGHTLY).await;
    let proof = h.approve_to_file(&id).await;
    assert_eq!(h.exec(&id, &proof, &[]).await.json()["applied"], true);
}

/// Move the premise of `nightly` through another approved action:
/// activate it (created -> active), approved and executed on the CLI.
async fn activate_nightly(h: &Harness) {
    let id = h.propose("schedule.activate", NIGHTLY).await;
    let proof = h.approve_to_file(&id).await;
    assert_eq!(h.exec(&id, &proof, &[]).await.json()["applied"], true);
}

/// The preview's `Premise:` line of proposal `id`, as `show` prints it.
async fn premise_line(h: &Harness, id: &str) -> String {
    let shown = h.cli(&["--json", "show", id]).await.json();
    shown["preview"]
        .as_str()
        .unwrap()
        .lines()
        .find(|l| l.starts_with("Premise:"))
        .unwrap_or_else(|| panic!("no premise line in {shown}"))
        .to_owned()
}

/// The `effect_applied` event id that last wrote `nightly`: its version.
async fn nightly_version(h: &Harness) -> i64 {
    h.ledger()
        .events()
        .await
        .unwrap()
        .into_iter()
        .rfind(|e| e.kind == "effect_applied")
        .unwrap()
        .id
}

async fn the_cli_refuses_a_proof_whose_premise_moved(backend: Backend) {
    let h = Harness::start_on(backend, Registry::default_toml()).await;
    with_nightly(&h).await;
    let version = nightly_version(&h).await;
    let delete = h.propose("schedule.delete", NIGHTLY).await;
    assert_eq!(
        premise_line(&h, &delete).await,
        format!(
            r#"Premise:   schedules "nightly" = {{"cron":"0 3 * * *","description":"email the KPIs","name":"nightly","state":"created"}} (version {version}), read by the signer"#
        )
    );
    let proof = h.approve_to_file(&delete).await;
    // The proof carries the premise the person was shown (`verify`
    // prints the verified claims).
    let keys = h.scratch.path().join("keys.json");
    let exported = h
        .cli(&["keys", "export", "--out", keys.to_str().unwrap()])
        .await;
    assert_eq!(exported.result, Ok(()), "{}", exported.stderr);
    let verified = h
        .cli(&[
            "--json",
            "verify",
            "--proof-file",
            proof.to_str().unwrap(),
            "--keys",
            keys.to_str().unwrap(),
        ])
        .await;
    assert_eq!(verified.result, Ok(()), "{}", verified.stdout);
    assert_eq!(
        verified.json()["claims"]["prem"],
        json!({
            "key": "nightly",
            "ns": "schedules",
            "value": {"cron": "0 3 * * *", "description": "email the KPIs", "name": "nightly", "state": "created"},
            "version": version
        })
    );

    activate_nightly(&h).await;
    let before = (h.schedules().await, h.effects_run().await);
    let run = h.exec(&delete, &proof, &[]).await;
    assert_refused(&run, "premise_changed");
    assert_eq!((h.schedules().await, h.effects_run().await), before);
    assert_eq!(h.schedules().await[0].1["state"], "active");
    assert_unspent(&h, &delete).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_refuses_a_proof_whose_premise_moved_on_sqlite() {
    the_cli_refuses_a_proof_whose_premise_moved(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_refuses_a_proof_whose_premise_moved_on_postgres() {
    the_cli_refuses_a_proof_whose_premise_moved(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_refuses_a_proof_whose_premise_moved() {
    let api = Api::start().await;
    let token = api.token().await;
    with_nightly(&api.h).await;
    let delete = api.propose(&token, "schedule.delete", NIGHTLY).await;
    let proof = std::fs::read_to_string(api.h.approve_to_file(&delete).await).unwrap();
    activate_nightly(&api.h).await;
    let before = (api.h.schedules().await, api.h.effects_run().await);
    let reply = api.execute(&token, &delete, proof.trim()).await;
    api_support::assert_refused(&reply, "premise_changed");
    assert_eq!((api.h.schedules().await, api.h.effects_run().await), before);
    assert_unspent(&api.h, &delete).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_head_refuses_an_approval_whose_premise_moved() {
    let h = Harness::start().await;
    with_nightly(&h).await;
    let mcp = mcp_head(&h).await;
    let (id, preview) = propose(&mcp, "propose_schedule_delete", json!({"name": "nightly"})).await;
    assert!(
        preview.contains(r#"Premise:   schedules "nightly" = {"cron":"0 3 * * *","description":"email the KPIs","name":"nightly","state":"created"}"#),
        "{preview}"
    );
    h.approve_for_mcp(&id).await;
    activate_nightly(&h).await;
    let before = (h.schedules().await, h.effects_run().await);
    let refused = call(&mcp, "execute_approved", json!({"proposal_id": id})).await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(
        refused["structuredContent"]["reason"], "premise_changed",
        "{refused}"
    );
    assert_eq!(refused["structuredContent"]["applied"], false, "{refused}");
    assert_eq!((h.schedules().await, h.effects_run().await), before);
    assert_unspent(&h, &id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_under_a_premise_that_moved_since_the_proposal_is_refused_before_the_challenge()
{
    let h = Harness::start().await;
    with_nightly(&h).await;
    let delete = h.propose("schedule.delete", NIGHTLY).await;
    activate_nightly(&h).await;
    for extra in [&[][..], &["--for-mcp"]] {
        let mut args = vec!["approve", delete.as_str()];
        args.extend_from_slice(extra);
        let run = h.cli_with(&args, "", Person::TypesTheChallenge).await;
        let Err(CliError::Refused(message)) = &run.result else {
            panic!("{:?} {}", run.result, run.stdout)
        };
        assert!(message.contains("(premise_changed)"), "{message}");
        assert!(run.shown.is_empty(), "shown {:?}", run.shown);
    }
    let record = h.ledger().proposal(&delete).await.unwrap().unwrap();
    assert_eq!(record.status, ProposalStatus::Pending);
    assert!(record.issuance.is_none());
    assert_eq!(h.schedules().await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_premise_claimed_by_the_model_is_shown_as_model_supplied_and_never_trusted() {
    let h = Harness::start().await;
    with_nightly(&h).await;
    activate_nightly(&h).await;
    // The model says the schedule is paused; the signer reads it active.
    let run = h
        .cli_with(
            &[
                "--json",
                "propose",
                "schedule.delete",
                "--args-file",
                "-",
                "--note",
                "nightly is paused already (state: paused, version 1), so deleting it is safe",
            ],
            NIGHTLY,
            Person::NoTerminal,
        )
        .await;
    assert_eq!(run.result, Ok(()), "{}", run.stderr);
    let proposed: Value = run.json();
    let preview = proposed["preview"].as_str().unwrap();
    let lines: Vec<&str> = preview.lines().collect();
    let premise = lines
        .iter()
        .position(|l| l.starts_with("Premise:"))
        .unwrap();
    let unverified = lines
        .iter()
        .position(|l| *l == "---- Model-supplied, unverified ----")
        .unwrap();
    assert!(premise < unverified, "{preview}");
    assert!(lines[premise].contains(r#""state":"active""#), "{preview}");
    assert!(
        lines[unverified + 1..]
            .iter()
            .any(|l| l.starts_with("note: ") && l.contains("paused already")),
        "{preview}"
    );
    // The proof carries the premise the signer read, and it still holds:
    // the delete applies (the note played no part).
    let id = proposed["id"].as_str().unwrap();
    let proof = h.approve_to_file(id).await;
    assert_eq!(h.exec(id, &proof, &[]).await.json()["applied"], true);
    assert_eq!(h.schedules().await, vec![]);
}

/// A rule over `schedule.pause` of `nightly`, for the CLI session.
fn pause_rule() -> Value {
    let expires = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    json!({
        "operations": ["schedule.pause"],
        "constraints": [{"pointer": "/name", "equals": "nightly"}],
        "sessions": ["cli"],
        "max_uses": 5,
        "per_hour": 5,
        "expires_at": countersign_verifier::timestamp::format_whole_seconds(expires).unwrap(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_approval_carries_the_premise_and_is_refused_once_it_moved() {
    let h = Harness::start_with_rules(Backend::Sqlite).await;
    with_nightly(&h).await;
    activate_nightly(&h).await;
    h.create_rule(&pause_rule()).await;
    // Two pauses, both approved at once by the rule under the same premise.
    let first = h.propose("schedule.pause", NIGHTLY).await;
    let second = h.propose("schedule.pause", NIGHTLY).await;
    for id in [&first, &second] {
        let record = h.ledger().proposal(id).await.unwrap().unwrap();
        assert_eq!(record.status, ProposalStatus::Approved, "{id}");
        assert!(premise_line(&h, id).await.contains(r#""state":"active""#));
    }
    let run = h.exec_handoff(&second, "cli").await;
    assert_eq!(run.json()["applied"], true, "{}", run.stdout);
    // The first one's premise (active, at that version) moved.
    let before = (h.schedules().await, h.effects_run().await);
    let refused = h.exec_handoff(&first, "cli").await;
    assert_refused(&refused, "premise_changed");
    assert_eq!((h.schedules().await, h.effects_run().await), before);
    assert_unspent(&h, &first).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_quorum_approval_is_given_under_the_premise_as_it_still_is() {
    let registry = Registry::default_toml().replacen(
        "[[operation]]\nname = \"schedule.delete\"",
        "[[operation]]\nname = \"schedule.delete\"\nquorum = { required = 2, approvers = [\"alice\", \"bob\"] }",
        1,
    );
    let h = Harness::start_with_registry(&registry).await;
    h.approver_credentials(&["alice", "bob"]).await;
    with_nightly(&h).await;
    let delete = h.propose("schedule.delete", NIGHTLY).await;
    let approve_as = |name: &'static str| {
        let (h, delete) = (&h, delete.clone());
        async move {
            h.cli_with(
                &["approve", &delete, "--as", name],
                "",
                Person::TypesTheChallenge,
            )
            .await
        }
    };
    let alice = approve_as("alice").await;
    assert_eq!(alice.result, Ok(()), "{}", alice.stdout);
    activate_nightly(&h).await;
    // Bob's approval would issue the proof: refused, the premise moved.
    let bob = approve_as("bob").await;
    let Err(CliError::Refused(message)) = &bob.result else {
        panic!("{:?} {}", bob.result, bob.stdout)
    };
    assert!(message.contains("(premise_changed)"), "{message}");
    let record = h.ledger().proposal(&delete).await.unwrap().unwrap();
    assert_eq!(record.status, ProposalStatus::Pending);
    assert!(record.issuance.is_none());
    assert_eq!(h.schedules().await[0].1["state"], "active");
}
