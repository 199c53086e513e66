//! Issue 50, item 4, through each process that talks to the signer:
//! `countersign api serve` and `countersign mcp` as real processes, the
//! console and the notify process as their own code in this process (what
//! `countersign console` and `countersign notify serve` run), every one of
//! them configured with two signers of one PostgreSQL ledger (`[signer]
//! addr`, then `fallback_addrs`), each signer with a proof key of its
//! own. Each first talks to signer A; A stops; each goes on through B: the
//! agent's proposal, the person's decision, the execution (once), and the
//! notification of a proposal B recorded. An approval A held for the API
//! and the MCP head when it stopped is signed again by B and executed
//! once through each.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod console_support;
mod notify_support;
mod support;

use std::time::{Duration, Instant};

use api_support::{api_serve, api_token, http};
use console_support::{get, post_form};
use countersign_ledger::DispositionStatus;
use countersign_ledger::testing::TempPgDatabase;
use countersign_registry::Registry;
use countersign_signer::testing::TestSigner;
use serde_json::{Value, json};
use support::Harness;
use support::failover::{name_both, pair};
use support::mcp::McpProcess;

fn schedule(name: &str) -> Value {
    json!({"name": name, "cron": "0 3 * * *"})
}

/// Propose schedule `name` through the API at `addr`: its id.
async fn api_propose(addr: std::net::SocketAddr, token: &str, name: &str) -> String {
    let auth = format!("Bearer {token}");
    let headers = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
    ];
    let body = json!({ "arguments": schedule(name) }).to_string();
    let proposed = http(
        addr,
        "POST",
        "/v1/operations/schedule.create/proposals",
        &headers,
        body.as_bytes(),
    )
    .await;
    assert_eq!(proposed.status, 200, "{}", proposed.body);
    proposed.json()["id"].as_str().unwrap().to_owned()
}

/// Call `tool` of the MCP process as request `id`: the result.
async fn mcp_call(mcp: &mut McpProcess, id: u64, tool: &str, arguments: Value) -> Value {
    mcp.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}}))
        .await;
    mcp.response(id).await["result"].clone()
}

/// Propose schedule `name` through the MCP process: its id.
async fn mcp_propose(mcp: &mut McpProcess, id: u64, name: &str) -> String {
    let result = mcp_call(
        mcp,
        id,
        "propose_schedule_create",
        json!({ "arguments": schedule(name) }),
    )
    .await;
    assert_eq!(result["isError"], false, "{result}");
    result["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The status of proposal `id` as B's ledger records it.
async fn status(b: &TestSigner, id: &str) -> String {
    let proposal = b.state().ledger().proposal(id).await.unwrap().unwrap();
    proposal.status.as_str().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_and_mcp_processes_go_on_through_the_second_signer() {
    let (mut h, b) = pair().await;
    name_both(&h, &b);
    let token = api_token(&h).await;
    let (_api, mut stderr, _, addr) = api_serve(&h).await;
    // Its TRACE log read to the end, so that a full pipe never stops it.
    tokio::spawn(async move { tokio::io::copy(&mut stderr, &mut tokio::io::sink()).await });
    let mut mcp = McpProcess::start(&h).await;
    // Each process holds a connection to A: a proposal through each.
    let earlier = [
        api_propose(addr, &token, "before-api").await,
        mcp_propose(&mut mcp, 1, "before-mcp").await,
    ];
    // The person approves both at the terminal, through A, which holds
    // their proofs for the heads when it stops.
    for id in &earlier {
        h.approve_for_mcp(id).await;
    }
    h.signer.halt().await.unwrap();

    // A stopped: the same processes propose again, through B.
    let api_id = api_propose(addr, &token, "after-api").await;
    let mcp_id = mcp_propose(&mut mcp, 2, "after-mcp").await;
    for id in [&api_id, &mcp_id] {
        assert_eq!(status(&b, id).await, "pending", "{id}");
    }
    // The person approves each at the terminal (whose CLI also names both)
    // for the head that proposed it; each head executes it once.
    h.approve_for_mcp(&api_id).await;
    h.approve_for_mcp(&mcp_id).await;
    // Each executes the one approved through B, and the one A held, which
    // B signs again under its own key.
    let auth = format!("Bearer {token}");
    for id in [&earlier[0], &api_id] {
        let executed = http(
            addr,
            "POST",
            &format!("/v1/proposals/{id}/execute-handoff"),
            &[("Authorization", auth.as_str())],
            b"",
        )
        .await;
        assert_eq!(executed.json()["applied"], true, "{id}: {}", executed.body);
    }
    for (n, id) in [(3, &earlier[1]), (4, &mcp_id)] {
        let done = mcp_call(
            &mut mcp,
            n,
            "execute_approved",
            json!({ "proposal_id": id }),
        )
        .await;
        assert_eq!(done["isError"], false, "{id}: {done}");
    }
    let ledger = b.state().ledger();
    let all = [&earlier[0], &earlier[1], &api_id, &mcp_id];
    for id in all {
        let disposition = ledger.disposition(id).await.unwrap().expect("recorded");
        assert_eq!(disposition.status, DispositionStatus::Applied, "{id}");
    }
    let mut names: Vec<String> = ledger
        .state(h.signer.principal(), "schedules")
        .await
        .unwrap()
        .into_iter()
        .map(|(key, _)| key)
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["after-api", "after-mcp", "before-api", "before-mcp"]
    );
    // Once each, whichever signer their heads spoke to; A's two signed
    // again by B, under B's key.
    let events = ledger.events().await.unwrap();
    let kb = b.state().key_id().unwrap();
    for id in all {
        let resigned: Vec<_> = events
            .iter()
            .filter(|e| e.kind == "proof_resigned" && e.proposal_id.as_ref() == Some(id))
            .map(|e| e.details["key_id"].as_str().unwrap_or_default())
            .collect();
        let expected: &[&str] = if earlier.contains(id) { &[&kb] } else { &[] };
        assert_eq!(resigned, expected, "{id}");
    }
    for id in all {
        let applied = events
            .iter()
            .filter(|e| e.kind == "effect_applied" && e.proposal_id.as_ref() == Some(id))
            .count();
        assert_eq!(applied, 1, "{id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_goes_on_through_the_second_signer() {
    let (mut h, b) = pair().await;
    name_both(&h, &b);
    let site = console_support::serve(&h.home(), None).await;
    let (site, cookie) = console_support::pair(&site, &h.home(), "console").await;
    // The console reads a card through A.
    let before = h
        .propose("schedule.create", &schedule("before").to_string())
        .await;
    let card = get(&site, &cookie, &format!("/proposals/{before}")).await;
    assert_eq!(card.status, 200, "{}", card.body);
    assert!(card.body.contains("before"), "{}", card.body);
    h.signer.halt().await.unwrap();

    // A stopped: a proposal recorded by B is on the console's list, and
    // the person's approval in the console is recorded through B.
    let after = h
        .propose("schedule.create", &schedule("after").to_string())
        .await;
    let list = get(&site, &cookie, "/").await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert!(list.body.contains(&after), "{}", list.body);
    let fields = [
        ("page_key", site.page_key.as_str()),
        ("delivery", "handoff"),
    ];
    let approved = post_form(
        &site,
        &cookie,
        &format!("/proposals/{after}/approve"),
        &fields,
    )
    .await;
    assert_eq!(approved.status, 200, "{}", approved.body);
    assert_eq!(status(&b, &after).await, "approved");
    assert_eq!(status(&b, &before).await, "pending");
}

/// Wait (at most 20 s) until the sink received a notification naming `id`.
async fn notified(sink: &notify_support::Sink, id: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let seen = sink
            .received
            .lock()
            .unwrap()
            .iter()
            .any(|r| String::from_utf8_lossy(&r.body).contains(id));
        if seen {
            return;
        }
        assert!(Instant::now() < deadline, "{id} was never notified");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_notify_process_goes_on_through_the_second_signer() {
    let (sink_addr, sink) = notify_support::start_sink(0).await;
    let dir = tempfile::tempdir().unwrap();
    let config = notify_support::webhook_config(
        &format!("http://{sink_addr}/hook"),
        &notify_support::secret_file(&dir),
        "",
    );
    let pg = TempPgDatabase::create().await.unwrap();
    let mut h = Harness::start_configured(Registry::default_toml(), Some(pg), &config).await;
    let b = h.signer.another_on_this_home().await.unwrap();
    name_both(&h, &b);
    let notifier = notify_support::start_notifier(&h.signer).await.unwrap();
    let before = h
        .propose("schedule.create", &schedule("before").to_string())
        .await;
    notified(&sink, &before).await;
    h.signer.halt().await.unwrap();

    // A stopped: B records the next proposal, and the notify process,
    // its connection to A gone, takes it from B.
    let after = h
        .propose("schedule.create", &schedule("after").to_string())
        .await;
    notified(&sink, &after).await;
    notifier.stop().await;
}
