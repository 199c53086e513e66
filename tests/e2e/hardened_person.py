#!/usr/bin/env python3
"""The person in the hardened installation (deploy/setup-system.sh, the
signer and the console running as the signer's system user), driven by
tests/integration/tests/hardened_install.rs once the agent's user has
proposed and failed at everything else.

As the administrator would, it runs the signer user's commands with
`runuser`: `countersign console pair` at a real pseudo-terminal (pexpect;
the link names https://console.localhost:<port>) and `countersign-signer passkeys
enrolment-code --approver console`. In Debian's Chromium, headless, run by root (the person is
not the agent) with a throwaway $HOME whose NSS database trusts the
installation's console CA, as setup-system.sh says (the signer's user
prints it with `console trust --pem`; the person checks its fingerprint and
imports it with `countersign console trust --ca FILE --import`), with a CDP
virtual authenticator (ctap2, internal, user
verified), it pairs, enrols the first passkey with that code, opens the
agent's proposal (which says that approving needs the passkey) and
approves it for the proposing session with the passkey.

Usage: hardened_person.py SIGNER_USER SIGNER_BIN SIGNER_HOME CONSOLE_PORT PROPOSAL_ID
(env COUNTERSIGN_BIN = the countersign binary the signer's user runs)
Prints `hardened person: ok` when the proposal is approved.
"""
import os
import re
import subprocess
import sys
import tempfile

import pexpect
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from console_browser import browser, click_button, wait_title
from console_passkeys import authenticator, credentials, enrol
from harness import BIN, console_base, page_key, trust_import


def as_signer(user, *args):
    """`args` as the signer's user, from / (as root would run them)."""
    return ["runuser", "-u", user, "--", *args]


def pair_link(user, home, port):
    """The administrator runs `countersign console pair` as the signer's
    user at a terminal; the link is shown there."""
    cmd = as_signer(user, BIN, "--home", home, "console", "pair")
    child = pexpect.spawn(cmd[0], cmd[1:], encoding="utf-8", timeout=30, cwd="/")
    child.expect(r"(https://console\.localhost:(\d+)/pair/cp1_[0-9a-f]{16}_[A-Za-z0-9_-]{43})")
    link, shown_port = child.match.group(1), child.match.group(2)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, (child.exitstatus, child.before)
    assert shown_port == str(port), link
    return link


def trusting_person_home(user, home):
    """The administrator hands over the console CA (public) as the signer's
    user prints it; the person, in a HOME of their own, checks its
    fingerprint against the one the signer's user sees and imports it."""
    pem = subprocess.run(as_signer(user, BIN, "--home", home, "console", "trust", "--pem"),
                         capture_output=True, text=True, timeout=30, cwd="/")
    assert pem.returncode == 0 and pem.stdout.startswith("-----BEGIN CERTIFICATE-----"), pem
    shown = subprocess.run(as_signer(user, BIN, "--home", home, "console", "trust"),
                           capture_output=True, text=True, timeout=30, cwd="/")
    assert shown.returncode == 0, shown
    fingerprint = re.search(r"SHA-256 fingerprint: ([0-9A-F:]{95})", shown.stdout).group(1)
    person_home = tempfile.mkdtemp(prefix="cs-person-home-")
    ca = os.path.join(person_home, "console-ca.pem")
    with open(ca, "w") as f:
        f.write(pem.stdout)
    env = {k: v for k, v in os.environ.items() if k != "COUNTERSIGN_HOME"}
    status, shown = trust_import([], {**env, "HOME": person_home}, after=["--ca", ca])
    assert status == 0 and f"SHA-256 fingerprint: {fingerprint}" in shown and f"(SHA-256 {fingerprint})" in shown, shown
    return person_home


def enrolment_code(user, signer_bin, home):
    """The administrator prints a one-time code for one passkey of the
    console's approver."""
    out = subprocess.run(as_signer(user, signer_bin, "passkeys", "enrolment-code", "--approver", "console",
                                   "--home", home),
                         capture_output=True, text=True, timeout=30, cwd="/")
    assert out.returncode == 0, out
    lines = out.stdout.splitlines()
    assert len(lines) == 2 and lines[1].endswith("; accepted once, for one passkey of the approver console only"), \
        out.stdout
    return lines[0].strip()


def main():
    user, signer_bin, home, port, pid = sys.argv[1:6]
    base = console_base(port)
    person = browser(trusting_person_home(user, home))
    try:
        person.get(pair_link(user, home, port))
        person.find_element(By.CSS_SELECTOR, "form[action='/pair'] button").click()
        WebDriverWait(person, 10).until(lambda d: "Waiting for your decision" in d.page_source)
        assert (page_key(person) or "").startswith("ck1_")
        auth = authenticator(person)

        enrol(person, base, "laptop", enrolment_code(user, signer_bin, home))
        wait_title(person, "Passkey enrolled", 20)
        assert len(credentials(person, auth)) == 1

        person.get(f"{base}/proposals/{pid}")
        page = person.page_source
        assert "Approving needs your passkey" in page, page
        assert "hardened" in page, page
        click_button(person, "Approve for the proposing session")
        wait_title(person, "Approved", 20)
        text = person.find_element(By.TAG_NAME, "body").text
        assert f"Approved {pid}: handed off to session mcp-" in text, text
    finally:
        person.quit()
    print("hardened person: ok")


if __name__ == "__main__":
    main()
