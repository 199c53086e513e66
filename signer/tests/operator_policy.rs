//! The operator's Cedar policy as the signer applies it (issue 51): what
//! it forbids is recorded denied with nobody asked, what it requires
//! approval for waits for the approvers it names, a rule approves only
//! what it permits, arguments it cannot see exactly are refused, an edit
//! takes effect for new proposals only, a set that cannot be used refuses
//! proposals, and a log-only set decides nothing but is recorded.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::{Path, PathBuf};

use countersign_ledger::testing::TempPgDatabase;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{
    Delivery, ListProposalsRequest, ProposalStatus, ProposalView, ProposeRequest,
};
use countersign_registry::Registry;
use countersign_signer::testing::TestSigner;
use serde_json::{Value, json};
use time::OffsetDateTime;
use tonic::Code;
use tonic::transport::Channel;

use support::{approve, approver, head, named_approver, reason_of};

const PAYMENTS: &str = include_str!("../../policy/examples/payments.toml");

/// The payments example, with a forbid of huge payments.
const POLICY: &str = r#"
@id("no-huge-payments")
forbid (principal, action == Action::"payment.send", resource)
when { context.arguments.amount >= 1000000 };

@id("large-payments-need-two")
@require_approval
@quorum("2")
@approvers("alice,bob")
permit (principal, action == Action::"payment.send", resource)
when { context.arguments.amount >= 1000 };

@id("small-payments")
permit (principal, action == Action::"payment.send", resource)
when { context.arguments.amount < 1000 };
"#;

/// A signer of `registry` whose binding set is the file `policy.cedar`
/// holding `policy` (and whose log-only set is `shadow.cedar` with
/// `shadow`, if given), with `extra` config.
async fn with_policy(
    registry: &str,
    policy: &str,
    shadow: Option<&str>,
    extra: &str,
) -> (TestSigner, tempfile::TempDir) {
    with_policy_in(None, registry, policy, shadow, extra).await
}

/// [`with_policy`] with its ledger at `ledger_url` (SQLite in the home if
/// `None`).
async fn with_policy_in(
    ledger_url: Option<&str>,
    registry: &str,
    policy: &str,
    shadow: Option<&str>,
    extra: &str,
) -> (TestSigner, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let binding = write(dir.path(), "policy.cedar", policy);
    let mut config = format!("\n[policy]\ncedar = \"{}\"\n", binding.display());
    if let Some(shadow) = shadow {
        let shadow = write(dir.path(), "shadow.cedar", shadow);
        config.push_str(&format!("cedar_log_only = \"{}\"\n", shadow.display()));
    }
    config.push_str(extra);
    let signer = TestSigner::start_configured(registry, ledger_url, &config)
        .await
        .unwrap();
    (signer, dir)
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn payment(amount: i64) -> ProposeRequest {
    ProposeRequest {
        operation: "payment.send".into(),
        arguments_json: json!({"amount": amount, "currency": "EUR", "payee": "acme"}).to_string(),
        session: "agent-1".into(),
        note: String::new(),
        idempotency_key: String::new(),
        head: "mcp".into(),
    }
}

async fn proposed(head: &mut SignerClient<Channel>, request: ProposeRequest) -> ProposalView {
    head.propose(request).await.unwrap().into_inner()
}

/// The `details` of `proposal`'s events of `kind`.
async fn events(signer: &TestSigner, proposal: &str, kind: &str) -> Vec<Value> {
    signer
        .state()
        .ledger()
        .events()
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.proposal_id.as_deref() == Some(proposal) && e.kind == kind)
        .map(|e| e.details)
        .collect()
}

/// The home's approver's approval of `proposal`, which must be refused.
async fn approval_refused(signer: &TestSigner, proposal: &str) -> tonic::Status {
    approver(signer)
        .await
        .decide(approve(proposal, Delivery::Handoff))
        .await
        .unwrap_err()
}

/// The head's principal has no proposal at all.
async fn nothing_proposed(head: &mut SignerClient<Channel>) {
    let listed = head
        .list_proposals(ListProposalsRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert!(listed.proposals.is_empty(), "{listed:?}");
}

/// No proof was issued for `proposal`.
async fn no_proof(signer: &TestSigner, proposal: &str) {
    let record = signer
        .state()
        .ledger()
        .proposal(proposal)
        .await
        .unwrap()
        .unwrap();
    assert!(record.issuance.is_none(), "{record:?}");
}

fn sha256_hex(text: &str) -> String {
    countersign_verifier::canonical::sha256_hex(text.as_bytes())
}

#[tokio::test]
async fn what_the_policy_forbids_is_recorded_denied_and_nobody_can_approve_it() {
    let (signer, _dir) = with_policy(PAYMENTS, POLICY, None, "").await;
    let mut head = head(&signer).await;
    let view = proposed(&mut head, payment(2_000_000)).await;
    assert_eq!(view.status, ProposalStatus::Denied as i32);
    assert_eq!(
        view.reason,
        "forbidden by the operator's policy (no-huge-payments)"
    );
    // The chain commits to the verdict and the set's digest, whose text
    // the ledger holds.
    let proposed_event = &events(&signer, &view.id, "proposed").await[0];
    assert_eq!(
        proposed_event["policy"],
        json!({
            "head": "mcp",
            "binding": {
                "set": sha256_hex(POLICY),
                "verdict": "forbid",
                "policies": ["no-huge-payments"],
            },
        })
    );
    assert_eq!(
        events(&signer, &view.id, "denied").await,
        vec![json!({"reason": "forbidden by the operator's policy (no-huge-payments)"})]
    );
    let stored = signer
        .state()
        .ledger()
        .policy_set(&sha256_hex(POLICY))
        .await;
    assert_eq!(stored.unwrap().as_deref(), Some(POLICY));
    // Nobody approves it, and no proof exists.
    let refused = approval_refused(&signer, &view.id).await;
    assert_eq!(reason_of(&refused), "not_pending");
    no_proof(&signer, &view.id).await;
}

#[tokio::test]
async fn what_the_policy_requires_approval_for_waits_for_the_quorum_it_names() {
    let (signer, _dir) = with_policy(PAYMENTS, POLICY, None, "").await;
    let mut head = head(&signer).await;
    let view = proposed(&mut head, payment(5000)).await;
    assert_eq!(view.status, ProposalStatus::Pending as i32);
    let quorum = view.quorum.clone().unwrap();
    assert_eq!(
        (quorum.required, quorum.approvers),
        (2, vec!["alice".to_owned(), "bob".to_owned()])
    );
    // The unnamed approver is not one of the two.
    let refused = approval_refused(&signer, &view.id).await;
    assert_eq!(
        (refused.code(), reason_of(&refused)),
        (Code::PermissionDenied, "not_a_quorum_approver".to_owned())
    );
    let alice = named_approver(&signer, "alice")
        .await
        .decide(approve(&view.id, Delivery::Handoff))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        alice.proposal.unwrap().status,
        ProposalStatus::Pending as i32
    );
    let bob = named_approver(&signer, "bob")
        .await
        .decide(approve(&view.id, Delivery::Handoff))
        .await
        .unwrap()
        .into_inner();
    let approved = bob.proposal.unwrap();
    assert_eq!(approved.status, ProposalStatus::Approved as i32);
    let principal = signer.principal();
    assert_eq!(
        approved.provenance,
        format!("human:quorum:{principal}/alice,{principal}/bob")
    );
    // A small payment is permitted: without a rule, a person decides.
    let small = proposed(&mut head, payment(10)).await;
    assert_eq!(small.status, ProposalStatus::Pending as i32);
    assert!(small.quorum.is_none());
}

#[tokio::test]
async fn an_argument_the_policy_cannot_see_exactly_is_refused_and_nothing_is_proposed() {
    let (signer, _dir) = with_policy(PAYMENTS, POLICY, None, "").await;
    let mut head = head(&signer).await;
    // Two equal tags: Cedar's set would hold one.
    let mut request = payment(10);
    request.arguments_json =
        json!({"amount": 10, "currency": "EUR", "payee": "acme", "tags": ["a", "a"]}).to_string();
    let refused = head.propose(request).await.unwrap_err();
    assert_eq!(
        (refused.code(), reason_of(&refused)),
        (Code::InvalidArgument, "not_representable".to_owned())
    );
    assert_eq!(
        refused.message(),
        "argument /tags/1 cannot be shown to the policy exactly: a duplicate item: Cedar holds an array as a set, which would collapse it; nothing was proposed"
    );
    nothing_proposed(&mut head).await;
}

#[tokio::test]
async fn an_edit_takes_effect_for_new_proposals_only_on_sqlite() {
    an_edit_takes_effect_for_new_proposals_only(None).await;
}

#[tokio::test]
async fn an_edit_takes_effect_for_new_proposals_only_on_postgres() {
    let db = TempPgDatabase::create().await.unwrap();
    an_edit_takes_effect_for_new_proposals_only(Some(db.url())).await;
}

/// A proposal made under one set, the file then edited and the signer
/// restarted (nothing of the old set in its memory): the proposal is
/// decided under its own set, read back from the ledger; a new one under
/// the edited set.
async fn an_edit_takes_effect_for_new_proposals_only(ledger_url: Option<&str>) {
    let (signer, dir) = with_policy_in(ledger_url, PAYMENTS, POLICY, None, "").await;
    let before = proposed(&mut head(&signer).await, payment(20)).await;
    assert_eq!(before.status, ProposalStatus::Pending as i32);
    // The operator forbids every payment from now on.
    let edited =
        r#"@id("no-payments") forbid (principal, action == Action::"payment.send", resource);"#;
    write(dir.path(), "policy.cedar", edited);
    let signer = signer.restart().await.unwrap();
    let after = proposed(&mut head(&signer).await, payment(20)).await;
    assert_eq!(after.status, ProposalStatus::Denied as i32);
    assert_eq!(
        after.reason,
        "forbidden by the operator's policy (no-payments)"
    );
    let decided = approver(&signer)
        .await
        .decide(approve(&before.id, Delivery::Handoff))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        decided.proposal.unwrap().status,
        ProposalStatus::Approved as i32
    );
    let policy = &events(&signer, &after.id, "proposed").await[0]["policy"];
    assert_eq!(policy["binding"]["set"], sha256_hex(edited).as_str());
}

#[tokio::test]
async fn a_forbid_that_holds_at_the_decision_refuses_the_approval() {
    // Forbidden from two seconds after start: the proposal is made before,
    // the approval after.
    let from = OffsetDateTime::now_utc().unix_timestamp() + 2;
    let policy = format!(
        r#"@id("closed-after") forbid (principal, action == Action::"payment.send", resource)
        when {{ context.time >= {from} }};"#
    );
    let (signer, _dir) = with_policy(PAYMENTS, &policy, None, "").await;
    let mut head = head(&signer).await;
    let view = proposed(&mut head, payment(20)).await;
    assert_eq!(view.status, ProposalStatus::Pending as i32);
    while OffsetDateTime::now_utc().unix_timestamp() < from {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let refused = approval_refused(&signer, &view.id).await;
    assert_eq!(
        (refused.code(), reason_of(&refused)),
        (Code::FailedPrecondition, "forbidden_by_policy".to_owned())
    );
    assert_eq!(
        refused.message(),
        format!(
            "the operator's policy forbids approving {} now (closed-after); nothing was approved",
            view.id
        )
    );
    no_proof(&signer, &view.id).await;
    // A denial is still a person's to record.
    let mut deny = approve(&view.id, Delivery::Handoff);
    deny.approve = false;
    deny.reason = "no".into();
    approver(&signer).await.decide(deny).await.unwrap();
}

#[tokio::test]
async fn a_policy_set_that_cannot_be_used_refuses_proposals_and_records_nothing() {
    let (signer, dir) = with_policy(PAYMENTS, POLICY, None, "").await;
    let mut head = head(&signer).await;
    // A policy naming an argument the schema lacks does not validate.
    let path = write(
        dir.path(),
        "policy.cedar",
        r#"permit (principal, action == Action::"payment.send", resource)
        when { context.arguments.no_such_field == 1 };"#,
    );
    let refused = head.propose(payment(10)).await.unwrap_err();
    assert_eq!(
        (refused.code(), reason_of(&refused)),
        (Code::FailedPrecondition, "policy_unavailable".to_owned())
    );
    assert!(
        refused.message().starts_with(&format!(
            "the operator's policy cannot be used ({}: does not validate against the registry's schema: ",
            path.display()
        )),
        "{}",
        refused.message()
    );
    assert!(
        refused
            .message()
            .ends_with("); nothing was proposed until it is fixed"),
        "{}",
        refused.message()
    );
    // Not Cedar at all.
    write(dir.path(), "policy.cedar", "permit (principal");
    let refused = head.propose(payment(10)).await.unwrap_err();
    assert_eq!(reason_of(&refused), "policy_unavailable");
    nothing_proposed(&mut head).await;
}

#[tokio::test]
async fn a_signer_does_not_start_with_a_policy_set_it_cannot_use() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "policy.cedar",
        "forbid (principal, action, resource) when { context.nope };",
    );
    let config = format!("\n[policy]\ncedar = \"{}\"\n", path.display());
    let refused = TestSigner::start_configured(PAYMENTS, None, &config)
        .await
        .unwrap_err();
    let message = refused.to_string();
    assert!(
        message.starts_with(&format!(
            "policy: {}: does not validate against the registry's schema: ",
            path.display()
        )),
        "{message}"
    );
}

#[tokio::test]
async fn a_proposal_without_its_head_is_refused() {
    let (signer, _dir) = with_policy(PAYMENTS, POLICY, None, "").await;
    let mut request = payment(10);
    request.head = String::new();
    let refused = head(&signer).await.propose(request).await.unwrap_err();
    assert_eq!(
        (refused.code(), refused.message()),
        (
            Code::InvalidArgument,
            "invalid head: names the head the proposal came through: cli, api, mcp, console, hook or gateway"
        )
    );
}

#[tokio::test]
async fn a_log_only_set_decides_nothing_and_its_differences_are_recorded() {
    let shadow = r#"@id("shadow-no-payments") forbid (principal, action == Action::"payment.send", resource);"#;
    let (signer, _dir) = with_policy(
        PAYMENTS,
        POLICY,
        Some(shadow),
        "\n[metrics]\nsigner = \"127.0.0.1:0\"\n",
    )
    .await;
    let mut head = head(&signer).await;
    let view = proposed(&mut head, payment(10)).await;
    // The binding set decided: a person decides (no rule).
    assert_eq!(view.status, ProposalStatus::Pending as i32);
    let policy = &events(&signer, &view.id, "proposed").await[0]["policy"];
    assert_eq!(
        policy["shadow"],
        json!({
            "set": sha256_hex(shadow),
            "verdict": "forbid",
            "policies": ["shadow-no-payments"],
        })
    );
    assert_eq!(policy["binding"]["verdict"], "permit");
    let stored = signer
        .state()
        .ledger()
        .policy_set(&sha256_hex(shadow))
        .await;
    assert_eq!(stored.unwrap().as_deref(), Some(shadow));
    // A proposal both sets forbid is no difference.
    let both = proposed(&mut head, payment(2_000_000)).await;
    let policy = &events(&signer, &both.id, "proposed").await[0]["policy"];
    assert!(policy.get("shadow").is_none(), "{policy}");
    let metrics = support::metrics_text(&signer).await;
    assert!(
        metrics.contains(
            "countersign_policy_shadow_differences_total{binding=\"permit\",shadow=\"forbid\"} 1"
        ),
        "{metrics}"
    );
    assert!(
        metrics.contains("countersign_policy_verdicts_total{verdict=\"forbid\"} 1"),
        "{metrics}"
    );
}

/// The default registry's `schedule.create`: a rule covers names starting
/// `nightly`; the policy permits only `nightly-a...`, requires approval of
/// `nightly-c...`, and says nothing of the rest.
const SCHEDULES: &str = r#"
@id("a-is-fine") permit (principal, action == Action::"schedule.create", resource)
when { context.arguments.name like "nightly-a*" };
@id("c-needs-a-person") @require_approval
permit (principal, action == Action::"schedule.create", resource)
when { context.arguments.name like "nightly-c*" };
"#;

#[tokio::test]
async fn a_rule_approves_only_what_the_policy_permits() {
    let (signer, _dir) = with_policy(
        Registry::default_toml(),
        SCHEDULES,
        None,
        "\n[rules]\nenabled = true\n",
    )
    .await;
    let expires = OffsetDateTime::now_utc() + time::Duration::hours(1);
    let definition = json!({
        "operations": ["schedule.create"],
        "constraints": [{"pointer": "/name", "prefix": "nightly"}],
        "sessions": ["agent-1"],
        "max_uses": 10,
        "per_hour": 10,
        "expires_at": countersign_verifier::timestamp::format_whole_seconds(expires).unwrap(),
    });
    support::create_rule(&mut approver(&signer).await, &definition).await;
    let mut head = head(&signer).await;
    let schedule = |name: &str| ProposeRequest {
        operation: "schedule.create".into(),
        arguments_json: json!({"name": name, "cron": "0 3 * * *"}).to_string(),
        session: "agent-1".into(),
        note: String::new(),
        idempotency_key: String::new(),
        head: "cli".into(),
    };
    let permitted = proposed(&mut head, schedule("nightly-a1")).await;
    assert_eq!(permitted.status, ProposalStatus::Approved as i32);
    assert!(
        permitted.provenance.starts_with("rule:"),
        "{}",
        permitted.provenance
    );
    for name in ["nightly-b1", "nightly-c1"] {
        let waits = proposed(&mut head, schedule(name)).await;
        assert_eq!(waits.status, ProposalStatus::Pending as i32, "{name}");
    }
}
