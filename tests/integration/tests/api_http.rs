//! The HTTP API over a real TCP listener: every route of its OpenAPI
//! document is served; credentials (missing, malformed, expired, wrong
//! audience, revoked, in a URL); cross-site and DNS-rebinding requests;
//! malformed requests, each refused with the exact 4xx and message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod support;

use api_support::{Api, assert_error};
use countersign_api::tokens::TokenStore;
use support::CREATE_NIGHTLY;

const SOME_ID: &str = "prop_0123456789abcdef0123456789abcdef";

#[tokio::test]
async fn serves_every_route_of_its_openapi_document_and_only_with_a_credential() {
    let api = Api::start().await;
    let doc = api.state.openapi().clone();
    let mut routes = 0;
    for (route, item) in doc["paths"].as_object().unwrap() {
        for (method, _) in item.as_object().unwrap() {
            let target = route.replace("{proposal_id}", SOME_ID);
            let reply = api.raw(&method.to_uppercase(), &target, &[], b"").await;
            let expected = if route == "/healthz" { 200 } else { 401 };
            assert_eq!(reply.status, expected, "{method} {route}: {}", reply.body);
            routes += 1;
        }
    }
    assert!(routes >= 10, "{routes}");
    // The OpenAPI document itself needs a credential, then is the same.
    assert_eq!(api.raw("GET", "/openapi.json", &[], b"").await.status, 401);
    let token = api.token().await;
    assert_eq!(api.get(&token, "/openapi.json").await.json(), doc);
    // Health says nothing private.
    assert_eq!(
        api.raw("GET", "/healthz", &[], b"").await.body,
        r#"{"status":"ok"}"#
    );
    // Unknown routes and methods are refused.
    assert_eq!(api.get(&token, "/v1/nothing").await.status, 404);
    assert_eq!(
        api.raw("DELETE", "/v1/operations", &[], b"").await.status,
        405
    );
}

#[tokio::test]
async fn refuses_missing_malformed_expired_foreign_and_revoked_credentials() {
    let api = Api::start().await;
    let missing = api.raw("GET", "/v1/operations", &[], b"").await;
    assert_error(&missing, 401, "a bearer credential is required");
    assert!(
        missing
            .headers
            .to_lowercase()
            .contains("www-authenticate: bearer")
    );
    assert_error(
        &api.get("not-a-token", "/v1/operations").await,
        401,
        "not valid",
    );
    let basic = api
        .raw(
            "GET",
            "/v1/operations",
            &[("Authorization", "Basic dXNlcjpwYXNz")],
            b"",
        )
        .await;
    assert_error(&basic, 401, "not valid");

    let store = TokenStore::in_home(api.h.signer.home().root());
    let principal = api.h.signer.principal().to_string();
    let audience = countersign_api::default_audience(&principal);
    // Expiry is stored in whole seconds (rounded down), so a token of 2 s
    // lives between 1 and 2 s: live for the request below, expired after
    // the sleep. A token of 1 s could expire within milliseconds.
    let (short, _) = store
        .create(&principal, &audience, time::Duration::seconds(2))
        .unwrap();
    let (foreign, _) = store
        .create(
            &principal,
            "countersign-api:someone-else",
            time::Duration::hours(1),
        )
        .unwrap();
    let (other_principal, _) = store
        .create("another-principal", &audience, time::Duration::hours(1))
        .unwrap();
    assert_error(
        &api.get(foreign.expose_secret(), "/v1/operations").await,
        401,
        "another audience",
    );
    assert_error(
        &api.get(other_principal.expose_secret(), "/v1/operations")
            .await,
        401,
        "another principal",
    );
    assert_eq!(
        api.get(short.expose_secret(), "/v1/operations")
            .await
            .status,
        200
    );
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    assert_error(
        &api.get(short.expose_secret(), "/v1/operations").await,
        401,
        "expired",
    );

    // Revoked at the CLI: refused from the next request on.
    let token = api.token().await;
    assert_eq!(api.get(&token, "/v1/operations").await.status, 200);
    let id = token.split('_').nth(1).unwrap();
    let revoked = api.h.cli(&["api", "token", "revoke", id]).await;
    assert_eq!(revoked.result, Ok(()), "{}", revoked.stdout);
    assert_error(&api.get(&token, "/v1/operations").await, 401, "revoked");

    // A credential in the URL is refused, not used.
    let live = api.token().await;
    let in_query = api
        .raw(
            "GET",
            &format!("/v1/operations?access_token={live}"),
            &[],
            b"",
        )
        .await;
    assert_error(&in_query, 400, "only in the Authorization header");
}

#[tokio::test]
async fn refuses_cross_site_and_dns_rebinding_requests() {
    let api = Api::start().await;
    let token = api.token().await;
    let auth = format!("Bearer {token}");
    let same = format!("http://{}", api.addr);
    let localhost = format!("localhost:{}", api.addr.port());
    for (headers, needle) in [
        (vec![("Host", "attacker.example")], "Host"),
        (vec![("Host", "attacker.example:80")], "Host"),
        (vec![("Origin", "https://attacker.example")], "cross-origin"),
        (vec![("Origin", "null")], "cross-origin"),
        (vec![("Sec-Fetch-Site", "cross-site")], "cross-site"),
        (vec![("Sec-Fetch-Site", "same-site")], "cross-site"),
    ] {
        let mut all = headers.clone();
        all.push(("Authorization", &auth));
        let reply = api.raw("GET", "/v1/operations", &all, b"").await;
        assert_error(&reply, 403, needle);
    }
    // The guard runs before the credential check and on health too.
    assert_eq!(
        api.raw("GET", "/healthz", &[("Host", "attacker.example")], b"")
            .await
            .status,
        403
    );
    // Same origin, localhost, and plain programs are served.
    for headers in [
        vec![("Origin", same.as_str()), ("Sec-Fetch-Site", "same-origin")],
        vec![("Host", localhost.as_str())],
        vec![],
    ] {
        let mut all = headers.clone();
        all.push(("Authorization", &auth));
        assert_eq!(
            api.raw("GET", "/v1/operations", &all, b"").await.status,
            200
        );
    }
}

#[tokio::test]
async fn refuses_malformed_requests_with_a_precise_message() {
    let api = Api::start().await;
    let token = api.token().await;
    let propose = "/v1/operations/schedule.create/proposals";
    let cases: Vec<(&str, String, u16, &str)> = vec![
        (
            "unknown field",
            format!(r#"{{"arguments":{CREATE_NIGHTLY},"extra":1}}"#),
            400,
            "unknown field \"extra\"",
        ),
        (
            "duplicate key",
            format!(r#"{{"arguments":{CREATE_NIGHTLY},"note":"a","note":"b"}}"#),
            400,
            "duplicate key \"note\"",
        ),
        (
            "wrong type",
            format!(r#"{{"arguments":{CREATE_NIGHTLY},"note":5}}"#),
            400,
            "/note",
        ),
        (
            "bad argument",
            r#"{"arguments":{"name":"x","cron":7}}"#.to_string(),
            400,
            "/arguments/cron",
        ),
        ("missing arguments", "{}".to_string(), 400, "arguments"),
        ("not an object", "[1]".to_string(), 400, "JSON object"),
        ("not JSON", "{".to_string(), 400, "not acceptable JSON"),
        (
            "session is not a parameter",
            format!(r#"{{"arguments":{CREATE_NIGHTLY},"session":"s"}}"#),
            400,
            "unknown field \"session\"",
        ),
    ];
    for (what, body, status, needle) in cases {
        let reply = api.post(&token, propose, &body).await;
        assert_eq!(reply.status, status, "{what}: {}", reply.body);
        assert_error(&reply, status, needle);
    }
    // Values are never echoed in messages.
    let secretish = api
        .post(
            &token,
            propose,
            r#"{"arguments":{"name":"x","cron":"hunter2-value"},"note":["hunter2"]}"#,
        )
        .await;
    assert_eq!(secretish.status, 400);
    assert!(!secretish.body.contains("hunter2"), "{}", secretish.body);

    let auth = format!("Bearer {token}");
    let text = api
        .raw(
            "POST",
            propose,
            &[("Authorization", &auth), ("Content-Type", "text/plain")],
            b"{\"arguments\":{}}",
        )
        .await;
    assert_error(&text, 415, "application/json");
    // A body that is not JSON whitespace is not "no body" (schemathesis
    // found a form feed accepted by a route without body parameters).
    let withdraw = format!("/v1/proposals/prop_{}/withdraw", "0".repeat(32));
    assert_error(
        &api.post(&token, &withdraw, "\u{c}").await,
        400,
        "not acceptable JSON",
    );
    let big = format!(r#"{{"arguments":{{"name":"{}"}}}}"#, "a".repeat(300 * 1024));
    assert_error(&api.post(&token, propose, &big).await, 413, "larger than");
    assert_error(
        &api.post(&token, &format!("{propose}?note=x"), "{}").await,
        400,
        "no query parameters",
    );
    assert_error(
        &api.get(&token, "/v1/proposals?colour=red").await,
        400,
        "unknown query parameter \"colour\"",
    );
    assert_error(
        &api.get(&token, "/v1/proposals?limit=ten").await,
        400,
        "must be an integer",
    );
    assert_error(
        &api.get(&token, "/v1/proposals?limit=5000").await,
        400,
        "/limit",
    );
    assert_error(
        &api.get(&token, "/v1/proposals?limit=1&limit=2").await,
        400,
        "more than once",
    );
    assert_error(
        &api.get(&token, "/v1/proposals?status=sleeping").await,
        400,
        "/status",
    );
    assert_error(
        &api.get(&token, "/v1/proposals/not-an-id").await,
        400,
        "/proposal_id",
    );
    assert_error(
        &api.get(&token, "/v1/operations/nothing.here/proposals")
            .await,
        405,
        "",
    );
    assert_error(
        &api.post(&token, "/v1/operations/nothing.here/proposals", "{}")
            .await,
        404,
        "no such operation",
    );
    // The proposal id is in the path; the execute body has only the proof.
    let body = format!(r#"{{"proposal_id":"{SOME_ID}","proof":"x"}}"#);
    assert_error(
        &api.post(&token, &format!("/v1/proposals/{SOME_ID}/execute"), &body)
            .await,
        400,
        "unknown field \"proposal_id\"",
    );
    assert_eq!(
        api.get(&token, "/v1/proposals?limit=2&status=pending")
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn a_proof_outside_the_body_is_refused_before_anything_runs() {
    let api = Api::start().await;
    let token = api.token().await;
    let (id, proof) = api.approved(&token, "nightly").await;
    let before = api.h.effects_run().await;
    let target = format!("/v1/proposals/{id}/execute");
    assert_error(
        &api.post(&token, &format!("{target}?proof={proof}"), "{}")
            .await,
        400,
        "never in a URL",
    );
    assert_error(
        &api.post(
            &token,
            &format!("{target}?p={}", proof.replace('.', "%2E")),
            "{}",
        )
        .await,
        400,
        "never in a URL",
    );
    let auth = format!("Bearer {token}");
    let in_header = api
        .raw(
            "POST",
            &target,
            &[("Authorization", &auth), ("X-Proof", &proof)],
            b"",
        )
        .await;
    assert_error(&in_header, 400, "never in a header");
    assert_eq!(api.h.effects_run().await, before, "something ran");
    // In the body it works, once.
    let reply = api.execute(&token, &id, &proof).await;
    assert_eq!(reply.json()["applied"], true, "{}", reply.body);
    assert!(!reply.body.contains(&proof));
}

#[tokio::test]
async fn shuts_down_gracefully_when_asked() {
    let h = support::Harness::start().await;
    let ctx =
        countersign::Context::load(countersign_identity::Home::at(h.home()).unwrap()).unwrap();
    let state = std::sync::Arc::new(countersign::api_state(&ctx).await.unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(countersign_api::run(listener, state, async move {
        let _ = stopped.await;
    }));
    assert!(tokio::net::TcpStream::connect(addr).await.is_ok());
    stop.send(()).unwrap();
    let finished = tokio::time::timeout(std::time::Duration::from_secs(5), server).await;
    assert!(matches!(finished, Ok(Ok(Ok(())))), "{finished:?}");
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn token_create_writes_a_new_private_file_and_prints_only_the_id() {
    use std::os::unix::fs::PermissionsExt;
    let h = support::Harness::start().await;
    let path = h.scratch.path().join("agent.token");
    let out = path.to_str().unwrap();
    let run = h
        .cli(&["api", "token", "create", "--ttl", "2h", "--out", out])
        .await;
    assert_eq!(run.result, Ok(()), "{}", run.stderr);
    let token = std::fs::read_to_string(&path).unwrap().trim().to_string();
    assert!(token.starts_with("cs1_"));
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let printed = format!("{}{}", run.stdout, run.stderr);
    assert!(!printed.contains(&token), "{printed}");
    let id = token.split('_').nth(1).unwrap();
    assert!(run.stdout.contains(id), "{}", run.stdout);
    // An existing file is never overwritten.
    let again = h
        .cli(&["api", "token", "create", "--ttl", "2h", "--out", out])
        .await;
    assert!(again.result.is_err());
    assert_eq!(std::fs::read_to_string(&path).unwrap().trim(), token);
    // The list shows ids and status, never a credential or its hash.
    let list = h.cli(&["--json", "api", "token", "list"]).await.json();
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["id"], id);
    assert_eq!(list[0]["status"], "active");
    assert!(!list.to_string().contains(&token));
    assert!(list[0].get("sha256").is_none());
    let store = std::fs::read_to_string(h.signer.home().root().join("api-tokens.json")).unwrap();
    assert!(!store.contains(&token));
    assert!(
        h.cli(&["api", "token", "revoke", "0000000000000000"])
            .await
            .result
            .is_err()
    );
    assert_eq!(h.cli(&["api", "token", "revoke", id]).await.result, Ok(()));
    assert_eq!(
        h.cli(&["--json", "api", "token", "list"]).await.json()[0]["status"],
        "revoked"
    );
}

#[tokio::test]
async fn api_serve_refuses_an_unspecified_address() {
    let h = support::Harness::start().await;
    for addr in ["0.0.0.0:0", "[::]:0"] {
        let run = h.cli(&["api", "serve", "--listen", addr]).await;
        assert!(
            matches!(&run.result, Err(countersign::CliError::Error(m)) if m.contains("names no specific address")),
            "{:?}",
            run.result
        );
    }
}
