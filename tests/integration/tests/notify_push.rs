//! Web Push end to end (`tests/e2e/push.py`): the real binaries, a local
//! RFC 8030 push service in the script, browsers subscribed through the
//! console's subscribe endpoint, each push's VAPID JWT verified with
//! py-vapid's JWT code and its body decrypted with http_ece; 410 drops a
//! subscription, 500 is retried and shown by `notify status`; unpaired and
//! revoked devices get nothing more.

#[test]
fn pushes_verify_decrypt_and_stop_for_gone_unpaired_and_revoked_devices() {
    countersign_integration_tests::run_e2e_script("push.py");
}
