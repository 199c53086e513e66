//! The console publishes its browsers' Web Push subscriptions to the
//! ledger through the signer, over real TLS, served by the same
//! `countersign::console_state` as `countersign console`: a subscription
//! is told to the notify process (`PushDevices`) at once, with the VAPID
//! key the console gives browsers; "Stop notifying" and unpairing forget
//! it at once; a subscription the signer cannot record keeps nothing and
//! says so (a renewal leaves the earlier one in place); and one posted to
//! a console with no VAPID key keeps nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod console_support;
mod support;

use console_support::{Site, pair, post_form, serve};
use countersign_console::SessionStore;
use countersign_identity::ApproverName;
use support::Harness;

const P256DH: &str =
    "BLn9b-VR0ca83knDNZ32dCHGyjJp-1riX9ZTN40MqV8K_LpQmLqxC_DoHvqvFXO_nGdAB4W9dogZb_sM-uV4JbY";
const AUTH: &str = "_ordMnz7uTCmrpBTeUV4Bw";

/// What a browser's `PushSubscription.toJSON()` gives for push service
/// path `name`.
fn subscription(name: &str) -> String {
    serde_json::json!({
        "endpoint": format!("https://push.example/{name}"),
        "expirationTime": null,
        "keys": {"p256dh": P256DH, "auth": AUTH},
    })
    .to_string()
}

async fn subscribe(site: &Site, cookie: &str, name: &str) -> api_support::Reply {
    post_form(
        site,
        cookie,
        "/push/subscribe",
        &[
            ("page_key", &site.page_key),
            ("subscription", &subscription(name)),
        ],
    )
    .await
}

/// The endpoints and keys the notify process is told of now.
async fn told(h: &Harness) -> Vec<(String, String)> {
    h.push_devices()
        .await
        .into_iter()
        .map(|d| (d.endpoint, d.application_server_key))
        .collect()
}

/// The session ids of the console's store that hold a subscription.
fn subscribed(home: &str) -> Vec<String> {
    SessionStore::for_approver(
        std::path::Path::new(home),
        &ApproverName::parse("console").unwrap(),
    )
    .list()
    .unwrap()
    .into_iter()
    .filter(|s| s.push.is_some())
    .map(|s| s.id)
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_reaches_the_notify_process_through_the_ledger_and_leaves_with_it() {
    let mut h = Harness::start().await;
    let home = h.home();
    // As `countersign init` makes it.
    let at = countersign_identity::Home::at(&home).unwrap();
    countersign_push::VapidKey::ensure(&at).unwrap();
    let key = countersign_push::vapid::public_key(&at).unwrap();
    let site = serve(&home, None).await;
    let (phone, phone_cookie) = pair(&site, &home, "console").await;
    let (laptop, laptop_cookie) = pair(&site, &home, "console").await;
    assert!(told(&h).await.is_empty());

    let reply = subscribe(&phone, &phone_cookie, "phone").await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let reply = subscribe(&laptop, &laptop_cookie, "laptop").await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let mut now = told(&h).await;
    now.sort();
    assert_eq!(
        now,
        [
            ("https://push.example/laptop".to_owned(), key.clone()),
            ("https://push.example/phone".to_owned(), key.clone())
        ]
    );

    // Stop notifying: gone at once.
    let reply = post_form(
        &laptop,
        &laptop_cookie,
        "/push/unsubscribe",
        &[("page_key", &laptop.page_key)],
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        told(&h).await,
        [("https://push.example/phone".to_owned(), key.clone())]
    );
    // The phone unpaired from the laptop: its device goes with its session.
    let phone_id = subscribed(&home).pop().unwrap();
    let reply = post_form(
        &laptop,
        &laptop_cookie,
        &format!("/devices/{phone_id}/unpair"),
        &[("page_key", &laptop.page_key)],
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(told(&h).await.is_empty());

    // With the signer stopped, a subscription keeps nothing and says so.
    h.signer.halt().await.unwrap();
    let reply = subscribe(&laptop, &laptop_cookie, "laptop").await;
    assert_eq!(reply.status, 503, "{}", reply.body);
    assert!(
        reply.body.contains(
            "The signer did not record this device, so no notification could reach it; nothing was kept. Try again once the signer runs."
        ),
        "{}",
        reply.body
    );
    assert!(subscribed(&home).is_empty());
}

/// A browser subscribing again (its push service gave it a new endpoint)
/// while the signer is stopped: refused, and the session keeps the
/// subscription the ledger still holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_the_signer_cannot_record_keeps_the_earlier_subscription() {
    let mut h = Harness::start().await;
    let home = h.home();
    countersign_push::VapidKey::ensure(&countersign_identity::Home::at(&home).unwrap()).unwrap();
    let site = serve(&home, None).await;
    let (phone, cookie) = pair(&site, &home, "console").await;
    let reply = subscribe(&phone, &cookie, "phone").await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    h.signer.halt().await.unwrap();
    let reply = subscribe(&phone, &cookie, "phone-renewed").await;
    assert_eq!(reply.status, 503, "{}", reply.body);
    let endpoints: Vec<String> = SessionStore::for_approver(
        std::path::Path::new(&home),
        &ApproverName::parse("console").unwrap(),
    )
    .list()
    .unwrap()
    .into_iter()
    .filter_map(|s| s.push.map(|p| p.endpoint_text().to_owned()))
    .collect();
    assert_eq!(endpoints, ["https://push.example/phone"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_to_a_console_with_no_vapid_key_keeps_nothing() {
    let h = Harness::start().await;
    let home = h.home();
    assert!(
        !countersign_identity::Home::at(&home)
            .unwrap()
            .vapid_public_path()
            .exists()
    );
    let site = serve(&home, None).await;
    let (phone, cookie) = pair(&site, &home, "console").await;
    let reply = subscribe(&phone, &cookie, "phone").await;
    assert_eq!(reply.status, 409, "{}", reply.body);
    assert!(
        reply.body.contains(
            "Push notifications are not set up in this installation (it has no VAPID key); nothing was kept."
        ),
        "{}",
        reply.body
    );
    assert!(subscribed(&home).is_empty());
    assert!(told(&h).await.is_empty());
}
