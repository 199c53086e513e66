#!/usr/bin/env python3
"""Quorum approvals with the real binaries: `countersign up`, the CLI at
real pseudo-terminals (pexpect) and two consoles in a real browser
(Chromium through Selenium), each approver deciding with their own named
approver certificate.

`schedule.create` requires 2 of alice, bob and carol. Refused, with nothing
recorded: the installation's unnamed approver, an approver the quorum does
not list, an approver approving twice. alice's approval at the terminal is
recorded without a proof; bob's console shows it, and bob's "approve and run
now" reaches the quorum and runs it once, the proof naming both. A denial by
carol at the terminal ends another proposal that bob approved in his console,
and both consoles show both decisions. Each console pairs and keeps its own
approver's browsers (`console --as NAME pair`, cookie
`__Host-countersign-NAME`, at https://console.localhost:PORT): a browser
paired with bob's console is not paired with carol's, though it sends the
same host its cookie. Two approvers typing their challenges at the same
instant produce exactly one proof. `audit --verify` holds.

Usage: quorum.py  (env COUNTERSIGN_BIN = path of the countersign binary;
countersign-signer must sit next to it)
"""
import json
import os
import re
import subprocess
import sys
import time

import pexpect
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from console_browser import browser, click_button, wait_title
from harness import (BIN, approve_at_terminal, console_base, free_port, new_home, page_key, run, start_up, stop_up,
                     trusting_home)

QUORUM = 'quorum = { required = 2, approvers = ["alice", "bob", "carol"] }'
REFUSED = 3


def show(home, pid):
    return json.loads(run(home, "--json", "show", pid).stdout)


def propose(home, name):
    args = json.dumps({"name": name, "cron": "0 3 * * *"})
    return json.loads(run(home, "--json", "propose", "schedule.create", "--args-file", "-",
                          stdin=args).stdout)["id"]


def decisions(home, pid):
    return [(d["approver"], d["decision"], d["reason"]) for d in show(home, pid)["quorum"]["decisions"]]


def start_console(home, name, port):
    """`countersign console --as NAME`, once it listens."""
    console = subprocess.Popen([BIN, "--home", home, "console", "--as", name, "--listen",
                                f"127.0.0.1:{port}"], stdin=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    seen = []
    deadline = time.time() + 60
    while "listening" not in "".join(seen):
        line = console.stderr.readline()
        seen.append(line)
        if not line and console.poll() is not None or time.time() > deadline:
            sys.exit(f"console --as {name} did not start: {''.join(seen)}")
    return console


def pair_link(home, name, port):
    """A person runs `countersign console --as NAME --listen ADDR pair` at a
    terminal."""
    child = pexpect.spawn(BIN, ["--home", home, "console", "--as", name, "--listen", f"127.0.0.1:{port}", "pair"],
                          encoding="utf-8", timeout=30)
    child.expect(r"(https://console\.localhost:\d+/pair/\S+)")
    link = child.match.group(1)
    assert link.startswith(console_base(port) + "/pair/cp1_"), link
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    return link


def paired_browser(home, browser_home, name, port):
    """A browser paired with NAME's console: its cookie is NAME's, and its
    page holds the pairing's page key."""
    driver = browser(browser_home)
    driver.get(pair_link(home, name, port))
    driver.find_element(By.CSS_SELECTOR, "form[action='/pair'] button").click()
    WebDriverWait(driver, 10).until(lambda d: "Waiting for your decision" in d.page_source)
    assert {c["name"] for c in driver.get_cookies()} == {f"__Host-countersign-{name}"}, driver.get_cookies()
    assert (page_key(driver) or "").startswith("ck1_")
    return driver


def sessions_of(home, name=None):
    extra = ["--as", name] if name else []
    return json.loads(run(home, "--json", "console", *extra, "sessions", "list").stdout)["sessions"]


def refused_at_approve(home, pid, *extra):
    """`approve` refused before the person is asked anything."""
    proc = subprocess.run([BIN, "--home", home, "approve", pid, *extra], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == REFUSED, (proc.returncode, proc.stdout, proc.stderr)
    return proc.stderr


def quorum_card(driver):
    return driver.find_element(By.CSS_SELECTOR, "section.quorum").text


def main():
    tmp, home = new_home("cs-quorum-")
    ops = os.path.join(home, "operations.toml")
    with open(ops) as f:
        text = f.read()
    head = '[[operation]]\nname = "schedule.create"\n'
    assert head in text, text[:400]
    with open(ops, "w") as f:
        f.write(text.replace(head, head + QUORUM + "\n", 1))
    pki = os.path.join(home, "pki")
    for name in ("alice", "bob", "carol", "dave"):
        run(home, "credential", "create", "--approver", name, "--out-dir", pki)

    up, _ = start_up(home)
    consoles, drivers = [], []
    try:
        pid = propose(home, "first")
        proposal = show(home, pid)
        assert proposal["quorum"] == {"required": 2, "approvers": ["alice", "bob", "carol"],
                                      "decisions": []}, proposal

        # --- Not quorum members: the installation's unnamed approver, and dave.
        err = refused_at_approve(home, pid)
        assert "not_a_quorum_approver" in err, err
        err = refused_at_approve(home, pid, "--as", "dave")
        assert "not_a_quorum_approver" in err, err
        deny = run(home, "deny", pid, "--reason", "no", "--as", "dave", ok=(REFUSED,))
        assert "not_a_quorum_approver" in deny.stderr, deny.stderr
        assert show(home, pid)["status"] == "pending" and decisions(home, pid) == []

        # --- alice approves at her terminal: recorded, no proof, nothing run.
        proof = os.path.join(tmp, "first.proof")
        shown = approve_at_terminal(home, pid, "--as", "alice", "--proof-out", proof,
                                    expect_text="needs 2 approvals")
        assert "approval recorded" in shown and "1 of 2 required" in shown, shown
        assert not os.path.exists(proof), "no proof exists before the quorum"
        assert show(home, pid)["status"] == "pending"
        assert decisions(home, pid) == [("alice", "approve", None)]
        # Nobody approves twice.
        err = refused_at_approve(home, pid, "--as", "alice", "--proof-out", proof)
        assert "already_approved" in err, err
        text = run(home, "show", pid).stdout
        assert "quorum: 1 of 2 required approvals (approvers: alice, bob, carol)" in text, text
        assert re.search(r"approved by alice at \d{4}-", text), text
        pending = json.loads(run(home, "--json", "pending").stdout)
        assert [p["quorum"]["decisions"][0]["approver"] for p in pending] == ["alice"], pending

        # --- bob's console shows alice's decision; "approve and run now" reaches the quorum.
        bob_port, carol_port = free_port(), free_port()
        consoles.append(start_console(home, "bob", bob_port))
        consoles.append(start_console(home, "carol", carol_port))
        browser_home = trusting_home(home)
        bob = paired_browser(home, browser_home, "bob", bob_port)
        drivers.append(bob)
        assert [s["status"] for s in sessions_of(home, "bob")] == ["active"]
        assert sessions_of(home, "carol") == [] and sessions_of(home) == []
        # A code made for bob's console does not pair carol's.
        link = pair_link(home, "bob", bob_port)
        code = link.rsplit("/", 1)[1]
        bob.get(f"{console_base(carol_port)}/pair/{code}")
        bob.find_element(By.CSS_SELECTOR, "form[action='/pair'] button").click()
        WebDriverWait(bob, 10).until(lambda d: "not valid" in d.page_source)
        assert "this browser was not paired" in bob.page_source and sessions_of(home, "carol") == [], bob.page_source
        # bob's cookie reaches carol's port (same host) but opens nothing there.
        bob.get(f"{console_base(carol_port)}/proposals/{pid}")
        assert "Pair this browser" in bob.page_source and "countersign console pair --as carol" in bob.page_source
        assert "alice approved" not in bob.page_source
        bob.get(f"{console_base(bob_port)}/proposals/{pid}")
        card = quorum_card(bob)
        assert "1 of 2 required approvals" in card and "alice approved" in card, card
        click_button(bob, "Approve and run now")
        wait_title(bob, "Approved and run", 15)
        assert show(home, pid)["status"] == "applied"
        principal = show(home, pid)["principal"]
        events = json.loads(run(home, "--json", "audit").stdout)
        approved = [e for e in events if e["proposal_id"] == pid and e["kind"] == "approved"]
        assert len(approved) == 1, approved
        assert approved[0]["details"]["provenance"] == \
            f"human:quorum:{principal}/alice,{principal}/bob", approved
        kinds = [e["kind"] for e in events if e["proposal_id"] == pid]
        assert kinds.count("quorum_approved") == 2, kinds

        # --- bob approves in his console, carol denies at the terminal: it ends,
        # and both consoles show both decisions.
        pid2 = propose(home, "second")
        bob.get(f"{console_base(bob_port)}/proposals/{pid2}")
        click_button(bob, "Approve for the proposing session")
        wait_title(bob, "Approval recorded", 15)
        assert "1 of 2 required approvals" in bob.page_source
        assert show(home, pid2)["status"] == "pending"
        run(home, "deny", pid2, "--reason", "wrong cron", "--as", "carol")
        got = show(home, pid2)
        assert (got["status"], got["reason"]) == ("denied", "wrong cron"), got
        assert decisions(home, pid2) == [("bob", "approve", None), ("carol", "deny", "wrong cron")]
        carol = paired_browser(home, browser_home, "carol", carol_port)
        drivers.append(carol)
        for driver, port in ((bob, bob_port), (carol, carol_port)):
            driver.get(f"{console_base(port)}/proposals/{pid2}")
            card = quorum_card(driver)
            assert "bob approved" in card and "carol denied" in card and "wrong cron" in card, card
        err = refused_at_approve(home, pid2, "--as", "alice")
        assert "not pending" in err or "only a pending proposal" in err, err

        # --- alice and carol type their challenges at the same instant: one proof.
        pid3 = propose(home, "third")
        children = []
        for name in ("alice", "carol"):
            out = os.path.join(tmp, f"third-{name}.proof")
            child = pexpect.spawn(BIN, ["--home", home, "approve", pid3, "--as", name,
                                        "--proof-out", out], encoding="utf-8", timeout=60)
            child.expect(r"Type (\S+) to approve")
            children.append((child, child.match.group(1), out))
        for child, code, _ in children:
            child.sendline(code)
        for child, _, _ in children:
            child.expect(pexpect.EOF)
            child.close()
            assert child.exitstatus == 0, (child.exitstatus, child.before)
        written = [out for _, _, out in children if os.path.exists(out)]
        assert len(written) == 1, written
        got = show(home, pid3)
        assert got["status"] == "approved" and len(got["quorum"]["decisions"]) == 2, got
        applied = json.loads(run(home, "--json", "exec", pid3, "--proof-file", written[0]).stdout)
        assert applied["status"] == "applied", applied

        verify = run(home, "audit", "--verify")
        assert "intact" in verify.stdout.lower() or verify.returncode == 0, verify.stdout
    finally:
        for driver in drivers:
            driver.quit()
        for console in consoles:
            console.terminate()
            console.wait(timeout=30)
        code, rest = stop_up(up)
        assert code == 0, (code, rest)
    print("quorum: ok")


if __name__ == "__main__":
    main()
