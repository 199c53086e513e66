//! `[notify.ocsf]`: the notify process streams every ledger event to a
//! collector as OCSF, in transparency-log leaf order, as JSON Lines: the
//! same objects `countersign audit export --format ocsf` writes (checked
//! against the OCSF schema in `tests/e2e/ocsf_validate.py`). A collector
//! that fails is retried until it answers, with nothing skipped; a
//! restarted notify process goes on after the last acknowledged event,
//! with nothing sent twice; and a credential for a collector over plain
//! http is refused at start.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod notify_support;

use std::time::{Duration, Instant};

use countersign_identity::Role;
use countersign_proto::v1::ProposeRequest;
use notify_support::{Notifying, Sink, start_refusal, start_sink};
use serde_json::Value;

const ARGS: &str = r#"{"name":"nightly","cron":"0 3 * * *","description":"report"}"#;

async fn propose(n: &Notifying) {
    n.signer
        .client(Role::Head)
        .await
        .unwrap()
        .propose(ProposeRequest {
            operation: "schedule.create".into(),
            arguments_json: ARGS.into(),
            session: "s".into(),
            note: String::new(),
            idempotency_key: String::new(),
            head: "cli".into(),
        })
        .await
        .unwrap();
}

/// Every OCSF line the collector acknowledged (the requests after the
/// first `failed`, which it answered 500), once at least `count` arrived.
async fn acknowledged(sink: &Sink, failed: usize, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let lines: Vec<Value> = sink
            .received
            .lock()
            .unwrap()
            .iter()
            .skip(failed)
            .flat_map(|r| {
                assert_eq!(r.header("content-type"), "application/x-ndjson");
                String::from_utf8(r.body.to_vec())
                    .unwrap()
                    .lines()
                    .map(|line| serde_json::from_str(line).unwrap())
                    .collect::<Vec<Value>>()
            })
            .collect();
        if lines.len() >= count {
            return lines;
        }
        assert!(Instant::now() < deadline, "{} of {count}", lines.len());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn config(url: &str, extra: &str) -> String {
    format!(
        "\n[console]\naddr = \"127.0.0.1:7998\"\n[notify]\npoll_ms = 20\nretry_initial_ms = 50\nretry_max_ms = 100\n[notify.ocsf]\nurl = \"{url}\"\nbatch = 2\n{extra}"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_every_event_in_leaf_order_through_failures_and_a_restart() {
    let (addr, sink) = start_sink(2).await;
    let mut n = Notifying::start(&config(&format!("http://{addr}/hook"), "")).await;
    for _ in 0..3 {
        propose(&n).await;
    }
    let lines = acknowledged(&sink, 2, 3).await;
    let ledger = n.signer.state().ledger().clone();
    let events = ledger.events().await.unwrap();
    let leaves: Vec<u64> = lines
        .iter()
        .map(|l| l["unmapped"]["countersign"]["leaf_index"].as_u64().unwrap())
        .collect();
    assert_eq!(leaves, [0, 1, 2]);
    for (line, event) in lines.iter().zip(&events) {
        assert_eq!(line["metadata"]["uid"], event.hash.as_str());
        assert_eq!(line["class_uid"], 6003);
        assert_eq!(line["api"]["operation"], "schedule.create");
        assert_eq!(line["disposition"], "Delayed");
    }
    // Two failed POSTs, then batches of at most two events.
    let requests = sink.received.lock().unwrap().len();
    assert!(requests >= 4, "{requests}");

    // A restart goes on after the last acknowledged leaf.
    n.restart_notifier().await;
    propose(&n).await;
    let lines = acknowledged(&sink, 2, 4).await;
    let leaves: Vec<u64> = lines
        .iter()
        .map(|l| l["unmapped"]["countersign"]["leaf_index"].as_u64().unwrap())
        .collect();
    assert_eq!(leaves, [0, 1, 2, 3], "nothing skipped, nothing sent twice");
    let cursor = n.signer.home().root().join("notify").join("ocsf-cursor");
    assert_eq!(std::fs::read_to_string(cursor).unwrap(), "4\n");
}

#[tokio::test]
async fn refuses_a_credential_for_a_collector_over_plain_http() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("siem-token");
    countersign_identity::files::write_private_new(&path, b"Bearer siem-secret\n").unwrap();
    let squatter = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    squatter.set_nonblocking(true).unwrap();
    let url = format!("http://{}/ocsf", squatter.local_addr().unwrap());
    let extra = format!("authorization_file = \"{}\"\n", path.display());
    assert_eq!(
        start_refusal(&config(&url, &extra)).await,
        format!(
            "notify.ocsf.authorization_file is sent only over verified TLS (an https url with trust_roots): over plain http it would go in clear to whoever holds {url}, and any local user can hold a loopback port while the collector restarts"
        )
    );
    assert_eq!(
        squatter.accept().map(|_| ()).map_err(|e| e.kind()),
        Err(std::io::ErrorKind::WouldBlock),
        "the notify process connected to the port"
    );
    assert_eq!(
        start_refusal(&config("https://siem.example/ocsf", "")).await,
        "notify.ocsf.trust_roots is required for an https url: a PEM bundle of the collector's CAs (no system roots are built in)"
    );
}
