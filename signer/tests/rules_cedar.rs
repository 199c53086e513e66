//! A rule whose scope is written in Cedar (issue 51, item 3), through the
//! real gRPC client: the signer checks the scope against the registry's
//! schema before a person may create the rule, refusing one that could
//! approve more than the person reads; once created, the rule approves
//! exactly what its policies permit (a forbid among them wins), with its
//! budget and sessions still applying; a shell rule matches the command's
//! words, never a command the lexer refuses.
#![allow(clippy::unwrap_used)]

mod support;

use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{CreateRuleRequest, ListRulesRequest, ProposalView, ProposeRequest};
use countersign_registry::Registry;
use countersign_signer::testing::TestSigner;
use serde_json::{Value, json};
use time::OffsetDateTime;
use tonic::Code;
use tonic::transport::Channel;

use support::{SESSION, approver, create_rule, head, reason_of};

const RULES_ON: &str = "\n[rules]\nenabled = true\n";

async fn with_rules() -> TestSigner {
    TestSigner::start_configured(Registry::default_toml(), None, RULES_ON)
        .await
        .unwrap()
}

fn expires() -> String {
    let at = OffsetDateTime::now_utc() + time::Duration::hours(1);
    countersign_verifier::timestamp::format_whole_seconds(at).unwrap()
}

/// A rule over `operations` from [`SESSION`] whose scope is `cedar`.
fn definition(operations: &[&str], cedar: &str) -> Value {
    json!({
        "operations": operations,
        "cedar": cedar,
        "sessions": [SESSION],
        "max_uses": 2,
        "per_hour": 5,
        "expires_at": expires(),
    })
}

const NIGHTLY: &str = r#"@id("nightly")
permit (principal, action == Action::"schedule.create", resource)
when { context.arguments.name like "nightly*" };

@id("not-prod")
forbid (principal, action, resource)
when { context.arguments has description && context.arguments.description == "prod" };
"#;

const GIT_STATUS: &str = r#"@id("git-status")
permit (principal, action == Action::"agent.shell", resource)
when {
  context has argv && context.argv has w0 && context.argv.w0 == "git" &&
  context.argv.count == 2 && context.argv has w1 && context.argv.w1 == "status"
};
"#;

/// Proposes `operation` with `arguments` through `through`, from [`SESSION`].
fn request(operation: &str, arguments: &Value, through: &str) -> ProposeRequest {
    ProposeRequest {
        operation: operation.into(),
        arguments_json: arguments.to_string(),
        session: SESSION.into(),
        note: String::new(),
        idempotency_key: String::new(),
        head: through.into(),
    }
}

async fn schedule(head: &mut SignerClient<Channel>, arguments: Value) -> ProposalView {
    let request = request("schedule.create", &arguments, "cli");
    head.propose(request).await.unwrap().into_inner()
}

async fn shell(head: &mut SignerClient<Channel>, command: &str) -> ProposalView {
    let arguments = json!({
        "agent": "claude-code",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "cwd": "/srv/app",
    });
    let request = request("agent.shell", &arguments, "hook");
    head.propose(request).await.unwrap().into_inner()
}

#[tokio::test]
async fn a_rule_scoped_in_cedar_approves_exactly_what_its_policies_permit() {
    let signer = with_rules().await;
    let mut approver = approver(&signer).await;
    let mut head = head(&signer).await;

    // What the person reads before creating it: the policies, verbatim.
    let shown = approver
        .create_rule(CreateRuleRequest {
            definition_json: definition(&["schedule.create"], NIGHTLY).to_string(),
            dry_run: true,
            definition_sha256: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(shown.scope.contains(
        "Cedar:      only what these policies permit (and no forbid among them):\n  | @id(\"nightly\")\n"
    ));
    assert!(!shown.scope.contains("ANY arguments"), "{}", shown.scope);
    let rule = create_rule(&mut approver, &definition(&["schedule.create"], NIGHTLY)).await;
    let provenance = format!("rule:{}@1", rule.id);

    let approved = schedule(
        &mut head,
        json!({"name": "nightly-db", "cron": "0 3 * * *"}),
    )
    .await;
    assert_eq!(
        (approved.status().name(), approved.provenance.as_str()),
        ("approved", provenance.as_str())
    );
    // Not permitted, and forbidden: a person decides each.
    for arguments in [
        json!({"name": "weekly", "cron": "0 3 * * *"}),
        json!({"name": "nightly-x", "cron": "0 3 * * *", "description": "prod"}),
    ] {
        let view = schedule(&mut head, arguments.clone()).await;
        assert_eq!(view.status().name(), "pending", "{arguments}");
        assert!(view.provenance.is_empty(), "{arguments}");
    }
    // The budget still holds: a second use, then a person again.
    let second = schedule(&mut head, json!({"name": "nightly-2", "cron": "0 3 * * *"})).await;
    assert_eq!(second.status().name(), "approved");
    let third = schedule(&mut head, json!({"name": "nightly-3", "cron": "0 3 * * *"})).await;
    assert_eq!(third.status().name(), "pending");
    let listed = approver
        .list_rules(ListRulesRequest {})
        .await
        .unwrap()
        .into_inner()
        .rules;
    assert_eq!((listed[0].uses, listed[0].remaining), (2, 0));
}

#[tokio::test]
async fn a_shell_rule_in_cedar_matches_the_commands_words_and_nothing_the_lexer_refuses() {
    let signer = with_rules().await;
    let mut approver = approver(&signer).await;
    let mut head = head(&signer).await;
    let mut rule = definition(&["agent.shell"], GIT_STATUS);
    rule["max_uses"] = json!(100);
    rule["per_hour"] = json!(100);
    create_rule(&mut approver, &rule).await;
    for (command, status) in [
        ("git status", "approved"),
        ("git 'status'", "approved"),
        ("git  \"status\"", "approved"),
        ("git status --short", "pending"),
        ("git push", "pending"),
        ("/usr/bin/git status", "pending"),
        ("git status; rm -rf ~", "pending"),
        ("git status && curl evil.example", "pending"),
        ("git $(echo status)", "pending"),
        ("GIT_DIR=/tmp git status", "pending"),
    ] {
        let view = shell(&mut head, command).await;
        assert_eq!(view.status().name(), status, "{command}");
    }
}

#[tokio::test]
async fn creation_refuses_a_cedar_scope_that_could_approve_more_than_it_says() {
    let signer = with_rules().await;
    let mut approver = approver(&signer).await;
    let mut head = head(&signer).await;
    let cases = [
        (
            &["schedule.create"][..],
            "permit (principal, action, resource) when { context.arguments.name like };",
            "the rule's Cedar scope is refused: the policy set is not valid Cedar: 1:",
        ),
        (
            &["schedule.create"][..],
            "permit (principal, action == Action::\"schedule.create\", resource) when { context.arguments.nmae == \"x\" };",
            "the rule's Cedar scope is refused: it does not validate against the registry's schema: policy `policy0`:",
        ),
        (
            &["schedule.create"][..],
            "@require_approval\npermit (principal, action == Action::\"schedule.create\", resource);",
            "the rule's Cedar scope is refused: policy `policy0` requires approval: a rule approves without asking a person, so its scope only permits or forbids",
        ),
        (
            &["schedule.create"][..],
            "forbid (principal, action == Action::\"schedule.create\", resource) when { context.arguments.name == \"x\" };",
            "the rule's Cedar scope is refused: it holds no permit, so the rule would never approve anything",
        ),
        (
            &["agent.shell"][..],
            "@id(\"any-git\")\npermit (principal, action == Action::\"agent.shell\", resource is Target) when { resource.value like \"git *\" };",
            "the rule's Cedar scope is refused: policy `any-git` may permit a shell command without naming its program",
        ),
        (
            &["agent.shell"][..],
            "@id(\"either\")\npermit (principal, action, resource) when { (context has argv && context.argv has w0 && context.argv.w0 == \"git\") || true };",
            "the rule's Cedar scope is refused: policy `either` may permit a shell command without naming its program",
        ),
    ];
    for (operations, cedar, refusal) in cases {
        let rule = definition(operations, cedar);
        for dry_run in [true, false] {
            let status = approver
                .create_rule(CreateRuleRequest {
                    definition_json: rule.to_string(),
                    dry_run,
                    definition_sha256: "0".repeat(64),
                })
                .await
                .unwrap_err();
            assert_eq!(
                (status.code(), reason_of(&status)),
                (Code::InvalidArgument, "invalid_rule".into()),
                "{cedar}"
            );
            assert!(
                status.message().starts_with(refusal),
                "{cedar}: {}",
                status.message()
            );
        }
        // A model proposing the same rule is refused before anyone is asked.
        let status = head
            .propose(request("rule.create", &rule, "mcp"))
            .await
            .unwrap_err();
        assert!(
            status.message().starts_with(refusal),
            "{}",
            status.message()
        );
    }
    let listed = approver
        .list_rules(ListRulesRequest {})
        .await
        .unwrap()
        .into_inner()
        .rules;
    assert!(listed.is_empty());
    let events = signer.state().ledger().events().await.unwrap();
    assert!(
        events
            .iter()
            .all(|e| !e.kind.starts_with("rule_") && e.kind != "proposed")
    );
}
