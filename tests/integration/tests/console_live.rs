//! The console's live list (`GET /events`), served over real TLS by the
//! same code as `countersign console`, fed by the signer's `WatchPending`
//! stream: a paired page hears each proposal and each decision as it
//! happens, as a server-sent event with the count and the rendered list;
//! an unpaired one hears nothing, nor does the holder of a paired cookie
//! without the page's key.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod console_support;
mod support;

use std::time::Duration;

use countersign_identity::Role;
use countersign_proto::v1::{DecideRequest, Delivery};
use serde_json::Value;
use support::Harness;
use tokio::io::AsyncReadExt as _;
use tokio_rustls::client::TlsStream;

/// The longest wait for one event; a change takes milliseconds.
const PATIENCE: Duration = Duration::from_secs(10);

/// A page's `GET /events`, read as the events come.
struct Events {
    stream: TlsStream<tokio::net::TcpStream>,
    seen: String,
}

impl Events {
    async fn open(site: &console_support::Site, cookie: &str) -> Events {
        let stream = console_support::send(
            site.addr,
            &site.ca_pem,
            "GET",
            "/events",
            &[
                ("Cookie", cookie),
                ("Accept", "text/event-stream"),
                (console_support::PAGE_KEY_HEADER, &site.page_key),
            ],
            b"",
        )
        .await;
        Events {
            stream,
            seen: String::new(),
        }
    }

    /// The data of the next `pending` event.
    async fn next(&mut self) -> Value {
        const MARK: &str = "event: pending\ndata: ";
        tokio::time::timeout(PATIENCE, async {
            loop {
                if let Some(at) = self.seen.find(MARK)
                    && let Some(end) = self.seen[at + MARK.len()..].find('\n')
                {
                    let data = self.seen[at + MARK.len()..][..end].to_owned();
                    self.seen.drain(..at + MARK.len() + end);
                    return serde_json::from_str(&data).unwrap();
                }
                let mut chunk = [0u8; 4096];
                let n = self.stream.read(&mut chunk).await.unwrap();
                assert!(n > 0, "the event stream ended: {}", self.seen);
                self.seen.push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        })
        .await
        .expect("an event within the patience")
    }
}

#[tokio::test]
async fn a_paired_page_hears_each_proposal_and_decision_as_it_happens() {
    let h = Harness::start().await;
    let site = console_support::serve(&h.home(), None).await;
    let (site, cookie) = console_support::pair(&site, &h.home(), "console").await;
    let mut events = Events::open(&site, &cookie).await;
    assert_eq!(events.next().await["count"], 0);

    let first = h
        .propose("schedule.create", r#"{"name":"live-1","cron":"0 3 * * *"}"#)
        .await;
    let event = events.next().await;
    assert_eq!(event["count"], 1);
    assert!(event["html"].as_str().unwrap().contains(&first), "{event}");

    let second = h
        .propose("schedule.create", r#"{"name":"live-2","cron":"0 4 * * *"}"#)
        .await;
    let event = events.next().await;
    assert_eq!(event["count"], 2);
    assert!(event["html"].as_str().unwrap().contains(&second), "{event}");

    let mut approver = h.signer.client(Role::Approver).await.unwrap();
    approver
        .decide(DecideRequest {
            proposal_id: first.clone(),
            approve: true,
            delivery: Delivery::Handoff as i32,
            ..Default::default()
        })
        .await
        .unwrap();
    let event = events.next().await;
    assert_eq!(event["count"], 1);
    let html = event["html"].as_str().unwrap();
    assert!(html.contains(&second) && !html.contains(&first), "{event}");

    // A second page gets the current list at once, the first one nothing
    // new (the list did not change).
    let mut other = Events::open(&site, &cookie).await;
    assert_eq!(other.next().await["count"], 1);
    approver
        .decide(DecideRequest {
            proposal_id: second,
            approve: false,
            reason: "not now".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(events.next().await["count"], 0);
    assert_eq!(other.next().await["count"], 0);
}

#[tokio::test]
async fn refuses_the_event_stream_to_an_unpaired_browser() {
    let h = Harness::start().await;
    let site = console_support::serve(&h.home(), None).await;
    let reply = console_support::https(&site, "GET", "/events", &[], b"").await;
    assert_eq!(reply.status, 401, "{}", reply.body);
    assert!(reply.body.contains("Pair this browser"), "{}", reply.body);
    assert!(!reply.body.contains("event: pending"), "{}", reply.body);
}

#[tokio::test]
async fn refuses_the_event_stream_to_a_cookie_without_its_page_key() {
    let h = Harness::start().await;
    let site = console_support::serve(&h.home(), None).await;
    let (site, cookie) = console_support::pair(&site, &h.home(), "console").await;
    let pending = h
        .propose("schedule.create", r#"{"name":"unseen","cron":"0 3 * * *"}"#)
        .await;
    let wrong = format!("{}x", site.page_key);
    for key in [None, Some(""), Some("guess"), Some(wrong.as_str())] {
        let mut headers = vec![("Cookie", cookie.as_str()), ("Accept", "text/event-stream")];
        if let Some(key) = key {
            headers.push((console_support::PAGE_KEY_HEADER, key));
        }
        let reply =
            console_support::https_to(site.addr, &site.ca_pem, "GET", "/events", &headers, b"")
                .await;
        assert_eq!(reply.status, 403, "{key:?}: {}", reply.body);
        assert!(!reply.body.contains("event: pending"), "{}", reply.body);
        assert!(!reply.body.contains(&pending), "{}", reply.body);
    }
}
