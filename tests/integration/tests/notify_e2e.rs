//! Notifications with the real binaries, driven by `tests/e2e/notify.py`:
//! `countersign up --console` with a `[notify]` webhook to a sink that
//! checks each Standard Webhooks signature with Python's own hmac and fails
//! the first attempt; `countersign notify status` shows the retry and the
//! delivery; the notification holds no proof; and a GET of its console
//! link, unpaired or paired, leaves the proposal pending with nothing
//! issued. And the desktop channel on a private session bus.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[test]
fn a_notification_links_to_a_page_that_decides_nothing_on_get() {
    countersign_integration_tests::run_e2e_script("notify.py");
}

/// `tests/e2e/notify_desktop.py`: a private `dbus-daemon --session` and a
/// stub notification server (dbus-next); the notification reaches it with
/// no action and no proof, and a signer without a session bus shows the
/// channel unavailable. The script prints SKIPPED when dbus-daemon is
/// missing.
#[test]
fn a_desktop_notification_reaches_the_session_bus_without_actions() {
    countersign_integration_tests::run_e2e_script("notify_desktop.py");
}
