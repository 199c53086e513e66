//! The console over real TLS for the tests that talk to it as a program
//! would: served by the same code as `countersign console` (its
//! certificate from the home's console CA, every address of
//! `console.localhost`), and an HTTPS client that trusts that CA alone and
//! names `console.localhost` (which browsers resolve themselves, and the
//! system resolver may not: the client connects to 127.0.0.1).
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::Arc;

use countersign::Context;
use countersign_console::{SessionStore, TlsListener};
use countersign_identity::console_pki::{CONSOLE_NAME, ensure_console_cert};
use countersign_identity::{ApproverName, ConsoleConfig, Home};
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::api_support::{Reply, parse_reply};

/// A console of a test home, served over TLS.
#[derive(Clone)]
pub struct Site {
    /// Its first address (127.0.0.1).
    pub addr: SocketAddr,
    /// The console CA (PEM), the only root the client trusts.
    pub ca_pem: String,
    /// The page key of the browser [`pair`] paired, once paired.
    pub page_key: String,
}

/// Serve the console of the home at `home` (as `approver`, or the default
/// `console`) on 127.0.0.1:0 and every other address of `console.localhost`.
pub async fn serve(home: &str, approver: Option<&ApproverName>) -> Site {
    let ctx = Context::load(Home::at(home).unwrap()).unwrap();
    let config = ConsoleConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        names: vec![CONSOLE_NAME.to_owned()],
        own_cert: None,
        mdns: false,
    };
    let (cert, _) = ensure_console_cert(&ctx.home, &config.names).unwrap();
    let tls = countersign_console::tls::server_config(&cert).unwrap();
    let state = Arc::new(countersign::console_state(&ctx, approver).await.unwrap());
    let listeners = countersign_console::bind::bind_all(&config).await.unwrap();
    let addr = listeners[0].local_addr().unwrap();
    let origin = format!("https://{CONSOLE_NAME}:{}", addr.port());
    let listener = TlsListener::new(listeners, tls, &origin).unwrap();
    tokio::spawn(countersign_console::run(
        listener,
        state,
        std::future::pending(),
    ));
    Site {
        addr,
        ca_pem: std::fs::read_to_string(ctx.home.console_ca_cert_path()).unwrap(),
        page_key: String::new(),
    }
}

/// Pair a browser with the console of `approver` at `site` the way a
/// browser does (a pairing code from the home's store, `POST /pair`):
/// the site with the page key the answer handed to the page, and the
/// session cookie (`name=value`).
pub async fn pair(site: &Site, home: &str, approver: &str) -> (Site, String) {
    pair_as(site, home, approver, None).await
}

/// [`pair`], from a browser that sends `user_agent` (or none).
pub async fn pair_as(
    site: &Site,
    home: &str,
    approver: &str,
    user_agent: Option<&str>,
) -> (Site, String) {
    let store = SessionStore::for_approver(
        std::path::Path::new(home),
        &ApproverName::parse(approver).unwrap(),
    );
    let (code, _) = store.create_pairing().unwrap();
    let body = format!("code={}", code.expose_secret());
    let mut headers = vec![("Content-Type", "application/x-www-form-urlencoded")];
    if let Some(ua) = user_agent {
        headers.push(("User-Agent", ua));
    }
    let paired = https(site, "POST", "/pair", &headers, body.as_bytes()).await;
    assert_eq!(paired.status, 200, "{}", paired.body);
    let cookie = paired
        .headers
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .and_then(|c| c.split(';').next())
        .expect("pairing sets the session cookie")
        .to_owned();
    let page_key = paired
        .body
        .split_once("data-key=\"")
        .and_then(|(_, rest)| rest.split('"').next())
        .expect("pairing hands the page its key")
        .to_owned();
    (
        Site {
            page_key,
            ..site.clone()
        },
        cookie,
    )
}

/// The header in which the console's script sends the page key with a read.
pub const PAGE_KEY_HEADER: &str = "X-Countersign-Page-Key";

/// One HTTPS request to the console at `site`, as `console.localhost`; a
/// GET from a paired site carries its page key, as the console's script
/// sends it (unless `headers` name the header themselves).
pub async fn https(
    site: &Site,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut headers = headers.to_vec();
    if method == "GET"
        && !site.page_key.is_empty()
        && !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case(PAGE_KEY_HEADER))
    {
        headers.push((PAGE_KEY_HEADER, &site.page_key));
    }
    https_to(site.addr, &site.ca_pem, method, target, &headers, body).await
}

/// One HTTPS request to `addr`, trusting only `ca_pem`, naming
/// `console.localhost` (SNI and Host).
pub async fn https_to(
    addr: SocketAddr,
    ca_pem: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut stream = send(addr, ca_pem, method, target, headers, body).await;
    let mut bytes = Vec::new();
    // A close without close_notify is how many servers end; keep what came.
    let _ = stream.read_to_end(&mut bytes).await;
    parse_reply(&bytes)
}

/// A GET of `target` by the browser holding `cookie`.
pub async fn get(site: &Site, cookie: &str, target: &str) -> Reply {
    https(site, "GET", target, &[("Cookie", cookie)], b"").await
}

/// The browser holding `cookie` posts the form `fields` to `target`.
pub async fn post_form(site: &Site, cookie: &str, target: &str, fields: &[(&str, &str)]) -> Reply {
    let body = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish();
    let headers = [
        ("Cookie", cookie),
        ("Content-Type", "application/x-www-form-urlencoded"),
    ];
    https(site, "POST", target, &headers, body.as_bytes()).await
}

/// Sends one HTTPS request to `addr` as [`https_to`] does and returns the
/// connection, for a reply read as it comes (server-sent events).
pub async fn send(
    addr: SocketAddr,
    ca_pem: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    countersign_identity::tls::install_crypto_provider();
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap())
        .unwrap();
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut stream = connector
        .connect(ServerName::try_from(CONSOLE_NAME).unwrap(), tcp)
        .await
        .unwrap();
    let mut request = format!("{method} {target} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: {CONSOLE_NAME}:{}\r\n", addr.port()));
    }
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(request.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    stream
}
