//! A leaked console cookie reads nothing: every page that shows a
//! proposal, rule, device or passkey needs the paired page's key too (in
//! the `X-Countersign-Page-Key` header the console's script sends). The
//! cookie alone, as a browser sends it to another port of the host, gets
//! the empty page whose script loads the real one; any other key gets a
//! refusal; the page's own key gets the page. Served over real TLS by the
//! same code as `countersign console`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod console_support;
mod support;

use console_support::{PAGE_KEY_HEADER, https};
use serde_json::json;
use support::{Backend, Harness};

/// The empty page a navigation gets: its marker, and what it says without
/// JavaScript.
const EMPTY: &str = r#"id="load""#;
const NEEDS_SCRIPT: &str = "Turn JavaScript on for this site";

#[tokio::test]
async fn a_cookie_without_the_page_key_reads_no_proposal_rule_device_or_passkey() {
    let h = Harness::start_with_rules(Backend::Sqlite).await;
    let expires = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    let rule = h
        .create_rule(&json!({
            "operations": ["schedule.create"],
            "constraints": [{"pointer": "/name", "equals": "covered-by-a-rule"}],
            "sessions": ["*"],
            "max_uses": 3,
            "per_hour": 2,
            "expires_at": countersign_verifier::timestamp::format_whole_seconds(expires).unwrap(),
        }))
        .await;
    let pending = h
        .propose(
            "schedule.create",
            r#"{"name":"secret-job","cron":"0 3 * * *"}"#,
        )
        .await;
    let site = console_support::serve(&h.home(), None).await;
    let (site, cookie) = console_support::pair(&site, &h.home(), "console").await;

    // What each page shows its own script: the secret it must not show
    // anyone else.
    let pages = [
        ("/", pending.as_str()),
        ("/history", pending.as_str()),
        (&*format!("/proposals/{pending}"), "secret-job"),
        ("/rules", rule.as_str()),
        (&*format!("/rules/{rule}/revise"), "covered-by-a-rule"),
        ("/devices", "Unpair"),
        ("/passkeys", "Enrol"),
    ];
    let wrong = format!("{}x", site.page_key);
    for (path, secret) in pages {
        let keyed = https(&site, "GET", path, &[("Cookie", &cookie)], b"").await;
        assert_eq!(keyed.status, 200, "{path}: {}", keyed.body);
        assert!(
            keyed.body.contains(secret),
            "{path} shows {secret:?}: {}",
            keyed.body
        );
        assert!(!keyed.body.contains(EMPTY), "{path}: {}", keyed.body);

        let alone = https(
            &site,
            "GET",
            path,
            &[("Cookie", &cookie), (PAGE_KEY_HEADER, "")],
            b"",
        )
        .await;
        assert_eq!(alone.status, 403, "{path}: {}", alone.body);
        assert!(!alone.body.contains(secret), "{path}: {}", alone.body);

        let navigation = console_support::https_to(
            site.addr,
            &site.ca_pem,
            "GET",
            path,
            &[("Cookie", &cookie)],
            b"",
        )
        .await;
        assert_eq!(navigation.status, 200, "{path}: {}", navigation.body);
        assert!(
            navigation.body.contains(EMPTY) && navigation.body.contains(NEEDS_SCRIPT),
            "{path}: {}",
            navigation.body
        );
        for hidden in [secret, pending.as_str(), rule.as_str()] {
            assert!(
                !navigation.body.contains(hidden),
                "{path} shows {hidden:?} to the cookie alone"
            );
        }
        assert!(!navigation.body.contains("ck1_") && !navigation.body.contains("cc1_"));

        for key in ["guess", wrong.as_str(), cookie.split_once('=').unwrap().1] {
            let guessed = https(
                &site,
                "GET",
                path,
                &[("Cookie", &cookie), (PAGE_KEY_HEADER, key)],
                b"",
            )
            .await;
            assert_eq!(guessed.status, 403, "{path} with {key:?}: {}", guessed.body);
            assert!(
                guessed
                    .body
                    .contains("does not carry the page key of this browser's pairing"),
                "{}",
                guessed.body
            );
            assert!(!guessed.body.contains(secret), "{path}: {}", guessed.body);
        }
    }

    // Two keys are no key.
    let twice = https(
        &site,
        "GET",
        "/",
        &[
            ("Cookie", &cookie),
            (PAGE_KEY_HEADER, &site.page_key),
            (PAGE_KEY_HEADER, "guess"),
        ],
        b"",
    )
    .await;
    assert_eq!(twice.status, 403, "{}", twice.body);
    assert!(!twice.body.contains(&pending));

    // Unpaired, with or without a key: the pairing page, nothing else.
    let stranger = https(&site, "GET", "/", &[(PAGE_KEY_HEADER, &site.page_key)], b"").await;
    assert_eq!(stranger.status, 401, "{}", stranger.body);
    assert!(stranger.body.contains("Pair this browser") && !stranger.body.contains(&pending));
}
