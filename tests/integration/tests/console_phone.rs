//! The console on a phone, installable and accessible, in a real browser
//! (Debian's Chromium, headless, with a 390x844 touch viewport and an
//! Android User-Agent), driven by `tests/e2e/console_phone.py` against the
//! real binaries: what a decision needs inside the viewport of the pending
//! list and the card without scrolling; `Page.getInstallabilityErrors`
//! empty; axe-core (`tests/a11y`) with no serious or critical violation on
//! every console page; the phone listed as a device and unpaired from the
//! desktop, and sent back to pairing. With `COUNTERSIGN_SCREENSHOTS=DIR`
//! it also writes the book's phone screenshots (`docs/phone-*.png`).

#[test]
fn a_phone_reviews_and_decides_and_is_unpaired_and_every_page_passes_axe() {
    countersign_integration_tests::run_e2e_script("console_phone.py");
}

/// The card of a proposal the operator's policy requires a person for, on
/// the same phone: the policy's verdict is in view with what a decision
/// needs, driven by `tests/e2e/console_phone_policy.py`
/// (`docs/phone-card-policy.png` with `COUNTERSIGN_SCREENSHOTS`).
#[test]
fn a_phone_shows_the_policys_verdict_on_the_card_above_its_buttons() {
    countersign_integration_tests::run_e2e_script("console_phone_policy.py");
}
