//! An approval already stuck (recorded, before the signer refused it, for a
//! run at an approver's interface that cannot run a hook's effect) is the
//! person's to hand off or withdraw, at each interface they decide at: the
//! terminal's `approve ID` says before the challenge that it hands the call
//! to the proposing session and that nothing ran; the console's card offers
//! "Hand off to the proposing session" and "Revoke", never "run now"; and
//! `revoke ID` withdraws one. A wrong challenge hands nothing off.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod console_support;
mod support;

use console_support::{get, post_form};
use countersign::CliError;
use countersign_ledger::ProposalStatus;
use support::{Harness, Person};

const SHELL_ARGS: &str = r#"{"agent":"claude-code","tool_name":"Bash","cwd":"/work/p","tool_input":{"command":"git push --force origin main","description":"push"}}"#;

/// An `agent.shell` proposal from session `hook-1` (as the hook's head
/// sends it), approved for a direct
/// run nobody can carry out: stuck.
async fn stuck(h: &Harness) -> String {
    let id = h.propose_as_head("agent.shell", SHELL_ARGS, "hook-1").await;
    h.signer
        .record_unoffered_direct_approval(&id)
        .await
        .unwrap();
    assert_eq!(status(h, &id).await, ProposalStatus::Approved);
    assert_eq!(handed_off(h, &id).await, 0);
    id
}

async fn status(h: &Harness, id: &str) -> ProposalStatus {
    h.ledger().proposal(id).await.unwrap().unwrap().status
}

/// How many `handed_off` events the ledger holds for `id`.
async fn handed_off(h: &Harness, id: &str) -> usize {
    let events = h.ledger().events().await.unwrap();
    events
        .iter()
        .filter(|e| e.kind == "handed_off" && e.proposal_id.as_deref() == Some(id))
        .count()
}

#[tokio::test]
async fn the_terminal_hands_a_stuck_approval_off_after_saying_so_or_revokes_it() {
    let h = Harness::start().await;
    let id = stuck(&h).await;

    // A wrong challenge: shown what it would do, nothing handed off.
    let run = h
        .cli_with(&["approve", &id], "", Person::TypesAnotherCode)
        .await;
    assert!(run.result.is_err(), "{}", run.stdout);
    assert_eq!(handed_off(&h, &id).await, 0);

    let run = h
        .cli_with(&["approve", &id], "", Person::TypesTheChallenge)
        .await;
    assert_eq!(run.result, Ok(()), "{}\n{}", run.stdout, run.stderr);
    let before_challenge = run.shown.split("Type ").next().unwrap();
    for part in [
        "git push --force origin main",
        "It was approved earlier for a run at an approver's interface, which cannot run it, so nothing ran.",
        "Handing it off to the proposing session hook-1",
        &format!("`countersign revoke {id}` withdraws it instead"),
    ] {
        assert!(
            before_challenge.contains(part),
            "{part:?} in {before_challenge}"
        );
    }
    assert_eq!(handed_off(&h, &id).await, 1);

    // Handed off once: asking again is refused before the challenge.
    let again = h
        .cli_with(&["approve", &id], "", Person::TypesTheChallenge)
        .await;
    let Err(CliError::Refused(message)) = &again.result else {
        panic!("{:?}", again.result)
    };
    assert!(message.contains("approved, not pending"), "{message}");
    assert!(again.shown.is_empty(), "{}", again.shown);
    assert_eq!(handed_off(&h, &id).await, 1);

    // Another stuck one, withdrawn at the terminal.
    let other = stuck(&h).await;
    let run = h
        .cli_with(
            &["revoke", &other, "--reason", "stuck"],
            "",
            Person::NoTerminal,
        )
        .await;
    assert_eq!(run.result, Ok(()), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(status(&h, &other).await, ProposalStatus::Revoked);
    assert_eq!(handed_off(&h, &other).await, 0);
}

#[tokio::test]
async fn the_console_offers_a_stuck_approval_only_its_hand_off_or_revoke() {
    let h = Harness::start().await;
    let id = stuck(&h).await;
    let site = console_support::serve(&h.home(), None).await;
    let (site, cookie) = console_support::pair(&site, &h.home(), "console").await;

    let card = get(&site, &cookie, &format!("/proposals/{id}")).await;
    assert_eq!(card.status, 200, "{}", card.body);
    for part in [
        "git push --force origin main",
        "which cannot run it: nothing ran",
        "Hand off to the proposing session",
        "Revoke the unused proof",
    ] {
        assert!(card.body.contains(part), "{part:?} in {}", card.body);
    }
    assert!(!card.body.contains("Approve and run now"), "{}", card.body);
    let at = |part: &str| card.body.find(part).unwrap();
    assert!(at("git push --force origin main") < at("Hand off to the proposing session"));

    let target = format!("/proposals/{id}/approve");
    // A run here is refused by the signer, and nothing is handed off.
    let fields = [("page_key", site.page_key.as_str()), ("delivery", "run")];
    let run = post_form(&site, &cookie, &target, &fields).await;
    assert!(
        !run.body.contains("Handed off"),
        "{} {}",
        run.status,
        run.body
    );
    assert_eq!(handed_off(&h, &id).await, 0);
    assert_eq!(status(&h, &id).await, ProposalStatus::Approved);

    let fields = [
        ("page_key", site.page_key.as_str()),
        ("delivery", "handoff"),
    ];
    let done = post_form(&site, &cookie, &target, &fields).await;
    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!(handed_off(&h, &id).await, 1);
    // Handed off: the card no longer offers it.
    let card = get(&site, &cookie, &format!("/proposals/{id}")).await;
    assert!(
        !card.body.contains("Hand off to the proposing session"),
        "{}",
        card.body
    );

    // Another stuck one, revoked from its card.
    let other = stuck(&h).await;
    let fields = [("page_key", site.page_key.as_str()), ("reason", "stuck")];
    let revoked = post_form(
        &site,
        &cookie,
        &format!("/proposals/{other}/revoke"),
        &fields,
    )
    .await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    assert_eq!(status(&h, &other).await, ProposalStatus::Revoked);
    assert_eq!(handed_off(&h, &other).await, 0);
}
