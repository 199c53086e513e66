//! Who carries out an approval is known before anyone is asked: each view
//! carries its effect kind's deliveries, action and risk, and `Decide`
//! (its dry run too) refuses a delivery the kind does not offer before
//! anything is recorded.
#![allow(clippy::unwrap_used)]

mod support;

use countersign_proto::v1::{
    Deliveries, Delivery, GetProposalRequest, ProposalStatus, ProposalView, ProposeRequest,
};
use countersign_registry::gateway::{PINS_FILE, Pins, ToolDefinition};
use countersign_signer::testing::TestSigner;
use tonic::Code;

use support::{SESSION, approve, approver, head, reason_of, start};

const SHELL_ARGS: &str = r#"{"agent":"claude-code","tool_name":"Bash","cwd":"/work/p","tool_input":{"command":"git push --force origin main","description":"push"}}"#;

async fn propose(signer: &TestSigner, operation: &str, arguments: &str) -> ProposalView {
    head(signer)
        .await
        .propose(ProposeRequest {
            operation: operation.into(),
            arguments_json: arguments.into(),
            session: SESSION.into(),
            note: String::new(),
            idempotency_key: String::new(),
            head: "cli".into(),
        })
        .await
        .unwrap()
        .into_inner()
}

async fn status_of(signer: &TestSigner, id: &str) -> ProposalView {
    approver(signer)
        .await
        .get_proposal(GetProposalRequest {
            proposal_id: id.into(),
        })
        .await
        .unwrap()
        .into_inner()
}

/// `Decide` as the home's approver.
async fn decide(
    signer: &TestSigner,
    request: countersign_proto::v1::DecideRequest,
) -> Result<tonic::Response<countersign_proto::v1::DecideResponse>, tonic::Status> {
    approver(signer).await.decide(request).await
}

/// `Decide` of `id` with `delivery` (to `session`, if any), dry or not:
/// refused `delivery_not_offered` with `message`, and nothing recorded.
async fn refused_for_delivery(
    signer: &TestSigner,
    id: &str,
    delivery: Delivery,
    session: &str,
    message: &str,
) {
    for dry_run in [true, false] {
        let status = decide(
            signer,
            countersign_proto::v1::DecideRequest {
                execute_in_session: session.into(),
                dry_run,
                ..approve(id, delivery)
            },
        )
        .await
        .unwrap_err();
        assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
        assert_eq!(reason_of(&status), "delivery_not_offered");
        assert_eq!(status.message(), message);
        let view = status_of(signer, id).await;
        assert_eq!(view.status(), ProposalStatus::Pending);
        assert!(view.provenance.is_empty() && view.expires_at.is_empty());
        assert!(!view.handoff_waiting);
    }
}

#[tokio::test]
async fn a_hook_call_is_handed_off_to_its_own_session_and_never_run_by_an_approver() {
    let signer = start().await;
    let view = propose(&signer, "agent.shell", SHELL_ARGS).await;
    assert_eq!(view.effect_kind, "hook");
    assert_eq!(view.deliveries(), Deliveries::ProposingSession);
    assert_eq!(view.risk, "exec");
    let action = view.action.as_ref().unwrap();
    assert_eq!(action.summary, "git push --force origin main");
    assert_eq!(action.parts[0].label, "Command");
    assert_eq!(action.parts[0].syntax, "shell");

    refused_for_delivery(
        &signer,
        &view.id,
        Delivery::Direct,
        "",
        &format!(
            "{} has a hook effect: only the agent's hook waiting in the proposing session runs it, so it cannot run at an approver's interface; approve it for the proposing session (a handoff); nothing was approved",
            view.id
        ),
    )
    .await;
    refused_for_delivery(
        &signer,
        &view.id,
        Delivery::Handoff,
        "another-session",
        &format!(
            "{} has a hook effect: only the agent's hook waiting in the proposing session runs it, never another session; approve it for the proposing session; nothing was approved",
            view.id
        ),
    )
    .await;

    let decided = decide(&signer, approve(&view.id, Delivery::Handoff))
        .await
        .unwrap()
        .into_inner();
    assert!(decided.proof.is_empty(), "a handoff returns no proof");
    assert!(decided.proposal.unwrap().handoff_waiting);
}

#[tokio::test]
async fn a_gated_mcp_call_is_handed_off_and_shows_its_tool_call() {
    let signer = start().await;
    let dir = signer.home().registry_path();
    let dir = dir.parent().unwrap();
    std::fs::write(
        dir.join("gateway.toml"),
        "[[upstream]]\nname = \"files\"\n[upstream.stdio]\nprogram = \"/bin/true\"\n[upstream.risk]\nwrite_file = \"write\"\nread_file = \"read\"\n",
    )
    .unwrap();
    let mut pins = Pins::empty();
    let schema = serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}});
    // The upstream claims its write_file only reads: shown as its claim,
    // while the risk is the operator's.
    let claims = serde_json::json!({"annotations": {"readOnlyHint": true}});
    for tool in ["write_file", "read_file"] {
        let definition = ToolDefinition {
            name: tool.into(),
            description: None,
            input_schema: schema.as_object().unwrap().clone(),
            shown: claims.as_object().unwrap().clone(),
        };
        pins.pin("files", definition).unwrap();
    }
    std::fs::write(dir.join(PINS_FILE), pins.to_text()).unwrap();

    let view = propose(
        &signer,
        "mcp:files/write_file",
        r#"{"path":"/srv/x.txt","content":"hi"}"#,
    )
    .await;
    assert_eq!(view.effect_kind, "mcp");
    assert_eq!(view.deliveries(), Deliveries::HandoffOnly);
    assert_eq!(view.risk, "write");
    let action = view.action.as_ref().unwrap();
    assert_eq!(action.summary, "files write_file /srv/x.txt");
    let claim = action.parts.last().unwrap();
    assert_eq!(
        claim.label,
        "Annotations (the upstream's claim, unverified)"
    );
    assert_eq!(claim.text, r#"{"readOnlyHint":true}"#);
    let read = propose(&signer, "mcp:files/read_file", r#"{"path":"/srv/x.txt"}"#).await;
    assert_eq!(read.risk, "read");

    refused_for_delivery(
        &signer,
        &view.id,
        Delivery::Direct,
        "",
        &format!(
            "{} has a mcp effect: only the gateway, which holds the upstream's connection, runs it, so it cannot run at an approver's interface; approve it for the proposing session (a handoff); nothing was approved",
            view.id
        ),
    )
    .await;
    // Another gateway session (another MCP connection) may be named.
    let decided = decide(
        &signer,
        countersign_proto::v1::DecideRequest {
            execute_in_session: "mcp-0011223344556677".into(),
            ..approve(&view.id, Delivery::Handoff)
        },
    )
    .await
    .unwrap()
    .into_inner();
    assert!(decided.proof.is_empty());
}

#[tokio::test]
async fn any_head_runs_a_builtin_so_a_direct_approval_is_offered() {
    let signer = start().await;
    let view = propose(&signer, "schedule.create", support::ARGS).await;
    assert_eq!(view.effect_kind, "builtin");
    assert_eq!(view.deliveries(), Deliveries::AnyHead);
    assert_eq!(view.risk, "write");
    let decided = decide(&signer, approve(&view.id, Delivery::Direct))
        .await
        .unwrap()
        .into_inner();
    assert!(!decided.proof.is_empty());
}

#[tokio::test]
async fn an_approval_stuck_for_a_run_nowhere_is_handed_off_by_the_person_then_claimed_once() {
    let signer = start().await;
    let view = propose(&signer, "agent.shell", SHELL_ARGS).await;
    let sha = signer
        .record_unoffered_direct_approval(&view.id)
        .await
        .unwrap();
    // Stuck: approved, and no head may claim it.
    let mut head = head(&signer).await;
    let claim = countersign_proto::v1::ClaimHandoffRequest {
        proposal_id: view.id.clone(),
        session: SESSION.into(),
    };
    let status = head.claim_handoff(claim.clone()).await.unwrap_err();
    assert_eq!(reason_of(&status), "no_live_handoff");

    // The person hands it off: checked first (records nothing), then done.
    let checked = decide(
        &signer,
        countersign_proto::v1::DecideRequest {
            dry_run: true,
            ..approve(&view.id, Delivery::Handoff)
        },
    )
    .await
    .unwrap()
    .into_inner();
    assert!(checked.proof_sha256.is_empty());
    assert!(head.claim_handoff(claim.clone()).await.is_err());
    let handed = decide(&signer, approve(&view.id, Delivery::Handoff))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(handed.proof_sha256, sha);
    assert!(handed.proof.is_empty());
    assert!(handed.proposal.unwrap().handoff_waiting);
    let claimed = head
        .claim_handoff(claim.clone())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        countersign_verifier::canonical::sha256_hex(claimed.proof.as_bytes()),
        sha
    );
    // Handed off once: asking again is `not_pending`, as for any approval.
    let again = decide(&signer, approve(&view.id, Delivery::Handoff))
        .await
        .unwrap_err();
    assert_eq!(reason_of(&again), "not_pending");
    assert_eq!(
        again.message(),
        format!("proposal {} is approved, not pending", view.id)
    );
    // The hand-off is in the audit trail, which still verifies.
    let events = signer.state().ledger().events().await.unwrap();
    let handed_off = events.iter().find(|e| e.kind == "handed_off").unwrap();
    assert_eq!(handed_off.proposal_id.as_deref(), Some(view.id.as_str()));
    let report = signer.state().ledger().verify_chain().await.unwrap();
    assert!(report.is_intact(), "{:?}", report.first_break);
}

#[tokio::test]
async fn a_stuck_approval_can_be_revoked_and_a_builtins_direct_one_is_not_handed_off() {
    let signer = start().await;
    let view = propose(&signer, "agent.shell", SHELL_ARGS).await;
    signer
        .record_unoffered_direct_approval(&view.id)
        .await
        .unwrap();
    let revoked = approver(&signer)
        .await
        .revoke(countersign_proto::v1::RevokeRequest {
            proposal_id: view.id.clone(),
            reason: "stuck".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        revoked.outcome(),
        countersign_proto::v1::RevokeOutcome::Revoked
    );
    let status = decide(&signer, approve(&view.id, Delivery::Handoff))
        .await
        .unwrap_err();
    assert_eq!(reason_of(&status), "not_pending");

    // A direct approval of an effect any head runs is the person's own
    // to use: never handed off afterwards.
    let builtin = propose(&signer, "schedule.create", support::ARGS).await;
    decide(&signer, approve(&builtin.id, Delivery::Direct))
        .await
        .unwrap();
    let status = decide(&signer, approve(&builtin.id, Delivery::Handoff))
        .await
        .unwrap_err();
    assert_eq!(reason_of(&status), "not_pending");
}

#[tokio::test]
async fn a_stuck_approval_of_an_operation_that_needs_a_passkey_is_not_handed_off() {
    // The passkey assertion bound the delivery it was made for: handing the
    // approval to another one would outrun it. Revoke it instead.
    let registry = countersign_registry::Registry::default_toml().replace(
        "name = \"agent.shell\"\n",
        "name = \"agent.shell\"\nrequire_passkey = true\n",
    );
    let signer = TestSigner::start_with_registry(&registry).await.unwrap();
    let view = propose(&signer, "agent.shell", SHELL_ARGS).await;
    signer
        .record_unoffered_direct_approval(&view.id)
        .await
        .unwrap();
    for dry_run in [true, false] {
        let status = decide(
            &signer,
            countersign_proto::v1::DecideRequest {
                dry_run,
                ..approve(&view.id, Delivery::Handoff)
            },
        )
        .await
        .unwrap_err();
        assert_eq!(reason_of(&status), "passkey_required", "{status:?}");
    }
    let events = signer.state().ledger().events().await.unwrap();
    assert!(events.iter().all(|e| e.kind != "handed_off"));
    let mut head = head(&signer).await;
    let claim = head
        .claim_handoff(countersign_proto::v1::ClaimHandoffRequest {
            proposal_id: view.id.clone(),
            session: SESSION.into(),
        })
        .await
        .unwrap_err();
    assert_eq!(reason_of(&claim), "no_live_handoff");
}
