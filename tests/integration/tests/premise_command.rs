//! Premise commands end to end: an operation whose premise is what a fixed
//! program prints. The signer runs it at proposal (the preview shows the
//! output, the proof carries it) and again at the decision; every head
//! runs it once more just before its consume transaction, which refuses a
//! proof whose premise moved (`premise_changed`) or cannot be established
//! (`premise_unavailable`): nothing applied, the proof not spent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod support;

use std::path::{Path, PathBuf};

use api_support::Api;
use countersign::CliError;
use countersign_ledger::ProposalStatus;
use countersign_registry::Registry;
use serde_json::json;
use support::mcp::{call, mcp_head, propose};
use support::{Backend, Harness, Person, assert_refused, assert_unspent};

const ARGS: &str = r#"{"text":"ship it"}"#;

/// Where the deployed version is (what the premise command prints) and
/// where the effect writes each run.
struct Files {
    _dir: tempfile::TempDir,
    version: PathBuf,
    effects: PathBuf,
}

impl Files {
    fn new() -> Files {
        let dir = tempfile::tempdir().unwrap();
        let version = dir.path().join("deployed-version");
        let effects = dir.path().join("effects");
        std::fs::write(&version, "v1\n").unwrap();
        Files {
            _dir: dir,
            version,
            effects,
        }
    }

    /// The default registry plus `deploy.note`: a command effect that
    /// appends its arguments to `effects`, under the premise of what
    /// `/bin/cat <version>` prints.
    fn registry(&self) -> String {
        format!(
            r#"{}
[[operation]]
name = "deploy.note"
description = "Note a deployment, given the version deployed now."
class = "write"
replay_safe = false
preview = "Note {{text}}"

[operation.premise]
program = "/bin/cat"
args = ["{version}"]

[operation.effect]
kind = "command"
program = "/bin/sh"
args = ["-c", "cat >> {effects}; echo >> {effects}"]
timeout_secs = 10

[operation.schema]
type = "object"
additionalProperties = false
required = ["text"]

[operation.schema.properties.text]
type = "string"
"#,
            Registry::default_toml(),
            version = self.version.display(),
            effects = self.effects.display(),
        )
    }

    fn deploy(&self, version: &str) {
        std::fs::write(&self.version, version).unwrap();
    }

    /// How many times the effect ran.
    fn effects_run(&self) -> usize {
        std::fs::read_to_string(&self.effects).map_or(0, |s| s.lines().count())
    }

    /// The preview line the signer renders for this premise and `output`.
    fn premise_line(&self, output: &str) -> String {
        format!(
            r#"Premise:   ["/bin/cat","{}"] printed {}, run by the signer"#,
            self.version.display(),
            json!(output)
        )
    }
}

/// The `Premise:` line of proposal `id`'s preview, as `show` prints it.
async fn shown_premise(h: &Harness, id: &str) -> String {
    let shown = h.cli(&["--json", "show", id]).await.json();
    let preview = shown["preview"].as_str().unwrap().to_owned();
    preview
        .lines()
        .find(|l| l.starts_with("Premise:"))
        .unwrap_or_else(|| panic!("no premise line in {preview}"))
        .to_owned()
}

async fn the_cli_runs_the_premise_command_again_at_execution(backend: Backend) {
    let files = Files::new();
    let h = Harness::start_on(backend, &files.registry()).await;
    let id = h.propose("deploy.note", ARGS).await;
    assert_eq!(shown_premise(&h, &id).await, files.premise_line("v1\n"));
    let proof = h.approve_to_file(&id).await;

    // Another version is deployed after the approval: refused, unspent.
    files.deploy("v2\n");
    assert_refused(&h.exec(&id, &proof, &[]).await, "premise_changed");
    // The command fails: no premise can be established at all.
    std::fs::remove_file(&files.version).unwrap();
    assert_refused(&h.exec(&id, &proof, &[]).await, "premise_unavailable");
    assert_eq!(files.effects_run(), 0);
    assert_unspent(&h, &id).await;

    // The premise is what the command prints: back at v1, it holds.
    files.deploy("v1\n");
    assert_eq!(h.exec(&id, &proof, &[]).await.json()["applied"], true);
    assert_eq!(files.effects_run(), 1);
    let again = h.exec(&id, &proof, &[]).await;
    assert_eq!(again.json()["applied"], false, "{}", again.stdout);
    assert_eq!(files.effects_run(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_runs_the_premise_command_again_at_execution_on_sqlite() {
    the_cli_runs_the_premise_command_again_at_execution(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_runs_the_premise_command_again_at_execution_on_postgres() {
    the_cli_runs_the_premise_command_again_at_execution(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_refuses_a_proof_whose_premise_command_prints_otherwise() {
    let files = Files::new();
    let api = Api::over(Harness::start_with_registry(&files.registry()).await).await;
    let token = api.token().await;
    let id = api.propose(&token, "deploy.note", ARGS).await;
    let proof = std::fs::read_to_string(api.h.approve_to_file(&id).await).unwrap();
    files.deploy("v2\n");
    let reply = api.execute(&token, &id, proof.trim()).await;
    api_support::assert_refused(&reply, "premise_changed");
    assert_eq!(files.effects_run(), 0);
    assert_unspent(&api.h, &id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_head_refuses_an_approval_whose_premise_command_fails() {
    let files = Files::new();
    let h = Harness::start_with_registry(&files.registry()).await;
    let mcp = mcp_head(&h).await;
    let (id, preview) = propose(&mcp, "propose_deploy_note", json!({"text": "ship it"})).await;
    assert!(preview.contains(&files.premise_line("v1\n")), "{preview}");
    h.approve_for_mcp(&id).await;
    std::fs::remove_file(&files.version).unwrap();
    let refused = call(&mcp, "execute_approved", json!({"proposal_id": id})).await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(
        refused["structuredContent"]["reason"], "premise_unavailable",
        "{refused}"
    );
    assert_eq!(refused["structuredContent"]["applied"], false, "{refused}");
    assert_eq!(files.effects_run(), 0);
    assert_unspent(&h, &id).await;
}

/// `approve id` at the terminal is refused with `reason` before the
/// challenge is shown, and the proposal still waits.
async fn approval_refused(h: &Harness, id: &str, reason: &str) {
    let run = h
        .cli_with(&["approve", id], "", Person::TypesTheChallenge)
        .await;
    let Err(CliError::Refused(message)) = &run.result else {
        panic!("{:?} {}", run.result, run.stdout)
    };
    assert!(message.contains(&format!("({reason})")), "{message}");
    assert!(run.shown.is_empty(), "shown {:?}", run.shown);
    let record = h.ledger().proposal(id).await.unwrap().unwrap();
    assert_eq!(record.status, ProposalStatus::Pending);
    assert!(record.issuance.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_runs_the_premise_command_again_before_the_challenge() {
    let files = Files::new();
    let h = Harness::start_with_registry(&files.registry()).await;
    let id = h.propose("deploy.note", ARGS).await;
    files.deploy("v2\n");
    approval_refused(&h, &id, "premise_changed").await;
    std::fs::remove_file(&files.version).unwrap();
    approval_refused(&h, &id, "premise_unavailable").await;
    // Deployed back as shown: the person approves what they were shown.
    files.deploy("v1\n");
    let proof = h.approve_to_file(&id).await;
    assert_eq!(h.exec(&id, &proof, &[]).await.json()["applied"], true);
    assert_eq!(files.effects_run(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposal_whose_premise_command_fails_is_refused_and_nothing_recorded() {
    let files = Files::new();
    let h = Harness::start_with_registry(&files.registry()).await;
    std::fs::remove_file(&files.version).unwrap();
    let events = h.ledger().events().await.unwrap().len();
    let run = h
        .cli_with(
            &["--json", "propose", "deploy.note", "--args-file", "-"],
            ARGS,
            Person::NoTerminal,
        )
        .await;
    let Err(CliError::Refused(message)) = &run.result else {
        panic!("{:?} {}", run.result, run.stdout)
    };
    assert!(message.contains("(premise_unavailable)"), "{message}");
    assert!(
        message.contains(r#"premise command "/bin/cat" failed: the command exited with status 1"#),
        "{message}"
    );
    assert_eq!(h.ledger().events().await.unwrap().len(), events);
    assert!(!Path::new(&files.effects).exists());
}
