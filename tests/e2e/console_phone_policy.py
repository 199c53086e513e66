#!/usr/bin/env python3
"""The card of a proposal the operator's Cedar policy spoke of, on a phone
(the same emulated Android phone as console_phone.py, Debian's Chromium
through chromedriver), against a real `countersign up --console` whose
`[policy] cedar` requires a person's approval of nightly schedules.

The card says what the policy said, naming the policy, and that line is
inside the viewport with the operation, the summary, the risk class, the
decision window and the three decision buttons, without scrolling; nothing
overflows sideways at 360, 390 and 430 px; axe-core finds no serious or
critical violation. The card is written to $COUNTERSIGN_SCREENSHOTS
(phone-card-policy.png) if set.

Usage: console_phone_policy.py  (env COUNTERSIGN_BIN = path of the
countersign binary; countersign-signer must sit next to it)
"""
import os

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from console_browser import pair, propose, shoot
from console_phone import assert_in_view, assert_no_sideways_scroll, axe, button, emulate_phone, phone
from harness import console_base, console_port, new_home, start_up, stop_up, trusting_home

POLICY = """@id("nightly-needs-a-person")
@require_approval
permit (principal, action == Action::"schedule.create", resource)
when { context.arguments.name like "nightly-*" };
"""
SAID = ("Policy: the operator's policy requires a person's approval "
        "(nightly-needs-a-person)")


def main():
    tmp, home = new_home("cs-phone-policy-")
    with open(os.path.join(home, "policy.cedar"), "w") as f:
        f.write(POLICY)
    with open(os.path.join(home, "config.toml"), "a") as f:
        f.write('\n[policy]\ncedar = "policy.cedar"\n')
    port = console_port(home)
    base = console_base(port)
    up, _ = start_up(home, "--console")
    handset = phone(trusting_home(home))
    try:
        pair(handset, home, port)
        pid = propose(home, "schedule.create", {"name": "nightly-backup", "cron": "0 2 * * *"},
                      note="back up the database before the migration")
        handset.get(base + f"/proposals/{pid}")
        WebDriverWait(handset, 10).until(lambda d: d.find_elements(By.ID, "card-summary"))
        said = handset.find_element(By.CSS_SELECTOR, "main p.policy")
        assert said.text == SAID, said.text
        for what, element in (
            ("operation", handset.find_element(By.TAG_NAME, "h1")),
            ("summary", handset.find_element(By.ID, "card-summary")),
            ("risk class", handset.find_element(By.CSS_SELECTOR, "main .risk")),
            ("expiry", handset.find_element(By.CSS_SELECTOR, "main .expiry")),
            ("the policy's verdict", said),
            ("approve for the session", button(handset, "Approve for the proposing session")),
            ("approve and run now", button(handset, "Approve and run now")),
            ("deny", button(handset, "Deny")),
        ):
            assert_in_view(handset, f"card under a policy: {what}", element)
        assert_no_sideways_scroll(handset, "card under a policy")
        axe(handset, "phone card under a policy")
        shoot(handset, "phone-card-policy.png")
        for width, height in ((360, 740), (430, 932)):
            emulate_phone(handset, width, height)
            handset.get(base + f"/proposals/{pid}")
            assert_no_sideways_scroll(handset, f"card under a policy at {width} px")
    finally:
        handset.quit()
        code, rest = stop_up(up)
        assert code == 0, rest
    print("console phone card under a policy: ok")


if __name__ == "__main__":
    main()
