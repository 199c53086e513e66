#!/usr/bin/env python3
"""The person in the hardened installation (deploy/setup-system.sh, the
signer and the console running as the signer's system user), driven by
tests/integration/tests/hardened_install.rs once the agent's user has
proposed and failed at everything else.

As the administrator would, it runs the signer user's commands with
`runuser`: `countersign console pair` at a real pseudo-terminal (pexpect;
the link names http://localhost:<port>) and `countersign-signer passkeys
enrolment-code --approver console`. In Debian's Chromium, headless, run by root (the person is
not the agent), with a CDP virtual authenticator (ctap2, internal, user
verified), it pairs, enrols the first passkey with that code, opens the
agent's proposal (which says that approving needs the passkey) and
approves it for the proposing session with the passkey.

Usage: hardened_person.py SIGNER_USER SIGNER_BIN SIGNER_HOME CONSOLE_PORT PROPOSAL_ID
(env COUNTERSIGN_BIN = the countersign binary the signer's user runs)
Prints `hardened person: ok` when the proposal is approved.
"""
import subprocess
import sys

import pexpect
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from console_browser import browser, click_button, wait_title
from console_passkeys import authenticator, credentials, enrol
from harness import BIN


def as_signer(user, *args):
    """`args` as the signer's user, from / (as root would run them)."""
    return ["runuser", "-u", user, "--", *args]


def pair_link(user, home, port):
    """The administrator runs `countersign console pair` as the signer's
    user at a terminal; the link is shown there."""
    cmd = as_signer(user, BIN, "--home", home, "console", "pair")
    child = pexpect.spawn(cmd[0], cmd[1:], encoding="utf-8", timeout=30, cwd="/")
    child.expect(r"(http://localhost:(\d+)/pair/cp1_[0-9a-f]{16}_[A-Za-z0-9_-]{43})")
    link, shown_port = child.match.group(1), child.match.group(2)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, (child.exitstatus, child.before)
    assert shown_port == str(port), link
    return link


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
    base = f"http://localhost:{port}"
    person = browser()
    try:
        person.get(pair_link(user, home, port))
        person.find_element(By.CSS_SELECTOR, "form[action='/pair'] button").click()
        WebDriverWait(person, 10).until(lambda d: "Waiting for your decision" in d.page_source)
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
        assert f"Approved {pid} for ONE execution by the head of session mcp-" in text, text
    finally:
        person.quit()
    print("hardened person: ok")


if __name__ == "__main__":
    main()
