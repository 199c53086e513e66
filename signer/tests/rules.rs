//! Auto-approval rules through the real gRPC client: only an approver
//! creates, revises, revokes or lists them, only with `[rules] enabled`,
//! only what the person confirmed; a proposal a live rule covers is
//! approved by the signer for a handoff to its own session, with provenance
//! `rule:<id>@<version>`, never more often than the rule allows, even under
//! concurrency, on both backends; and a restarted signer still hands over a
//! rule's approval.
#![allow(clippy::unwrap_used)]

mod support;

use countersign_identity::Role;
use countersign_ledger::testing::TempPgDatabase;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{
    ClaimHandoffRequest, CreateRuleRequest, ListRulesRequest, ProposalView, ProposeRequest,
    ReviseRuleRequest, RevokeRuleRequest, RuleView,
};
use countersign_registry::Registry;
use countersign_signer::testing::TestSigner;
use countersign_verifier::Grant;
use countersign_verifier::canonical::sha256_hex;
use serde_json::{Value, json};
use time::OffsetDateTime;
use tonic::Code;
use tonic::transport::Channel;

use support::{SESSION, approver, head, reason_of, verified_claims};

const RULES_ON: &str = "\n[rules]\nenabled = true\n";

async fn with_rules(ledger_url: Option<&str>) -> TestSigner {
    TestSigner::start_configured(Registry::default_toml(), ledger_url, RULES_ON)
        .await
        .unwrap()
}

/// A rule over `schedule.create` from [`SESSION`] for names starting
/// `nightly`, with the given limits, expiring in an hour.
fn definition(max_uses: u64, per_hour: u64) -> Value {
    let expires = OffsetDateTime::now_utc() + time::Duration::hours(1);
    json!({
        "operations": ["schedule.create"],
        "constraints": [{"pointer": "/name", "prefix": "nightly"}],
        "sessions": [SESSION],
        "max_uses": max_uses,
        "per_hour": per_hour,
        "expires_at": countersign_verifier::timestamp::format_whole_seconds(expires).unwrap(),
    })
}

use support::create_rule as created;

fn proposal(name: &str, session: &str) -> ProposeRequest {
    ProposeRequest {
        operation: "schedule.create".into(),
        arguments_json: json!({"name": name, "cron": "0 3 * * *"}).to_string(),
        session: session.into(),
        note: "from the model".into(),
        idempotency_key: String::new(),
        head: "cli".into(),
    }
}

async fn proposed(head: &mut SignerClient<Channel>, name: &str, session: &str) -> ProposalView {
    head.propose(proposal(name, session))
        .await
        .unwrap()
        .into_inner()
}

async fn rules(approver: &mut SignerClient<Channel>) -> Vec<RuleView> {
    approver
        .list_rules(ListRulesRequest {})
        .await
        .unwrap()
        .into_inner()
        .rules
}

fn refused(status: &tonic::Status) -> (Code, String) {
    (status.code(), reason_of(status))
}

#[tokio::test]
async fn with_rules_off_nothing_is_created_and_no_rule_ever_approves() {
    let signer = TestSigner::start().await.unwrap();
    let mut approver = approver(&signer).await;
    let status = approver
        .create_rule(CreateRuleRequest {
            definition_json: definition(5, 5).to_string(),
            dry_run: true,
            definition_sha256: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(
        refused(&status),
        (Code::FailedPrecondition, "rules_disabled".into())
    );
    // The setting is read at start: the refusal says a restart is needed.
    assert_eq!(
        status.message(),
        "auto-approval rules are off in this installation: set [rules] enabled = true in the signer's config.toml and restart the signer (it reads the setting only when it starts)"
    );
    // A rule the ledger holds from when rules were on approves nothing.
    let now = OffsetDateTime::now_utc();
    signer
        .state()
        .ledger()
        .create_rule(&countersign_ledger::RuleChange {
            id: "rule_0123456789abcdef0123456789abcdef".into(),
            principal: signer.principal().into(),
            definition: definition(5, 5).to_string(),
            definition_sha256: "d".repeat(64),
            max_uses: 5,
            per_hour: 5,
            expires_at: now + time::Duration::hours(1),
            by: signer.principal().into(),
        })
        .await
        .unwrap();
    let view = proposed(&mut head(&signer).await, "nightly", SESSION).await;
    assert_eq!(view.status().name(), "pending");
    assert_eq!(rules(&mut approver).await[0].uses, 0);
}

#[tokio::test]
async fn only_an_approver_may_create_revise_revoke_or_list_rules() {
    let signer = with_rules(None).await;
    let mut head = head(&signer).await;
    let denied = (Code::PermissionDenied, "role_not_allowed".to_string());
    let create = head
        .create_rule(CreateRuleRequest {
            definition_json: definition(5, 5).to_string(),
            dry_run: true,
            definition_sha256: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(refused(&create), denied);
    let revise = head
        .revise_rule(ReviseRuleRequest {
            rule_id: "rule_0123456789abcdef0123456789abcdef".into(),
            version: 1,
            definition_json: definition(5, 5).to_string(),
            dry_run: true,
            definition_sha256: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(refused(&revise), denied);
    let revoke = head
        .revoke_rule(RevokeRuleRequest {
            rule_id: "rule_0123456789abcdef0123456789abcdef".into(),
            reason: "x".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(refused(&revoke), denied);
    let list = head.list_rules(ListRulesRequest {}).await.unwrap_err();
    assert_eq!(refused(&list), denied);
    assert!(
        signer
            .state()
            .ledger()
            .rules(signer.principal())
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn creation_refuses_anything_but_the_confirmed_valid_definition_and_creates_nothing() {
    let registry = Registry::default_toml().replacen(
        "name = \"schedule.delete\"",
        "name = \"schedule.delete\"\nrequire_passkey = true",
        1,
    );
    let signer = TestSigner::start_configured(&registry, None, RULES_ON)
        .await
        .unwrap();
    let mut approver = approver(&signer).await;
    let mut cases = Vec::new();
    let mut other_test = definition(5, 5);
    other_test["constraints"] = json!([{"pointer": "/name", "regex": "nightly.*"}]);
    cases.push(other_test);
    let mut passkey_op = definition(5, 5);
    passkey_op["operations"] = json!(["schedule.delete"]);
    cases.push(passkey_op);
    let mut rule_create = definition(5, 5);
    rule_create["operations"] = json!(["rule.create"]);
    cases.push(rule_create);
    let mut past = definition(5, 5);
    past["expires_at"] = json!("2020-01-01T00:00:00Z");
    cases.push(past);
    let mut unknown_key = definition(5, 5);
    unknown_key["heads"] = json!(["any"]);
    cases.push(unknown_key);
    for case in &cases {
        for dry_run in [true, false] {
            let status = approver
                .create_rule(CreateRuleRequest {
                    definition_json: case.to_string(),
                    dry_run,
                    definition_sha256: "0".repeat(64),
                })
                .await
                .unwrap_err();
            assert_eq!(
                refused(&status),
                (Code::InvalidArgument, "invalid_rule".into()),
                "{case}"
            );
        }
    }
    // Valid, but not what the person confirmed.
    let status = approver
        .create_rule(CreateRuleRequest {
            definition_json: definition(5, 5).to_string(),
            dry_run: false,
            definition_sha256: sha256_hex(definition(500, 500).to_string().as_bytes()),
        })
        .await
        .unwrap_err();
    assert_eq!(
        refused(&status),
        (Code::FailedPrecondition, "rule_definition_changed".into())
    );
    assert!(rules(&mut approver).await.is_empty());
    let events = signer.state().ledger().events().await.unwrap();
    assert!(events.iter().all(|e| !e.kind.starts_with("rule_")));
}

/// A covered proposal is approved by the rule for a handoff to its own
/// session; one outside the scope waits for a person; the rule's uses and
/// budget are listed.
async fn a_rule_approves_exactly_what_it_covers(ledger_url: Option<&str>) {
    let signer = with_rules(ledger_url).await;
    let mut approver = approver(&signer).await;
    let mut head = head(&signer).await;
    let rule = created(&mut approver, &definition(5, 5)).await;
    assert_eq!((rule.version, rule.status().name()), (1, "active"));
    assert_eq!((rule.uses, rule.remaining), (0, 5));

    let view = proposed(&mut head, "nightly-db", SESSION).await;
    let provenance = format!("rule:{}@1", rule.id);
    assert_eq!(view.status().name(), "approved");
    assert_eq!(view.provenance, provenance);
    assert!(view.handoff_waiting);
    // Not covered: another name, another session.
    assert_eq!(
        proposed(&mut head, "weekly", SESSION).await.status().name(),
        "pending"
    );
    assert_eq!(
        proposed(&mut head, "nightly", "other-session")
            .await
            .status()
            .name(),
        "pending"
    );

    let claimed = head
        .claim_handoff(ClaimHandoffRequest {
            proposal_id: view.id.clone(),
            session: SESSION.into(),
        })
        .await
        .unwrap()
        .into_inner();
    let claims = verified_claims(&signer, &mut head, &view, &claimed.proof).await;
    assert_eq!(
        claims.grant,
        Some(Grant {
            rule: rule.id.clone(),
            version: 1
        })
    );
    assert_eq!(claims.prov, provenance);
    assert_eq!(claims.sid, SESSION);
    assert!(claims.passkey.is_none());

    let listed = rules(&mut approver).await;
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].uses, listed[0].remaining), (1, 4));
    let events = signer.state().ledger().events().await.unwrap();
    let approved = events.iter().find(|e| e.kind == "approved").unwrap();
    assert_eq!(approved.details["rule"], rule.id.as_str());
    assert!(
        signer
            .state()
            .ledger()
            .verify_chain()
            .await
            .unwrap()
            .is_intact()
    );
}

#[tokio::test]
async fn a_rule_approves_exactly_what_it_covers_on_sqlite() {
    a_rule_approves_exactly_what_it_covers(None).await;
}

#[tokio::test]
async fn a_rule_approves_exactly_what_it_covers_on_postgres() {
    let db = TempPgDatabase::create().await.unwrap();
    a_rule_approves_exactly_what_it_covers(Some(db.url())).await;
}

/// `n` covered proposals at once: how many the rule approved.
async fn approved_at_once(signer: &TestSigner, n: usize) -> usize {
    let mut tasks = Vec::new();
    for i in 0..n {
        let mut head = head(signer).await;
        tasks.push(tokio::spawn(async move {
            proposed(&mut head, &format!("nightly-{i}"), SESSION).await
        }));
    }
    let mut approved = 0;
    for task in tasks {
        let view = task.await.unwrap();
        match view.status().name() {
            "approved" => approved += 1,
            "pending" => {}
            other => panic!("unexpected status {other}"),
        }
    }
    approved
}

async fn concurrent_proposals_never_exceed_a_rules_budget(ledger_url: Option<&str>) {
    let signer = with_rules(ledger_url).await;
    let mut approver = approver(&signer).await;
    created(&mut approver, &definition(3, 100)).await;
    assert_eq!(approved_at_once(&signer, 10).await, 3);
    let listed = rules(&mut approver).await;
    assert_eq!((listed[0].uses, listed[0].remaining), (3, 0));
    revoke_all(&mut approver).await;
    // The hourly rate, likewise.
    created(&mut approver, &definition(100, 2)).await;
    assert_eq!(approved_at_once(&signer, 8).await, 2);
    let pending = signer
        .state()
        .ledger()
        .pending(signer.principal())
        .await
        .unwrap();
    assert_eq!(pending.len(), 7 + 6);
    assert!(
        signer
            .state()
            .ledger()
            .verify_chain()
            .await
            .unwrap()
            .is_intact()
    );
}

async fn revoke_all(approver: &mut SignerClient<Channel>) {
    for rule in rules(approver).await {
        if rule.status().name() == "active" {
            approver
                .revoke_rule(RevokeRuleRequest {
                    rule_id: rule.id,
                    reason: "done".into(),
                })
                .await
                .unwrap();
        }
    }
}

#[tokio::test]
async fn concurrent_proposals_never_exceed_a_rules_budget_on_sqlite() {
    concurrent_proposals_never_exceed_a_rules_budget(None).await;
}

#[tokio::test]
async fn concurrent_proposals_never_exceed_a_rules_budget_on_postgres() {
    let db = TempPgDatabase::create().await.unwrap();
    concurrent_proposals_never_exceed_a_rules_budget(Some(db.url())).await;
}

#[tokio::test]
async fn a_revision_or_revocation_changes_what_the_rule_approves_next() {
    let signer = with_rules(None).await;
    let mut approver = approver(&signer).await;
    let mut head = head(&signer).await;
    let rule = created(&mut approver, &definition(5, 5)).await;
    let mut wider = definition(5, 5);
    wider["constraints"] = json!([]);
    let revise = |version: u64, sha: String, dry_run: bool| ReviseRuleRequest {
        rule_id: rule.id.clone(),
        version,
        definition_json: wider.to_string(),
        dry_run,
        definition_sha256: sha,
    };
    let stale = approver
        .revise_rule(revise(2, String::new(), true))
        .await
        .unwrap_err();
    assert_eq!(
        refused(&stale),
        (Code::FailedPrecondition, "rule_changed".into())
    );
    let shown = approver
        .revise_rule(revise(1, String::new(), true))
        .await
        .unwrap()
        .into_inner();
    assert!(shown.scope.contains("ANY arguments"), "{}", shown.scope);
    let revised = approver
        .revise_rule(revise(1, shown.definition_sha256, false))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(revised.version, 2);
    let view = proposed(&mut head, "weekly", SESSION).await;
    assert_eq!(view.provenance, format!("rule:{}@2", rule.id));

    let revoked = approver
        .revoke_rule(RevokeRuleRequest {
            rule_id: rule.id.clone(),
            reason: "enough".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((revoked.version, revoked.status().name()), (3, "revoked"));
    assert_eq!((revoked.remaining, revoked.reason.as_str()), (0, "enough"));
    assert_eq!(
        proposed(&mut head, "nightly", SESSION)
            .await
            .status()
            .name(),
        "pending"
    );
    let again = approver
        .revoke_rule(RevokeRuleRequest {
            rule_id: rule.id.clone(),
            reason: "again".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(
        refused(&again),
        (Code::FailedPrecondition, "rule_not_live".into())
    );
    // A revoked rule is refused at the dry run, before any scope is shown,
    // and nothing changes.
    let shown = approver
        .revise_rule(revise(3, String::new(), true))
        .await
        .unwrap_err();
    assert_eq!(
        refused(&shown),
        (Code::FailedPrecondition, "rule_not_live".into())
    );
    assert_eq!(rules(&mut approver).await[0].version, 3);
    // Another principal's approver sees and revokes nothing of it.
    let mut stranger = support::client_as(&signer, Role::Approver, support::OTHER_PRINCIPAL).await;
    assert!(rules(&mut stranger).await.is_empty());
    let theirs = stranger
        .revoke_rule(RevokeRuleRequest {
            rule_id: rule.id.clone(),
            reason: "mine".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(refused(&theirs), (Code::NotFound, "unknown_rule".into()));
}

#[tokio::test]
async fn a_rule_approval_waiting_across_a_signer_crash_is_handed_over_from_the_ledger() {
    let signer = with_rules(None).await;
    let rule = created(&mut approver(&signer).await, &definition(5, 5)).await;
    let view = proposed(&mut head(&signer).await, "nightly", SESSION).await;
    assert_eq!(view.status().name(), "approved");
    let issued = signer
        .state()
        .ledger()
        .proposal(&view.id)
        .await
        .unwrap()
        .unwrap()
        .issuance
        .unwrap()
        .proof_sha256;
    // Nothing of the old signer's memory: the proof is re-derived.
    let signer = signer.restart().await.unwrap();
    let mut head = head(&signer).await;
    let claimed = head
        .claim_handoff(ClaimHandoffRequest {
            proposal_id: view.id.clone(),
            session: SESSION.into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(claimed.proof_sha256, issued);
    assert_eq!(sha256_hex(claimed.proof.as_bytes()), issued);
    let claims = verified_claims(&signer, &mut head, &view, &claimed.proof).await;
    assert_eq!(claims.grant.map(|g| g.rule), Some(rule.id));
}

/// With `[notify]`, a proposal is recorded with its notification in one
/// transaction; one a rule approves as it is recorded waits for nobody,
/// so its notification is taken back and the notifier never sees it.
#[tokio::test]
async fn a_proposal_a_rule_approves_leaves_no_notification_waiting() {
    let signer = TestSigner::start_configured(
        Registry::default_toml(),
        None,
        &format!("{RULES_ON}[notify]\n"),
    )
    .await
    .unwrap();
    let mut approver = approver(&signer).await;
    let mut head = head(&signer).await;
    created(&mut approver, &definition(5, 5)).await;
    let approved = proposed(&mut head, "nightly-db", SESSION).await;
    assert_eq!(approved.status().name(), "approved");
    let waits = proposed(&mut head, "weekly", SESSION).await;
    assert_eq!(waits.status().name(), "pending");

    let mut notifier = signer
        .client(countersign_identity::Role::Notifier)
        .await
        .unwrap();
    let waiting = notifier
        .pending_notifications(countersign_proto::v1::PendingNotificationsRequest { limit: 0 })
        .await
        .unwrap()
        .into_inner()
        .notifications;
    let about: Vec<_> = waiting
        .iter()
        .map(|n| match &n.about {
            Some(countersign_proto::v1::outbox_notification::About::Proposal(p)) => {
                p.proposal_id.clone()
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(about, vec![waits.id]);
}
