//! Webhook notifications over https: a receiver on 127.0.0.1 under a CA
//! made for the test gets the signed notification when `trust_roots`
//! names that CA; a receiver whose certificate comes from another CA gets
//! nothing (the handshake fails before any byte of the request) and the
//! delivery shows the TLS failure. The notify process connects; the
//! signer only records.
#![allow(clippy::unwrap_used)]

mod notify_support;
#[path = "../../../signer/tests/support/mod.rs"]
mod support;

use std::sync::{Arc, Mutex};

use countersign_identity::pki::{CaMaterial, issue_server_cert};
use countersign_notify::status::DeliveryStatus;
use notify_support::Notifying;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use support::{head, propose};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// Requests received (head and body as text) by a TLS receiver whose
/// certificate `ca` issued for 127.0.0.1; answers 204 to each.
async fn https_receiver(ca: &CaMaterial) -> (std::net::SocketAddr, Arc<Mutex<Vec<String>>>) {
    let now = time::OffsetDateTime::now_utc();
    let leaf = issue_server_cert(
        ca,
        now - time::Duration::hours(1),
        now + time::Duration::hours(1),
    )
    .unwrap();
    let certs = CertificateDer::pem_slice_iter(leaf.cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(leaf.key_pem.as_bytes()).unwrap();
    countersign_identity::tls::install_crypto_provider();
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let received = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&received);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let Ok(mut tls) = acceptor.accept(tcp).await else {
                continue;
            };
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            // Headers, then as many body bytes as Content-Length says.
            loop {
                let n = tls.read(&mut buf).await.unwrap_or(0);
                if n == 0 {
                    break;
                }
                request.extend_from_slice(&buf[..n]);
                if notify_support::request_complete(&request) {
                    break;
                }
            }
            log.lock()
                .unwrap()
                .push(String::from_utf8_lossy(&request).to_string());
            let _ = tls
                .write_all(
                    b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .await;
            let _ = tls.shutdown().await;
        }
    });
    (addr, received)
}

/// A signer and notify process notifying `https://127.0.0.1:<port>/hook`,
/// trusting `trusted`.
async fn signer_trusting(
    dir: &tempfile::TempDir,
    port: u16,
    trusted: &CaMaterial,
    extra: &str,
) -> Notifying {
    let secret = dir.path().join("whsec");
    countersign_identity::files::write_private_new(
        &secret,
        b"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    )
    .unwrap();
    let roots = dir.path().join("ca.pem");
    std::fs::write(&roots, trusted.cert_pem()).unwrap();
    let config = format!(
        "\n[notify]\npoll_ms = 20\nretry_initial_ms = 50\n{extra}\n[notify.webhook]\nurl = \"https://127.0.0.1:{port}/hook\"\nsecret_file = \"{}\"\ntrust_roots = \"{}\"\n",
        secret.display(),
        roots.display()
    );
    Notifying::start(&config).await
}

async fn finished_delivery(n: &Notifying) -> DeliveryStatus {
    let webhook = n.first_channel_once(|c| c.delivered + c.failed == 1).await;
    webhook.deliveries[0].clone()
}

#[tokio::test]
async fn an_https_receiver_under_the_configured_roots_gets_the_signed_notification() {
    let ca = CaMaterial::generate("notify receiver test CA").unwrap();
    let (addr, received) = https_receiver(&ca).await;
    let dir = tempfile::tempdir().unwrap();
    let n = signer_trusting(&dir, addr.port(), &ca, "").await;
    let view = propose(&mut head(&n.signer).await).await;

    let delivery = finished_delivery(&n).await;
    assert_eq!(delivery.state, "delivered", "{delivery:?}");
    let requests = received.lock().unwrap().clone();
    let [request] = requests.as_slice() else {
        panic!("{requests:?}")
    };
    assert!(request.starts_with("POST /hook HTTP/1.1\r\n"), "{request}");
    assert!(
        request.contains(&format!("webhook-id: {}\r\n", delivery.delivery_id)),
        "{request}"
    );
    assert!(request.contains("webhook-signature: v1,"), "{request}");
    assert!(request.contains(&view.id), "{request}");
    assert!(!request.contains("v4.public."), "{request}");
}

#[tokio::test]
async fn a_receiver_with_a_certificate_from_another_ca_gets_nothing() {
    let other = CaMaterial::generate("another CA").unwrap();
    let (addr, received) = https_receiver(&other).await;
    let trusted = CaMaterial::generate("the configured CA").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let n = signer_trusting(&dir, addr.port(), &trusted, "max_attempts = 2").await;
    propose(&mut head(&n.signer).await).await;

    let delivery = finished_delivery(&n).await;
    assert_eq!(delivery.state, "failed", "{delivery:?}");
    assert_eq!(delivery.attempts, 2);
    assert!(
        delivery
            .last_error
            .as_deref()
            .unwrap_or_default()
            .starts_with(&format!(
                "cannot connect to 127.0.0.1:{}: TLS: ",
                addr.port()
            )),
        "{delivery:?}"
    );
    assert!(received.lock().unwrap().is_empty());
}
