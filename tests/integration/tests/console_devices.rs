//! The console's paired devices, over real TLS, served by the same
//! `countersign::console_state` as `countersign console`: each paired browser is listed with the name its User-Agent
//! gave at pairing and its last use; unpairing one ends its session (it
//! gets the pairing page from its next request), and what must not work is
//! refused with the exact page and changes nothing: another approver's
//! device, an id that names no device, a device already unpaired, a POST
//! without the page key, a GET, an unpaired browser.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod console_support;
mod support;

use api_support::Reply;
use console_support::{Site, get, https, pair_as};
use countersign_console::SessionStore;
use countersign_identity::ApproverName;
use support::Harness;

const ANDROID_CHROME: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Mobile Safari/537.36";
const LINUX_FIREFOX: &str =
    "Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0";

const UNKNOWN: &str = "No browser paired with this console has that id; nothing was done.";
const ENDED: &str =
    "That browser is no longer paired (its pairing was revoked or has expired); nothing was done.";
const NO_PAGE_KEY: &str = "This request does not carry the page key of this browser's pairing";

/// The browser with `cookie` (and its page key in `site`, if `with_key`)
/// unpairs device `id`.
async fn unpair(site: &Site, cookie: &str, id: &str, with_key: bool) -> Reply {
    let body = if with_key {
        format!("page_key={}", site.page_key)
    } else {
        String::new()
    };
    let headers = [
        ("Cookie", cookie),
        ("Content-Type", "application/x-www-form-urlencoded"),
    ];
    https(
        site,
        "POST",
        &format!("/devices/{id}/unpair"),
        &headers,
        body.as_bytes(),
    )
    .await
}

/// A refusal page with `status` that says exactly `why`.
fn assert_refusal(reply: &Reply, status: u16, why: &str) {
    assert_eq!(reply.status, status, "{}", reply.body);
    assert!(
        reply
            .body
            .contains(&format!(r#"<p class="message" role="status">{why}</p>"#)),
        "{why:?} in {}",
        reply.body
    );
}

fn store(h: &Harness, approver: &str) -> SessionStore {
    SessionStore::for_approver(
        std::path::Path::new(&h.home()),
        &ApproverName::parse(approver).unwrap(),
    )
}

/// The session id of the browser with `cookie` in `store`.
fn session_of(store: &SessionStore, cookie: &str) -> String {
    let secret = cookie.split_once('=').unwrap().1;
    store.authenticate(Some(secret)).unwrap().unwrap().id
}

#[tokio::test]
async fn the_devices_page_lists_each_browser_and_unpairing_one_ends_its_session() {
    let h = Harness::start().await;
    let site = console_support::serve(&h.home(), None).await;
    let (laptop, laptop_cookie) = pair_as(&site, &h.home(), "console", Some(LINUX_FIREFOX)).await;
    let (phone, phone_cookie) = pair_as(&site, &h.home(), "console", Some(ANDROID_CHROME)).await;
    let sessions = store(&h, "console");
    let phone_id = session_of(&sessions, &phone_cookie);
    let laptop_id = session_of(&sessions, &laptop_cookie);

    // The phone is used: its last use is recorded.
    assert_eq!(get(&phone, &phone_cookie, "/").await.status, 200);
    let listed = sessions.list().unwrap();
    let phone_record = listed.iter().find(|r| r.id == phone_id).unwrap();
    assert_eq!(phone_record.device, "Chrome on Android");
    assert!(phone_record.last_used_at.is_some());

    let page = get(&laptop, &laptop_cookie, "/devices").await;
    assert_eq!(page.status, 200, "{}", page.body);
    for part in [
        "<h1>Paired devices</h1>",
        r#"<strong id="device-"#,
        "Firefox on Linux (this browser)</strong>",
        "Chrome on Android</strong>",
        &format!(r#"action="/devices/{phone_id}/unpair""#),
        &format!(r#"action="/devices/{laptop_id}/unpair""#),
        "Unpair this browser",
        &format!(r#"<span class="visually-hidden">Chrome on Android ({phone_id})</span>"#),
        r#"<a href="/devices" aria-current="page">Devices</a>"#,
    ] {
        assert!(page.body.contains(part), "{part:?} in {}", page.body);
    }
    // This browser first.
    assert!(
        page.body.find("Firefox on Linux").unwrap() < page.body.find("Chrome on Android").unwrap()
    );
    // The page carries no page key and no cookie value.
    assert!(!page.body.contains(&laptop.page_key) && !page.body.contains("cc1_"));

    // Unpair the phone from the laptop.
    let done = unpair(&laptop, &laptop_cookie, &phone_id, true).await;
    assert_eq!(done.status, 200, "{}", done.body);
    assert!(
        done.body.contains(&format!(
            "Chrome on Android ({phone_id}) is no longer paired: its session has ended, and from its next request that browser sees only the pairing page."
        )),
        "{}",
        done.body
    );
    assert!(
        !done.headers.contains("set-cookie"),
        "the laptop keeps its own cookie"
    );
    // The phone is sent back to pairing, on every page and its live list.
    for target in ["/", "/devices", "/events"] {
        let page = get(&phone, &phone_cookie, target).await;
        assert_eq!(page.status, 401, "{target}: {}", page.body);
        assert!(
            page.body.contains("Pair this browser") && page.body.contains("pairing was revoked"),
            "{}",
            page.body
        );
    }
    // The laptop is still paired, and the list no longer shows the phone.
    let page = get(&laptop, &laptop_cookie, "/devices").await;
    assert_eq!(page.status, 200);
    assert!(!page.body.contains("Chrome on Android"), "{}", page.body);

    // Unpairing this browser: it forgets its page key and its cookie.
    let own = unpair(&laptop, &laptop_cookie, &laptop_id, true).await;
    assert_eq!(own.status, 200, "{}", own.body);
    assert!(
        own.body
            .contains("This browser (Firefox on Linux) is no longer paired.")
    );
    assert!(own.body.contains(r#"id="forget-page-key""#));
    assert!(
        own.headers
            .contains("set-cookie: __Host-countersign-console=; Secure; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"),
        "{}",
        own.headers
    );
    assert_eq!(get(&laptop, &laptop_cookie, "/").await.status, 401);
}

#[tokio::test]
async fn unpairing_refuses_another_approvers_device_an_unknown_id_an_ended_one_and_a_forgery() {
    let h = Harness::start().await;
    h.approver_credentials(&["alice", "bob"]).await;
    let alice_name = ApproverName::parse("alice").unwrap();
    let bob_name = ApproverName::parse("bob").unwrap();
    let alice_site = console_support::serve(&h.home(), Some(&alice_name)).await;
    let bob_site = console_support::serve(&h.home(), Some(&bob_name)).await;
    let (alice, alice_cookie) =
        pair_as(&alice_site, &h.home(), "alice", Some(ANDROID_CHROME)).await;
    let (bob, bob_cookie) = pair_as(&bob_site, &h.home(), "bob", Some(LINUX_FIREFOX)).await;
    let (alice_other_site, alice_other_cookie) =
        pair_as(&alice_site, &h.home(), "alice", None).await;
    let bob_id = session_of(&store(&h, "bob"), &bob_cookie);
    let alice_other = session_of(&store(&h, "alice"), &alice_other_cookie);

    // Bob's device is unknown to Alice's console, and stays paired.
    assert_refusal(
        &unpair(&alice, &alice_cookie, &bob_id, true).await,
        404,
        UNKNOWN,
    );
    assert_eq!(get(&bob, &bob_cookie, "/devices").await.status, 200);
    // Ids that name no device.
    for id in ["0000000000000000", "not-an-id", "%2e%2e"] {
        assert_refusal(&unpair(&alice, &alice_cookie, id, true).await, 404, UNKNOWN);
    }
    // Without the page key (a holder of the cookie alone), nothing is unpaired.
    let forged = unpair(&alice, &alice_cookie, &alice_other, false).await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    assert!(forged.body.contains(NO_PAGE_KEY), "{}", forged.body);
    // Nor by GET.
    let by_get = get(
        &alice,
        &alice_cookie,
        &format!("/devices/{alice_other}/unpair?page_key={}", alice.page_key),
    )
    .await;
    assert_eq!(by_get.status, 405);
    assert_eq!(
        get(&alice_other_site, &alice_other_cookie, "/")
            .await
            .status,
        200
    );
    // Nor by a browser that is not paired.
    let stranger = unpair(
        &alice,
        "__Host-countersign-alice=cc1_0000000000000000_x",
        &alice_other,
        true,
    )
    .await;
    assert_eq!(stranger.status, 401, "{}", stranger.body);
    assert_eq!(
        get(&alice_other_site, &alice_other_cookie, "/")
            .await
            .status,
        200
    );

    // Unpaired once; a second time it is refused as ended.
    let done = unpair(&alice, &alice_cookie, &alice_other, true).await;
    assert_eq!(done.status, 200, "{}", done.body);
    assert!(done.body.contains("Unknown browser ("), "{}", done.body);
    assert_refusal(
        &unpair(&alice, &alice_cookie, &alice_other, true).await,
        409,
        ENDED,
    );
    assert_eq!(
        get(&alice_other_site, &alice_other_cookie, "/")
            .await
            .status,
        401
    );
    // And Alice's own browser and Bob's are untouched.
    assert_eq!(get(&alice, &alice_cookie, "/").await.status, 200);
    assert_eq!(get(&bob, &bob_cookie, "/").await.status, 200);
}
