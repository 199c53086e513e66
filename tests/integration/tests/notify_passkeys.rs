//! Passkey enrolments and removals are notified on the configured
//! channels, here a real Standard Webhooks receiver on 127.0.0.1: the
//! signer records each, the notify process delivers it; each names the
//! approver and the credential, is signed with the webhook secret, and
//! carries no proof, no enrolment code and no link.
#![allow(clippy::unwrap_used)]

mod notify_support;
#[path = "../../../signer/tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_proto::v1::{BeginRemovalRequest, RemovePasskeyRequest};
use notify_support::{Notifying, SECRET, start_sink};
use support::named_approver;
use support::passkey::{REQUIRED, code_for, enrol_with, soft, wire};

#[tokio::test]
async fn every_passkey_enrolment_and_removal_is_notified_by_a_signed_webhook() {
    let (addr, sink) = start_sink(0).await;
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("whsec");
    countersign_identity::files::write_private_new(&secret, SECRET.as_bytes()).unwrap();
    let config = format!(
        "{REQUIRED}\n[notify]\npoll_ms = 20\nretry_initial_ms = 50\nretry_max_ms = 200\n[notify.webhook]\nurl = \"http://{addr}/hook\"\nsecret_file = \"{}\"\n",
        secret.display()
    );
    let n = Notifying::start(&config).await;
    let signer = &n.signer;
    let approver = format!("{}/alice", signer.principal());
    let mut alice = named_approver(signer, "alice").await;
    let (mut first, second) = (soft(1), soft(2));
    let mut codes = Vec::new();
    for key in [&first, &second] {
        codes.push(code_for(signer, "alice").await);
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
        let received = sink.received.lock().unwrap().clone();
        if received.len() >= 3 {
            break received;
        }
        assert!(Instant::now() < deadline, "{received:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let mut seen: Vec<(String, serde_json::Value)> = Vec::new();
    for request in &received {
        assert!(request.signature_is_valid(), "{request:?}");
        let body = &request.body;
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
