//! `countersign hook <agent>`, the head a coding agent's pre-tool-call hook
//! runs: each tool call is proposed as its agent operation, a person (or a
//! rule) decides, and the hook answers in the agent's shape. An approval is
//! consumed once and answers one call; a denial, a wait that runs out, a
//! malformed input and a home that does not load are denies, never an
//! allow, and none of them leaves anything approved.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{Backend, Harness, Person, Run, claude_code_bash as bash, cli_in};

/// The session a Claude Code call of [`bash`] is proposed in.
const SESSION: &str = "claude-code:0b6c1c3e-5d0f-4a8e-9a55-1f4f3c2d7e10";

/// Run `countersign hook AGENT --wait-secs WAIT` with `input` on stdin.
async fn hook(home: &str, agent: &str, input: &str, wait: u64) -> Run {
    let wait = wait.to_string();
    cli_in(
        home,
        &["hook", agent, "--wait-secs", &wait],
        input,
        Person::NoTerminal,
    )
    .await
}

/// Claude Code's `PreToolUse` answer: the decision and its reason.
fn decision(run: &Run) -> (String, String) {
    assert_eq!(run.result, Ok(()), "{}", run.stderr);
    let answer: Value = serde_json::from_str(&run.stdout).expect("one JSON answer");
    let out = &answer["hookSpecificOutput"];
    assert_eq!(out["hookEventName"], "PreToolUse");
    (
        out["permissionDecision"].as_str().unwrap().to_owned(),
        out["permissionDecisionReason"].as_str().unwrap().to_owned(),
    )
}

/// The id of the one pending proposal, once there is one.
async fn pending(h: &Harness) -> Value {
    for _ in 0..200 {
        let run = h.cli(&["--json", "list", "--status", "pending"]).await;
        if let Some(first) = run.json().as_array().and_then(|list| list.first()) {
            return first.clone();
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("nothing was proposed");
}

async fn status(h: &Harness, id: &str) -> String {
    let show = h.cli(&["--json", "show", id]).await.json();
    show["status"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn an_approved_call_is_allowed_once_and_asked_again_gets_the_recorded_answer() {
    let h = Harness::start().await;
    let home = h.home();
    let input = bash("toolu_01", "make deploy");
    let (run, id) = tokio::join!(hook(&home, "claude-code", &input, 30), async {
        let waiting = pending(&h).await;
        assert_eq!(waiting["operation"], "agent.shell");
        assert_eq!(waiting["session"], SESSION);
        let preview = waiting["preview"].as_str().unwrap();
        assert!(preview.contains("  Command: make deploy"), "{preview}");
        let id = waiting["id"].as_str().unwrap().to_owned();
        h.approve_for_mcp(&id).await;
        id
    });
    let (decision_made, reason) = decision(&run);
    assert_eq!(decision_made, "allow", "{reason}");
    assert!(reason.contains(&id), "{reason}");
    assert_eq!(status(&h, &id).await, "applied");
    let result = h.cli(&["--json", "result", &id]).await.json();
    assert_eq!(result["result"], json!({"answer": "allow"}));

    // The same tool call asked again: the recorded answer, nothing new.
    let again = hook(&home, "claude-code", &input, 1).await;
    let (decision_made, reason) = decision(&again);
    assert_eq!(decision_made, "allow");
    assert_eq!(
        reason,
        format!("countersign allowed this call before (proposal {id})")
    );
    // The same command as another call: asked again, and not allowed when
    // nobody answers.
    let other = hook(&home, "claude-code", &bash("toolu_02", "make deploy"), 1).await;
    let (decision_made, reason) = decision(&other);
    assert_eq!(decision_made, "deny");
    assert!(
        reason.starts_with("no decision within 1 s; countersign withdrew proposal prop_"),
        "{reason}"
    );
    let listed = h.cli(&["--json", "list"]).await.json();
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");
}

#[tokio::test]
async fn a_denied_call_is_denied_with_the_persons_reason() {
    let h = Harness::start().await;
    let home = h.home();
    let input = bash("toolu_03", "rm -rf build");
    let (run, id) = tokio::join!(hook(&home, "claude-code", &input, 30), async {
        let id = pending(&h).await["id"].as_str().unwrap().to_owned();
        let denied = h.cli(&["deny", &id, "--reason", "not the build dir"]).await;
        assert_eq!(denied.result, Ok(()), "{}", denied.stderr);
        id
    });
    let (decision_made, reason) = decision(&run);
    assert_eq!(decision_made, "deny");
    assert_eq!(
        reason,
        format!("a person denied this call in countersign: not the build dir (proposal {id})")
    );
    assert_eq!(status(&h, &id).await, "denied");
}

#[tokio::test]
async fn a_call_nobody_decides_is_denied_and_withdrawn_so_a_late_approval_applies_nothing() {
    let h = Harness::start().await;
    let run = hook(
        &h.home(),
        "claude-code",
        &bash("toolu_04", "make deploy"),
        1,
    )
    .await;
    let (decision_made, reason) = decision(&run);
    assert_eq!(decision_made, "deny");
    let id = reason
        .strip_prefix("no decision within 1 s; countersign withdrew proposal ")
        .unwrap_or_else(|| panic!("{reason}"))
        .to_owned();
    assert_eq!(status(&h, &id).await, "withdrawn");
    let late = h
        .cli_with(
            &["approve", &id, "--for-mcp"],
            "",
            Person::TypesTheChallenge,
        )
        .await;
    assert!(late.result.is_err(), "{}", late.stdout);
    assert_eq!(status(&h, &id).await, "withdrawn");
}

#[tokio::test]
async fn malformed_input_and_a_home_that_does_not_load_are_denied_in_the_agents_shape() {
    let h = Harness::start().await;
    // Not JSON: Claude Code's exit-2 deny, the reason on stderr.
    let run = hook(&h.home(), "claude-code", "{not json", 1).await;
    assert_eq!(run.result, Err(countersign::CliError::Answered(2)));
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("countersign"), "{}", run.stderr);
    // A required field missing: a deny naming it.
    let mut input: Value = serde_json::from_str(&bash("toolu_05", "ls")).unwrap();
    input.as_object_mut().unwrap().remove("tool_input");
    let run = hook(&h.home(), "claude-code", &input.to_string(), 1).await;
    let (decision_made, reason) = decision(&run);
    assert_eq!(decision_made, "deny");
    assert!(reason.contains("tool_input"), "{reason}");
    // No installation at that home: a deny, not an error of the CLI's own.
    let nowhere = h.scratch.path().join("no-home");
    let run = hook(
        nowhere.to_str().unwrap(),
        "claude-code",
        &bash("toolu_06", "ls"),
        1,
    )
    .await;
    let (decision_made, reason) = decision(&run);
    assert_eq!(decision_made, "deny");
    assert!(
        reason.starts_with("countersign denied this call: "),
        "{reason}"
    );
    assert!(h.nothing_pending().await);
    let listed = h.cli(&["--json", "list"]).await.json();
    assert_eq!(listed, json!([]));
}

#[tokio::test]
async fn an_edit_is_proposed_with_the_diff_of_the_file_on_disk() {
    let h = Harness::start().await;
    let project = h.scratch.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("app.conf"), "port = 80\nname = app\n").unwrap();
    let input = json!({
        "session_id": "s-edit",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": project.to_str().unwrap(),
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": "app.conf", "old_string": "port = 80", "new_string": "port = 8080"},
        "tool_use_id": "toolu_07",
    })
    .to_string();
    let run = hook(&h.home(), "claude-code", &input, 1).await;
    assert_eq!(decision(&run).0, "deny");
    let listed = h.cli(&["--json", "list"]).await.json();
    let proposal = &listed[0];
    assert_eq!(proposal["operation"], "agent.edit");
    let preview = proposal["preview"].as_str().unwrap();
    for line in [
        "  Diff:",
        "  | -port = 80",
        "  | +port = 8080",
        "  |  name = app",
    ] {
        assert!(preview.contains(line), "{line:?} in {preview}");
    }
}

#[tokio::test]
async fn a_rule_covers_git_status_but_never_the_same_words_with_shell_syntax() {
    let h = Harness::start_with_rules(Backend::Sqlite).await;
    let expires = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    let rule = json!({
        "operations": ["agent.shell"],
        "constraints": [
            {"pointer": "/tool_input/command", "argv": {"program": "git", "args": ["status"], "more_args": false}},
        ],
        "sessions": ["*"],
        "max_uses": 10,
        "per_hour": 10,
        "expires_at": countersign_verifier::timestamp::format_whole_seconds(expires).unwrap(),
    });
    h.create_rule(&rule).await;
    let home = h.home();
    let run = hook(&home, "claude-code", &bash("toolu_08", "git status"), 1).await;
    let (decision_made, reason) = decision(&run);
    assert_eq!(decision_made, "allow", "{reason}");
    assert!(reason.contains("rule:"), "{reason}");
    for (id, command) in [
        ("toolu_09", "git status; touch x"),
        ("toolu_10", "git status > out"),
    ] {
        let run = hook(&home, "claude-code", &bash(id, command), 1).await;
        assert_eq!(decision(&run).0, "deny", "{command}");
    }
    let applied = h
        .cli(&["--json", "list", "--status", "applied"])
        .await
        .json();
    assert_eq!(applied.as_array().unwrap().len(), 1, "{applied}");
}

#[tokio::test]
async fn every_agent_gets_its_own_shape() {
    let h = Harness::start().await;
    let home = h.home();
    // Gemini CLI: BeforeTool, `decision` deny with a reason, exit 0.
    let gemini = json!({
        "session_id": "g1", "transcript_path": "/tmp/t", "cwd": "/w",
        "hook_event_name": "BeforeTool", "timestamp": "2026-12-04T00:00:00Z",
        "tool_name": "run_shell_command", "tool_input": {"command": "ls"},
    });
    let run = hook(&home, "gemini", &gemini.to_string(), 1).await;
    assert_eq!(run.result, Ok(()), "{}", run.stderr);
    let answer: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(answer["decision"], "deny", "{answer}");
    // Cursor: beforeShellExecution, `permission` deny.
    let cursor = json!({
        "conversation_id": "c1", "generation_id": "g1", "hook_event_name": "beforeShellExecution",
        "command": "ls", "cwd": "/w", "workspace_roots": ["/w"],
    });
    let run = hook(&home, "cursor", &cursor.to_string(), 1).await;
    assert_eq!(run.result, Ok(()), "{}", run.stderr);
    let answer: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(answer["permission"], "deny", "{answer}");
    let listed = h.cli(&["--json", "list"]).await.json();
    let sessions: Vec<_> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["session"].as_str().unwrap(),
                p["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        sessions,
        [("cursor:c1", "withdrawn"), ("gemini:g1", "withdrawn")]
    );
}

#[tokio::test]
async fn init_merges_the_hook_into_each_agents_settings_once_and_keeps_a_backup() {
    let h = Harness::start().await;
    let project = h.scratch.path().join("project");
    let claude = project.join(".claude/settings.local.json");
    std::fs::create_dir_all(claude.parent().unwrap()).unwrap();
    let theirs = r#"{"permissions":{"allow":["Bash(ls)"]},"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"audit-log"}]}]}}"#;
    std::fs::write(&claude, theirs).unwrap();
    let dir = project.to_str().unwrap();
    let run = h
        .cli(&["--json", "init", "claude-code", "--project", dir])
        .await;
    assert_eq!(run.result, Ok(()), "{}", run.stderr);
    let report = run.json();
    assert_eq!(report["added"], json!(["PreToolUse"]));
    let command = report["command"].as_str().unwrap().to_owned();
    assert!(
        command.ends_with(&format!(" --home {} hook claude-code", h.home())),
        "{command}"
    );
    let backup = report["backup"].as_str().unwrap();
    assert_eq!(std::fs::read_to_string(backup).unwrap(), theirs);
    let settings: Value = serde_json::from_str(&std::fs::read_to_string(&claude).unwrap()).unwrap();
    assert_eq!(settings["permissions"], json!({"allow": ["Bash(ls)"]}));
    assert_eq!(
        settings["hooks"]["PreToolUse"],
        json!([
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "audit-log"}]},
            {"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": 360, "onFailure": "block"}]},
        ])
    );
    // Again: nothing changes, not even the bytes.
    let written = std::fs::read(&claude).unwrap();
    let again = h
        .cli(&["--json", "init", "claude-code", "--project", dir])
        .await;
    assert_eq!(again.json()["added"], json!([]));
    assert_eq!(std::fs::read(&claude).unwrap(), written);

    // The other three, in files of their own.
    for (agent, file) in [
        ("codex", ".codex/hooks.json"),
        ("gemini", ".gemini/settings.json"),
        ("cursor", ".cursor/hooks.json"),
    ] {
        let run = h.cli(&["--json", "init", agent, "--project", dir]).await;
        assert_eq!(run.result, Ok(()), "{agent}: {}", run.stderr);
        assert_eq!(run.json()["backup"], Value::Null, "{agent}: a new file");
        let command = run.json()["command"].as_str().unwrap().to_owned();
        let text = std::fs::read_to_string(project.join(file)).unwrap();
        let settings: Value = serde_json::from_str(&text).unwrap();
        let expected = match agent {
            "codex" => json!({"hooks": {"PreToolUse": [
                {"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": 360}]}]}}),
            "gemini" => json!({"hooks": {"BeforeTool": [
                {"matcher": "*", "hooks": [{"name": "countersign", "type": "command", "command": command, "timeout": 360000}]}]}}),
            _ => json!({"version": 1, "hooks": {
                "beforeShellExecution": [{"command": command, "timeout": 360, "failClosed": true}],
                "beforeMCPExecution": [{"command": command, "timeout": 360, "failClosed": true}]}}),
        };
        assert_eq!(settings, expected, "{agent}");
    }

    // Said in words: where it went, and what the agent needs next (no
    // file of the source tree); a shared project file is named as such.
    let fresh = h.scratch.path().join("fresh");
    let fresh_dir = fresh.to_str().unwrap();
    let said = h
        .cli(&["init", "claude-code", "--project", fresh_dir])
        .await;
    assert_eq!(said.result, Ok(()), "{}", said.stderr);
    assert!(
        said.stdout.starts_with(&format!(
            "{fresh_dir}/.claude/settings.local.json: added the PreToolUse hook `"
        )) && said.stdout.contains(
            "Claude Code runs a project's hooks once you accept its workspace trust dialog"
        ) && !said.stdout.contains("docs/"),
        "{}",
        said.stdout
    );
    assert!(!fresh.join(".claude/settings.json").exists());
    let said = h.cli(&["init", "gemini", "--project", fresh_dir]).await;
    assert!(
        said.stdout
            .contains("the file names this user's paths, so keep it out of version control"),
        "{}",
        said.stdout
    );

    // A settings file that is not JSON is left as it is.
    let broken = h.scratch.path().join("broken");
    std::fs::create_dir_all(broken.join(".claude")).unwrap();
    std::fs::write(broken.join(".claude/settings.local.json"), "{\"a\":1,").unwrap();
    let run = h
        .cli(&["init", "claude-code", "--project", broken.to_str().unwrap()])
        .await;
    assert!(
        matches!(&run.result, Err(countersign::CliError::Error(m)) if m.contains("is not strict JSON")),
        "{:?}",
        run.result
    );
    assert_eq!(
        std::fs::read_to_string(broken.join(".claude/settings.local.json")).unwrap(),
        "{\"a\":1,"
    );
}

#[tokio::test]
async fn rules_suggest_proposes_what_people_approved_and_creates_nothing() {
    let h = Harness::start_with_rules(Backend::Sqlite).await;
    let home = h.home();
    for (i, command) in ["npm test", "npm test -- --watch=false", "git status; make"]
        .into_iter()
        .cycle()
        .take(6)
        .enumerate()
    {
        let input = bash(&format!("toolu_s{i}"), command);
        let (run, ()) = tokio::join!(hook(&home, "claude-code", &input, 30), async {
            let id = pending(&h).await["id"].as_str().unwrap().to_owned();
            h.approve_for_mcp(&id).await;
        });
        assert_eq!(decision(&run).0, "allow", "{command}");
    }
    let run = h.cli(&["--json", "rules", "suggest", "--min", "2"]).await;
    assert_eq!(run.result, Ok(()), "{}", run.stderr);
    let suggested = run.json();
    let suggested = suggested.as_array().unwrap();
    // `git status; make` has shell syntax no rule sees through: never
    // suggested. `npm` runs scripts: each approved line on its own, exactly.
    assert_eq!(suggested.len(), 2, "{suggested:?}");
    assert_eq!(suggested[0]["count"], 2);
    assert_eq!(
        suggested[0]["definition"]["constraints"],
        json!([{"pointer": "/tool_input/command", "argv": {"program": "npm", "args": ["test"], "more_args": false}}])
    );
    assert_eq!(
        suggested[0]["widest"],
        "exactly npm test (no further arguments; 1 command line(s), 1 approved)"
    );
    assert_eq!(
        suggested[1]["definition"]["constraints"],
        json!([{"pointer": "/tool_input/command", "argv": {"program": "npm", "args": ["test", "--", "--watch=false"], "more_args": false}}])
    );
    let rules = h.cli(&["--json", "rules", "list"]).await.json();
    assert_eq!(rules["rules"], json!([]), "suggesting creates nothing");

    // A person creates it (confirming its scope at the terminal): the
    // next `npm test` is allowed without anyone asked.
    let file = h.scratch.path().join("suggested.json");
    std::fs::write(&file, suggested[0]["definition"].to_string()).unwrap();
    let created = h.create_rule_from(&file, Person::TypesTheChallenge).await;
    assert_eq!(created.result, Ok(()), "{}", created.stdout);
    let run = hook(&home, "claude-code", &bash("toolu_s9", "npm test"), 1).await;
    let (answer, reason) = decision(&run);
    assert_eq!(answer, "allow", "{reason}");
    assert!(reason.contains("rule:"), "{reason}");
}

#[tokio::test]
async fn agent_operations_are_proposed_only_by_hooks() {
    let h = Harness::start().await;
    let arguments = json!({"agent": "claude-code", "tool_name": "Bash",
        "tool_input": {"command": "rm -rf /"}, "cwd": "/"})
    .to_string();
    // The CLI's `propose`: refused, with the reason every head gives.
    let run = h
        .cli_with(
            &["--json", "propose", "agent.shell", "--args-file", "-"],
            &arguments,
            Person::NoTerminal,
        )
        .await;
    assert!(run.result.is_err());
    assert_eq!(
        run.json(),
        json!({"ok": false, "applied": false, "reason": "hook_operation",
            "message": "agent.shell is proposed only by a coding agent's hook (countersign hook AGENT); nothing was proposed"})
    );
    // MCP: no tool proposes one, and none is listed.
    let server = support::mcp::mcp_head(&h).await;
    let err = server
        .call("propose_agent_shell", serde_json::Map::new())
        .await
        .expect_err("no such tool");
    assert!(err.message.contains("unknown tool"), "{err:?}");
    let listed = support::mcp::call(&server, "list_operations", json!({})).await;
    let text = listed.to_string();
    assert!(
        text.contains("schedule.create") && !text.contains("agent."),
        "{text}"
    );
    assert_eq!(h.cli(&["--json", "list"]).await.json(), json!([]));
}

#[tokio::test]
async fn an_unreachable_signer_is_a_deny_and_nothing_is_recorded() {
    let mut h = Harness::start().await;
    h.signer.halt().await.unwrap();
    let run = hook(
        &h.home(),
        "claude-code",
        &bash("toolu_11", "make deploy"),
        5,
    )
    .await;
    let (decision_made, reason) = decision(&run);
    assert_eq!(decision_made, "deny");
    assert!(
        reason.starts_with("countersign denied this call: "),
        "{reason}"
    );
    let events = h.ledger().events().await.unwrap();
    assert!(events.is_empty(), "{events:?}");
}
