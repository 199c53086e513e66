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
use support::{Backend, Harness, interrupt, verify_as_head};
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
    /// A receiver that deduplicates by `Idempotency-Key`: a key it has not
    /// seen waits this long (after the sender gave up), then answers 200
    /// `late`; a key it has seen answers 200 `already handled` at once.
    SlowFirstThenDedupe(Duration),
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
    let received = Received {
        request_line,
        headers,
        body,
    };
    let key_seen = {
        let mut log = log.lock().unwrap();
        let key = received.header("idempotency-key").map(str::to_string);
        let seen = log
            .iter()
            .any(|r| r.header("idempotency-key").map(str::to_string) == key);
        log.push(received);
        seen
    };
    let (status, text) = match behaviour {
        Behaviour::SlowFirstThenDedupe(_) if key_seen => (200, "already handled".to_string()),
        Behaviour::SlowFirstThenDedupe(pause) => {
            tokio::time::sleep(pause).await;
            (200, "late".to_string())
        }
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
    https_setup_on(
        Backend::Sqlite,
        behaviour,
        replay_safe,
        timeout_secs,
        trust_the_receiver,
    )
    .await
}

/// [`https_setup`] with the ledger on `backend`.
async fn https_setup_on(
    backend: Backend,
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
    let h = Harness::start_on(backend, &webhook_registry(replay_safe, &effect)).await;
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

/// `countersign --json exec ID --proof-file PROOF` as a real process, which
/// exits when done: an intent it leaves open is no longer leased to a
/// running head (its owner is gone), so reconcile may act on it at once.
async fn exec_process(h: &Harness, id: &str, proof: &std::path::Path) -> (i32, serde_json::Value) {
    let out = tokio::process::Command::new(countersign_integration_tests::bin("countersign"))
        .args(["--home", &h.home(), "--json", "exec", id, "--proof-file"])
        .arg(proof)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let json =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"));
    (out.status.code().unwrap(), json)
}

/// Propose `hook.send`, approve it, and execute it in a `countersign`
/// process against a receiver slower than the timeout: uncertain, with one
/// request received. Returns the id.
async fn uncertain_after_a_timeout(h: &Harness, receiver: &Receiver) -> String {
    let id = h.propose("hook.send", ARGS).await;
    let proof = h.approve_to_file(&id).await;
    let (code, json) = exec_process(h, &id, &proof).await;
    assert_eq!(code, i32::from(countersign::exit::NOT_APPLIED), "{json}");
    assert_eq!(json["status"], "uncertain", "{json}");
    assert_eq!(receiver.received().len(), 1);
    id
}

async fn events_of_kind(h: &Harness, kind: &str) -> Vec<countersign_ledger::EventRecord> {
    h.ledger()
        .events()
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == kind)
        .collect()
}

/// A replay-safe webhook whose receiver timed out: `reconcile` re-sends
/// exactly the same request with the same Idempotency-Key and a re-issued
/// proof that verifies with the published keys and carries the same jti;
/// the receiver's dedupe recognises the key, the intent completes applied,
/// and a second reconcile does nothing.
async fn reconcile_resends_a_timed_out_replay_safe_webhook(backend: Backend) {
    let (h, receiver, _roots) = https_setup_on(
        backend,
        Behaviour::SlowFirstThenDedupe(Duration::from_secs(4)),
        true,
        1,
        true,
    )
    .await;
    let id = uncertain_after_a_timeout(&h, &receiver).await;

    let run = h.cli(&["--json", "reconcile"]).await;
    assert_eq!(run.result, Ok(()), "{}", run.stdout);
    let entries = run.json()["entries"].as_array().unwrap().clone();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["proposal_id"], id.as_str());
    assert_eq!(entries[0]["action"], "replayed", "{entries:?}");

    let got = receiver.received();
    assert_eq!(got.len(), 2);
    let (first, again) = (&got[0], &got[1]);
    // The same request: line, body bytes, Idempotency-Key, proposal.
    assert_eq!(again.request_line, first.request_line);
    assert_eq!(again.body, first.body);
    for header in ["idempotency-key", "countersign-proposal", "content-type"] {
        assert_eq!(again.header(header), first.header(header), "{header}");
    }
    // A re-issued proof: another token, the same jti, verifying with the
    // signer's published keys as the receiver checks it.
    let (first_proof, proof) = (
        first.header("countersign-proof").unwrap(),
        again.header("countersign-proof").unwrap(),
    );
    assert_ne!(proof, first_proof);
    let verified = verify_as_head(&h, &id, proof).await.unwrap();
    let original = verify_as_head(&h, &id, first_proof).await.unwrap();
    assert_eq!(verified.claims().jti, original.claims().jti);
    assert_eq!(
        again.header("idempotency-key"),
        Some(verified.claims().jti.as_str())
    );

    // Completed applied with the receiver's dedupe answer.
    let result = h.cli(&["--json", "result", &id]).await.json();
    assert_eq!(result["status"], "applied", "{result}");
    assert_eq!(result["result"]["status"], 200, "{result}");
    assert_eq!(result["result"]["body"], "already handled", "{result}");
    // The re-issue is in the audit chain as a hash, never the proof; the
    // issuance is the original one.
    let reissued = events_of_kind(&h, "proof_reissued").await;
    assert_eq!(reissued.len(), 1);
    assert_eq!(
        reissued[0].details["proof_sha256"],
        hex::encode(sha2::Sha256::digest(proof.as_bytes()))
    );
    let events = format!("{:?}", h.ledger().events().await.unwrap());
    assert!(!events.contains(proof) && !events.contains(first_proof));
    let issuance = h
        .ledger()
        .proposal(&id)
        .await
        .unwrap()
        .unwrap()
        .issuance
        .unwrap();
    assert_eq!(
        issuance.proof_sha256,
        hex::encode(sha2::Sha256::digest(first_proof.as_bytes()))
    );
    assert_eq!(events_of_kind(&h, "intent").await.len(), 1);
    assert!(h.ledger().verify_chain().await.unwrap().is_intact());

    // Nothing left: a second reconcile sends nothing.
    let run = h.cli(&["reconcile"]).await;
    assert_eq!(run.result, Ok(()));
    assert_eq!(
        run.stdout,
        "nothing to reconcile: every recorded intent has completed\n"
    );
    assert_eq!(receiver.received().len(), 2);
    assert_eq!(events_of_kind(&h, "proof_reissued").await.len(), 1);
}

/// On SQLite the signer never re-issues (the ledger's owner can write any
/// row, so an issuance row proves nothing): reconcile leaves the execution
/// uncertain, sends nothing, and says why with the signer's reason code.
#[tokio::test]
async fn reconcile_on_sqlite_leaves_a_timed_out_webhook_uncertain_and_says_why() {
    let (h, receiver, _roots) = https_setup(
        Behaviour::SlowFirstThenDedupe(Duration::from_secs(4)),
        true,
        1,
        true,
    )
    .await;
    let id = uncertain_after_a_timeout(&h, &receiver).await;
    let run = h.cli(&["--json", "reconcile"]).await;
    assert_eq!(
        run.result,
        Err(CliError::NotApplied(
            "1 execution(s) remain uncertain".into()
        ))
    );
    let entry = &run.json()["entries"][0];
    assert_eq!(entry["action"], "still_uncertain", "{entry}");
    let detail = entry["detail"].as_str().unwrap();
    assert!(
        detail.contains(
            "the signer refused to re-issue its proof (reissue_unavailable_on_sqlite): the ledger is SQLite"
        ),
        "{detail}"
    );
    assert_eq!(receiver.received().len(), 1);
    assert!(events_of_kind(&h, "proof_reissued").await.is_empty());
    assert_eq!(
        h.cli(&["--json", "show", &id]).await.json()["status"],
        "uncertain"
    );
}

#[tokio::test]
async fn reconcile_resends_a_timed_out_replay_safe_webhook_on_postgres() {
    reconcile_resends_a_timed_out_replay_safe_webhook(Backend::Postgres).await;
}

#[tokio::test]
async fn reconcile_never_resends_a_webhook_that_is_not_replay_safe() {
    let (h, receiver, _roots) = https_setup(
        Behaviour::SlowFirstThenDedupe(Duration::from_secs(4)),
        false,
        1,
        true,
    )
    .await;
    let id = uncertain_after_a_timeout(&h, &receiver).await;
    let nonce = receiver.received()[0]
        .header("idempotency-key")
        .unwrap()
        .to_string();
    for _ in 0..2 {
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
        assert!(
            detail.contains("hook.send is not replay-safe, so it is never run or sent again")
                && detail.contains(&format!("handled Idempotency-Key {nonce}"))
                && detail.contains(&format!("--resolve {id} --applied")),
            "{detail}"
        );
    }
    assert_eq!(receiver.received().len(), 1);
    assert!(events_of_kind(&h, "proof_reissued").await.is_empty());
    assert_eq!(
        h.cli(&["--json", "show", &id]).await.json()["status"],
        "uncertain"
    );
}

#[tokio::test]
async fn a_receiver_gone_at_the_resend_leaves_it_uncertain_and_reported_once_per_run() {
    // On PostgreSQL: on SQLite nothing is re-issued, so nothing is re-sent.
    let (h, receiver, _roots) = https_setup_on(
        Backend::Postgres,
        Behaviour::SlowFirstThenDedupe(Duration::from_secs(4)),
        true,
        1,
        true,
    )
    .await;
    let id = uncertain_after_a_timeout(&h, &receiver).await;
    let nonce = receiver.received()[0]
        .header("idempotency-key")
        .unwrap()
        .to_string();
    // The receiver vanishes: its port is closed.
    let port = receiver.addr.port();
    drop(receiver);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());

    let run = h.cli(&["--json", "reconcile"]).await;
    assert_eq!(
        run.result,
        Err(CliError::NotApplied(
            "1 execution(s) remain uncertain".into()
        ))
    );
    let entries = run.json()["entries"].as_array().unwrap().clone();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["action"], "still_uncertain");
    let detail = entries[0]["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!(
            "re-sent with Idempotency-Key {nonce} and no answer came"
        )) && detail.contains("cannot connect")
            && detail.contains("not re-sent again in this run"),
        "{detail}"
    );
    // One re-issue, one attempt; nothing completed.
    assert_eq!(events_of_kind(&h, "proof_reissued").await.len(), 1);
    assert!(events_of_kind(&h, "completed").await.is_empty());
    assert_eq!(
        h.cli(&["--json", "show", &id]).await.json()["status"],
        "uncertain"
    );
}

#[tokio::test]
async fn reconcile_never_resends_a_webhook_whose_contract_changed_since_approval() {
    let (h, receiver, _roots) = https_setup(Behaviour::Status(200), true, 10, true).await;
    let id = h.propose("hook.send", ARGS).await;
    interrupt(&h, &id).await;
    let path = h.signer.home().registry_path();
    let changed = std::fs::read_to_string(&path).unwrap().replacen(
        "Send a note to the receiver.",
        "Send a note to the receiver, differently.",
        1,
    );
    std::fs::write(&path, changed).unwrap();
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
    assert!(
        detail.contains("hook.send changed since it was approved")
            && detail.contains("never replayed under another contract"),
        "{detail}"
    );
    assert!(receiver.received().is_empty());
    assert!(events_of_kind(&h, "proof_reissued").await.is_empty());
}
