//! Webhook notifications: an in-process signer records them, the notify
//! process (`countersign_notify`, what `countersign notify serve` runs)
//! takes them with the notifier certificate and delivers: a Standard
//! Webhooks sink on 127.0.0.1 that checks the signature, sinks that fail
//! then succeed, one that never answers, a restart of the notify process
//! with a retry pending, and the settings it refuses to start with (the
//! signer starts with them: it reads none). Email is in `notify_smtp.rs`;
//! the real binaries, and a proof that the signer's process opens no
//! connection, in `notify_process.rs`.
#![allow(clippy::unwrap_used)]

mod notify_support;
#[path = "../../../signer/tests/support/mod.rs"]
mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use countersign_notify::status::{DeliveryStatus, Status};
use countersign_signer::testing::TestSigner;
use notify_support::{Notifying, secret_file, start_refusal, start_sink, webhook_config};
use support::{head, propose};

/// The webhook deliveries the notify process shows for `proposal_id`.
fn webhook_deliveries(n: &Notifying, proposal_id: &str) -> Vec<DeliveryStatus> {
    n.status()
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
    n: &Notifying,
    proposal_id: &str,
    done: impl Fn(&DeliveryStatus) -> bool,
) -> DeliveryStatus {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let deliveries = webhook_deliveries(n, proposal_id);
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
    let n = Notifying::start(&config).await;
    let view = propose(&mut head(&n.signer).await).await;

    let delivered = wait_for(&n, &view.id, |d| d.state == "delivered").await;
    assert_eq!(delivered.attempts, 1);
    assert_eq!(delivered.last_error, None);
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
            "decide_by": view.decide_by,
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
    let n = Notifying::start(&config).await;
    let view = propose(&mut head(&n.signer).await).await;
    wait_for(&n, &view.id, |d| d.state == "delivered").await;
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
    let n = Notifying::start(&config).await;
    let view = propose(&mut head(&n.signer).await).await;

    let delivered = wait_for(&n, &view.id, |d| d.state == "delivered").await;
    assert_eq!(delivered.attempts, 3);
    assert_eq!(
        delivered.last_error.as_deref(),
        Some("the receiver answered status 500")
    );
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
    let status = n.status();
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
    let mut n = Notifying::start(&config).await;
    let view = propose(&mut head(&n.signer).await).await;

    let failed = wait_for(&n, &view.id, |d| d.state == "failed").await;
    assert_eq!(failed.attempts, 2);
    assert_eq!(
        failed.last_error.as_deref(),
        Some("the receiver answered status 500")
    );
    assert_eq!(failed.next_attempt_at, None);
    // Still visible after a restart, and not sent again.
    n.restart_notifier().await;
    let after = webhook_deliveries(&n, &view.id);
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
    let n = Notifying::start(&config).await;
    let mut head = head(&n.signer).await;

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
    let status = n.status();
    assert_eq!(status.channels[0].pending, 3);
    assert_eq!(status.channels[0].delivered, 0);
}

#[tokio::test]
async fn a_pending_retry_is_resumed_by_a_restarted_notify_process() {
    let (addr, sink) = start_sink(u32::MAX).await;
    let dir = tempfile::tempdir().unwrap();
    let config = webhook_config(&format!("http://{addr}/hook"), &secret_file(&dir), "")
        .replace("retry_initial_ms = 50", "retry_initial_ms = 1500")
        .replace("retry_max_ms = 200", "retry_max_ms = 1500");
    let mut n = Notifying::start(&config).await;
    let view = propose(&mut head(&n.signer).await).await;
    let pending = wait_for(&n, &view.id, |d| d.attempts == 1).await;
    assert_eq!(pending.state, "pending");
    assert!(pending.next_attempt_at.is_some());

    n.restart_notifier().await;
    // Right after the restart the failure and the pending retry are shown.
    let resumed = webhook_deliveries(&n, &view.id);
    assert_eq!(resumed.len(), 1);
    assert_eq!(resumed[0].state, "pending");
    assert_eq!(
        resumed[0].last_error.as_deref(),
        Some("the receiver answered status 500")
    );
    *sink.failures_left.lock().unwrap() = 0;

    let delivered = wait_for(&n, &view.id, |d| d.state == "delivered").await;
    assert_eq!(delivered.delivery_id, pending.delivery_id);
    assert_eq!(delivered.attempts, 2);
    let received = sink.received.lock().unwrap().clone();
    assert_eq!(received.len(), 2);
    assert!(received[1].signature_is_valid());
    assert_eq!(received[1].header("webhook-id"), pending.delivery_id);
}

#[tokio::test]
async fn without_a_notify_section_nothing_is_sent_and_status_says_off() {
    let signer = TestSigner::start().await.unwrap();
    propose(&mut head(&signer).await).await;
    let config = countersign_identity::Config::load(signer.home()).unwrap();
    assert_eq!(
        countersign_notify::status::local(signer.home(), &config).unwrap(),
        Status::default()
    );
    assert_eq!(
        notify_support::start_notifier(&signer).await.unwrap_err(),
        countersign_notify::NotifyError::Off
    );
    assert!(!signer.home().notify_state_path().exists());
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

/// An operation's escalation: a proposal still undecided after the first
/// delay is told again (`proposal.escalated`) on the channels it names;
/// one decided before its escalation is due is never told again.
#[tokio::test]
async fn an_undecided_proposal_is_escalated_once_and_a_decided_one_never() {
    let (addr, sink) = start_sink(0).await;
    let dir = tempfile::tempdir().unwrap();
    let config = webhook_config(&format!("http://{addr}/hook"), &secret_file(&dir), "");
    let registry = countersign_registry::Registry::default_toml().replacen(
        "[[operation]]\nname = \"schedule.create\"\n",
        "[[operation]]\nname = \"schedule.create\"\nescalation = { after_secs = 2, channels = [\"webhook\"] }\n",
        1,
    );
    let n = Notifying::start_with_registry(&registry, &config).await;
    let mut head = head(&n.signer).await;
    let proposed_at = Instant::now();
    let waiting = propose(&mut head).await;
    let decided = propose(&mut head).await;
    n.signer
        .client(countersign_identity::Role::Approver)
        .await
        .unwrap()
        .decide(countersign_proto::v1::DecideRequest {
            proposal_id: decided.id.clone(),
            reason: "no".into(),
            ..Default::default()
        })
        .await
        .unwrap();

    let types = |id: &str| -> Vec<String> {
        sink.received
            .lock()
            .unwrap()
            .iter()
            .map(|r| serde_json::from_slice::<serde_json::Value>(&r.body).unwrap())
            .filter(|body| body["data"]["proposal_id"] == id)
            .map(|body| body["type"].as_str().unwrap().to_owned())
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while types(&waiting.id).len() < 2 {
        assert!(Instant::now() < deadline, "{:?}", types(&waiting.id));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        types(&waiting.id),
        ["proposal.waiting", "proposal.escalated"]
    );
    // Not before its delay: two seconds after the proposal's whole second.
    assert!(proposed_at.elapsed() >= Duration::from_secs(1));
    let escalated = sink
        .received
        .lock()
        .unwrap()
        .iter()
        .find(|r| String::from_utf8_lossy(&r.body).contains("proposal.escalated"))
        .cloned()
        .unwrap();
    assert!(escalated.signature_is_valid(), "{escalated:?}");
    let body: serde_json::Value = serde_json::from_slice(&escalated.body).unwrap();
    let sent = time::OffsetDateTime::parse(
        body["timestamp"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    let proposed = time::OffsetDateTime::parse(
        &waiting.created_at,
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    assert_eq!(sent, proposed, "the event's timestamp is the proposal's");
    // Give a wrongly scheduled escalation of the decided one its chance.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(types(&decided.id), ["proposal.waiting"]);
    assert_eq!(types(&waiting.id).len(), 2, "escalated once");
}

/// A delivery still failing when its proposal's decision window closes
/// ends there: the retry after the close sends nothing, and the status
/// says why (the receiver got the first, failed attempt only).
#[tokio::test]
async fn a_retry_after_the_decision_window_closed_sends_nothing() {
    let (addr, sink) = start_sink(1).await;
    let dir = tempfile::tempdir().unwrap();
    let config = webhook_config(&format!("http://{addr}/hook"), &secret_file(&dir), "").replace(
        "retry_initial_ms = 50\nretry_max_ms = 200",
        "retry_initial_ms = 4000\nretry_max_ms = 4000",
    );
    let registry = countersign_registry::Registry::default_toml().replacen(
        "[[operation]]\nname = \"schedule.create\"\n",
        // Two seconds: the first attempt comes at once, well inside it even
        // on a loaded machine (with one, a CI run under load attempted
        // first after the close); the retry, 4 s later, after it.
        "[[operation]]\nname = \"schedule.create\"\ndecision_window_secs = 2\n",
        1,
    );
    let n = Notifying::start_with_registry(&registry, &config).await;
    let view = propose(&mut head(&n.signer).await).await;

    let failed = wait_for(&n, &view.id, |d| d.state == "failed").await;
    assert_eq!(failed.attempts, 2, "{failed:?}");
    let closed = &view.decide_by;
    assert_eq!(
        failed.last_error,
        Some(format!(
            "proposal {}'s decision window closed at {closed} before this was delivered; no one can decide it now, so nothing was sent",
            view.id
        ))
    );
    assert_eq!(
        sink.received.lock().unwrap().len(),
        1,
        "only the first attempt reached it"
    );
}
