//! The console's service worker and Web Push in a real browser (Debian's
//! Chromium, headless), driven by `tests/e2e/push_worker.py`: CDP
//! `ServiceWorker.deliverPushMessage` to the worker the console's script
//! registered shows one notification (title the operation, the fixed body,
//! the card's URL on the console's origin, whatever else the push says);
//! a `notificationclick` dispatched in the worker's context asks to open
//! the card, or focuses the window already on it.

#[test]
fn a_push_shows_a_notification_that_opens_the_card() {
    countersign_integration_tests::run_e2e_script("push_worker.py");
}
