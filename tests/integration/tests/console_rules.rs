//! The console's Rules page, served over a real TCP listener by the same
//! `countersign::console_state` as `countersign console`: a paired browser
//! sees each rule with its uses and remaining budget and can revoke it (a
//! CSRF-guarded POST); an unpaired one sees nothing, and a POST without
//! the CSRF token revokes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod support;

use std::net::SocketAddr;
use std::sync::Arc;

use api_support::{Reply, http};
use countersign::Context;
use countersign_console::SessionStore;
use countersign_identity::Home;
use serde_json::json;
use support::{Backend, Harness, Person};

/// The console of `h` on 127.0.0.1:0, and a paired browser's cookie.
async fn console(h: &Harness) -> (SocketAddr, String) {
    let ctx = Context::load(Home::at(h.home()).unwrap()).unwrap();
    let state = Arc::new(countersign::console_state(&ctx, None).await.unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(countersign_console::run(
        listener,
        state,
        std::future::pending(),
    ));
    let (code, _) = SessionStore::in_home(std::path::Path::new(&h.home()))
        .create_pairing()
        .unwrap();
    let body = format!("code={}", code.expose_secret());
    let paired = http(
        addr,
        "POST",
        "/pair",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        body.as_bytes(),
    )
    .await;
    let cookie = paired
        .headers
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .and_then(|c| c.split(';').next())
        .expect("pairing sets the session cookie")
        .to_owned();
    (addr, cookie)
}

async fn get(addr: SocketAddr, cookie: &str, target: &str) -> Reply {
    http(addr, "GET", target, &[("Cookie", cookie)], b"").await
}

/// The CSRF token a page's forms carry.
fn csrf(page: &str) -> String {
    let (_, rest) = page.split_once(r#"name="csrf" value=""#).unwrap();
    rest.split('"').next().unwrap().to_owned()
}

#[tokio::test]
async fn the_rules_page_lists_uses_and_budget_and_revokes_with_the_csrf_token() {
    let h = Harness::start_with_rules(Backend::Sqlite).await;
    let expires = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    let definition = json!({
        "operations": ["schedule.create"],
        "constraints": [{"pointer": "/name", "equals": "nightly"}],
        "sessions": ["*"],
        "max_uses": 3,
        "per_hour": 2,
        "expires_at": countersign_verifier::timestamp::format_whole_seconds(expires).unwrap(),
    });
    let file = h.scratch.path().join("rule.json");
    std::fs::write(&file, definition.to_string()).unwrap();
    let created = h
        .cli_with(
            &[
                "--json",
                "rules",
                "create",
                "--file",
                file.to_str().unwrap(),
            ],
            "",
            Person::TypesTheChallenge,
        )
        .await;
    assert_eq!(created.result, Ok(()), "{}", created.stdout);
    let id = created.json()["id"].as_str().unwrap().to_owned();
    h.propose(
        "schedule.create",
        r#"{"name":"nightly","cron":"0 3 * * *"}"#,
    )
    .await;

    let (addr, cookie) = console(&h).await;
    // Unpaired: nothing.
    let unpaired = http(addr, "GET", "/rules", &[], b"").await;
    assert!(!unpaired.body.contains(&id), "{}", unpaired.body);

    let page = get(addr, &cookie, "/rules").await;
    assert_eq!(page.status, 200, "{}", page.body);
    for part in [
        id.as_str(),
        "active",
        "1 of 3",
        "1 of 2",
        "/name equals &quot;nightly&quot;",
        "Revoke this rule",
    ] {
        assert!(page.body.contains(part), "{part:?} in {}", page.body);
    }

    // Without the CSRF token: refused, nothing revoked.
    let target = format!("/rules/{id}/revoke");
    let form = [
        ("Cookie", cookie.as_str()),
        ("Content-Type", "application/x-www-form-urlencoded"),
    ];
    let forged = http(addr, "POST", &target, &form, b"reason=x").await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    assert_eq!(h.ledger().rule(&id).await.unwrap().unwrap().version, 1);

    let body = format!("csrf={}&reason=enough", csrf(&page.body));
    let revoked = http(addr, "POST", &target, &form, body.as_bytes()).await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    assert!(revoked.body.contains("Revoked rule"), "{}", revoked.body);
    let rule = h.ledger().rule(&id).await.unwrap().unwrap();
    assert_eq!((rule.version, rule.reason.as_str()), (2, "enough"));
    let page = get(addr, &cookie, "/rules").await;
    assert!(page.body.contains("revoked"), "{}", page.body);
    assert!(!page.body.contains("Revoke this rule"), "{}", page.body);
    // Revoked: the next covered proposal waits for a person.
    let next = h
        .propose(
            "schedule.create",
            r#"{"name":"nightly","cron":"0 4 * * *"}"#,
        )
        .await;
    let status = h.ledger().proposal(&next).await.unwrap().unwrap().status;
    assert_eq!(status.as_str(), "pending");
}

#[tokio::test]
async fn a_person_creates_a_proposed_rule_in_the_console_and_nothing_else_does() {
    let h = Harness::start_with_rules(Backend::Sqlite).await;
    let expires = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    let definition = json!({
        "operations": ["schedule.create"],
        "constraints": [{"pointer": "/cron", "prefix": "0 3 "}],
        "sessions": ["cli"],
        "max_uses": 1,
        "per_hour": 1,
        "expires_at": countersign_verifier::timestamp::format_whole_seconds(expires).unwrap(),
    });
    let id = h.propose("rule.create", &definition.to_string()).await;
    let (addr, cookie) = console(&h).await;
    let card = get(addr, &cookie, &format!("/proposals/{id}")).await;
    assert_eq!(card.status, 200, "{}", card.body);
    for part in [
        "Create this rule",
        "WITHOUT asking a person",
        "/cron is a string starting with &quot;0 3 &quot;",
    ] {
        assert!(card.body.contains(part), "{part:?} in {}", card.body);
    }
    assert!(!card.body.contains("Approve and run now"), "{}", card.body);
    let target = format!("/proposals/{id}/approve");
    let form = [
        ("Cookie", cookie.as_str()),
        ("Content-Type", "application/x-www-form-urlencoded"),
    ];
    // Without the CSRF token: refused, nothing created.
    let forged = http(addr, "POST", &target, &form, b"delivery=handoff").await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    assert!(
        h.ledger()
            .rules(h.signer.principal())
            .await
            .unwrap()
            .is_empty()
    );
    let body = format!("csrf={}&delivery=handoff", csrf(&card.body));
    let created = http(addr, "POST", &target, &form, body.as_bytes()).await;
    assert_eq!(created.status, 200, "{}", created.body);
    assert!(created.body.contains("Rule created"), "{}", created.body);
    let rules = h.ledger().rules(h.signer.principal()).await.unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(
        rules[0].created_by,
        format!("{}/console", h.signer.principal())
    );
    let status = h.ledger().proposal(&id).await.unwrap().unwrap().status;
    assert_eq!(status.as_str(), "applied");
}
