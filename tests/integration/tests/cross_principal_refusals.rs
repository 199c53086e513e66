//! On a ledger shared by two principals, reading the other principal's
//! proposal is refused identically on every head: the CLI's `--json`
//! document, the API's body and MCP's structured content carry the same
//! reason code and the same message, because the one ownership check and
//! the one refusal live in the service (`countersign_service`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod support;

use api_support::Api;
use serde_json::{Value, json};
use support::mcp::{call, mcp_head};
use support::{CREATE_NIGHTLY, Person};

#[tokio::test]
async fn another_principals_proposal_gets_the_same_refusal_on_cli_api_and_mcp() {
    let api = Api::start().await;
    let token = api.token().await;
    let mcp = mcp_head(&api.h).await;
    let other_home = api.h.another_principal();

    // The other principal proposes, and can read its own proposal.
    let theirs = api
        .h
        .cli_as(
            &other_home,
            &["--json", "propose", "schedule.create", "--args-file", "-"],
            CREATE_NIGHTLY,
            Person::NoTerminal,
        )
        .await
        .json();
    let id = theirs["id"].as_str().unwrap().to_string();
    let own = api
        .h
        .cli_as(
            &other_home,
            &["--json", "show", &id],
            "",
            Person::NoTerminal,
        )
        .await;
    assert_eq!(own.json()["id"], id, "{}", own.stdout);

    // The reason codes are the deciders' own: the service's ownership check
    // for a result, the signer's for a proposal.
    for (operation, command, route, reason) in [
        (
            "get_result",
            "result",
            format!("/v1/proposals/{id}/result"),
            "unknown_proposal",
        ),
        (
            "get_proposal",
            "show",
            format!("/v1/proposals/{id}"),
            "not_your_proposal",
        ),
    ] {
        let cli = api.h.cli(&["--json", command, &id]).await;
        assert!(
            matches!(cli.result, Err(countersign::CliError::Refused(_))),
            "{operation}: {:?}",
            cli.result
        );
        let cli = cli.json();
        let via_api = api.get(&token, &route).await;
        assert_eq!(via_api.status, 200, "{operation}: {}", via_api.body);
        let via_mcp = call(&mcp, operation, json!({ "proposal_id": id })).await;
        assert_eq!(via_mcp["isError"], true, "{operation}: {via_mcp}");

        assert_eq!(cli, via_api.json(), "{operation}: CLI and API");
        assert_eq!(
            cli, via_mcp["structuredContent"],
            "{operation}: CLI and MCP"
        );
        assert_eq!(cli["ok"], false, "{operation}: {cli}");
        assert_eq!(cli["applied"], false, "{operation}: {cli}");
        assert_eq!(cli["reason"], reason, "{operation}: {cli}");
        let message = cli["message"].as_str().unwrap();
        // Nothing of the proposal leaks into the refusal.
        assert!(!cli.to_string().contains("nightly"), "{operation}: {cli}");
        assert!(
            via_mcp["content"][0]["text"]
                .as_str()
                .is_some_and(|t: &str| t.contains(message)),
            "{operation}: {via_mcp}"
        );
    }

    // An id that exists for nobody is refused with the same code.
    let unknown = format!("prop_{}", "0".repeat(32));
    let none = api.h.cli(&["--json", "result", &unknown]).await.json();
    assert_eq!(none["reason"], Value::from("unknown_proposal"), "{none}");
}
