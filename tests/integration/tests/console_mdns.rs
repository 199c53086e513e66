//! A phone on the same network, with no DNS set up, reaches the console by
//! the `.local` name the console answers for itself (`[console] mdns`):
//! two network namespaces joined by one veth pair, python-zeroconf and
//! Avahi (nss-mdns) resolving the name in the phone's, and Debian's
//! Chromium pairing through it, driven by `tests/e2e/console_mdns.py`
//! against the real binaries. See the script for the steps; it prints
//! SKIPPED without root, `ip`, Avahi, nss-mdns or Chromium.

#[test]
fn a_phone_on_the_same_network_reaches_the_console_by_its_local_name() {
    countersign_integration_tests::run_e2e_script("console_mdns.py");
}
