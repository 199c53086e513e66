//! An https upstream: server-everything (npm) behind a TLS front made here
//! for 127.0.0.1 by a CA made for the test. With that CA as `trust_roots`
//! the gateway lists and calls over one reused connection and sends the
//! bearer credential from its file on every request; with another CA the
//! handshake fails and no request, so no credential, is ever sent.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{EverythingHttp, Seen, call_until_ok, gateway, private_file, quoted};
use countersign_gateway::{UpstreamError, Upstreams};
use countersign_identity::pki::{CaMaterial, issue_server_cert};
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::json;

/// A TLS front on 127.0.0.1 under `ca`, forwarding to `backend`.
async fn tls_front(ca: &CaMaterial, backend: u16) -> (u16, Arc<Mutex<Seen>>) {
    let now = time::OffsetDateTime::now_utc();
    let leaf = issue_server_cert(
        ca,
        now - time::Duration::hours(1),
        now + time::Duration::hours(1),
    )
    .unwrap_or_else(|e| panic!("leaf: {e}"));
    let certs = CertificateDer::pem_slice_iter(leaf.cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap_or_else(|e| panic!("cert: {e}"));
    let key = PrivateKeyDer::from_pem_slice(leaf.key_pem.as_bytes())
        .unwrap_or_else(|e| panic!("key: {e}"));
    countersign_identity::tls::install_crypto_provider();
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap_or_else(|e| panic!("tls: {e}"));
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let log = Arc::clone(&seen);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let Ok(tls) = acceptor.accept(tcp).await else {
                continue;
            };
            log.lock().unwrap_or_else(|e| e.into_inner()).connections += 1;
            tokio::spawn(common::relay(tls, backend, Arc::clone(&log)));
        }
    });
    (port, seen)
}

fn upstream(port: u16, bearer: &str, roots: &str) -> String {
    format!(
        "[[upstream]]\nname = \"tls\"\n[upstream.http]\nurl = \"https://127.0.0.1:{port}/mcp\"\nbearer_file = {}\ntrust_roots = {}\n",
        quoted(bearer),
        quoted(roots)
    )
}

#[tokio::test]
async fn an_https_upstream_gets_the_bearer_on_every_request_over_a_reused_connection() {
    let everything = EverythingHttp::start().await;
    let ca = CaMaterial::generate("gateway test CA").unwrap_or_else(|e| panic!("ca: {e}"));
    let (port, seen) = tls_front(&ca, everything.port).await;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let bearer = private_file(dir.path(), "bearer", "tok-123\n");
    let roots = private_file(dir.path(), "ca.pem", ca.cert_pem());
    let upstreams = Upstreams::start(&gateway(&upstream(port, &bearer, &roots)));
    let tools = upstreams
        .list_tools("tls")
        .await
        .unwrap_or_else(|e| panic!("list: {e}"));
    assert!(tools.iter().any(|t| t.definition.name == "echo"));
    for i in 0..8 {
        let args = json!({"message": format!("hello {i}")})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let result = upstreams
            .call("tls", "echo", args, Duration::from_secs(10))
            .await
            .unwrap_or_else(|e| panic!("call: {e:?}"));
        assert!(
            result.to_string().contains(&format!("hello {i}")),
            "{result}"
        );
    }
    upstreams.shutdown().await;
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner());
    assert!(seen.authorizations.len() >= 10, "{:?}", seen.authorizations);
    assert!(
        seen.authorizations.iter().all(|a| a == "Bearer tok-123"),
        "{:?}",
        seen.authorizations
    );
    // Ten requests and more (initialize, list, eight calls, the event
    // stream): a handful of connections, not one per request.
    assert!(seen.connections <= 3, "{} connections", seen.connections);
}

#[tokio::test]
async fn an_https_upstream_under_another_ca_gets_no_request_and_no_credential() {
    let everything = EverythingHttp::start().await;
    let ca = CaMaterial::generate("gateway test CA").unwrap_or_else(|e| panic!("ca: {e}"));
    let other = CaMaterial::generate("another CA").unwrap_or_else(|e| panic!("ca: {e}"));
    let (port, seen) = tls_front(&ca, everything.port).await;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let bearer = private_file(dir.path(), "bearer", "tok-123\n");
    let roots = private_file(dir.path(), "ca.pem", other.cert_pem());
    let upstreams = Upstreams::start(&gateway(&upstream(port, &bearer, &roots)));
    let listed = upstreams.list_tools("tls").await;
    assert!(
        matches!(listed, Err(UpstreamError::Unavailable { .. })),
        "{listed:?}"
    );
    upstreams.shutdown().await;
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner());
    assert_eq!(seen.connections, 0);
    assert!(seen.authorizations.is_empty(), "{:?}", seen.authorizations);
}

#[tokio::test]
async fn a_bearer_file_others_can_read_keeps_the_https_upstream_down() {
    let everything = EverythingHttp::start().await;
    let ca = CaMaterial::generate("gateway test CA").unwrap_or_else(|e| panic!("ca: {e}"));
    let (port, _seen) = tls_front(&ca, everything.port).await;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let roots = private_file(dir.path(), "ca.pem", ca.cert_pem());
    let bearer = dir.path().join("bearer");
    std::fs::write(&bearer, "token\n").unwrap_or_else(|e| panic!("write: {e}"));
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&bearer, std::fs::Permissions::from_mode(0o640))
        .unwrap_or_else(|e| panic!("chmod: {e}"));
    let upstreams = Upstreams::start(&gateway(&upstream(
        port,
        &bearer.display().to_string(),
        &roots,
    )));
    let error = upstreams
        .list_tools("tls")
        .await
        .err()
        .unwrap_or_else(|| panic!("listed with a 0640 bearer file"))
        .to_string();
    assert!(
        error.contains(&bearer.display().to_string()) && error.contains("chmod 600"),
        "{error}"
    );
    // With the mode fixed, the next attempt (after the backoff) connects.
    std::fs::set_permissions(&bearer, std::fs::Permissions::from_mode(0o600))
        .unwrap_or_else(|e| panic!("chmod: {e}"));
    call_until_ok(
        &upstreams,
        "tls",
        "echo",
        json!({"message": "now"}),
        Duration::from_secs(10),
    )
    .await;
    upstreams.shutdown().await;
}
