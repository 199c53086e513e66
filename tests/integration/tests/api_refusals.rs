//! The refusal cases of the foundation, through the HTTP API: each proof is
//! presented in the body of `POST /v1/proposals/{id}/execute` and must come
//! back `200 {"ok": false, "applied": false, "reason": <exact code>}` with
//! the state store and the effect log unchanged.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod support;

use api_support::{Api, assert_refused};
use support::{CREATE_NIGHTLY, Harness, create_approvals_live_one_second, forge};

/// Present `proof` for `id` and assert the exact refusal, nothing applied.
async fn assert_execute_refused(api: &Api, token: &str, id: &str, proof: &str, reason: &str) {
    let before = (api.h.schedules().await, api.h.effects_run().await);
    let reply = api.execute(token, id, proof).await;
    assert_refused(&reply, reason);
    if proof.trim().len() > 16 {
        assert!(!reply.body.contains(proof.trim()), "the proof came back");
    }
    assert_eq!(
        (api.h.schedules().await, api.h.effects_run().await),
        before,
        "something was applied ({reason})"
    );
}

#[tokio::test]
async fn refuses_every_wrong_proof_and_applies_nothing() {
    let api = Api::start().await;
    let token = api.token().await;
    let (id, proof) = api.approved(&token, "nightly").await;

    assert_execute_refused(&api, &token, &id, &forge::forged(&proof), "bad_signature").await;
    assert_execute_refused(
        &api,
        &token,
        &id,
        &forge::signed_by_unknown_key(&proof),
        "unknown_key_id",
    )
    .await;
    assert_execute_refused(
        &api,
        &token,
        &id,
        &forge::with_altered_arguments(&proof),
        "bad_signature",
    )
    .await;
    assert_execute_refused(&api, &token, &id, "v4.public.bm90IGEgcHJvb2Y", "malformed").await;
    assert_execute_refused(
        &api,
        &token,
        &id,
        "v3.public.bm90IGEgcHJvb2Y",
        "wrong_version",
    )
    .await;
    assert_execute_refused(
        &api,
        &token,
        &id,
        "v4.local.bm90IGEgcHJvb2Y",
        "wrong_purpose",
    )
    .await;
    // Text outside the token alphabet is not a proof: a 400 before anything runs.
    for not_a_proof in ["not a proof at all", "", "v4.public.é"] {
        let reply = api.execute(&token, &id, not_a_proof).await;
        api_support::assert_error(&reply, 400, "/proof");
    }

    // Another proposal of the same principal.
    let (other, _) = api.approved(&token, "other").await;
    assert_execute_refused(&api, &token, &other, &proof, "proposal_mismatch").await;
    // Another session: a second credential is a second session (api:<id>).
    let second = api.token().await;
    assert_execute_refused(&api, &second, &id, &proof, "wrong_session").await;
    // An unknown proposal.
    assert_execute_refused(
        &api,
        &token,
        "prop_0123456789abcdef0123456789abcdef",
        &proof,
        "unknown_proposal",
    )
    .await;

    // The genuine proof, from the right session: applied once.
    let reply = api.execute(&token, &id, &proof).await;
    let json = reply.json();
    assert_eq!(
        (
            json["ok"].clone(),
            json["applied"].clone(),
            json["status"].clone()
        ),
        (true.into(), true.into(), "applied".into()),
        "{json}"
    );
    // A replay returns the recorded disposition and runs nothing again.
    assert_execute_refused(&api, &token, &id, &proof, "already_used").await;
    assert_eq!(
        api.execute(&token, &id, &proof).await.json()["recorded_status"],
        "applied"
    );
}

#[tokio::test]
async fn refuses_revoked_withdrawn_and_unapproved_proposals() {
    let api = Api::start().await;
    let token = api.token().await;
    let (id, proof) = api.approved(&token, "nightly").await;
    let revoked = api.h.cli(&["revoke", &id]).await;
    assert_eq!(revoked.result, Ok(()), "{}", revoked.stdout);
    assert_execute_refused(&api, &token, &id, &proof, "revoked").await;

    // No approval waits for a proposal nobody approved.
    let pending = api.propose(&token, "schedule.create", CREATE_NIGHTLY).await;
    let before = api.h.effects_run().await;
    let handoff = api
        .post(
            &token,
            &format!("/v1/proposals/{pending}/execute-handoff"),
            "",
        )
        .await;
    assert_refused(&handoff, "no_live_handoff");
    assert_eq!(api.h.effects_run().await, before);

    // Withdrawn: then it cannot be withdrawn again (the signer's refusal).
    let withdrawn = api
        .post(&token, &format!("/v1/proposals/{pending}/withdraw"), "{}")
        .await;
    assert_eq!(
        withdrawn.json()["status"],
        "withdrawn",
        "{}",
        withdrawn.body
    );
    let again = api
        .post(&token, &format!("/v1/proposals/{pending}/withdraw"), "{}")
        .await;
    assert_refused(&again, "not_pending");
    // Reading a result that does not exist is a refusal, not an error.
    assert_refused(
        &api.get(&token, &format!("/v1/proposals/{pending}/result"))
            .await,
        "not_executed",
    );
    assert_refused(
        &api.get(
            &token,
            "/v1/proposals/prop_0123456789abcdef0123456789abcdef",
        )
        .await,
        "unknown_proposal",
    );
    assert_refused(
        &api.get(
            &token,
            "/v1/proposals/prop_0123456789abcdef0123456789abcdef/result",
        )
        .await,
        "unknown_proposal",
    );
    // Arguments that satisfy the schema are never a 4xx, whatever the signer says.
    let unknown_schedule = api
        .post(
            &token,
            "/v1/operations/schedule.activate/proposals",
            r#"{"arguments":{"name":"no-such-schedule"}}"#,
        )
        .await;
    assert_eq!(unknown_schedule.status, 200, "{}", unknown_schedule.body);
}

#[tokio::test]
async fn refuses_an_expired_proof() {
    let registry = create_approvals_live_one_second();
    let api = Api::over(Harness::start_with_registry(&registry).await).await;
    let token = api.token().await;
    let (id, proof) = api.approved(&token, "nightly").await;
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    assert_execute_refused(&api, &token, &id, &proof, "expired").await;
}

/// An approval handed over that expired unused is refused `expired` by
/// `execute-handoff`, with the message that says to propose again, and
/// nothing runs.
#[tokio::test]
async fn refuses_a_handoff_whose_approval_expired_unused() {
    let registry = create_approvals_live_one_second();
    let api = Api::over(Harness::start_with_registry(&registry).await).await;
    let token = api.token().await;
    let id = api.propose(&token, "schedule.create", CREATE_NIGHTLY).await;
    api.h.approve_for_mcp(&id).await;
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let before = (api.h.schedules().await, api.h.effects_run().await);
    let reply = api.execute_handoff(&token, &id).await;
    assert_refused(&reply, "expired");
    assert_eq!(
        reply.json()["message"],
        format!(
            "refused: the approval of {id} expired before it was executed. An expired approval cannot be used or renewed: propose the action again for a person to approve; nothing was applied"
        )
    );
    assert_eq!((api.h.schedules().await, api.h.effects_run().await), before);
}

#[tokio::test]
async fn refuses_a_proof_issued_under_an_older_contract_while_running() {
    let api = Api::start().await;
    let token = api.token().await;
    let (id, proof) = api.approved(&token, "nightly").await;
    // The registry changes under the running API: the next execution sees it.
    api.h.change_the_create_contract();
    assert_execute_refused(&api, &token, &id, &proof, "contract_revision_mismatch").await;
}
