//! Web Push end to end (`tests/e2e/push.py`): the real binaries, a local
//! RFC 8030 push service in the script, browsers subscribed through the
//! console's subscribe endpoint, each push's VAPID JWT verified with
//! py-vapid's JWT code and its body decrypted with http_ece; 410 drops a
//! subscription, 500 is retried and shown by `notify status`; unpaired and
//! revoked devices get nothing more. And, in process: a push the signer
//! cannot list devices for (the ledger's table is gone) fails alone,
//! while the other channels go on.
#![allow(clippy::unwrap_used)]

mod notify_support;
#[path = "../../../signer/tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use notify_support::{Notifying, SECRET, start_sink};
use support::{head, propose};

#[test]
fn pushes_verify_decrypt_and_stop_for_gone_unpaired_and_revoked_devices() {
    countersign_integration_tests::run_e2e_script("push.py");
}

/// The ledger's devices cannot be read (here: their table is gone), so
/// the signer cannot say which devices to push to: the notification's
/// push fails at once with that reason, shown in the status, and its
/// webhook is delivered all the same (nothing holds the other channels
/// up).
#[tokio::test]
async fn a_push_the_signer_cannot_list_devices_for_fails_alone() {
    let (addr, sink) = start_sink(0).await;
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("whsec");
    countersign_identity::files::write_private_new(&secret, SECRET.as_bytes()).unwrap();
    let config = format!(
        "\n[console]\naddr = \"127.0.0.1:7998\"\n[notify]\npoll_ms = 20\n\
         [notify.webhook]\nurl = \"http://{addr}/hook\"\nsecret_file = \"{}\"\n\
         [notify.push]\ncontact = \"mailto:ops@example.com\"\n",
        secret.display()
    );
    let n = Notifying::start(&config).await;
    {
        use sqlx::Connection as _;
        let options =
            sqlx::sqlite::SqliteConnectOptions::new().filename(n.signer.home().ledger_path());
        let mut raw = sqlx::SqliteConnection::connect_with(&options)
            .await
            .unwrap();
        sqlx::raw_sql("DROP TABLE push_devices")
            .execute(&mut raw)
            .await
            .unwrap();
        raw.close().await.unwrap();
    }
    let view = propose(&mut head(&n.signer).await).await;

    let deadline = Instant::now() + Duration::from_secs(20);
    let (webhook, push) = loop {
        let status = n.status();
        let of = |channel: &str| {
            status
                .channels
                .iter()
                .filter(|c| c.channel == channel)
                .flat_map(|c| c.deliveries.clone())
                .filter(|d| d.proposal_id == view.id)
                .collect::<Vec<_>>()
        };
        let (webhook, push) = (of("webhook"), of("push"));
        if webhook.iter().any(|d| d.state == "delivered") && !push.is_empty() {
            break (webhook, push);
        }
        assert!(Instant::now() < deadline, "{status:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(webhook.len(), 1, "{webhook:?}");
    assert_eq!(sink.received.lock().unwrap().len(), 1);
    let [push] = push.as_slice() else {
        panic!("{push:?}")
    };
    assert_eq!((push.state.as_str(), push.attempts), ("failed", 0));
    assert_eq!(
        push.last_error.as_deref(),
        Some(
            "the signer could not say which devices to push to: the signer answered Internal (reason internal): internal error"
        )
    );
}
