//! Auto-approval rules on every head: a person creates one at the terminal
//! only after reading its exact scope and typing the challenge; a proposal
//! it covers is approved by the signer for a handoff to its own session,
//! and each head's unchanged "claim and execute" flow applies it once (CLI
//! `exec --handoff`, API `execute-handoff`, MCP `execute_approved`); a rule
//! revoked between issuance and consumption is refused at consumption with
//! `rule_revoked`, applying and burning nothing, on both backends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod support;

use std::path::PathBuf;

use api_support::Api;
use countersign_mcp::McpHead;
use serde_json::{Value, json};
use support::mcp::{call, mcp_head};
use support::{Backend, Harness, Person, Run, assert_refused};

/// A rule over `schedule.create` for names starting `nightly`, from any
/// session, written to a file in the harness's scratch directory.
fn rule_file(h: &Harness, max_uses: u64) -> PathBuf {
    let expires = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    let definition = json!({
        "operations": ["schedule.create"],
        "constraints": [{"pointer": "/name", "prefix": "nightly"}],
        "sessions": ["*"],
        "max_uses": max_uses,
        "per_hour": max_uses,
        "expires_at": countersign_verifier::timestamp::format_whole_seconds(expires).unwrap(),
    });
    let path = h.scratch.path().join(format!("rule-{max_uses}.json"));
    std::fs::write(&path, definition.to_string()).unwrap();
    path
}

/// The rules `rules list --json` shows.
async fn listed(h: &Harness) -> Vec<Value> {
    let run = h.cli(&["--json", "rules", "list"]).await;
    assert_eq!(run.result, Ok(()), "{}", run.stderr);
    run.json()["rules"].as_array().unwrap().clone()
}

/// A rule created by the person at the terminal: its id.
async fn created_rule(h: &Harness) -> String {
    let run = h
        .create_rule_from(&rule_file(h, 5), Person::TypesTheChallenge)
        .await;
    assert_eq!(run.result, Ok(()), "{}", run.stdout);
    run.json()["id"].as_str().unwrap().to_owned()
}

async fn revoke(h: &Harness, id: &str) {
    let run = h
        .cli(&["--json", "rules", "revoke", id, "--reason", "too broad"])
        .await;
    assert_eq!(run.result, Ok(()), "{}", run.stderr);
    assert_eq!(run.json()["status"], "revoked");
}

/// The proposal's status as the ledger derives it.
async fn status(h: &Harness, id: &str) -> String {
    h.ledger()
        .proposal(id)
        .await
        .unwrap()
        .unwrap()
        .status
        .as_str()
        .to_owned()
}

#[tokio::test]
async fn a_rule_is_created_only_after_the_person_reads_its_scope_and_types_the_challenge() {
    let h = Harness::start_with_rules(Backend::Sqlite).await;
    let file = rule_file(&h, 2);
    for person in [Person::TypesAnotherCode, Person::NoTerminal] {
        let run = h.create_rule_from(&file, person).await;
        assert!(
            matches!(run.result, Err(countersign::CliError::Refused(_))),
            "{:?}",
            run.result
        );
        assert!(listed(&h).await.is_empty());
    }
    let run = h.create_rule_from(&file, Person::TypesTheChallenge).await;
    assert_eq!(run.result, Ok(()), "{}", run.stdout);
    for part in [
        "WITHOUT asking a person",
        "Operations: schedule.create",
        "/name is a string starting with \"nightly\"",
        "Sessions:   ANY session of this principal",
        "at most 2 in total, at most 2 per hour",
        "WITHOUT asking you",
    ] {
        assert!(run.shown.contains(part), "{part:?} in\n{}", run.shown);
    }
    // TOML works as well, and the list shows uses and the remaining budget.
    let toml_file = h.scratch.path().join("rule.toml");
    let definition: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let as_toml = format!(
        "operations = [\"schedule.create\"]\nconstraints = []\nsessions = [\"cli\"]\nmax_uses = 1\nper_hour = 1\nexpires_at = {}\n",
        definition["expires_at"]
    );
    std::fs::write(&toml_file, as_toml).unwrap();
    let run = h
        .create_rule_from(&toml_file, Person::TypesTheChallenge)
        .await;
    assert_eq!(run.result, Ok(()), "{}", run.stdout);
    let rules = listed(&h).await;
    assert_eq!(rules.len(), 2);
    let first = rules.iter().find(|r| r["max_uses"] == 2).unwrap();
    assert_eq!(
        (first["uses"].clone(), first["remaining"].clone()),
        (json!(0), json!(2))
    );
    let text = h.cli(&["rules", "list"]).await;
    assert!(
        text.stdout
            .contains("uses 0/2 (0/2 in the last hour), 2 remaining"),
        "{}",
        text.stdout
    );
}

#[tokio::test]
async fn with_rules_off_the_cli_creates_nothing() {
    let h = Harness::start().await;
    let run = h
        .create_rule_from(&rule_file(&h, 2), Person::TypesTheChallenge)
        .await;
    assert!(
        matches!(&run.result, Err(countersign::CliError::Refused(m)) if m.contains("rules_disabled")),
        "{:?}",
        run.result
    );
    assert!(run.shown.is_empty(), "nothing was shown for confirmation");
    assert!(listed(&h).await.is_empty());
}

/// The CLI head: a covered proposal is approved by the rule and executed
/// with `exec --handoff`; the next one, its rule revoked before execution,
/// is refused with `rule_revoked` and applies and burns nothing.
async fn cli_head_flow(backend: Backend) {
    let h = Harness::start_with_rules(backend).await;
    let rule = created_rule(&h).await;
    let args = r#"{"name":"nightly","cron":"0 3 * * *"}"#;
    let id = h.propose("schedule.create", args).await;
    assert_eq!(status(&h, &id).await, "approved");
    let run = h.exec_handoff(&id, "cli").await;
    assert_eq!(run.result, Ok(()), "{}", run.stdout);
    assert_eq!(run.json()["applied"], true);
    assert_eq!(h.schedules().await.len(), 1);
    // Outside the rule's scope: waits for a person.
    let weekly = h
        .propose("schedule.create", r#"{"name":"weekly","cron":"0 3 * * 0"}"#)
        .await;
    assert_eq!(status(&h, &weekly).await, "pending");

    let next = h
        .propose(
            "schedule.create",
            r#"{"name":"nightly-2","cron":"0 4 * * *"}"#,
        )
        .await;
    assert_eq!(status(&h, &next).await, "approved");
    revoke(&h, &rule).await;
    let refused = h.exec_handoff(&next, "cli").await;
    assert_refused(&refused, "rule_revoked");
    assert_eq!(h.schedules().await.len(), 1);
    assert_eq!(
        status(&h, &next).await,
        "approved",
        "the nonce was not burned"
    );
    assert_eq!(listed(&h).await[0]["uses"], 2);
    let audit = h.cli(&["--json", "audit", "--verify"]).await;
    assert_eq!(audit.result, Ok(()), "{}", audit.stdout);
}

#[tokio::test]
async fn cli_head_executes_a_rule_approval_and_refuses_it_once_revoked_on_sqlite() {
    cli_head_flow(Backend::Sqlite).await;
}

#[tokio::test]
async fn cli_head_executes_a_rule_approval_and_refuses_it_once_revoked_on_postgres() {
    cli_head_flow(Backend::Postgres).await;
}

#[tokio::test]
async fn api_head_executes_a_rule_approval_and_refuses_it_once_revoked() {
    let api = Api::over(Harness::start_with_rules(Backend::Sqlite).await).await;
    let rule = created_rule(&api.h).await;
    let token = api.token().await;
    let id = api
        .propose(
            &token,
            "schedule.create",
            r#"{"name":"nightly","cron":"0 3 * * *"}"#,
        )
        .await;
    assert_eq!(status(&api.h, &id).await, "approved");
    let done = api.execute_handoff(&token, &id).await;
    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!(done.json()["applied"], true, "{}", done.body);
    let next = api
        .propose(
            &token,
            "schedule.create",
            r#"{"name":"nightly-2","cron":"0 4 * * *"}"#,
        )
        .await;
    revoke(&api.h, &rule).await;
    api_support::assert_refused(&api.execute_handoff(&token, &next).await, "rule_revoked");
    assert_eq!(api.h.schedules().await.len(), 1);
    assert_eq!(status(&api.h, &next).await, "approved");
}

#[tokio::test]
async fn mcp_head_executes_a_rule_approval_and_refuses_it_once_revoked() {
    let h = Harness::start_with_rules(Backend::Sqlite).await;
    let rule = created_rule(&h).await;
    let server = mcp_head(&h).await;
    let propose = |name: &str| json!({"arguments": {"name": name, "cron": "0 3 * * *"}});
    let proposed = call(&server, "propose_schedule_create", propose("nightly")).await;
    let id = proposed["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(status(&h, &id).await, "approved");
    let done = call(&server, "execute_approved", json!({"proposal_id": id})).await;
    assert_eq!(done["structuredContent"]["applied"], true, "{done}");
    let proposed = call(&server, "propose_schedule_create", propose("nightly-2")).await;
    let next = proposed["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    revoke(&h, &rule).await;
    let refused = call(&server, "execute_approved", json!({"proposal_id": next})).await;
    assert_eq!(
        refused["structuredContent"]["reason"], "rule_revoked",
        "{refused}"
    );
    assert_eq!(refused["structuredContent"]["applied"], false, "{refused}");
    assert_eq!(h.schedules().await.len(), 1);
    assert_eq!(status(&h, &next).await, "approved");
}

/// `schedule.create` of `nightly` proposed over MCP: its id.
async fn proposed_nightly(server: &countersign_mcp::McpHead) -> String {
    let args = json!({"arguments": {"name": "nightly", "cron": "0 3 * * *"}});
    let proposed = call(server, "propose_schedule_create", args).await;
    proposed["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A rule definition as `rule.create` arguments, over `schedule.create`
/// names starting `nightly`, from any session.
fn proposed_rule(constraint: Value) -> Value {
    let expires = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    json!({"arguments": {
        "operations": ["schedule.create"],
        "constraints": [constraint],
        "sessions": ["*"],
        "max_uses": 2,
        "per_hour": 2,
        "expires_at": countersign_verifier::timestamp::format_whole_seconds(expires).unwrap(),
    }})
}

/// A model proposes, through the MCP head, a rule over schedules named
/// `nightly…`: the proposal's id.
async fn model_proposes_nightly_rule(server: &McpHead) -> String {
    let nightly = json!({"pointer": "/name", "prefix": "nightly"});
    let proposed = call(server, "propose_rule_create", proposed_rule(nightly)).await;
    let id = proposed["structuredContent"]["id"].as_str().unwrap();
    id.to_owned()
}

#[tokio::test]
async fn a_rule_a_model_proposes_shows_its_scope_and_a_person_who_denies_it_creates_nothing() {
    let h = Harness::start_with_rules(Backend::Sqlite).await;
    let server = mcp_head(&h).await;
    let id = model_proposes_nightly_rule(&server).await;
    assert_eq!(status(&h, &id).await, "pending");
    let shown = h.cli(&["show", &id]).await;
    for part in [
        "WITHOUT asking a person",
        "/name is a string starting with \"nightly\"",
        "at most 2 in total, at most 2 per hour",
    ] {
        assert!(shown.stdout.contains(part), "{part:?} in {}", shown.stdout);
    }
    let run = h
        .cli(&["deny", &id, "--reason", "no standing approvals"])
        .await;
    assert_eq!(run.result, Ok(()), "{}", run.stderr);
    assert_eq!(status(&h, &id).await, "denied");
    assert!(listed(&h).await.is_empty());
    let covered = proposed_nightly(&server).await;
    assert_eq!(status(&h, &covered).await, "pending");
    // A definition no person could create is refused when proposed: a test
    // other than the four (by the operation's schema, on every head), an
    // expiry in the past (by the signer's rule checks).
    let regex = json!({"pointer": "/name", "regex": ".*"});
    let refused = call(&server, "propose_rule_create", proposed_rule(regex)).await;
    assert_eq!(refused["isError"], true, "{refused}");
    let mut expired = proposed_rule(json!({"pointer": "/name", "prefix": "nightly"}));
    expired["arguments"]["expires_at"] = json!("2020-01-01T00:00:00Z");
    let refused = call(&server, "propose_rule_create", expired).await;
    assert_eq!(
        refused["structuredContent"]["reason"], "invalid_rule",
        "{refused}"
    );
    assert_eq!(
        h.ledger()
            .pending(h.signer.principal())
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn a_rule_a_model_proposes_is_created_only_by_a_persons_approval_and_then_approves() {
    let h = Harness::start_with_rules(Backend::Sqlite).await;
    let server = mcp_head(&h).await;
    let id = model_proposes_nightly_rule(&server).await;
    // Without the challenge typed: nothing.
    let refused = h
        .cli_with(&["approve", &id], "", Person::TypesAnotherCode)
        .await;
    assert!(refused.result.is_err());
    assert!(listed(&h).await.is_empty());
    // The MCP head can neither execute nor approve it.
    let executed = call(&server, "execute_approved", json!({"proposal_id": id})).await;
    assert_eq!(
        executed["structuredContent"]["applied"], false,
        "{executed}"
    );
    assert!(listed(&h).await.is_empty());

    let approved = h
        .cli_with(&["--json", "approve", &id], "", Person::TypesTheChallenge)
        .await;
    assert_eq!(approved.result, Ok(()), "{}", approved.stdout);
    assert!(
        approved
            .shown
            .contains("Approving CREATES this auto-approval rule")
            && approved
                .shown
                .contains("/name is a string starting with \"nightly\""),
        "{}",
        approved.shown
    );
    let rule = approved.json()["rule_id"].as_str().unwrap().to_owned();
    assert_eq!(status(&h, &id).await, "applied");
    let rules = listed(&h).await;
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0]["id"], rule.as_str());
    // A second approval of the same proposal creates nothing more.
    let again = h
        .cli_with(&["approve", &id], "", Person::TypesTheChallenge)
        .await;
    assert!(again.result.is_err());
    assert_eq!(listed(&h).await.len(), 1);

    // The rule now approves what it covers, and only that.
    let covered = proposed_nightly(&server).await;
    assert_eq!(status(&h, &covered).await, "approved");
    let done = call(&server, "execute_approved", json!({"proposal_id": covered})).await;
    assert_eq!(done["structuredContent"]["applied"], true, "{done}");
    let audit = h.cli(&["--json", "audit", "--verify"]).await;
    assert_eq!(audit.result, Ok(()), "{}", audit.stdout);
    let events = h.ledger().events().await.unwrap();
    let created = events.iter().find(|e| e.kind == "rule_created").unwrap();
    assert_eq!(created.proposal_id.as_deref(), Some(id.as_str()));
}

/// `rules revise ID --version N --file FILE` at the terminal.
async fn revise(
    h: &Harness,
    id: &str,
    version: &str,
    file: &std::path::Path,
    person: Person,
) -> Run {
    h.cli_with(
        &[
            "--json",
            "rules",
            "revise",
            id,
            "--version",
            version,
            "--file",
            file.to_str().unwrap(),
        ],
        "",
        person,
    )
    .await
}

#[tokio::test]
async fn a_person_revises_a_rule_at_the_terminal_and_its_earlier_proofs_are_refused() {
    let h = Harness::start_with_rules(Backend::Sqlite).await;
    let rule = created_rule(&h).await;
    let before = h
        .propose(
            "schedule.create",
            r#"{"name":"nightly","cron":"0 3 * * *"}"#,
        )
        .await;
    assert_eq!(status(&h, &before).await, "approved");
    // Narrower: names starting "nightly-db" only (uses count across
    // versions: the one of version 1 is still spent).
    let narrower = h.scratch.path().join("narrower.json");
    let mut definition: Value =
        serde_json::from_str(&std::fs::read_to_string(rule_file(&h, 5)).unwrap()).unwrap();
    definition["constraints"] = json!([{"pointer": "/name", "prefix": "nightly-db"}]);
    std::fs::write(&narrower, definition.to_string()).unwrap();

    // Without the typed challenge, or against a version it is not at:
    // nothing changes.
    let refused = revise(&h, &rule, "1", &narrower, Person::TypesAnotherCode).await;
    assert!(
        matches!(refused.result, Err(countersign::CliError::Refused(_))),
        "{:?}",
        refused.result
    );
    let stale = revise(&h, &rule, "2", &narrower, Person::TypesTheChallenge).await;
    assert!(
        matches!(&stale.result, Err(countersign::CliError::Refused(m)) if m.contains("rule_changed")),
        "{:?}",
        stale.result
    );
    assert_eq!(listed(&h).await[0]["version"], 1);

    let run = revise(&h, &rule, "1", &narrower, Person::TypesTheChallenge).await;
    assert_eq!(run.result, Ok(()), "{}", run.stdout);
    assert!(
        run.shown
            .contains("/name is a string starting with \"nightly-db\""),
        "{}",
        run.shown
    );
    assert_eq!(run.json()["version"], 2);
    // The proof issued under version 1 is refused, nothing applied.
    assert_refused(&h.exec_handoff(&before, "cli").await, "rule_revoked");
    assert_eq!(h.schedules().await, vec![]);
    // Version 2 approves only what it covers now.
    let outside = h
        .propose(
            "schedule.create",
            r#"{"name":"nightly-2","cron":"0 3 * * *"}"#,
        )
        .await;
    assert_eq!(status(&h, &outside).await, "pending");
    let inside = h
        .propose(
            "schedule.create",
            r#"{"name":"nightly-db","cron":"0 3 * * *"}"#,
        )
        .await;
    assert_eq!(status(&h, &inside).await, "approved");
    assert_eq!(h.exec_handoff(&inside, "cli").await.json()["applied"], true);
}

/// A rule whose scope is written in Cedar, from a TOML file: the person
/// reads the policies before typing the challenge, and the rule approves
/// what they permit on the CLI, API and MCP heads, and nothing else.
#[tokio::test]
async fn a_rule_written_in_cedar_is_created_at_the_terminal_and_approves_on_every_head() {
    let api = Api::over(Harness::start_with_rules(Backend::Sqlite).await).await;
    let h = &api.h;
    let expires = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    let file = h.scratch.path().join("nightly.toml");
    std::fs::write(
        &file,
        format!(
            "operations = [\"schedule.create\"]\nsessions = [\"*\"]\nmax_uses = 10\nper_hour = 10\n\
             expires_at = \"{}\"\ncedar = \"\"\"\n@id(\"nightly\")\n\
             permit (principal, action == Action::\"schedule.create\", resource)\n\
             when {{ context.arguments.name like \"nightly*\" && context.head != \"console\" }};\n\"\"\"\n",
            countersign_verifier::timestamp::format_whole_seconds(expires).unwrap()
        ),
    )
    .unwrap();
    let run = h.create_rule_from(&file, Person::TypesTheChallenge).await;
    assert_eq!(run.result, Ok(()), "{}", run.stdout);
    assert!(
        run.shown.contains(
            "Cedar:      only what these policies permit (and no forbid among them):\n  | @id(\"nightly\")\n"
        ) && run
            .shown
            .contains("  | when { context.arguments.name like \"nightly*\" && context.head != \"console\" };"),
        "{}",
        run.shown
    );

    // CLI.
    let id = h
        .propose(
            "schedule.create",
            r#"{"name":"nightly","cron":"0 3 * * *"}"#,
        )
        .await;
    assert_eq!(status(h, &id).await, "approved");
    let run = h.exec_handoff(&id, "cli").await;
    assert_eq!(run.json()["applied"], true, "{}", run.stdout);
    let weekly = h
        .propose("schedule.create", r#"{"name":"weekly","cron":"0 3 * * 0"}"#)
        .await;
    assert_eq!(status(h, &weekly).await, "pending");
    // API.
    let token = api.token().await;
    let id = api
        .propose(
            &token,
            "schedule.create",
            r#"{"name":"nightly-api","cron":"0 3 * * *"}"#,
        )
        .await;
    assert_eq!(status(h, &id).await, "approved");
    let done = api.execute_handoff(&token, &id).await;
    assert_eq!(done.json()["applied"], true, "{}", done.body);
    // MCP.
    let server = mcp_head(h).await;
    let args = json!({"arguments": {"name": "nightly-mcp", "cron": "0 3 * * *"}});
    let proposed = call(&server, "propose_schedule_create", args).await;
    let id = proposed["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(status(h, &id).await, "approved");
    let done = call(&server, "execute_approved", json!({"proposal_id": id})).await;
    assert_eq!(done["structuredContent"]["applied"], true, "{done}");

    assert_eq!(h.schedules().await.len(), 3);
    assert_eq!(listed(h).await[0]["uses"], 3);
    let audit = h.cli(&["--json", "audit", "--verify"]).await;
    assert_eq!(audit.result, Ok(()), "{}", audit.stdout);
}
