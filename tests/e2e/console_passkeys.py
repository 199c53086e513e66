#!/usr/bin/env python3
"""Passkey approvals in a real browser: Debian's Chromium, headless, through
chromedriver and Selenium, with CDP virtual authenticators (the WebAuthn
domain: ctap2, internal transport, user verification), against a real
`countersign up --console` whose configuration requires a passkey for every
approval, and the official MCP Python SDK as the agent.

The person: pairs at https://console.localhost:<port> (the passkeys' RP id
is console.localhost and their origin the console's; the browser trusts
the console CA through `countersign console trust --import`),
enrols the first passkey with the one-time code the signer's
administrative path prints for the console's approver
(`countersign-signer passkeys enrolment-code --approver console`; a wrong
code is refused and spends it), approves an MCP proposal with the passkey
(user verified), and the MCP head executes it exactly once; enrols a
second passkey with a fresh code, removes it authorized by the first;
`audit --verify` rechecks every stored assertion.

What must not work, each refused with nothing applied: `countersign
approve` at a terminal (it names the console page instead); a browser
whose authenticator is not enrolled (an assertion made anyway is refused
`unknown_passkey`); enrolling that authenticator without a code, or with
a code drawn for another approver; an assertion without UV; replaying a captured
assertion for the same proposal and for another one.

Usage: console_passkeys.py  (env COUNTERSIGN_BIN = path of the countersign
binary; countersign-signer must sit next to it)
"""
import asyncio
import json
import os
import re
import subprocess

import pexpect
from mcp import ClientSession
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from console_browser import browser, call, click_button, mcp_session, propose, status_of, wait_title
from harness import BIN, console_base, console_port, new_home, page_key, run, start_up, stop_up, trusting_home

SIGNER = os.path.join(os.path.dirname(BIN), "countersign-signer")


def require_passkeys(home):
    config = os.path.join(home, "config.toml")
    with open(config) as f:
        text = f.read()
    os.remove(config)
    fd = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text + "\n[passkeys]\nrequired = true\n")


def enrolment_code(home, approver="console"):
    """The administrator runs the signer's administrative command, for the
    console's approver unless told otherwise."""
    out = subprocess.run([SIGNER, "passkeys", "enrolment-code", "--approver", approver, "--home", home],
                         capture_output=True, text=True, timeout=30, check=True).stdout
    return out.splitlines()[0].strip()


def pair(driver, home, port):
    child = pexpect.spawn(BIN, ["--home", home, "console", "pair"], encoding="utf-8", timeout=30)
    child.expect(r"(https://console\.localhost:\d+/pair/cp1_[0-9a-f]{16}_[A-Za-z0-9_-]{43})")
    link = child.match.group(1)
    child.expect(pexpect.EOF)
    child.close()
    assert link.startswith(console_base(port) + "/pair/"), link
    driver.get(link)
    driver.find_element(By.CSS_SELECTOR, "form[action='/pair'] button").click()
    WebDriverWait(driver, 10).until(lambda d: "Waiting for your decision" in d.page_source)
    assert (page_key(driver) or "").startswith("ck1_")


def authenticator(driver, verified=True, transport="internal"):
    """A virtual authenticator with user verification (one platform
    authenticator per browser; a second one is a security key)."""
    driver.execute_cdp_cmd("WebAuthn.enable", {"enableUI": False})
    return driver.execute_cdp_cmd("WebAuthn.addVirtualAuthenticator", {"options": {
        "protocol": "ctap2", "transport": transport, "hasResidentKey": True,
        "hasUserVerification": True, "isUserVerified": verified,
        "automaticPresenceSimulation": True}})["authenticatorId"]


def credentials(driver, auth):
    return driver.execute_cdp_cmd("WebAuthn.getCredentials", {"authenticatorId": auth})["credentials"]


def enrol(driver, base, name, code=None):
    driver.get(base + "/passkeys")
    driver.find_element(By.ID, "passkey-name").send_keys(name)
    if code is not None:
        driver.find_element(By.ID, "enrolment-code").send_keys(code)
    click_button(driver, "Enrol")


def alert_text(driver):
    WebDriverWait(driver, 15).until(
        lambda d: any(a.is_displayed() and a.text for a in d.find_elements(By.CSS_SELECTOR, "[role=alert]")))
    return " ".join(a.text for a in driver.find_elements(By.CSS_SELECTOR, "[role=alert]") if a.is_displayed())


# Captures what the page's script put in a passkey form instead of
# submitting it (an attacker's page script would do the same).
CAPTURE = """
HTMLFormElement.prototype.submit = function () {
  window.captured = {passkey: this.elements.passkey && this.elements.passkey.value,
                     page_key: this.elements.page_key.value, delivery: this.elements.delivery.value};
};
"""


def post_form(driver, path, fields):
    """A same-origin form POST from the page (as its script would make)."""
    return driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        fetch(arguments[0], {method: "POST", credentials: "same-origin",
              headers: {"Content-Type": "application/x-www-form-urlencoded"},
              body: new URLSearchParams(arguments[1]).toString()})
          .then(r => r.text().then(t => done([r.status, t])));""", path, fields)


async def main():
    tmp, home = new_home("cs-passkeys-")
    require_passkeys(home)
    port = console_port(home)
    base = console_base(port)
    up, _ = start_up(home, "--console")
    browser_home = trusting_home(home)
    person = browser(browser_home)
    try:
        pair(person, home, port)
        person_auth = authenticator(person)

        # --- The first passkey needs the administrator's code: a wrong one
        # is refused and spends the code; a fresh one enrols it.
        code = enrolment_code(home)
        enrol(person, base, "laptop", "0000-0000")
        wait_title(person, "Refused", 20)
        assert "enrolment_code_refused" in person.page_source, person.page_source
        enrol(person, base, "laptop", code)
        wait_title(person, "Refused", 20)
        assert "enrolment_code_refused" in person.page_source, "the wrong guess spent the code"
        enrol(person, base, "laptop", enrolment_code(home))
        wait_title(person, "Passkey enrolled", 20)
        assert len(credentials(person, person_auth)) == 1

        async with await mcp_session(home, tmp) as (read, write):
            async with ClientSession(read, write) as mcp:
                await mcp.initialize()
                result, _ = await call(mcp, "propose_schedule_create",
                                       {"arguments": {"name": "nightly", "cron": "0 2 * * *"}})
                pid = result.structured_content["id"]

                # --- A typed challenge at a terminal is not enough: the CLI
                # names the console page, nothing is approved.
                child = pexpect.spawn(BIN, ["--home", home, "approve", pid], encoding="utf-8", timeout=30)
                child.expect(pexpect.EOF)
                child.close()
                shown = child.before
                assert child.exitstatus != 0 and "passkey_required" in shown, shown
                assert f"{base}/proposals/{pid}" in shown, shown
                assert status_of(home, pid) == "pending"

                # --- An assertion without user verification.
                person.execute_cdp_cmd("WebAuthn.setUserVerified",
                                       {"authenticatorId": person_auth, "isUserVerified": False})
                person.get(base + f"/proposals/{pid}")
                assert "Approving needs your passkey" in person.page_source
                person.execute_script("""
                    const get = navigator.credentials.get.bind(navigator.credentials);
                    navigator.credentials.get = o => { o.publicKey.userVerification = "discouraged"; return get(o); };""")
                click_button(person, "Approve for the proposing session")
                wait_title(person, "Refused", 20)
                assert "webauthn_no_user_verification" in person.page_source, person.page_source
                assert status_of(home, pid) == "pending"
                person.execute_cdp_cmd("WebAuthn.setUserVerified",
                                       {"authenticatorId": person_auth, "isUserVerified": True})

                # --- Another browser, paired, whose authenticator is not
                # enrolled: the ceremony finds no allowed credential; an
                # assertion made anyway (with its own credential) is
                # refused; it cannot enrol itself either.
                agent = browser(browser_home)
                try:
                    pair(agent, home, port)
                    agent_auth = authenticator(agent)
                    agent.get(base + f"/proposals/{pid}")
                    click_button(agent, "Approve for the proposing session")
                    assert "Passkey step failed" in alert_text(agent)
                    assert status_of(home, pid) == "pending"
                    agent.execute_async_script("""
                        const done = arguments[arguments.length - 1];
                        navigator.credentials.create({publicKey: {
                            rp: {id: "console.localhost", name: "x"}, user: {id: new Uint8Array(16), name: "x", displayName: "x"},
                            challenge: new Uint8Array(32), pubKeyCredParams: [{type: "public-key", alg: -7}],
                            authenticatorSelection: {userVerification: "required", residentKey: "required"}}})
                          .then(() => done(true), e => done(String(e)));""")
                    agent.get(base + f"/proposals/{pid}")
                    agent.execute_script("""
                        const get = navigator.credentials.get.bind(navigator.credentials);
                        navigator.credentials.get = o => { o.publicKey.allowCredentials = []; return get(o); };""")
                    click_button(agent, "Approve for the proposing session")
                    wait_title(agent, "Refused", 20)
                    assert "unknown_passkey" in agent.page_source, agent.page_source
                    assert status_of(home, pid) == "pending"
                    enrol(agent, base, "mine", "0000-0000")
                    wait_title(agent, "Refused", 20)
                    assert "enrolment_code_refused" in agent.page_source, agent.page_source
                    agent.get(base + "/passkeys")
                    key = page_key(agent)
                    status, text = post_form(agent, "/passkeys/enrolment-challenge", {"page_key": key})
                    assert status == 200, text
                    challenge = json.loads(text)
                    registration = agent.execute_async_script("""
                        const done = arguments[arguments.length - 1];
                        const c = arguments[0];
                        const b = t => Uint8Array.from(atob(t.replace(/-/g, "+").replace(/_/g, "/")), x => x.charCodeAt(0));
                        const u = a => btoa(String.fromCharCode(...new Uint8Array(a))).replace(/\\+/g, "-").replace(/\\//g, "_").replace(/=+$/, "");
                        navigator.credentials.create({publicKey: {
                            rp: {id: c.rp_id, name: "x"}, user: {id: b(c.user_id), name: "x", displayName: "x"},
                            challenge: b(c.creation_challenge), pubKeyCredParams: [{type: "public-key", alg: -7}],
                            authenticatorSelection: {userVerification: "required"}, attestation: "none"}})
                          .then(k => done({challenge_id: c.challenge_id,
                                           attestation_object: u(k.response.attestationObject),
                                           client_data_json: u(k.response.clientDataJSON)}), e => done(String(e)));""",
                        challenge)
                    status, text = post_form(agent, "/passkeys/enrol",
                                             {"page_key": key, "name": "mine", "registration": json.dumps(registration),
                                              "enrolment_code": enrolment_code(home, "alice")})
                    assert status == 409 and "enrolment_code_refused" in text, (status, text)
                finally:
                    agent.quit()
                listed = subprocess.run([SIGNER, "passkeys", "list", "--home", home],
                                        capture_output=True, text=True, check=True).stdout
                assert re.fullmatch(r"\S+ active pr_[0-9a-f]{32}/console enrolment-code laptop\n", listed), listed

                # --- Capture a good assertion without submitting it, then
                # replay it: for the same proposal (its challenge is
                # already spent once used), and for another proposal.
                person.get(base + f"/proposals/{pid}")
                person.execute_script(CAPTURE)
                click_button(person, "Approve for the proposing session")
                WebDriverWait(person, 20).until(lambda d: d.execute_script("return window.captured"))
                captured = person.execute_script("return window.captured")
                assert captured["passkey"] and captured["page_key"] == page_key(person), captured
                # Without the page key (a holder of the cookie alone), even a good
                # assertion decides nothing, and it is not spent.
                for key in (None, "", "guess"):
                    fields = {"delivery": "handoff", "passkey": captured["passkey"]}
                    if key is not None:
                        fields["page_key"] = key
                    status, text = post_form(person, f"/proposals/{pid}/approve", fields)
                    assert status == 403 and "does not carry the page key" in text, (status, text)
                assert status_of(home, pid) == "pending"
                status, text = post_form(person, f"/proposals/{pid}/approve",
                                         {"page_key": captured["page_key"], "delivery": "handoff", "passkey": captured["passkey"]})
                assert status == 200 and "Approved" in text, (status, text)
                status, text = post_form(person, f"/proposals/{pid}/approve",
                                         {"page_key": captured["page_key"], "delivery": "handoff", "passkey": captured["passkey"]})
                assert status == 409 and "not_pending" in text, (status, text)
                result, _ = await call(mcp, "propose_schedule_create",
                                       {"arguments": {"name": "other", "cron": "0 3 * * *"}})
                other = result.structured_content["id"]
                status, text = post_form(person, f"/proposals/{other}/approve",
                                         {"page_key": captured["page_key"], "delivery": "handoff", "passkey": captured["passkey"]})
                assert status == 409 and "challenge_unknown" in text, (status, text)
                fresh = json.loads(post_form(person, f"/proposals/{other}/passkey-challenge",
                                             {"page_key": captured["page_key"], "delivery": "handoff"})[1])
                replay = dict(json.loads(captured["passkey"]), challenge_id=fresh["challenge_id"])
                status, text = post_form(person, f"/proposals/{other}/approve",
                                         {"page_key": captured["page_key"], "delivery": "handoff", "passkey": json.dumps(replay)})
                assert status == 409 and "webauthn_bad_challenge" in text, (status, text)
                assert status_of(home, other) == "pending"

                # --- The person's approval: the MCP head executes it once.
                result, text = await call(mcp, "execute_approved", {"proposal_id": pid})
                assert not result.is_error and status_of(home, pid) == "applied", text
                result, text = await call(mcp, "execute_approved", {"proposal_id": pid})
                events = json.loads(run(home, "--json", "audit").stdout)
                completed = [e for e in events if e["proposal_id"] == pid and e["kind"] == "completed"]
                assert len(completed) == 1 and completed[0]["details"]["status"] == "applied", completed
                approved = [e for e in events if e["proposal_id"] == pid and e["kind"] == "approved"]
                assert approved[0]["details"].get("passkey"), approved

                # --- Approve and run now, with the passkey, in the page.
                person.get(base + f"/proposals/{other}")
                click_button(person, "Approve and run now")
                wait_title(person, "Approved and run", 20)
                assert status_of(home, other) == "applied"

        # --- A second passkey, with a fresh code; then removed, authorized
        # by the first; the last one cannot be removed here.
        # (Chrome emulates one platform authenticator per browser, and a
        # second virtual one would get the ceremony too; so the second
        # passkey is a second credential of the same authenticator, made
        # without the page's excludeCredentials, and not resident: a
        # resident one for the same user would replace the first.)
        laptop = credentials(person, person_auth)[0]["credentialId"]
        person.get(base + "/passkeys")
        person.execute_script("""
            const create = navigator.credentials.create.bind(navigator.credentials);
            navigator.credentials.create = o => {
                o.publicKey.excludeCredentials = [];
                o.publicKey.authenticatorSelection.residentKey = "discouraged";
                return create(o);
            };""")
        person.find_element(By.ID, "passkey-name").send_keys("phone")
        person.find_element(By.ID, "enrolment-code").send_keys(enrolment_code(home))
        click_button(person, "Enrol")
        wait_title(person, "Passkey enrolled", 30)
        phone = next(c["credentialId"] for c in credentials(person, person_auth) if c["credentialId"] != laptop)
        person.get(base + "/passkeys")
        assert "phone" in person.page_source and "laptop" in person.page_source
        assert len(person.find_elements(By.CSS_SELECTOR, "form[data-passkey=remove]")) == 2
        phone_id = phone.replace("+", "-").replace("/", "_").rstrip("=")
        person.find_element(By.CSS_SELECTOR, f"form[action='/passkeys/{phone_id}/remove'] button").click()
        wait_title(person, "Passkey removed", 30)
        person.get(base + "/passkeys")
        assert not person.find_elements(By.CSS_SELECTOR, "form[data-passkey=remove]"), "the last one stays"

        # --- Every stored assertion verifies again from public data.
        audit = run(home, "audit", "--verify").stdout
        assert re.search(r"passkey assertions: [3-9] verified, 0 refused", audit), audit
    finally:
        person.quit()
        code, rest = stop_up(up)
        assert code == 0, rest
    print("console passkeys flow: ok")


if __name__ == "__main__":
    asyncio.run(main())
