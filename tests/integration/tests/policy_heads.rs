//! The operator's Cedar policy on every head that proposes (issue 51): a
//! proposal the binding set forbids is recorded denied, with the policy
//! named, whether it came through the CLI, the HTTP API, the MCP head or a
//! coding agent's hook (directly or through the API), and nothing is
//! applied; `context.head` is the head each one names; an argument Cedar
//! cannot hold exactly is refused on each; `policy diff` lists what a
//! log-only set would have decided otherwise; every head's result, `show`
//! and the console's card name the verdict and its policies.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod console_support;
mod support;

use api_support::Api;
use countersign_mcp::McpHead;
use countersign_registry::Registry;
use serde_json::{Value, json};
use support::mcp::{call, mcp_head};
use support::{Harness, Person, claude_code_bash as bash, cli_in};

/// No name starting `forbidden`, on any head; names starting `cli-only`
/// from the command line alone; never `rm -rf` in a shell.
const POLICY: &str = r#"
@id("no-forbidden-names")
forbid (principal, action == Action::"schedule.create", resource)
when { context.arguments.name like "forbidden*" };

@id("cli-only-names")
forbid (principal, action == Action::"schedule.create", resource)
when { context.arguments.name like "cli-only*" && context.head != "cli" };

@id("review-names")
@require_approval
permit (principal, action == Action::"schedule.create", resource)
when { context.arguments.name like "review*" };

@id("no-rm-rf")
forbid (principal, action == Action::"agent.shell", resource is Target)
when { resource.value like "*rm -rf*" };
"#;

/// A log-only set that would forbid every schedule.
const SHADOW: &str = r#"
@id("shadow-no-schedules")
forbid (principal, action == Action::"schedule.create", resource);
"#;

async fn installation() -> (Api, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let binding = dir.path().join("policy.cedar");
    let shadow = dir.path().join("shadow.cedar");
    std::fs::write(&binding, POLICY).unwrap();
    std::fs::write(&shadow, SHADOW).unwrap();
    let config = format!(
        "\n[policy]\ncedar = \"{}\"\ncedar_log_only = \"{}\"\n",
        binding.display(),
        shadow.display()
    );
    let h = Harness::start_configured(Registry::default_toml(), None, &config).await;
    (Api::over(h).await, dir)
}

fn schedule(name: &str) -> String {
    json!({"name": name, "cron": "0 3 * * *"}).to_string()
}

/// Through the CLI: `countersign --json propose`.
async fn via_cli(api: &Api, name: &str) -> Value {
    let run = api
        .h
        .cli_with(
            &["--json", "propose", "schedule.create", "--args-file", "-"],
            &schedule(name),
            Person::NoTerminal,
        )
        .await;
    run.json()
}

/// Through the HTTP API.
async fn via_api(api: &Api, token: &str, name: &str) -> Value {
    api.post(
        token,
        "/v1/operations/schedule.create/proposals",
        &json!({"arguments": {"name": name, "cron": "0 3 * * *"}}).to_string(),
    )
    .await
    .json()
}

/// Through the MCP head's tool.
async fn via_mcp(mcp: &McpHead, name: &str) -> Value {
    let answer = call(
        mcp,
        "propose_schedule_create",
        json!({"arguments": {"name": name, "cron": "0 3 * * *"}}),
    )
    .await;
    answer["structuredContent"].clone()
}

const FORBIDDEN: &str = "forbidden by the operator's policy (no-forbidden-names)";

#[tokio::test]
async fn what_the_policy_forbids_is_denied_on_every_head_and_nothing_is_applied() {
    let (api, _dir) = installation().await;
    let token = api.token().await;
    let mcp = mcp_head(&api.h).await;

    let cli = via_cli(&api, "forbidden-cli").await;
    let http = via_api(&api, &token, "forbidden-api").await;
    let via_mcp = via_mcp(&mcp, "forbidden-mcp").await;
    for view in [&cli, &http, &via_mcp] {
        assert_eq!(view["status"], "denied", "{view}");
        assert_eq!(view["reason"], FORBIDDEN, "{view}");
        // Every head's result names the verdict and its policies.
        assert_eq!(view["policy"]["verdict"], "forbid", "{view}");
        assert_eq!(
            view["policy"]["policies"],
            json!(["no-forbidden-names"]),
            "{view}"
        );
        assert_eq!(
            view["policy"]["set_sha256"].as_str().unwrap().len(),
            64,
            "{view}"
        );
    }
    // `show` says it in words.
    let shown = api.h.cli(&["show", cli["id"].as_str().unwrap()]).await;
    assert!(
        shown.stdout.contains(
            "policy: the operator's policy forbids it (no-forbidden-names): nobody can approve it\n"
        ),
        "{}",
        shown.stdout
    );
    // The model is told not to wait: nobody will be asked.
    let answer = call(
        &mcp,
        "propose_schedule_create",
        json!({"arguments": {"name": "forbidden-mcp-2", "cron": "0 3 * * *"}}),
    )
    .await;
    let text = answer["content"][0]["text"].as_str().unwrap();
    assert!(
        text.ends_with(&format!(
            "; status denied: {FORBIDDEN}.\nNobody can approve it and nothing runs; do not propose it again."
        )),
        "{text}"
    );
    // And the person at the terminal is told so, not how to approve it.
    let run = api
        .h
        .cli_with(
            &["propose", "schedule.create", "--args-file", "-"],
            &schedule("forbidden-cli-2"),
            Person::NoTerminal,
        )
        .await;
    let last = run.stdout.lines().last().unwrap();
    assert!(
        last.ends_with(&format!(
            ": denied at once ({FORBIDDEN}); nobody can approve it"
        )),
        "{last}"
    );
    // Exit code 3 (refused), nothing more on stderr: a script does not wait.
    assert_eq!(run.result, Err(countersign::CliError::Answered(3)));
    assert_eq!(run.stderr, "");

    // A coding agent's hook, directly and through the API: denied with
    // the policy's reason, at once (nobody is asked).
    let run = cli_in(
        &api.h.home(),
        &["hook", "claude-code", "--wait-secs", "30"],
        &bash("toolu_1", "rm -rf /srv"),
        Person::NoTerminal,
    )
    .await;
    let answer: Value = serde_json::from_str(&run.stdout).expect("one JSON answer");
    let out = &answer["hookSpecificOutput"];
    assert_eq!(out["permissionDecision"], "deny", "{answer}");
    let reason = out["permissionDecisionReason"].as_str().unwrap();
    assert!(
        reason.contains("forbidden by the operator's policy (no-rm-rf)"),
        "{reason}"
    );
    let reply = api
        .post(
            &token,
            "/v1/hooks/claude-code",
            &bash("toolu_2", "rm -rf /srv"),
        )
        .await
        .json();
    let reason = reply["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert_eq!(reply["hookSpecificOutput"]["permissionDecision"], "deny");
    assert!(
        reason.contains("forbidden by the operator's policy (no-rm-rf)"),
        "{reason}"
    );

    // Nothing waits for anybody, and nothing was applied.
    assert!(api.h.nothing_pending().await);
    assert!(api.h.schedules().await.is_empty());
    assert_eq!(api.h.effects_run().await, 0);
    // And nothing can be approved: each is decided.
    let id = cli["id"].as_str().unwrap();
    let approve = api
        .h
        .cli_with(&["approve", id, "--for-mcp"], "", Person::TypesTheChallenge)
        .await;
    let refused = approve.result.unwrap_err().to_string();
    assert!(refused.contains("is denied, not pending"), "{refused}");
}

#[tokio::test]
async fn each_head_names_itself_to_the_policy() {
    let (api, _dir) = installation().await;
    let token = api.token().await;
    let mcp = mcp_head(&api.h).await;
    // Allowed from the command line: a person decides.
    let cli = via_cli(&api, "cli-only-1").await;
    assert_eq!(cli["status"], "pending", "{cli}");
    assert_eq!(cli["policy"]["verdict"], "person", "{cli}");
    assert_eq!(cli["policy"]["policies"], json!([]), "{cli}");
    // Forbidden from the API and MCP heads.
    let http = via_api(&api, &token, "cli-only-2").await;
    let via_mcp = via_mcp(&mcp, "cli-only-3").await;
    for view in [&http, &via_mcp] {
        assert_eq!(view["status"], "denied", "{view}");
        assert_eq!(
            view["reason"],
            "forbidden by the operator's policy (cli-only-names)"
        );
    }
    // The audit trail says which head each came through.
    let events = api.h.ledger().events().await.unwrap();
    let heads: Vec<(String, String)> = events
        .iter()
        .filter(|e| e.kind == "proposed")
        .map(|e| {
            (
                e.details["policy"]["head"].as_str().unwrap().to_owned(),
                e.details["policy"]["binding"]["verdict"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            )
        })
        .collect();
    assert_eq!(
        heads,
        [
            ("cli".to_owned(), "person".to_owned()),
            ("api".to_owned(), "forbid".to_owned()),
            ("mcp".to_owned(), "forbid".to_owned()),
        ]
    );
}

#[tokio::test]
async fn an_argument_the_policy_cannot_see_exactly_is_refused_on_every_head() {
    // schedule.create's cron is a string: a registry whose operation takes
    // a list of labels, two equal, which a Cedar set would collapse.
    let registry = Registry::default_toml().replacen(
        "[operation.schema.properties.cron]",
        "[operation.schema.properties.labels]\ntype = \"array\"\nitems = { type = \"string\" }\n\n[operation.schema.properties.cron]",
        1,
    );
    let dir = tempfile::tempdir().unwrap();
    let binding = dir.path().join("policy.cedar");
    std::fs::write(&binding, POLICY).unwrap();
    let config = format!("\n[policy]\ncedar = \"{}\"\n", binding.display());
    let api = Api::over(Harness::start_configured(&registry, None, &config).await).await;
    let token = api.token().await;
    let mcp = mcp_head(&api.h).await;
    let arguments = json!({"name": "nightly", "cron": "0 3 * * *", "labels": ["a", "a"]});
    let message = "argument /labels/1 cannot be shown to the policy exactly: a duplicate item: Cedar holds an array as a set, which would collapse it; nothing was proposed";

    let run = api
        .h
        .cli_with(
            &["propose", "schedule.create", "--args-file", "-"],
            &arguments.to_string(),
            Person::NoTerminal,
        )
        .await;
    let refused = run.result.unwrap_err().to_string();
    assert!(refused.contains(message), "{refused}");
    let reply = api
        .post(
            &token,
            "/v1/operations/schedule.create/proposals",
            &json!({ "arguments": arguments }).to_string(),
        )
        .await;
    // A refusal is the service's answer: 200, `ok: false`, its reason.
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        reply.json(),
        json!({"ok": false, "applied": false, "reason": "not_representable", "message": message})
    );
    let answer = call(
        &mcp,
        "propose_schedule_create",
        json!({ "arguments": arguments }),
    )
    .await;
    assert_eq!(answer["isError"], true, "{answer}");
    assert!(answer.to_string().contains(message), "{answer}");
    let listed = api.h.cli(&["--json", "list"]).await.json();
    assert_eq!(listed, json!([]));
}

#[tokio::test]
async fn policy_diff_lists_what_the_log_only_set_would_have_decided_otherwise() {
    let (api, _dir) = installation().await;
    let pending = via_cli(&api, "nightly").await;
    // Forbidden by both: no difference.
    via_cli(&api, "forbidden-1").await;
    let run = api.h.cli(&["policy", "diff"]).await;
    assert_eq!(run.result, Ok(()), "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", run.stdout);
    let id = pending["id"].as_str().unwrap();
    assert!(
        lines[0].ends_with(&format!(
            "  {id}  schedule.create (via cli)  binding: person []  log-only: forbid [shadow-no-schedules]"
        )),
        "{}",
        lines[0]
    );
    assert_eq!(
        lines[1],
        "1 proposal on which the log-only policy set would have decided otherwise"
    );
    let listed = api.h.cli(&["--json", "policy", "diff"]).await.json();
    assert_eq!(listed["differences"][0]["proposal_id"], id);
    assert_eq!(listed["differences"][0]["shadow"]["verdict"], "forbid");
}

#[tokio::test]
async fn the_consoles_card_names_the_verdict_and_its_policies() {
    let (api, _dir) = installation().await;
    let review = via_cli(&api, "review-1").await;
    assert_eq!(review["status"], "pending", "{review}");
    assert_eq!(review["policy"]["verdict"], "require_approval", "{review}");
    let forbidden = via_cli(&api, "forbidden-1").await;
    let site = console_support::serve(&api.h.home(), None).await;
    let (site, cookie) = console_support::pair(&site, &api.h.home(), "console").await;
    for (view, line) in [
        (
            &review,
            "Policy: the operator's policy requires a person's approval (review-names)",
        ),
        (
            &forbidden,
            "Policy: the operator's policy forbids it (no-forbidden-names): nobody can approve it",
        ),
    ] {
        let id = view["id"].as_str().unwrap();
        let card = console_support::get(&site, &cookie, &format!("/proposals/{id}")).await;
        assert_eq!(card.status, 200, "{}", card.body);
        assert!(card.body.contains(line), "{line:?} in {}", card.body);
    }
}
