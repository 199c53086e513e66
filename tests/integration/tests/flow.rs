//! The whole approval flow through the CLI code paths against a real signer
//! over mTLS: propose, approve at the terminal, execute once, replay, deny,
//! and the refusals of the approval step itself. Every refusal asserts that
//! nothing was applied.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use countersign::CliError;
use serde_json::json;
use support::{CREATE_NIGHTLY, Harness, Person, assert_refused};

#[tokio::test]
async fn approving_at_the_terminal_applies_the_reviewed_action_once() {
    let h = Harness::start().await;
    let id = h.propose("schedule.create", CREATE_NIGHTLY).await;
    assert_eq!(h.schedules().await, vec![]);

    let run = h
        .cli_with(&["approve", &id], "", Person::TypesTheChallenge)
        .await;
    assert_eq!(run.result, Ok(()), "{}", run.stdout);
    assert!(run.stdout.starts_with("applied"), "{}", run.stdout);
    // The person saw the authoritative preview, with the model's free text labelled.
    assert!(
        run.shown.contains("Create schedule \"nightly\""),
        "{}",
        run.shown
    );
    assert!(
        run.shown.to_lowercase().contains("model-supplied"),
        "{}",
        run.shown
    );
    assert!(
        run.shown.contains("Approving executes it here, now, once."),
        "{}",
        run.shown
    );

    let schedules = h.schedules().await;
    assert_eq!(schedules.len(), 1);
    assert_eq!(schedules[0].0, "nightly");
    let result = h.cli(&["--json", "result", &id]).await;
    assert_eq!(result.json()["status"], "applied");
    let show = h.cli(&["--json", "show", &id]).await;
    assert_eq!(show.json()["status"], "applied");
}

#[tokio::test]
async fn a_consumed_proof_presented_again_returns_the_recorded_disposition_and_runs_nothing() {
    let h = Harness::start().await;
    let id = h.propose("schedule.create", CREATE_NIGHTLY).await;
    let proof = h.approve_to_file(&id).await;
    let first = h.exec(&id, &proof, &[]).await;
    assert_eq!(first.result, Ok(()), "{}", first.stdout);
    assert_eq!(first.json()["applied"], true);
    let effects = h.effects_run().await;
    let state = h.schedules().await;

    for _ in 0..3 {
        let again = h.exec(&id, &proof, &[]).await;
        assert_refused(&again, "already_used");
        assert_eq!(again.json()["recorded_status"], "applied");
    }
    assert_eq!(h.effects_run().await, effects);
    assert_eq!(h.schedules().await, state);
}

#[tokio::test]
async fn approval_is_refused_without_a_controlling_terminal() {
    let h = Harness::start().await;
    let id = h.propose("schedule.create", CREATE_NIGHTLY).await;
    let run = h.cli_with(&["approve", &id], "", Person::NoTerminal).await;
    assert_eq!(
        run.result,
        Err(CliError::Refused(
            "approval needs an interactive terminal and none is available (No such device or address (os error 6)); nothing was approved".into()
        ))
    );
    assert_eq!(
        h.cli(&["--json", "show", &id]).await.json()["status"],
        "pending"
    );
    assert_eq!(h.schedules().await, vec![]);
}

#[tokio::test]
async fn approval_is_refused_when_the_challenge_is_not_typed() {
    let h = Harness::start().await;
    let id = h.propose("schedule.create", CREATE_NIGHTLY).await;
    let run = h
        .cli_with(&["approve", &id], "", Person::TypesAnotherCode)
        .await;
    assert_eq!(
        run.result,
        Err(CliError::Refused(
            "the challenge was not typed correctly; nothing was approved".into()
        ))
    );
    assert_eq!(
        h.cli(&["--json", "show", &id]).await.json()["status"],
        "pending"
    );
    assert_eq!(h.schedules().await, vec![]);
}

#[tokio::test]
async fn a_denied_proposal_cannot_be_approved_afterwards() {
    let h = Harness::start().await;
    let id = h.propose("schedule.create", CREATE_NIGHTLY).await;
    let denied = h.cli(&["deny", &id, "--reason", "not this week"]).await;
    assert_eq!(denied.result, Ok(()));
    let show = h.cli(&["--json", "show", &id]).await.json();
    assert_eq!(
        (show["status"].as_str(), show["reason"].as_str()),
        (Some("denied"), Some("not this week"))
    );
    let run = h
        .cli_with(&["approve", &id], "", Person::TypesTheChallenge)
        .await;
    assert_eq!(
        run.result,
        Err(CliError::Refused(format!(
            "proposal {id} is denied, not pending (not_pending)"
        )))
    );
    assert_eq!(h.schedules().await, vec![]);
}

#[tokio::test]
async fn approving_for_a_later_head_execution_applies_nothing_yet() {
    let h = Harness::start().await;
    let id = h.propose("schedule.create", CREATE_NIGHTLY).await;
    let run = h
        .cli_with(
            &["--json", "approve", &id, "--for-mcp"],
            "",
            Person::TypesTheChallenge,
        )
        .await;
    assert_eq!(run.result, Ok(()), "{}", run.stdout);
    assert_eq!(run.json()["delivery"], "handoff");
    assert!(
        !run.stdout.contains("v4.public."),
        "no proof is printed: {}",
        run.stdout
    );
    let show = h.cli(&["--json", "show", &id]).await.json();
    assert_eq!(
        (show["status"].clone(), show["handoff_waiting"].clone()),
        (json!("approved"), json!(true))
    );
    assert_eq!(h.schedules().await, vec![]);
}

#[tokio::test]
async fn invalid_arguments_are_refused_at_proposal_with_the_schema_message() {
    let h = Harness::start().await;
    let run = h
        .cli_with(
            &["propose", "schedule.create", "--args-file", "-"],
            r#"{"name":"x","cron":"* * * * *","extra":1}"#,
            Person::NoTerminal,
        )
        .await;
    let Err(CliError::Refused(message)) = &run.result else {
        panic!("{:?}", run.result)
    };
    assert!(message.contains("extra"), "{message}");
    let run = h
        .cli_with(
            &["propose", "schedule.create", "--args-file", "-"],
            r#"{"name":"x","name":"y","cron":"1"}"#,
            Person::NoTerminal,
        )
        .await;
    let Err(CliError::Refused(message)) = &run.result else {
        panic!("{:?}", run.result)
    };
    assert!(message.to_lowercase().contains("duplicate"), "{message}");
    assert_eq!(h.cli(&["--json", "pending"]).await.json(), json!([]));
}

#[tokio::test]
async fn the_audit_trail_verifies_after_a_flow() {
    let h = Harness::start().await;
    let id = h.propose("schedule.create", CREATE_NIGHTLY).await;
    let proof = h.approve_to_file(&id).await;
    assert_eq!(h.exec(&id, &proof, &[]).await.result, Ok(()));
    let audit = h.cli(&["--json", "audit", "--verify"]).await;
    assert_eq!(audit.result, Ok(()));
    let report = audit.json();
    assert_eq!(report["intact"], true);
    // The five events are the principal's chain, positions 1 to 5.
    let heads = report["heads"].as_object().unwrap();
    assert_eq!(heads.len(), 1, "{heads:?}");
    let (principal, head) = heads.iter().next().unwrap();
    assert_eq!(head["count"], 5);
    let text = h.cli(&["audit", "--verify"]).await;
    assert_eq!(
        text.stdout.lines().next().unwrap(),
        format!(
            "intact: 5 events in 1 chain, 0 checkpoints, heads digest {}",
            report["head_hash"].as_str().unwrap()
        )
    );
    let rows = h.cli(&["--json", "audit"]).await.json();
    let rows = rows.as_array().unwrap();
    let positions: Vec<(&str, i64)> = rows
        .iter()
        .map(|e| (e["chain"].as_str().unwrap(), e["seq"].as_i64().unwrap()))
        .collect();
    let expected: Vec<(&str, i64)> = (1..=5).map(|seq| (principal.as_str(), seq)).collect();
    assert_eq!(positions, expected);
    let kinds: Vec<String> = rows
        .iter()
        .map(|e| e["kind"].as_str().unwrap().to_string())
        .collect();
    for kind in [
        "proposed",
        "approved",
        "intent",
        "effect_applied",
        "completed",
    ] {
        assert!(
            kinds.contains(&kind.to_string()),
            "{kind} missing from {kinds:?}"
        );
    }
}

#[tokio::test]
async fn a_handoff_executes_once_from_the_proposing_session_and_only_after_approval() {
    let h = Harness::start().await;
    let id = h
        .propose_in("schedule.create", CREATE_NIGHTLY, "agent-1")
        .await;
    // Before approval: refused with the exact command a person must run.
    let early = h
        .cli(&["--json", "exec", &id, "--handoff", "--session", "agent-1"])
        .await;
    assert_refused(&early, "no_live_handoff");
    assert!(
        early.json()["message"]
            .as_str()
            .unwrap()
            .contains(&format!("countersign approve {id} --hand-off"))
    );
    assert_eq!(h.schedules().await, vec![]);

    h.approve_for_mcp(&id).await;
    // Another session cannot claim it, and the approval stays available.
    let other = h
        .cli(&["--json", "exec", &id, "--handoff", "--session", "agent-2"])
        .await;
    assert_refused(&other, "handoff_session_mismatch");
    assert_eq!(h.schedules().await, vec![]);

    let run = h
        .cli(&["--json", "exec", &id, "--handoff", "--session", "agent-1"])
        .await;
    assert_eq!(run.result, Ok(()), "{}", run.stdout);
    assert_eq!(run.json()["applied"], true);
    assert_eq!(h.schedules().await.len(), 1);
    let again = h
        .cli(&["--json", "exec", &id, "--handoff", "--session", "agent-1"])
        .await;
    assert_refused(&again, "already_used");
    assert_eq!(h.schedules().await.len(), 1);
}

#[tokio::test]
async fn a_person_can_authorize_a_handoff_for_another_session_explicitly() {
    let h = Harness::start().await;
    let id = h
        .propose_in("schedule.create", CREATE_NIGHTLY, "mcp-0000000000000001")
        .await;
    // A session id outside the signer's charset is refused; nothing approved.
    let bad = h
        .cli_with(
            &[
                "approve",
                &id,
                "--for-mcp",
                "--execute-in-session",
                "two words",
            ],
            "",
            Person::TypesTheChallenge,
        )
        .await;
    assert!(
        matches!(bad.result, Err(CliError::Refused(_))),
        "{:?}",
        bad.result
    );
    let show = h.cli(&["--json", "show", &id]).await;
    assert_eq!(show.json()["status"], "pending");

    let approved = h
        .cli_with(
            &[
                "--json",
                "approve",
                &id,
                "--for-mcp",
                "--execute-in-session",
                "mcp-0000000000000002",
            ],
            "",
            Person::TypesTheChallenge,
        )
        .await;
    assert_eq!(approved.result, Ok(()), "{}", approved.stdout);
    assert!(
        approved.shown.contains(
            "session mcp-0000000000000002 (NOT the proposing session mcp-0000000000000001)"
        ),
        "{}",
        approved.shown
    );
    // The proposing session no longer can; the named one can, once.
    let proposer = h.exec_handoff(&id, "mcp-0000000000000001").await;
    assert_refused(&proposer, "handoff_session_mismatch");
    assert_eq!(h.schedules().await, vec![]);
    let named = h.exec_handoff(&id, "mcp-0000000000000002").await;
    assert_eq!(named.result, Ok(()), "{}", named.stdout);
    assert_eq!(named.json()["applied"], true);
    assert_eq!(h.schedules().await.len(), 1);
}

#[tokio::test]
async fn a_withdrawn_proposal_can_never_be_approved() {
    let h = Harness::start().await;
    let id = h.propose("schedule.create", CREATE_NIGHTLY).await;
    let kept = h
        .propose("schedule.create", r#"{"name":"kept","cron":"0 1 * * *"}"#)
        .await;
    let withdrawn = h.cli(&["--json", "withdraw", &id]).await;
    assert_eq!(withdrawn.result, Ok(()));
    assert_eq!(withdrawn.json()["status"], "withdrawn");
    let approve = h
        .cli_with(&["approve", &id], "", Person::TypesTheChallenge)
        .await;
    assert_eq!(
        approve.result,
        Err(CliError::Refused(format!(
            "proposal {id} is withdrawn, not pending (not_pending)"
        )))
    );
    let again = h.cli(&["withdraw", &id]).await;
    assert_eq!(
        again.result,
        Err(CliError::Refused(format!(
            "proposal {id} is withdrawn, not pending (not_pending)"
        )))
    );
    let listed = h
        .cli(&["--json", "list", "--status", "pending"])
        .await
        .json();
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![kept.as_str()]);
    assert_eq!(
        h.cli(&["--json", "list"])
            .await
            .json()
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(h.schedules().await, vec![]);
}

#[tokio::test]
async fn approval_never_overwrites_an_existing_proof_file_and_approves_nothing() {
    let h = Harness::start().await;
    let id = h.propose("schedule.create", CREATE_NIGHTLY).await;
    let existing = h.proof_file("already-here", "keep me");
    let run = h
        .cli_with(
            &["approve", &id, "--proof-out", existing.to_str().unwrap()],
            "",
            Person::TypesTheChallenge,
        )
        .await;
    assert_eq!(
        run.result,
        Err(CliError::Refused(format!(
            "{} already exists; the proof is only written to a new file; nothing was approved",
            existing.display()
        )))
    );
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "keep me");
    assert_eq!(
        h.cli(&["--json", "show", &id]).await.json()["status"],
        "pending"
    );
}

#[tokio::test]
async fn a_proof_file_that_is_not_text_is_refused_and_applies_nothing() {
    let h = Harness::start().await;
    let id = h.propose("schedule.create", CREATE_NIGHTLY).await;
    let path = h.scratch.path().join("binary.proof");
    std::fs::write(&path, [0xff, 0xfe, 0x00]).unwrap();
    let run = h
        .cli(&["exec", &id, "--proof-file", path.to_str().unwrap()])
        .await;
    assert_eq!(
        run.result,
        Err(CliError::Refused(
            "the proof is not text; nothing was applied".into()
        ))
    );
    assert_eq!(h.schedules().await, vec![]);
    assert_eq!(
        h.cli(&["--json", "show", &id]).await.json()["status"],
        "pending"
    );
}

#[tokio::test]
async fn a_blank_denial_reason_and_revoking_an_unapproved_proposal_are_refused() {
    let h = Harness::start().await;
    let id = h.propose("schedule.create", CREATE_NIGHTLY).await;
    let deny = h.cli(&["deny", &id, "--reason", "   "]).await;
    assert_eq!(
        deny.result,
        Err(CliError::Refused(
            "a denial needs a non-empty --reason".into()
        ))
    );
    let revoke = h.cli(&["revoke", &id]).await;
    assert_eq!(
        revoke.result,
        Err(CliError::Refused(format!(
            "{id} has no unconsumed proof to revoke"
        )))
    );
    assert_eq!(revoke.stdout, "", "a refusal is printed once, on stderr");
    assert_eq!(
        h.cli(&["--json", "show", &id]).await.json()["status"],
        "pending"
    );
}

#[tokio::test]
async fn a_proposal_is_named_by_the_start_of_its_id_when_that_names_one() {
    let h = Harness::start().await;
    let id = h.propose("schedule.create", CREATE_NIGHTLY).await;
    let other = h
        .propose("schedule.create", r#"{"name":"weekly","cron":"0 4 * * 0"}"#)
        .await;
    // The shortest start of `id` that `other` does not share (at least 4
    // hex digits), with and without `prop_`.
    let digits = &id["prop_".len()..];
    let length = (4..32)
        .find(|&n| !other["prop_".len()..].starts_with(&digits[..n]))
        .unwrap();
    let short = &digits[..length];
    let shown = h.cli(&["--json", "show", short]).await;
    assert_eq!(shown.result, Ok(()), "{}", shown.stderr);
    assert_eq!(shown.json()["id"], id.as_str());
    let run = h
        .cli_with(
            &["approve", &format!("prop_{short}")],
            "",
            Person::TypesTheChallenge,
        )
        .await;
    assert_eq!(run.result, Ok(()), "{}", run.stdout);
    assert!(run.stdout.starts_with("applied"), "{}", run.stdout);
    assert_eq!(h.schedules().await.len(), 1);
    let result = h.cli(&["--json", "result", short]).await;
    assert_eq!(result.json()["status"], "applied");

    // A start that no proposal's id has: said, and nothing is done.
    let unknown = (0..16u32)
        .map(|d| format!("{d:x}000"))
        .find(|p| {
            !digits.starts_with(p.as_str()) && !other["prop_".len()..].starts_with(p.as_str())
        })
        .unwrap();
    let refused = h
        .cli_with(
            &["deny", &unknown, "--reason", "no"],
            "",
            Person::TypesTheChallenge,
        )
        .await;
    assert_eq!(
        refused.result,
        Err(CliError::Error(format!(
            "no proposal among the newest 500 has an id starting with prop_{unknown}; give its whole id (`countersign list`)"
        )))
    );
    let pending = h.cli(&["--json", "show", &other]).await;
    assert_eq!(pending.json()["status"], "pending");
}
