//! Notifications through a real in-process signer: a Standard Webhooks
//! sink on 127.0.0.1 that checks the signature, sinks that fail then
//! succeed, one that never answers, a restart with a retry pending, and the
//! settings the signer refuses to start with. Email is in `notify_smtp.rs`.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use base64::Engine as _;
use countersign_proto::v1::{NotifyDelivery, NotifyStatusRequest, NotifyStatusResponse};
use countersign_registry::Registry;
use countersign_signer::StartError;
use countersign_signer::testing::TestSigner;
use support::{head, propose, reason_of};

/// The webhook secret of these tests (24 bytes of key).
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// One request as the sink received it.
#[derive(Debug, Clone)]
struct Received {
    at: Instant,
    headers: HeaderMap,
    body: Bytes,
}

impl Received {
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }

    /// Checks the Standard Webhooks signature with the shared secret:
    /// HMAC-SHA256 over `id.timestamp.body`, `v1,<base64>`, a timestamp
    /// within five minutes of now.
    fn signature_is_valid(&self) -> bool {
        let key = base64::engine::general_purpose::STANDARD
            .decode(SECRET.trim_start_matches("whsec_"))
            .unwrap();
        let id = self.header("webhook-id");
        let timestamp = self.header("webhook-timestamp");
        let Ok(sent_at) = timestamp.parse::<i64>() else {
            return false;
        };
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        if (now - sent_at).abs() > 300 {
            return false;
        }
        let mut signed = format!("{id}.{timestamp}.").into_bytes();
        signed.extend_from_slice(&self.body);
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key);
        self.header("webhook-signature")
            .split(' ')
            .filter_map(|s| s.strip_prefix("v1,"))
            .filter_map(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .any(|tag| ring::hmac::verify(&key, &signed, &tag).is_ok())
    }
}

/// The sink's state: what it received, and how many requests it still
/// answers 500 before it answers 204.
#[derive(Default)]
struct Sink {
    received: Mutex<Vec<Received>>,
    failures_left: Mutex<u32>,
}

async fn receive(State(sink): State<Arc<Sink>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    sink.received.lock().unwrap().push(Received {
        at: Instant::now(),
        headers,
        body,
    });
    let mut left = sink.failures_left.lock().unwrap();
    if *left > 0 {
        *left -= 1;
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::NO_CONTENT
    }
}

/// An HTTP sink on 127.0.0.1:0 (axum) that fails `failures` times first.
async fn start_sink(failures: u32) -> (SocketAddr, Arc<Sink>) {
    let sink = Arc::new(Sink {
        failures_left: Mutex::new(failures),
        ..Sink::default()
    });
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(receive))
        .with_state(Arc::clone(&sink));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, sink)
}

/// A 0600 file holding the secret, in a directory that outlives the test.
fn secret_file(dir: &tempfile::TempDir) -> PathBuf {
    let path = dir.path().join("whsec");
    countersign_identity::files::write_private_new(&path, SECRET.as_bytes()).unwrap();
    path
}

/// `[notify]` with a webhook to `url`.
fn webhook_config(url: &str, secret: &std::path::Path, extra: &str) -> String {
    format!(
        "\n[console]\naddr = \"127.0.0.1:7999\"\n[notify]\nretry_initial_ms = 50\nretry_max_ms = 200\n{extra}\n[notify.webhook]\nurl = \"{url}\"\nsecret_file = \"{}\"\n",
        secret.display()
    )
}

async fn start_notifying(config: &str) -> TestSigner {
    TestSigner::start_configured(Registry::default_toml(), None, config)
        .await
        .unwrap()
}

async fn status(signer: &TestSigner) -> NotifyStatusResponse {
    support::approver(signer)
        .await
        .notify_status(NotifyStatusRequest {})
        .await
        .unwrap()
        .into_inner()
}

/// The webhook deliveries the approver sees for `proposal_id`.
async fn webhook_deliveries(signer: &TestSigner, proposal_id: &str) -> Vec<NotifyDelivery> {
    status(signer)
        .await
        .channels
        .into_iter()
        .filter(|c| c.channel == "webhook")
        .flat_map(|c| c.deliveries)
        .filter(|d| d.proposal_id == proposal_id)
        .collect()
}

/// Polls the status until `done` holds for the proposal's one webhook
/// delivery (at most 20 s).
async fn wait_for(
    signer: &TestSigner,
    proposal_id: &str,
    done: impl Fn(&NotifyDelivery) -> bool,
) -> NotifyDelivery {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let deliveries = webhook_deliveries(signer, proposal_id).await;
        if let [one] = deliveries.as_slice()
            && done(one)
        {
            return one.clone();
        }
        assert!(Instant::now() < deadline, "still {deliveries:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_waiting_proposal_is_notified_by_a_signed_webhook_holding_no_proof() {
    let (addr, sink) = start_sink(0).await;
    let dir = tempfile::tempdir().unwrap();
    let config = webhook_config(&format!("http://{addr}/hook"), &secret_file(&dir), "");
    let signer = start_notifying(&config).await;
    let view = propose(&mut head(&signer).await).await;

    let delivered = wait_for(&signer, &view.id, |d| d.state == "delivered").await;
    assert_eq!(delivered.attempts, 1);
    assert_eq!(delivered.last_error, "");
    let received = sink.received.lock().unwrap().clone();
    let [request] = received.as_slice() else {
        panic!("{received:?}")
    };
    assert!(request.signature_is_valid(), "{request:?}");
    assert_eq!(request.header("webhook-id"), delivered.delivery_id);
    assert_eq!(request.header("content-type"), "application/json");
    // The body names the proposal and its console page, and nothing more.
    let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(
        body["data"],
        serde_json::json!({
            "proposal_id": view.id,
            "operation": "schedule.create",
            "arguments_sha256": view.arguments_sha256,
            "console_url": format!("https://console.localhost:7999/proposals/{}", view.id),
        })
    );
    assert_eq!(body["type"], "proposal.waiting");
    assert_eq!(body.as_object().unwrap().len(), 3, "{body}");
    // No proof anywhere: PASETO v4 tokens start with `v4.public.`.
    let everything = format!(
        "{:?}{}",
        request.headers,
        String::from_utf8_lossy(&request.body)
    );
    assert!(!everything.contains("v4.public."), "{everything}");
    assert_eq!(view.status().name(), "pending");
}

#[tokio::test]
async fn a_tampered_body_fails_the_sinks_signature_check() {
    // The sink's check is real: the same request with one byte changed fails it.
    let (addr, sink) = start_sink(0).await;
    let dir = tempfile::tempdir().unwrap();
    let config = webhook_config(&format!("http://{addr}/hook"), &secret_file(&dir), "");
    let signer = start_notifying(&config).await;
    let view = propose(&mut head(&signer).await).await;
    wait_for(&signer, &view.id, |d| d.state == "delivered").await;
    let mut request = sink.received.lock().unwrap()[0].clone();
    assert!(request.signature_is_valid());
    let mut body = request.body.to_vec();
    body[0] ^= 1;
    request.body = Bytes::from(body);
    assert!(!request.signature_is_valid());
}

#[tokio::test]
async fn failed_attempts_are_retried_with_growing_delays_and_shown_in_status() {
    let (addr, sink) = start_sink(2).await;
    let dir = tempfile::tempdir().unwrap();
    let config = webhook_config(&format!("http://{addr}/hook"), &secret_file(&dir), "");
    let signer = start_notifying(&config).await;
    let view = propose(&mut head(&signer).await).await;

    let delivered = wait_for(&signer, &view.id, |d| d.state == "delivered").await;
    assert_eq!(delivered.attempts, 3);
    assert_eq!(delivered.last_error, "the receiver answered status 500");
    let received = sink.received.lock().unwrap().clone();
    assert_eq!(received.len(), 3);
    // One message: the same webhook-id on every attempt, each signed anew.
    for request in &received {
        assert_eq!(request.header("webhook-id"), delivered.delivery_id);
        assert!(request.signature_is_valid());
    }
    // Backoff: the first retry waits at least half of 50 ms, the second
    // at least half of 100 ms.
    let first = received[1].at - received[0].at;
    let second = received[2].at - received[1].at;
    assert!(first >= Duration::from_millis(25), "{first:?}");
    assert!(second >= Duration::from_millis(50), "{second:?}");
    let status = status(&signer).await;
    let webhook = &status.channels[0];
    assert_eq!(
        (webhook.delivered, webhook.pending, webhook.failed),
        (1, 0, 0)
    );
}

#[tokio::test]
async fn a_delivery_fails_after_its_last_attempt_with_the_reason_shown() {
    let (addr, _sink) = start_sink(u32::MAX).await;
    let dir = tempfile::tempdir().unwrap();
    let config = webhook_config(
        &format!("http://{addr}/hook"),
        &secret_file(&dir),
        "max_attempts = 2",
    );
    let signer = start_notifying(&config).await;
    let view = propose(&mut head(&signer).await).await;

    let failed = wait_for(&signer, &view.id, |d| d.state == "failed").await;
    assert_eq!(failed.attempts, 2);
    assert_eq!(failed.last_error, "the receiver answered status 500");
    assert_eq!(failed.next_attempt_at, "");
    // Still visible after a restart.
    let signer = signer.restart().await.unwrap();
    let after = webhook_deliveries(&signer, &view.id).await;
    assert_eq!(after, vec![failed]);
}

#[tokio::test]
async fn a_receiver_that_never_answers_does_not_hold_up_propose() {
    // Accepts connections and never reads or answers them.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let held = Arc::new(Mutex::new(Vec::new()));
    let holder = Arc::clone(&held);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            holder.lock().unwrap().push(socket);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let config = webhook_config(&format!("http://{addr}/hook"), &secret_file(&dir), "")
        + "timeout_secs = 300\n";
    let signer = start_notifying(&config).await;
    let mut head = head(&signer).await;

    for _ in 0..3 {
        let started = Instant::now();
        let view = propose(&mut head).await;
        // Propose returns at once, nowhere near the webhook's 300 s timeout.
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(view.status().name(), "pending");
    }
    // The attempts are out (connections accepted) and still pending.
    let deadline = Instant::now() + Duration::from_secs(20);
    while held.lock().unwrap().len() < 3 {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let status = status(&signer).await;
    assert_eq!(status.channels[0].pending, 3);
    assert_eq!(status.channels[0].delivered, 0);
}

#[tokio::test]
async fn a_pending_retry_is_resumed_by_a_restarted_signer() {
    let (addr, sink) = start_sink(u32::MAX).await;
    let dir = tempfile::tempdir().unwrap();
    let config = webhook_config(&format!("http://{addr}/hook"), &secret_file(&dir), "")
        .replace("retry_initial_ms = 50", "retry_initial_ms = 1500")
        .replace("retry_max_ms = 200", "retry_max_ms = 1500");
    let signer = start_notifying(&config).await;
    let view = propose(&mut head(&signer).await).await;
    let pending = wait_for(&signer, &view.id, |d| d.attempts == 1).await;
    assert_eq!(pending.state, "pending");
    assert_ne!(pending.next_attempt_at, "");

    let signer = signer.restart().await.unwrap();
    // Right after the restart the failure and the pending retry are shown.
    let resumed = webhook_deliveries(&signer, &view.id).await;
    assert_eq!(resumed.len(), 1);
    assert_eq!(resumed[0].state, "pending");
    assert_eq!(resumed[0].last_error, "the receiver answered status 500");
    *sink.failures_left.lock().unwrap() = 0;

    let delivered = wait_for(&signer, &view.id, |d| d.state == "delivered").await;
    assert_eq!(delivered.delivery_id, pending.delivery_id);
    assert_eq!(delivered.attempts, 2);
    let received = sink.received.lock().unwrap().clone();
    assert_eq!(received.len(), 2);
    assert!(received[1].signature_is_valid());
    assert_eq!(received[1].header("webhook-id"), pending.delivery_id);
}

#[tokio::test]
async fn notify_status_is_for_approvers_only() {
    let dir = tempfile::tempdir().unwrap();
    let config = webhook_config("http://127.0.0.1:9/hook", &secret_file(&dir), "");
    let signer = start_notifying(&config).await;
    let refused = head(&signer)
        .await
        .notify_status(NotifyStatusRequest {})
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::PermissionDenied);
    assert_eq!(reason_of(&refused), "role_not_allowed");
}

#[tokio::test]
async fn without_a_notify_section_nothing_is_sent_and_status_says_off() {
    let signer = TestSigner::start().await.unwrap();
    propose(&mut head(&signer).await).await;
    assert_eq!(status(&signer).await, NotifyStatusResponse::default());
    assert!(
        !signer
            .home()
            .signer_dir()
            .join("notify-state.json")
            .exists()
    );
}

/// The refusal a signer with `config` starts with.
async fn start_refusal(config: &str) -> String {
    match TestSigner::start_configured(Registry::default_toml(), None, config).await {
        Err(StartError::Notify(e)) => e.to_string(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn refuses_to_start_with_plain_http_to_a_host_that_is_not_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let config = webhook_config("http://192.0.2.1/hook", &secret_file(&dir), "");
    assert_eq!(
        start_refusal(&config).await,
        "notify.webhook.url: plain http:// is allowed only to a loopback IP address (127.0.0.1 or [::1]), not \"192.0.2.1\""
    );
}

/// `localhost` goes to the system resolver; another local user listening
/// on `[::1]:<port>` would get the notification. Refused, naming the fix.
#[tokio::test]
async fn refuses_to_start_with_plain_http_to_localhost_naming_the_address_to_write() {
    let dir = tempfile::tempdir().unwrap();
    let config = webhook_config("http://localhost:9/hook", &secret_file(&dir), "");
    assert_eq!(
        start_refusal(&config).await,
        "notify.webhook.url: plain http:// to \"localhost\" is refused: a name goes to the system resolver, and another local user listening on the address it answers (such as [::1]:9) would receive the request; write the loopback address, http://127.0.0.1:9/hook (or http://[::1]:9/hook if the receiver listens there)"
    );
}

#[tokio::test]
async fn refuses_to_start_with_https_and_no_trust_roots() {
    let dir = tempfile::tempdir().unwrap();
    let config = webhook_config("https://hooks.example/x", &secret_file(&dir), "");
    assert_eq!(
        start_refusal(&config).await,
        "notify.webhook.trust_roots is required for an https url: a PEM bundle of the receiver's CAs (no system roots are built in)"
    );
}

#[tokio::test]
async fn refuses_a_webhook_secret_file_others_can_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = secret_file(&dir);
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let config = webhook_config("http://127.0.0.1:9/hook", &path, "");
    let refusal = start_refusal(&config).await;
    assert!(
        refusal.starts_with("notify.webhook.secret_file: "),
        "{refusal}"
    );
    assert!(refusal.contains(&path.display().to_string()), "{refusal}");
}

#[tokio::test]
async fn refuses_a_webhook_secret_that_is_not_whsec() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("whsec");
    countersign_identity::files::write_private_new(&path, b"hunter2").unwrap();
    let config = webhook_config("http://127.0.0.1:9/hook", &path, "");
    assert_eq!(
        start_refusal(&config).await,
        format!(
            "notify.webhook.secret_file {}: does not start with whsec_",
            path.display()
        )
    );
}
