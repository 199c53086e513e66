//! Executions interrupted between the intent and the completion (the head
//! died, the effect was lost): the proposal reads `uncertain`, presenting the
//! proof again runs nothing, and `countersign reconcile` completes a
//! replay-safe operation with the same nonce while leaving any other to a
//! person's `--resolve`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use countersign::CliError;
use support::{CREATE_NIGHTLY, Harness, Person, interrupt, verify_as_head};

#[tokio::test]
async fn an_interrupted_replay_safe_operation_is_uncertain_until_reconcile_replays_it_once() {
    let h = Harness::start().await;
    let id = h.propose("schedule.create", CREATE_NIGHTLY).await;
    let proof = interrupt(&h, &id).await;
    assert_eq!(
        h.cli(&["--json", "show", &id]).await.json()["status"],
        "uncertain"
    );

    // Presenting the proof again runs nothing: it is uncertain, not retried.
    let again = h.exec(&id, &proof, &[]).await;
    support::assert_refused(&again, "already_used");
    assert_eq!(again.json()["recorded_status"], "uncertain");
    assert_eq!(h.schedules().await, vec![]);

    let run = h.cli(&["--json", "reconcile"]).await;
    assert_eq!(run.result, Ok(()), "{}", run.stdout);
    assert_eq!(run.json()["entries"][0]["action"], "replayed");
    assert_eq!(h.schedules().await.len(), 1);
    assert_eq!(
        h.cli(&["--json", "result", &id]).await.json()["status"],
        "applied"
    );

    // Nothing left: a second pass does nothing.
    let second = h.cli(&["reconcile"]).await;
    assert_eq!(second.result, Ok(()));
    assert_eq!(
        second.stdout,
        "nothing to reconcile: every recorded intent has completed\n"
    );
    assert_eq!(h.schedules().await.len(), 1);
}

#[tokio::test]
async fn an_interrupted_command_stays_uncertain_until_a_person_resolves_it() {
    let h = Harness::start().await;
    let id = h.propose("demo.echo", r#"{"message":"hello"}"#).await;
    interrupt(&h, &id).await;

    let run = h.cli(&["--json", "reconcile"]).await;
    assert_eq!(
        run.result,
        Err(CliError::NotApplied(
            "1 execution(s) remain uncertain".into()
        ))
    );
    assert_eq!(run.json()["entries"][0]["action"], "still_uncertain");
    assert_eq!(
        h.cli(&["--json", "show", &id]).await.json()["status"],
        "uncertain"
    );

    // Whether it happened is a person's judgement: never headless, never
    // without the typed challenge; nothing is recorded then.
    let resolve = ["--json", "reconcile", "--resolve", &id, "--not-applied"];
    for (person, refusal) in [
        (
            Person::NoTerminal,
            "a resolution needs an interactive terminal and none is available (No such device or address (os error 6)); nothing was recorded",
        ),
        (
            Person::TypesAnotherCode,
            "the challenge was not typed correctly; nothing was recorded",
        ),
    ] {
        let run = h.cli_with(&resolve, "", person).await;
        assert_eq!(run.result, Err(CliError::Refused(refusal.into())));
        assert_eq!(
            h.cli(&["--json", "show", &id]).await.json()["status"],
            "uncertain"
        );
    }

    let resolved = h.cli_with(&resolve, "", Person::TypesTheChallenge).await;
    assert_eq!(resolved.result, Ok(()), "{}", resolved.stdout);
    assert!(
        resolved.shown.contains("the effect did NOT happen"),
        "{}",
        resolved.shown
    );
    let by = format!("approver:{}", h.signer.principal());
    assert_eq!(
        resolved.json(),
        serde_json::json!({"proposal_id": id, "resolved": "not_applied", "resolved_by": by})
    );
    let result = h.cli(&["--json", "result", &id]).await.json();
    assert_eq!(result["status"], "failed", "{result}");
    let events = h.ledger().events().await.unwrap();
    let last = events.last().unwrap();
    assert_eq!(
        (last.kind.as_str(), last.actor.as_str()),
        ("resolved", by.as_str())
    );
    assert_eq!(h.cli(&["reconcile"]).await.result, Ok(()));
    let twice = h
        .cli_with(
            &["reconcile", "--resolve", &id, "--applied"],
            "",
            Person::TypesTheChallenge,
        )
        .await;
    assert_eq!(
        twice.result,
        Err(CliError::Refused(format!(
            "{id} is failed; only an uncertain execution can be resolved; nothing was recorded (not_uncertain)"
        )))
    );
    assert!(h.ledger().verify_chain().await.unwrap().is_intact());
}

/// The review's reproduction: a `demo.echo` interrupted after its intent,
/// then the registry edited to make it replay-safe and run another
/// program. Reconcile replays only under the contract the person
/// approved, so it runs nothing and leaves the execution to a person.
#[tokio::test]
async fn reconcile_never_replays_under_a_contract_changed_since_approval() {
    let h = Harness::start().await;
    let id = h.propose("demo.echo", r#"{"message":"hello"}"#).await;
    interrupt(&h, &id).await;
    let marker = h.scratch.path().join("touched");
    let path = h.signer.home().registry_path();
    let registry = std::fs::read_to_string(&path).unwrap();
    let start = registry.find("name = \"demo.echo\"").unwrap();
    let (before, echo) = registry.split_at(start);
    let edited = echo
        .replacen("replay_safe = false", "replay_safe = true", 1)
        .replacen(
            "program = \"/bin/cat\"\nargs = []",
            &format!(
                "program = \"/usr/bin/touch\"\nargs = [\"{}\"]",
                marker.display()
            ),
            1,
        );
    assert_ne!(edited, echo, "the registry edit applies");
    std::fs::write(&path, format!("{before}{edited}")).unwrap();

    let run = h.cli(&["--json", "reconcile"]).await;
    let entry = &run.json()["entries"][0];
    assert_eq!(entry["action"], "still_uncertain", "{entry}");
    assert!(
        entry["detail"]
            .as_str()
            .unwrap()
            .starts_with("demo.echo changed since it was approved"),
        "{entry}"
    );
    assert_eq!(
        run.result,
        Err(CliError::NotApplied(
            "1 execution(s) remain uncertain".into()
        ))
    );
    assert!(!marker.exists(), "reconcile ran the edited program");
    assert_eq!(
        h.cli(&["--json", "show", &id]).await.json()["status"],
        "uncertain"
    );
}

#[tokio::test]
async fn an_interrupted_hook_answer_is_settled_as_never_answered_never_as_an_allow() {
    // Hooks consume and record their answer in one transaction; this is the
    // intent only a direct `begin_consume` caller can leave.
    let h = Harness::start().await;
    let mut head = h
        .signer
        .client(countersign_identity::Role::Head)
        .await
        .unwrap();
    let arguments = serde_json::json!({"agent": "claude-code", "tool_name": "Bash",
        "tool_input": {"command": "git push"}, "cwd": "/w"});
    let id = head
        .propose(countersign_proto::v1::ProposeRequest {
            operation: "agent.shell".into(),
            arguments_json: arguments.to_string(),
            session: "cli".into(),
            note: String::new(),
            idempotency_key: String::new(),
            head: "cli".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .id;
    // Only the hook's session runs a hook's call: the person hands it off,
    // and the intent is left as a head that claimed it and stopped would.
    h.approve_for_mcp(&id).await;
    let proof = head
        .claim_handoff(countersign_proto::v1::ClaimHandoffRequest {
            proposal_id: id.clone(),
            session: "cli".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .proof;
    let verified = verify_as_head(&h, &id, &proof).await.unwrap();
    assert!(matches!(
        h.ledger()
            .begin_consume(&verified, time::Duration::ZERO)
            .await
            .unwrap(),
        countersign_ledger::ConsumeStart::Fresh(_)
    ));
    assert_eq!(
        h.cli(&["--json", "show", &id]).await.json()["status"],
        "uncertain"
    );

    let run = h.cli(&["--json", "reconcile"]).await;
    assert_eq!(run.result, Ok(()), "{}", run.stdout);
    let result = h.cli(&["--json", "result", &id]).await.json();
    assert_eq!(result["status"], "failed", "{result}");
    assert_eq!(
        result["error"],
        countersign_gate::hook::NEVER_ANSWERED,
        "{result}"
    );
}
