//! Decision windows, on every interface: a pending proposal shows when its
//! window closes and the time left (CLI, API, MCP, console); once it has
//! closed, the proposal reads `expired`, leaves the pending list, no
//! approver interface can decide it (the terminal, the console, the signer's
//! approver API: `expired`), a waiting agent's head hears of it at once,
//! and nothing ran. The window is the operation's, else the policy's,
//! else an hour.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod console_support;
mod support;

use std::time::Duration;

use countersign_registry::Registry;
use serde_json::{Value, json};
use support::mcp::{call, mcp_head};
use support::{Harness, Person, assert_refused, claude_code_bash, cli_in};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

const ARGS: &str = r#"{"name":"nightly","cron":"0 3 * * *"}"#;

/// The shipped registry with a window of `secs` on `operation`.
fn windowed(operation: &str, secs: u64) -> String {
    let entry = format!("[[operation]]\nname = \"{operation}\"\n");
    assert!(Registry::default_toml().contains(&entry), "{operation}");
    Registry::default_toml().replacen(
        &entry,
        &format!("{entry}decision_window_secs = {secs}\n"),
        1,
    )
}

fn time_of(value: &Value) -> OffsetDateTime {
    OffsetDateTime::parse(value.as_str().expect("a time"), &Rfc3339).unwrap()
}

/// Seconds from the proposal's creation to the close of its window.
fn window_of(shown: &Value) -> i64 {
    (time_of(&shown["decide_by"]) - time_of(&shown["created_at"])).whole_seconds()
}

/// Sleeps until a little after `shown`'s window closed.
async fn until_closed(shown: &Value) {
    let left = time_of(&shown["decide_by"]) - OffsetDateTime::now_utc();
    let left = Duration::try_from(left).unwrap_or(Duration::ZERO);
    tokio::time::sleep(left + Duration::from_millis(1200)).await;
}

#[tokio::test]
async fn an_expired_proposal_cannot_be_decided_from_any_interface_and_nothing_runs() {
    let h = Harness::start_with_registry(&windowed("schedule.create", 3)).await;
    let id = h.propose("schedule.create", ARGS).await;
    let mcp = mcp_head(&h).await;
    let site = console_support::serve(&h.home(), None).await;
    let (site, cookie) = console_support::pair(&site, &h.home(), "console").await;

    // Pending: every interface shows when the window closes, and the
    // time left.
    let shown = h.cli(&["--json", "show", &id]).await.json();
    assert_eq!(shown["status"], "pending", "{shown}");
    assert_eq!(window_of(&shown), 3, "{shown}");
    let left = shown["seconds_left"].as_i64().expect("seconds left");
    assert!((0..=3).contains(&left), "{shown}");
    let text = h.cli(&["show", &id]).await.stdout;
    assert!(
        text.contains(&format!(
            "decide by {}, ",
            shown["decide_by"].as_str().unwrap()
        )) && text.contains("left; undecided by then, it expires"),
        "{text}"
    );
    let via_mcp = call(&mcp, "get_proposal", json!({ "proposal_id": id })).await;
    assert_eq!(
        via_mcp["structuredContent"]["decide_by"],
        shown["decide_by"]
    );
    let summary = via_mcp["content"][0]["text"].as_str().unwrap();
    assert!(summary.contains("then it expires"), "{summary}");
    let page = console_support::https(
        &site,
        "GET",
        &format!("/proposals/{id}"),
        &[("Cookie", cookie.as_str())],
        b"",
    )
    .await;
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains(&format!(
            "<time datetime=\"{}\" data-window>decide by ",
            shown["decide_by"].as_str().unwrap()
        )),
        "{}",
        page.body
    );

    until_closed(&shown).await;

    // Expired, everywhere, with its reason; no longer pending.
    let shown = h.cli(&["--json", "show", &id]).await.json();
    assert_eq!(shown["status"], "expired", "{shown}");
    assert_eq!(
        shown["reason"],
        "no one decided it within its decision window"
    );
    assert_eq!(shown["seconds_left"], Value::Null);
    assert!(h.nothing_pending().await);
    let via_mcp = call(&mcp, "get_proposal", json!({ "proposal_id": id })).await;
    assert_eq!(via_mcp["structuredContent"], shown);

    // The terminal refuses to approve or deny it.
    let message = format!(
        "proposal {id} expired at {}: no one decided it within its decision window",
        shown["decide_by"].as_str().unwrap()
    );
    let approved = h
        .cli_with(&["--json", "approve", &id], "", Person::TypesTheChallenge)
        .await;
    assert_refused(&approved, "expired");
    assert_eq!(approved.json()["message"], message);
    let denied = h
        .cli(&["--json", "deny", &id, "--reason", "too late"])
        .await;
    assert_refused(&denied, "expired");

    // So does the console, approving and denying.
    for action in ["approve", "deny"] {
        let body = form_urlencoded::Serializer::new(String::new())
            .extend_pairs([
                ("delivery", "run"),
                ("reason", "too late"),
                ("page_key", site.page_key.as_str()),
            ])
            .finish();
        let console = console_support::https(
            &site,
            "POST",
            &format!("/proposals/{id}/{action}"),
            &[
                ("Cookie", cookie.as_str()),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            body.as_bytes(),
        )
        .await;
        assert_eq!(console.status, 409, "{action}: {}", console.body);
        assert!(
            console.body.contains(&format!("{message} (expired)")),
            "{action}: {}",
            console.body
        );
    }

    // Nothing was decided, issued or run.
    let shown_after = h.cli(&["--json", "show", &id]).await.json();
    assert_eq!(shown_after["status"], "expired");
    assert_eq!(h.effects_run().await, 0);
    assert_eq!(h.schedules().await, vec![]);
}

#[tokio::test]
async fn the_api_reports_the_window_and_the_expiry() {
    let api =
        api_support::Api::over(Harness::start_with_registry(&windowed("schedule.create", 2)).await)
            .await;
    let token = api.token().await;
    let id = api.propose(&token, "schedule.create", ARGS).await;
    let shown = api.get(&token, &format!("/v1/proposals/{id}")).await.json();
    assert_eq!(shown["status"], "pending", "{shown}");
    assert_eq!(window_of(&shown), 2, "{shown}");
    assert!(shown["seconds_left"].as_i64().is_some(), "{shown}");
    until_closed(&shown).await;
    let shown = api.get(&token, &format!("/v1/proposals/{id}")).await.json();
    assert_eq!(shown["status"], "expired", "{shown}");
    assert_eq!(shown["seconds_left"], Value::Null);
    assert_eq!(api.h.effects_run().await, 0);
}

#[tokio::test]
async fn the_window_is_the_operations_else_the_policys_else_an_hour() {
    let h = Harness::start().await;
    let id = h.propose("schedule.create", ARGS).await;
    let shown = h.cli(&["--json", "show", &id]).await.json();
    assert_eq!(window_of(&shown), 3600, "{shown}");

    let policy = "[policy]\ndecision_window_secs = 900\n";
    let h = Harness::start_configured(&windowed("schedule.create", 120), None, policy).await;
    let own = h.propose("schedule.create", ARGS).await;
    let shown = h.cli(&["--json", "show", &own]).await.json();
    assert_eq!(window_of(&shown), 120, "{shown}");
    let other = h.propose("demo.echo", r#"{"message":"hello"}"#).await;
    let shown = h.cli(&["--json", "show", &other]).await.json();
    assert_eq!(window_of(&shown), 900, "{shown}");
}

/// A coding agent's hook that waits longer than the window hears of the
/// expiry when it happens, and denies the call with the reason.
#[tokio::test]
async fn a_waiting_hook_denies_the_call_when_its_window_closes() {
    let h = Harness::start_with_registry(&windowed("agent.shell", 2)).await;
    let input = claude_code_bash("toolu_01", "make deploy");
    let started = std::time::Instant::now();
    let run = cli_in(
        &h.home(),
        &["hook", "claude-code", "--wait-secs", "60"],
        &input,
        Person::NoTerminal,
    )
    .await;
    let took = started.elapsed();
    assert_eq!(run.result, Ok(()), "{}", run.stderr);
    let answer: Value = serde_json::from_str(&run.stdout).unwrap();
    let out = &answer["hookSpecificOutput"];
    assert_eq!(out["permissionDecision"], "deny", "{answer}");
    let reason = out["permissionDecisionReason"].as_str().unwrap();
    assert!(
        reason.contains(
            "is expired, so this call is not allowed: no one decided it within its decision window"
        ),
        "{reason}"
    );
    // Heard when the window closed, not when the hook's own wait ran out.
    assert!(took < Duration::from_secs(30), "took {took:?}");
    let listed = h.cli(&["--json", "list"]).await.json();
    assert_eq!(listed[0]["status"], "expired", "{listed}");
}
