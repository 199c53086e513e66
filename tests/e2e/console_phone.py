#!/usr/bin/env python3
"""The console on a phone, installable, accessible: Debian's Chromium,
headless, through chromedriver and Selenium, against a real `countersign
up --console`.

The phone: a 390x844 viewport (CDP Emulation.setDeviceMetricsOverride,
mobile), touch (Emulation.setTouchEmulationEnabled) and an Android
Chrome User-Agent. On the pending list, the first proposal's operation,
one-line summary, risk class and decision window are inside the
viewport without scrolling; on its card, the operation, the summary, the
risk class, the window and the three decision buttons are; on an
approved card, the proof's expiry and the revocation button are. The
time left in a window counts down in the page and the page says when it
has closed (a 4 s window). The preview is one tap away: a CDP touch on its summary
opens it. At 360 and 430 px wide nothing overflows sideways. The
screenshots of the list and the card are written to
$COUNTERSIGN_SCREENSHOTS (phone-pending.png, phone-card.png) if set.

Installable: Page.getInstallabilityErrors (CDP) returns no error on the
console, on the phone and on a desktop window; the manifest parses
without errors; the service worker (/sw.js) is active with scope "/".

Accessible: axe-core (tests/a11y, as its package-lock.json pins it;
scripts/test installs it) is injected into every page the console has
(the pairing page and a pairing link's, the pending list empty and
full, cards pending, approved and decided, the decision notices,
history, rules with a rule and its revision and confirmation pages,
passkeys, devices, the unpairing notices, a refusal) on the phone and on
a desktop window (where the card's details are open), and reports no
serious or critical violation. The devices page works by keyboard alone.

Devices: the phone is listed on the desktop's Devices page as "Chrome on
Android" with its last use; unpairing it (Tab to its button, Enter) says
so, the phone is sent back to the pairing page, and its open pending
list gets no further update.

Usage: console_phone.py  (env COUNTERSIGN_BIN = path of the countersign
binary; countersign-signer must sit next to it)
"""
import json
import os
import pathlib
import re
import time
from datetime import datetime, timedelta, timezone

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from console_browser import browser, click_button, pair, propose, shoot, status_of, wait_title
from harness import console_base, create_rule_at_terminal, console_port, new_home, run, start_up, stop_up, trusting_home

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
AXE = ROOT / "tests/a11y/node_modules/axe-core/axe.min.js"
PHONE_UA = ("Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/156.0.0.0 Mobile Safari/537.36")
PHONE = (390, 844)


def emulate_phone(driver, width=PHONE[0], height=PHONE[1]):
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 2, "mobile": True})
    driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 5})


def phone(browser_home):
    """A headless Chromium that looks and feels like an Android phone."""
    driver = browser(browser_home, width=PHONE[0], height=PHONE[1])
    driver.execute_cdp_cmd("Emulation.setUserAgentOverride", {"userAgent": PHONE_UA, "platform": "Linux armv8l"})
    emulate_phone(driver)
    return driver


def rect(driver, element):
    return driver.execute_script("""
        const r = arguments[0].getBoundingClientRect();
        return {top: r.top, left: r.left, bottom: r.bottom, right: r.right, width: r.width, height: r.height,
                vw: window.innerWidth, vh: window.innerHeight, scrollY: window.scrollY};""", element)


def assert_in_view(driver, what, element):
    """`element` is shown whole inside the viewport, the page unscrolled."""
    r = rect(driver, element)
    assert r["scrollY"] == 0, (what, r)
    assert r["width"] > 0 and r["height"] > 0, (what, "not shown", r)
    assert r["top"] >= 0 and r["left"] >= 0 and r["bottom"] <= r["vh"] and r["right"] <= r["vw"], (what, r)


def assert_no_sideways_scroll(driver, what):
    width = driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], (what, width)


def button(driver, text):
    return next(b for b in driver.find_elements(By.TAG_NAME, "button") if b.text.strip() == text)


def tap(driver, element):
    """A touch (CDP Input.dispatchTouchEvent) at the middle of `element`."""
    r = rect(driver, element)
    point = {"x": (r["left"] + r["right"]) / 2, "y": (r["top"] + r["bottom"]) / 2}
    driver.execute_cdp_cmd("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [point]})
    driver.execute_cdp_cmd("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})


AXE_RUN = """
const done = arguments[arguments.length - 1];
axe.run(document, {resultTypes: ["violations"]})
  .then(r => done(r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                          nodes: v.nodes.slice(0, 5).map(n => n.target.join(" "))}))))
  .catch(e => done([{id: "axe-failed", impact: "critical", help: String(e), nodes: []}]));
"""

checked = []


def axe(driver, label):
    """axe-core on the page as it is: no serious or critical violation."""
    source = AXE.read_text()
    if not driver.execute_script("return !!window.axe"):
        driver.execute_script(source)
    violations = driver.execute_async_script(AXE_RUN)
    bad = [v for v in violations if v["impact"] in ("serious", "critical")]
    assert not bad, f"axe on {label} ({driver.current_url}): {json.dumps(bad, indent=1)}"
    others = ", ".join(f"{v['id']} ({v['impact']})" for v in violations)
    checked.append(label)
    print(f"axe {label}: no serious or critical violation" + (f"; also {others}" if others else ""))


def axe_finds_what_it_should(driver):
    """axe, as injected here, does report: a page with an image without
    alternative text and an unnamed button (both critical)."""
    driver.get("data:text/html,<!doctype html><html lang=en><title>t</title><main>"
               "<img src=x.png><button></button></main></html>")
    driver.execute_script(AXE.read_text())
    found = {v["id"]: v["impact"] for v in driver.execute_async_script(AXE_RUN)}
    assert found.get("image-alt") == "critical" and found.get("button-name") == "critical", found


def installable(driver, label):
    """The service worker is active at scope "/" and Chromium finds the
    page installable, with a manifest that parses cleanly."""
    scope = driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        navigator.serviceWorker.ready.then(r => done(r.scope + " " + (r.active ? r.active.state : "none")),
                                           e => done(String(e)));""")
    assert scope.startswith(console_base(PORT) + "/ activ"), (label, scope)
    manifest = driver.execute_cdp_cmd("Page.getAppManifest", {})
    assert manifest["url"].endswith("/manifest.webmanifest") and manifest["errors"] == [], (label, manifest)
    errors = None
    for _ in range(20):
        errors = driver.execute_cdp_cmd("Page.getInstallabilityErrors", {})["installabilityErrors"]
        if not errors:
            break
        time.sleep(0.5)
    assert errors == [], (label, errors)
    print(f"installable on {label}: no installability error, service worker {scope}")


def create_rule(home, tmp):
    """An auto-approval rule over schedule.create (names starting auto-,
    which no proposal here has), made at a terminal."""
    expires = (datetime.now(timezone.utc) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    rule = {"operations": ["schedule.create"], "constraints": [{"pointer": "/name", "prefix": "auto-"}],
            "sessions": ["*"], "max_uses": 3, "per_hour": 2, "expires_at": expires}
    create_rule_at_terminal(home, tmp, rule)
    return json.loads(run(home, "--json", "rules", "list").stdout)["rules"][0]["id"]


def every_page(driver, base, home, tmp, label):
    """axe on every page of the console, as the paired `driver` sees it."""
    axe(driver, f"{label} empty pending list")  # the caller left it on "/" with nothing pending
    pid = propose(home, "schedule.create", {"name": f"axe-{label}", "cron": "0 4 * * *"})
    driver.get(base + "/")
    WebDriverWait(driver, 10).until(lambda d: pid in d.page_source)
    axe(driver, f"{label} pending list")
    driver.get(base + f"/proposals/{pid}")
    axe(driver, f"{label} pending card")
    click_button(driver, "Approve for the proposing session")
    wait_title(driver, "Approved")
    axe(driver, f"{label} approval notice")
    driver.get(base + f"/proposals/{pid}")
    axe(driver, f"{label} approved card")
    driver.find_element(By.ID, "revoke-reason").send_keys("axe")
    click_button(driver, "Revoke the unused proof")
    wait_title(driver, "Revoked")
    axe(driver, f"{label} revocation notice")
    driver.get(base + f"/proposals/{pid}")
    axe(driver, f"{label} revoked card")
    run_pid = propose(home, "schedule.create", {"name": f"run-{label}", "cron": "0 5 * * *"})
    driver.get(base + f"/proposals/{run_pid}")
    click_button(driver, "Approve and run now")
    wait_title(driver, "Approved and run", 20)
    axe(driver, f"{label} approved-and-run notice")
    deny_pid = propose(home, "schedule.create", {"name": f"deny-{label}", "cron": "0 6 * * *"})
    driver.get(base + f"/proposals/{deny_pid}")
    driver.find_element(By.ID, "reason").send_keys("not today")
    click_button(driver, "Deny")
    wait_title(driver, "Denied")
    axe(driver, f"{label} denial notice")
    driver.get(base + "/history")
    axe(driver, f"{label} history")
    driver.get(base + "/rules")
    assert "Revise this rule" in driver.page_source, driver.page_source
    axe(driver, f"{label} rules")
    driver.get(base + f"/rules/{RULE}/revise")
    axe(driver, f"{label} rule revision")
    click_button(driver, "Show the new scope")
    wait_title(driver, "Confirm the revision", 20)
    axe(driver, f"{label} rule revision confirmation")
    click_button(driver, "Revise this rule")
    wait_title(driver, "Revised", 20)
    axe(driver, f"{label} rule revised notice")
    driver.get(base + "/passkeys")
    axe(driver, f"{label} passkeys")
    driver.get(base + "/devices")
    axe(driver, f"{label} devices")
    driver.get(base + "/no/such/page")
    wait_title(driver, "Refused")
    axe(driver, f"{label} refusal")


def main():
    global PORT, RULE
    tmp, home = new_home("cs-phone-")
    with open(os.path.join(home, "config.toml"), "a") as f:
        f.write("\n[rules]\nenabled = true\n")
    PORT = port = console_port(home)
    base = console_base(port)
    up, _ = start_up(home, "--console")
    browser_home = trusting_home(home)
    RULE = create_rule(home, tmp)
    handset = phone(browser_home)
    desk = browser(browser_home)
    try:
        axe_finds_what_it_should(handset)
        # --- Unpaired pages (the pairing page, a pairing link's page).
        handset.get(base + "/")
        wait_title(handset, "Pair")
        axe(handset, "phone pairing page")
        handset.get(base + "/pair/cp1_0000000000000000_x")
        axe(handset, "phone pairing link page")

        pair(handset, home, port)
        pair(desk, home, port)
        installable(handset, "the phone")
        installable(desk, "a desktop window")

        # --- Every page, on the phone and on the desktop.
        handset.get(base + "/")
        every_page(handset, base, home, tmp, "phone")
        desk.get(base + "/")
        WebDriverWait(desk, 10).until(lambda d: "Nothing is waiting" in d.page_source)
        every_page(desk, base, home, tmp, "desktop")

        # --- The phone layout: the list.
        pid = propose(home, "schedule.create", {"name": "nightly-backup", "cron": "0 2 * * *"},
                      note="back up the database before the migration")
        handset.get(base + "/")
        # Once the live stream sent the list (it replaces the page's own).
        WebDriverWait(handset, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#pending[data-live]"))
        WebDriverWait(handset, 10).until(lambda d: pid in d.page_source)
        item = handset.find_element(By.CSS_SELECTOR, f"li.proposal[data-proposal='{pid}']")
        assert handset.find_elements(By.CSS_SELECTOR, "li.proposal")[0] == item, "the newest first"
        for what, css in (("operation", "a.op"), ("summary", ".summary"), ("risk class", ".risk"),
                          ("expiry", ".expiry")):
            element = item.find_element(By.CSS_SELECTOR, css)
            assert_in_view(handset, f"pending list: {what}", element)
        assert "schedule.create" in item.find_element(By.CSS_SELECTOR, "a.op").text
        assert "nightly-backup" in item.find_element(By.CSS_SELECTOR, ".summary").text
        assert item.find_element(By.CSS_SELECTOR, ".risk").text == "Risk: write (changes state)"
        # Its decision window: when it closes and the time left.
        expiry = item.find_element(By.CSS_SELECTOR, ".expiry").text
        assert expiry.startswith("decide by ") and expiry.endswith(" left"), expiry
        assert_no_sideways_scroll(handset, "pending list")
        shoot(handset, "phone-pending.png")

        # --- The card: what a decision needs, without scrolling.
        item.find_element(By.CSS_SELECTOR, "a.op").click()
        WebDriverWait(handset, 10).until(lambda d: d.find_elements(By.ID, "card-summary"))
        for what, element in (
            ("operation", handset.find_element(By.TAG_NAME, "h1")),
            ("summary", handset.find_element(By.ID, "card-summary")),
            ("risk class", handset.find_element(By.CSS_SELECTOR, "main .risk")),
            ("expiry", handset.find_element(By.CSS_SELECTOR, "main .expiry")),
            ("approve for the session", button(handset, "Approve for the proposing session")),
            ("approve and run now", button(handset, "Approve and run now")),
            ("deny", button(handset, "Deny")),
        ):
            assert_in_view(handset, f"card: {what}", element)
        assert "schedule.create" in handset.find_element(By.TAG_NAME, "h1").text
        assert "nightly-backup" in handset.find_element(By.ID, "card-summary").text
        assert "left" in handset.find_element(By.CSS_SELECTOR, "main .expiry").text
        assert_no_sideways_scroll(handset, "card")
        shoot(handset, "phone-card.png")
        # Everything else is one tap away.
        preview = handset.find_element(By.ID, "preview")
        assert preview.get_attribute("open") is None, "the preview is closed on a phone"
        assert not handset.find_element(By.CSS_SELECTOR, "#preview pre").is_displayed()
        handset.execute_script("arguments[0].scrollIntoView({block: 'center'})", preview)
        tap(handset, preview.find_element(By.TAG_NAME, "summary"))
        WebDriverWait(handset, 5).until(lambda d: d.find_element(By.ID, "preview").get_attribute("open") is not None)
        assert "nightly-backup" in handset.find_element(By.CSS_SELECTOR, "#preview pre").text
        handset.execute_script("window.scrollTo(0, 0)")

        # Approved: the proof's expiry and the revocation, without scrolling.
        click_button(handset, "Approve for the proposing session")
        wait_title(handset, "Approved")
        handset.get(base + f"/proposals/{pid}")
        expiry = handset.find_element(By.CSS_SELECTOR, "main .expiry")
        assert_in_view(handset, "approved card: expiry", expiry)
        assert_in_view(handset, "approved card: revoke", button(handset, "Revoke the unused proof"))
        # In the browser's time zone; the UTC instant on hover.
        assert expiry.text.startswith("Proof expires ") and "T" not in expiry.text, expiry.text
        instant = expiry.find_element(By.TAG_NAME, "time")
        assert instant.get_attribute("title") == instant.get_attribute("datetime") + " (UTC)", instant.get_attribute("title")
        run(home, "revoke", pid)

        # The time left counts down in the page (the server renders it
        # once), in the server's words, and the page says when the window
        # has closed. A 4 s window for this one proposal (the registry is
        # followed: put back right after).
        registry = os.path.join(home, "operations.toml")
        with open(registry) as f:
            shipped = f.read()
        short = shipped.replace('[[operation]]\nname = "schedule.create"\n',
                                '[[operation]]\nname = "schedule.create"\ndecision_window_secs = 4\n', 1)
        assert short != shipped
        with open(registry, "w") as f:
            f.write(short)
        try:
            brief = propose(home, "schedule.create", {"name": "brief", "cron": "0 1 * * *"})
        finally:
            with open(registry, "w") as f:
                f.write(shipped)
        closes = json.loads(run(home, "--json", "show", brief).stdout)["decide_by"]
        handset.get(base + f"/proposals/{brief}")
        shown = lambda d: d.find_element(By.CSS_SELECTOR, "main .expiry").text
        first = shown(handset)
        # The close in the browser's own time zone, as the page writes it.
        local = handset.execute_script("return localTime(arguments[0])", closes)
        assert local != closes and "T" not in local, local
        assert re.fullmatch(rf"decide by {re.escape(local)}, [0-4] s left", first), first
        WebDriverWait(handset, 3).until(lambda d: shown(d) != first and shown(d).endswith(" s left"))
        WebDriverWait(handset, 8).until(lambda d: "closed" in shown(d))
        assert shown(handset) == f"decide by {local}: its window has closed; it can no longer be decided"
        assert status_of(home, brief) == "expired"

        # Narrower and wider phones: nothing overflows sideways.
        other = propose(home, "schedule.create", {"name": "x" * 63, "cron": "0 3 * * *"})
        for width, height in ((360, 740), (430, 932)):
            emulate_phone(handset, width, height)
            for target in ("/", f"/proposals/{other}", "/history", "/rules", "/devices", "/passkeys"):
                handset.get(base + target)
                assert_no_sideways_scroll(handset, f"{target} at {width} px")
        emulate_phone(handset)

        # --- Devices: the desktop lists the phone and unpairs it by keyboard.
        sessions = json.loads(run(home, "--json", "console", "sessions", "list").stdout)["sessions"]
        phones = [s for s in sessions if s["status"] == "active" and s["device"] == "Chrome on Android"]
        assert len(phones) == 1, sessions
        phone_id = phones[0]["id"]
        assert phones[0]["last_used_at"], phones[0]
        handset.get(base + "/")
        WebDriverWait(handset, 10).until(lambda d: other in d.page_source)
        desk.get(base + "/devices")
        entry = desk.find_element(By.CSS_SELECTOR, f"li.device[data-session='{phone_id}']")
        assert entry.find_element(By.TAG_NAME, "strong").text == "Chrome on Android", entry.text
        assert "last used" in entry.text and "not since pairing" not in entry.text, entry.text
        assert "(this browser)" in desk.find_element(By.CSS_SELECTOR, "li.device").text, "this browser first"
        unpair = entry.find_element(By.TAG_NAME, "button")
        assert unpair.accessible_name == f"Unpair Chrome on Android ({phone_id})", unpair.accessible_name
        desk.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
        for _ in range(40):
            if desk.switch_to.active_element == unpair:
                break
            desk.switch_to.active_element.send_keys(Keys.TAB)
        else:
            raise AssertionError("the phone's Unpair button is not reachable by keyboard")
        desk.switch_to.active_element.send_keys(Keys.ENTER)
        wait_title(desk, "Unpaired")
        said = desk.find_element(By.TAG_NAME, "main").text
        assert f"Chrome on Android ({phone_id}) is no longer paired" in said, said
        axe(desk, "desktop device-unpaired notice")
        # The phone's open list gets nothing more; its next request is sent to pairing.
        after = propose(home, "schedule.create", {"name": "after-unpair", "cron": "0 7 * * *"})
        time.sleep(2)
        assert after not in handset.page_source, "the unpaired phone still gets the live list"
        handset.get(base + "/")
        wait_title(handset, "Pair")
        assert "Pair this browser" in handset.page_source and "revoked" in handset.page_source
        assert after not in handset.page_source
        listed = json.loads(run(home, "--json", "console", "sessions", "list").stdout)["sessions"]
        assert next(s for s in listed if s["id"] == phone_id)["status"] == "revoked"
        # The desktop unpairs itself: its page says so, and it is unpaired.
        desk.get(base + "/devices")
        click_button(desk, "Unpair this browser")
        wait_title(desk, "Unpaired")
        assert "This browser (Headless Chrome on Linux) is no longer paired." in desk.page_source
        axe(desk, "desktop own-unpairing notice")
        desk.get(base + "/")
        wait_title(desk, "Pair")
        axe(desk, "desktop unpaired page")
        assert status_of(home, after) == "pending"
    finally:
        handset.quit()
        desk.quit()
        code, rest = stop_up(up)
        assert code == 0, rest
    print(f"axe checked {len(checked)} pages")
    print("console phone flow: ok")


if __name__ == "__main__":
    main()
