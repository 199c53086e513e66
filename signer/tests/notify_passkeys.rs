//! Passkey enrolments and removals are notified on the configured
//! channels, here a real Standard Webhooks receiver on 127.0.0.1: each
//! names the approver and the credential, is signed with the webhook
//! secret, and carries no proof, no enrolment code and no link.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use countersign_proto::v1::{BeginRemovalRequest, RemovePasskeyRequest};
use countersign_registry::Registry;
use countersign_signer::testing::TestSigner;
use support::named_approver;
use support::passkey::{REQUIRED, code_for, enrol_with, soft, wire};

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

type Received = Arc<Mutex<Vec<(HeaderMap, Bytes)>>>;

async fn receive(State(sink): State<Received>, headers: HeaderMap, body: Bytes) -> StatusCode {
    sink.lock().unwrap().push((headers, body));
    StatusCode::NO_CONTENT
}

async fn start_sink() -> (SocketAddr, Received) {
    let sink = Received::default();
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(receive))
        .with_state(Arc::clone(&sink));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, sink)
}

/// The Standard Webhooks signature over `id.timestamp.body` checks out.
fn signed(headers: &HeaderMap, body: &[u8]) -> bool {
    let header = |name: &str| headers.get(name).unwrap().to_str().unwrap().to_owned();
    let key = STANDARD
        .decode(SECRET.trim_start_matches("whsec_"))
        .unwrap();
    let mut message =
        format!("{}.{}.", header("webhook-id"), header("webhook-timestamp")).into_bytes();
    message.extend_from_slice(body);
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key);
    header("webhook-signature")
        .split(' ')
        .filter_map(|s| s.strip_prefix("v1,"))
        .filter_map(|b| STANDARD.decode(b).ok())
        .any(|tag| ring::hmac::verify(&key, &message, &tag).is_ok())
}

#[tokio::test]
async fn every_passkey_enrolment_and_removal_is_notified_by_a_signed_webhook() {
    let (addr, sink) = start_sink().await;
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("whsec");
    countersign_identity::files::write_private_new(&secret, SECRET.as_bytes()).unwrap();
    let config = format!(
        "{REQUIRED}\n[notify]\nretry_initial_ms = 50\nretry_max_ms = 200\n[notify.webhook]\nurl = \"http://{addr}/hook\"\nsecret_file = \"{}\"\n",
        secret.display()
    );
    let signer = TestSigner::start_configured(Registry::default_toml(), None, &config)
        .await
        .unwrap();
    let approver = format!("{}/alice", signer.principal());
    let mut alice = named_approver(&signer, "alice").await;
    let (mut first, second) = (soft(1), soft(2));
    let mut codes = Vec::new();
    for key in [&first, &second] {
        codes.push(code_for(&signer, "alice"));
        enrol_with(&mut alice, key, &codes[codes.len() - 1])
            .await
            .unwrap();
    }
    let second_id = URL_SAFE_NO_PAD.encode(second.credential_id());
    let r = alice
        .begin_removal(BeginRemovalRequest {
            credential_id: second_id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    alice
        .remove_passkey(RemovePasskeyRequest {
            credential_id: second_id.clone(),
            authorization: Some(wire(&r.challenge_id, first.assert(&r.challenge))),
        })
        .await
        .unwrap();

    let deadline = Instant::now() + Duration::from_secs(20);
    let received = loop {
        let received = sink.lock().unwrap().clone();
        if received.len() >= 3 {
            break received;
        }
        assert!(Instant::now() < deadline, "{received:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let mut seen: Vec<(String, serde_json::Value)> = Vec::new();
    for (headers, body) in &received {
        assert!(signed(headers, body), "{headers:?}");
        let text = String::from_utf8_lossy(body);
        assert!(!text.contains("v4.public."), "{text}");
        for code in &codes {
            assert!(!text.contains(code.as_str()), "no enrolment code: {text}");
        }
        let json: serde_json::Value = serde_json::from_slice(body).unwrap();
        assert_eq!(json.as_object().unwrap().len(), 3, "{json}");
        seen.push((
            json["type"].as_str().unwrap().to_owned(),
            json["data"].clone(),
        ));
    }
    seen.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.to_string().cmp(&b.1.to_string())));
    let data =
        |id: &str| serde_json::json!({"approver": approver, "credential_id": id, "name": "laptop"});
    let first_id = URL_SAFE_NO_PAD.encode(first.credential_id());
    let mut expected = vec![
        ("passkey.enrolled".to_owned(), data(&first_id)),
        ("passkey.enrolled".to_owned(), data(&second_id)),
        ("passkey.removed".to_owned(), data(&second_id)),
    ];
    expected.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.to_string().cmp(&b.1.to_string())));
    assert_eq!(seen, expected);
}
