//! The `webhook` effect end to end: the CLI executes an approved proposal
//! and the gate POSTs it to a local receiver (HTTPS under a CA made for the
//! test, or plain HTTP to loopback), which records what it got. Each
//! receiver is real: slow, failing and vanishing ones included.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use countersign::CliError;
use countersign_identity::pki::{CaMaterial, issue_server_cert};
use countersign_registry::{Registry, RegistryError};
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use sha2::Digest as _;
use support::{Harness, interrupt, verify_as_head};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

/// What the receiver does once it has read a whole request.
#[derive(Clone, Copy)]
enum Behaviour {
    /// Answers this status with the body `ok`.
    Status(u16),
    /// Answers 200 with a body of this many bytes.
    LongBody(usize),
    /// Waits this long, then answers 200 (after the sender gave up).
    Sleep(Duration),
    /// Closes the connection without answering.
    Vanish,
}

/// One request as received.
#[derive(Debug, Clone)]
struct Received {
    request_line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A receiver listening on 127.0.0.1, over TLS when it has an acceptor.
struct Receiver {
    addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Receiver {
    async fn start(tls: Option<tokio_rustls::TlsAcceptor>, behaviour: Behaviour) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&received);
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let log = Arc::clone(&log);
                let tls = tls.clone();
                tokio::spawn(async move {
                    match tls {
                        Some(acceptor) => {
                            if let Ok(stream) = acceptor.accept(tcp).await {
                                serve(stream, behaviour, log).await;
                            }
                        }
                        None => serve(tcp, behaviour, log).await,
                    }
                });
            }
        });
        Receiver {
            addr,
            received,
            task,
        }
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

async fn serve<S>(mut stream: S, behaviour: Behaviour, log: Arc<Mutex<Vec<Received>>>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8(bytes[..head_end].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap().to_string();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.trim().to_ascii_lowercase(), v.trim().to_string())
        })
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map(|(_, v)| v.parse().unwrap())
        .unwrap_or(0);
    let mut body = bytes[head_end + 4..].to_vec();
    while body.len() < length {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    log.lock().unwrap().push(Received {
        request_line,
        headers,
        body,
    });
    let (status, text) = match behaviour {
        Behaviour::Status(status) => (status, "ok".to_string()),
        Behaviour::LongBody(n) => (200, "x".repeat(n)),
        Behaviour::Sleep(pause) => {
            tokio::time::sleep(pause).await;
            (200, "late".to_string())
        }
        Behaviour::Vanish => return,
    };
    let answer = format!(
        "HTTP/1.1 {status} Test\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = stream.write_all(answer.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// A CA made for the test and a server certificate it issued for
/// `localhost` / 127.0.0.1; returns the acceptor and the CA's PEM.
fn tls_under_a_new_ca() -> (tokio_rustls::TlsAcceptor, String) {
    countersign_identity::tls::install_crypto_provider();
    let ca = CaMaterial::generate("webhook receiver test CA").unwrap();
    let now = time::OffsetDateTime::now_utc();
    let leaf = issue_server_cert(
        &ca,
        now - time::Duration::hours(1),
        now + time::Duration::hours(1),
    )
    .unwrap();
    let certs = CertificateDer::pem_slice_iter(leaf.cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(leaf.key_pem.as_bytes()).unwrap();
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    (
        tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        ca.cert_pem().to_string(),
    )
}

/// A registry with the webhook operation `hook.send` (`{"text": ...}`).
fn webhook_registry(replay_safe: bool, effect: &str) -> String {
    format!(
        r#"
[[operation]]
name = "hook.send"
description = "Send a note to the receiver."
class = "write"
replay_safe = {replay_safe}
preview = "Send {{text}}"

[operation.effect]
kind = "webhook"
{effect}

[operation.schema]
type = "object"
additionalProperties = false
required = ["text"]

[operation.schema.properties.text]
type = "string"
maxLength = 100
"#
    )
}

const ARGS: &str = r#"{"text":"deploy \u00e9t\u00e9"}"#;

/// A signer whose registry sends `hook.send` over HTTPS to a receiver
/// behaving as told, trusting `roots_pem` (the receiver's CA unless a test
/// says otherwise).
async fn https_setup(
    behaviour: Behaviour,
    replay_safe: bool,
    timeout_secs: u64,
    trust_the_receiver: bool,
) -> (Harness, Receiver, tempfile::TempDir) {
    let (acceptor, ca_pem) = tls_under_a_new_ca();
    let receiver = Receiver::start(Some(acceptor), behaviour).await;
    let roots = tempfile::tempdir().unwrap();
    let roots_path = roots.path().join("receiver-ca.pem");
    let trusted = if trust_the_receiver {
        ca_pem
    } else {
        let (_, other_ca) = tls_under_a_new_ca();
        other_ca
    };
    std::fs::write(&roots_path, trusted).unwrap();
    let effect = format!(
        "url = \"https://localhost:{}/hooks/approved?v=1\"\ntimeout_secs = {timeout_secs}\ntrust_roots = \"{}\"",
        receiver.addr.port(),
        roots_path.display()
    );
    let h = Harness::start_with_registry(&webhook_registry(replay_safe, &effect)).await;
    (h, receiver, roots)
}

/// Propose `hook.send`, approve it to a proof file and execute it once.
async fn propose_approve_exec(h: &Harness) -> (String, std::path::PathBuf, support::Run) {
    let id = h.propose("hook.send", ARGS).await;
    let proof = h.approve_to_file(&id).await;
    let run = h.exec(&id, &proof, &[]).await;
    (id, proof, run)
}

#[tokio::test]
async fn an_approved_webhook_is_posted_once_with_the_exact_body_proof_and_nonce() {
    // Everything logged at TRACE, from every task (the only test here that
    // installs the subscriber): the proof travels in a header, never a log.
    let capture = support::Capture::trace();
    let (h, receiver, _roots) = https_setup(Behaviour::Status(202), false, 10, true).await;
    let id = h.propose("hook.send", ARGS).await;
    let proof_path = h.approve_to_file(&id).await;
    let run = h.exec(&id, &proof_path, &[]).await;
    assert_eq!(run.result, Ok(()), "{}", run.stdout);
    let json = run.json();
    assert_eq!(json["status"], "applied");
    assert_eq!(json["result"]["status"], 202);
    assert_eq!(json["result"]["body"], "ok");
    assert_eq!(json["result"]["body_truncated"], false);

    let got = receiver.received();
    assert_eq!(got.len(), 1);
    let request = &got[0];
    assert_eq!(request.request_line, "POST /hooks/approved?v=1 HTTP/1.1");
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.header("countersign-proposal"), Some(id.as_str()));
    // The exact bytes approved: the canonical arguments, whose hash the
    // proof carries.
    let proposal = h.ledger().proposal(&id).await.unwrap().unwrap().proposal;
    assert_eq!(
        hex::encode(sha2::Sha256::digest(&request.body)),
        proposal.arguments_sha256
    );
    assert_eq!(request.body, "{\"text\":\"deploy été\"}".as_bytes());
    // The receiver verifies the approval itself with the public keys.
    let proof_text = std::fs::read_to_string(&proof_path).unwrap();
    let header_proof = request.header("countersign-proof").unwrap();
    assert_eq!(header_proof, proof_text.trim());
    let verified = verify_as_head(&h, &id, header_proof).await.unwrap();
    assert_eq!(
        request.header("idempotency-key"),
        Some(verified.claims().jti.as_str())
    );

    // Presented again: nothing is sent again.
    let again = h.exec(&id, &proof_path, &[]).await;
    support::assert_refused(&again, "already_used");
    assert_eq!(receiver.received().len(), 1);
    let logged = capture.text();
    assert!(logged.contains("intent recorded"), "{logged}");
    assert!(!logged.contains(proof_text.trim()));
}

#[tokio::test]
async fn a_status_that_is_not_accepted_is_failed_and_spends_the_proof() {
    let (h, receiver, _roots) = https_setup(Behaviour::Status(500), false, 10, true).await;
    let (id, _proof, run) = propose_approve_exec(&h).await;
    assert!(
        matches!(run.result, Err(CliError::NotApplied(_))),
        "{:?}",
        run.result
    );
    let json = run.json();
    assert_eq!(json["status"], "failed");
    assert_eq!(json["result"]["status"], 500);
    assert_eq!(receiver.received().len(), 1);
    let result = h.cli(&["--json", "result", &id]).await.json();
    assert_eq!(result["status"], "failed");
    assert!(
        result["error"].as_str().unwrap().contains("status 500"),
        "{result}"
    );
}

#[tokio::test]
async fn a_long_response_body_is_kept_up_to_the_bound_and_marked_truncated() {
    let (h, _receiver, _roots) =
        https_setup(Behaviour::LongBody(200 * 1024), false, 10, true).await;
    let (_id, _proof, run) = propose_approve_exec(&h).await;
    assert_eq!(run.result, Ok(()), "{}", run.stdout);
    let json = run.json();
    assert_eq!(json["result"]["body_truncated"], true);
    assert_eq!(
        json["result"]["body"].as_str().unwrap().len(),
        countersign_gate::webhook::MAX_BODY_BYTES
    );
}

#[tokio::test]
async fn a_receiver_slower_than_the_timeout_leaves_it_uncertain_and_nothing_is_resent() {
    let (h, receiver, _roots) =
        https_setup(Behaviour::Sleep(Duration::from_secs(4)), true, 1, true).await;
    let (id, proof, run) = propose_approve_exec(&h).await;
    assert!(
        matches!(run.result, Err(CliError::NotApplied(_))),
        "{:?}",
        run.result
    );
    let json = run.json();
    assert_eq!(json["status"], "uncertain", "{json}");
    assert_eq!(json["ok"], true);
    assert_eq!(json["applied"], false);
    assert!(
        json["message"].as_str().unwrap().contains("timed out"),
        "{json}"
    );
    assert_eq!(
        h.cli(&["--json", "show", &id]).await.json()["status"],
        "uncertain"
    );

    let again = h.exec(&id, &proof, &[]).await;
    support::assert_refused(&again, "already_used");
    assert_eq!(again.json()["recorded_status"], "uncertain");
    assert_eq!(receiver.received().len(), 1);
}

#[tokio::test]
async fn a_receiver_that_vanishes_after_reading_the_request_leaves_it_uncertain() {
    let (h, receiver, _roots) = https_setup(Behaviour::Vanish, false, 10, true).await;
    let (id, _proof, run) = propose_approve_exec(&h).await;
    assert!(
        matches!(run.result, Err(CliError::NotApplied(_))),
        "{:?}",
        run.result
    );
    assert_eq!(run.json()["status"], "uncertain", "{}", run.stdout);
    assert_eq!(receiver.received().len(), 1);
    assert_eq!(
        h.cli(&["--json", "show", &id]).await.json()["status"],
        "uncertain"
    );
}

#[tokio::test]
async fn a_receiver_with_an_untrusted_certificate_gets_nothing_and_it_is_failed() {
    let (h, receiver, _roots) = https_setup(Behaviour::Status(200), false, 10, false).await;
    let (id, _proof, run) = propose_approve_exec(&h).await;
    assert!(
        matches!(run.result, Err(CliError::NotApplied(_))),
        "{:?}",
        run.result
    );
    assert_eq!(run.json()["status"], "failed", "{}", run.stdout);
    assert!(receiver.received().is_empty());
    let result = h.cli(&["--json", "result", &id]).await.json();
    let error = result["error"].as_str().unwrap();
    assert!(
        error.contains("was not sent") && error.contains("TLS"),
        "{error}"
    );
}

#[tokio::test]
async fn a_refused_connection_is_failed_with_nothing_sent() {
    // A port that was just free: nothing listens on it.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let effect = format!(
        "url = \"http://127.0.0.1:{port}/hook\"\ntimeout_secs = 5\nallow_plain_http_loopback = true"
    );
    let h = Harness::start_with_registry(&webhook_registry(false, &effect)).await;
    let (id, _proof, run) = propose_approve_exec(&h).await;
    assert_eq!(run.json()["status"], "failed", "{}", run.stdout);
    let result = h.cli(&["--json", "result", &id]).await.json();
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .contains("was not sent: cannot connect"),
        "{result}"
    );
}

#[tokio::test]
async fn plain_http_to_loopback_is_sent_only_when_the_registry_allows_it() {
    let receiver = Receiver::start(None, Behaviour::Status(204)).await;
    let url = format!("http://127.0.0.1:{}/hook", receiver.addr.port());
    let refused = webhook_registry(false, &format!("url = \"{url}\"\ntimeout_secs = 5"));
    assert!(matches!(
        Registry::from_toml_str(&refused),
        Err(RegistryError::InvalidField { field, .. }) if field == "effect.url"
    ));

    let allowed = webhook_registry(
        false,
        &format!("url = \"{url}\"\ntimeout_secs = 5\nallow_plain_http_loopback = true"),
    );
    let h = Harness::start_with_registry(&allowed).await;
    let (_id, _proof, run) = propose_approve_exec(&h).await;
    assert_eq!(run.result, Ok(()), "{}", run.stdout);
    assert_eq!(run.json()["result"]["status"], 204);
    assert_eq!(receiver.received().len(), 1);
}

#[tokio::test]
async fn reconcile_never_resends_a_webhook_replay_safe_or_not() {
    for replay_safe in [true, false] {
        let (h, receiver, _roots) =
            https_setup(Behaviour::Status(200), replay_safe, 10, true).await;
        let id = h.propose("hook.send", ARGS).await;
        interrupt(&h, &id).await;
        let run = h.cli(&["--json", "reconcile"]).await;
        assert_eq!(
            run.result,
            Err(CliError::NotApplied(
                "1 execution(s) remain uncertain".into()
            ))
        );
        let entry = &run.json()["entries"][0];
        assert_eq!(entry["action"], "still_uncertain");
        let detail = entry["detail"].as_str().unwrap();
        let expected = if replay_safe {
            "is a webhook: the ledger keeps no proof"
        } else {
            "is not replay-safe"
        };
        assert!(detail.contains(expected), "{detail}");
        assert!(receiver.received().is_empty());
    }
}
