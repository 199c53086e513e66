//! The one approver service behind the terminal and the console: "approve
//! and run now" runs on the service's execution tracker, so a caller that
//! goes away never cuts the effect off, and a refusal is the same answer,
//! with the same reason code, at every approver interface.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod console_support;
mod support;

use std::time::Duration;

use countersign::Context;
use countersign_identity::{ApproverName, Home};
use countersign_registry::Registry;
use countersign_service::{Approval, Approver, Delivery, Service};
use support::{Harness, Person, assert_refused, command_operation};

/// An approval run now whose caller is gone (a browser closed, a request
/// cut off) still runs to its recorded outcome: the execution is the
/// tracker's, not the caller's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_run_now_completes_when_its_caller_goes_away() {
    let slow = command_operation("note.slow", false, "sleep 1; cat", 30);
    let h = Harness::start_with_registry(&format!("{}{slow}", Registry::default_toml())).await;
    let id = h.propose("note.slow", r#"{"text":"hi"}"#).await;
    let ctx = Context::load(Home::at(h.home()).unwrap()).unwrap();
    let mut head = ctx.head().await.unwrap();
    let gate = ctx.gate(&mut head).await.unwrap();
    let approver = Approver::new(
        ctx.approver().await.unwrap(),
        Service::over_gate(head, gate).through(countersign_service::Through::Cli),
    );
    let approval = Approval {
        proposal_id: id.clone(),
        delivery: Delivery::RunNow,
        passkey: None,
    };
    let caller = {
        let approver = approver.clone();
        tokio::spawn(async move { approver.approve(approval).await })
    };
    // The command sleeps 1 s: the caller goes away while it runs.
    tokio::time::sleep(Duration::from_millis(500)).await;
    caller.abort();
    assert!(caller.await.unwrap_err().is_cancelled());
    let executions = approver.executions();
    executions.close();
    executions.wait().await;
    let shown = h.cli(&["--json", "show", &id]).await.json();
    assert_eq!(shown["status"], "applied", "{shown}");
    let result = h.cli(&["--json", "result", &id]).await.json();
    assert_eq!(result["status"], "applied", "{result}");
    assert_eq!(h.effects_run().await, 1);
}

fn quorum_registry() -> String {
    Registry::default_toml().replacen(
        "[[operation]]\nname = \"schedule.create\"",
        "[[operation]]\nname = \"schedule.create\"\nquorum = { required = 2, approvers = [\"alice\", \"bob\"] }",
        1,
    )
}

/// A quorum proposal one approver denied: approving it is refused
/// `not_pending` at the terminal and in the console alike, and nothing is
/// approved or run.
#[tokio::test]
async fn approving_a_denied_quorum_proposal_is_not_pending_everywhere() {
    let h = Harness::start_with_registry(&quorum_registry()).await;
    h.approver_credentials(&["alice", "bob"]).await;
    let id = h
        .propose(
            "schedule.create",
            r#"{"name":"nightly","cron":"0 3 * * *"}"#,
        )
        .await;
    let denied = h
        .cli(&["deny", &id, "--as", "alice", "--reason", "not now"])
        .await;
    assert_eq!(denied.result, Ok(()), "{}", denied.stderr);

    let terminal = h
        .cli_with(
            &["--json", "approve", &id, "--as", "bob"],
            "",
            Person::TypesTheChallenge,
        )
        .await;
    assert_refused(&terminal, "not_pending");
    assert_eq!(
        terminal.json()["message"],
        format!("proposal {id} is denied, not pending")
    );

    let bob = ApproverName::parse("bob").unwrap();
    let site = console_support::serve(&h.home(), Some(&bob)).await;
    let (site, cookie) = console_support::pair(&site, &h.home(), "bob").await;
    let body = form_urlencoded::Serializer::new(String::new())
        .extend_pairs([("delivery", "run"), ("page_key", site.page_key.as_str())])
        .finish();
    let console = console_support::https(
        &site,
        "POST",
        &format!("/proposals/{id}/approve"),
        &[
            ("Cookie", cookie.as_str()),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        body.as_bytes(),
    )
    .await;
    assert_eq!(console.status, 409, "{}", console.body);
    assert!(
        console.body.contains(&format!(
            "proposal {id} is denied, not pending (not_pending)"
        )),
        "{}",
        console.body
    );

    let shown = h.cli(&["--json", "show", &id]).await.json();
    assert_eq!(shown["status"], "denied", "{shown}");
    assert_eq!(h.schedules().await, vec![]);
}
