#!/usr/bin/env python3
"""The approval console in a real browser: Debian's Chromium, headless,
driven through chromedriver by Selenium, against a real `countersign up
--console`, with the official MCP Python SDK as the agent.

A person supervises an MCP agent from the browser alone: pairing through a
one-time link made at a real pseudo-terminal; a proposal made over MCP
appearing live in the pending list (count in the title); approve for the
proposing session and the MCP head executing it exactly once; approve and
run now; deny with a reason; revoke; resolve an uncertain execution; a
premise shown as the signer read it, and a decision refused once it moved. And
what must not work: an unpaired, revoked or expired session sees nothing; a
page on another origin posting to the console, a request with a rebinding
Host, a POST without the CSRF token, and a second decision are refused and
change nothing. A hostile proposal (ANSI escapes, a right-to-left override,
zero-width characters, a fake "Approved" line, a 60 KB value: the largest a
signer accepts is 64 KB of canonical arguments, and a note is at most 2000
characters) is shown escaped and whole. Pages work without JavaScript and by
keyboard alone, and on a narrow screen.

Screenshots of the pending list and of a card are written to
$COUNTERSIGN_SCREENSHOTS (if set).

Usage: console_browser.py  (env COUNTERSIGN_BIN = path of the countersign
binary; countersign-signer must sit next to it)
"""
import asyncio
import http.client
import http.server
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.parse

import pexpect
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from harness import BIN, console_port, free_port, new_home, run, start_up, stop_up

HOSTILE_OPS = """
[[operation]]
name = "demo.note"
description = "Record a note (cat)."
class = "write"
replay_safe = false
preview = "Record note {text}"

[operation.effect]
kind = "command"
program = "/bin/cat"
args = []
timeout_secs = 10

[operation.schema]
type = "object"
additionalProperties = false
required = ["text"]

[operation.schema.properties.text]
type = "string"

[[operation]]
name = "demo.crash"
description = "A command that kills the head running it (to leave an uncertain execution)."
class = "write"
replay_safe = false
preview = "Crash the head that runs this"

[operation.effect]
kind = "command"
program = "/bin/sh"
args = ["-c", "kill -9 $PPID; sleep 5"]
timeout_secs = 1

[operation.schema]
type = "object"
additionalProperties = false
"""


def browser(javascript=True, width=1200, height=900):
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", f"--window-size={width},{height}"):
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tempfile.mkdtemp(prefix='cs-chrome-')}")
    if not javascript:
        options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(30)
    return driver


def status_of(home, pid):
    return json.loads(run(home, "--json", "show", pid).stdout)["status"]


def pair_link(home, port):
    """A person runs `countersign console pair` at a terminal; the link is
    shown there (and not on stdout)."""
    child = pexpect.spawn(BIN, ["--home", home, "console", "pair"],
                          encoding="utf-8", timeout=30)
    child.expect(r"(http://127\.0\.0\.1:\d+/pair/cp1_[0-9a-f]{16}_[A-Za-z0-9_-]{43})")
    link = child.match.group(1)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    return link


def pair(driver, home, port):
    driver.get(pair_link(home, port))
    driver.find_element(By.CSS_SELECTOR, "form[action='/pair'] button").click()
    WebDriverWait(driver, 10).until(lambda d: "Waiting for your decision" in d.page_source)


def propose(home, op, args, note=""):
    extra = ["--note", note] if note else []
    out = run(home, "--json", "propose", op, "--args-file", "-", *extra, stdin=json.dumps(args)).stdout
    return json.loads(out)["id"]


def session_cookie(driver):
    return next(c for c in driver.get_cookies() if c["name"] == "countersign_console")


def raw(port, method, path, headers=None, body=None):
    """A request without a browser (exact headers), for the guards."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for k, v in (headers or {}).items():
        conn.putheader(k, v)
    data = urllib.parse.urlencode(body).encode() if body is not None else None
    if data is not None:
        conn.putheader("Content-Type", "application/x-www-form-urlencoded")
        conn.putheader("Content-Length", str(len(data)))
    conn.endheaders(data)
    resp = conn.getresponse()
    text = resp.read().decode()
    conn.close()
    return resp.status, dict(resp.getheaders()), text


def wait_title(driver, word, seconds=10):
    """Wait until the page title names `word`; fail with what the page says."""
    try:
        WebDriverWait(driver, seconds).until(lambda d: word in d.title)
    except Exception:
        raise AssertionError(f"expected a page titled {word!r}, got {driver.title!r}: "
                             f"{driver.find_element(By.TAG_NAME, 'body').text[:2000]}")


def csrf_on(driver):
    return driver.find_element(By.CSS_SELECTOR, "input[name=csrf]").get_attribute("value")


def click_button(driver, text):
    button = next(b for b in driver.find_elements(By.TAG_NAME, "button") if b.text.strip() == text)
    button.click()


def shoot(driver, name):
    folder = os.environ.get("COUNTERSIGN_SCREENSHOTS")
    if folder:
        os.makedirs(folder, exist_ok=True)
        driver.save_screenshot(os.path.join(folder, name))


def evil_site(target_port, pid):
    """A page on another origin that posts a decision form to the console."""
    page = f"""<!doctype html><form id=f method=post action="http://127.0.0.1:{target_port}/proposals/{pid}/approve">
<input name=delivery value=handoff><input name=csrf value=guess></form>
<script>document.getElementById('f').submit()</script>"""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(page.encode())

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def mcp_session(home, tmp):
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/")}
    params = StdioServerParameters(command=BIN, args=["--home", home, "mcp"], env=env)
    errlog = open(os.path.join(tmp, "mcp.stderr"), "w")
    return stdio_client(params, errlog=errlog)


async def call(session, tool, arguments):
    result = await session.call_tool(tool, arguments)
    text = "\n".join(c.text for c in result.content if getattr(c, "text", None))
    assert "v4.public." not in result.model_dump_json()
    return result, text


async def main():
    tmp, home = new_home("cs-console-")
    with open(os.path.join(home, "operations.toml"), "a") as f:
        f.write(HOSTILE_OPS)
    port = console_port(home)
    up, _ = start_up(home, "--console")
    base = f"http://127.0.0.1:{port}"
    driver = browser()
    try:
        # --- An unpaired browser sees only the pairing page.
        secret_pid = propose(home, "schedule.create", {"name": "secret-job", "cron": "0 1 * * *"})
        driver.get(base + "/")
        assert "Pair this browser" in driver.page_source
        driver.get(base + f"/proposals/{secret_pid}")
        assert secret_pid not in driver.page_source and "secret-job" not in driver.page_source
        status, _, text = raw(port, "GET", "/history", {"Host": f"127.0.0.1:{port}"})
        assert status == 401 and secret_pid not in text, (status, text)
        run(home, "deny", secret_pid, "--reason", "setup")

        # --- Pairing: a one-time link from the terminal; cookie flags.
        link = pair_link(home, port)
        driver.get(link)
        assert "countersign_console" not in {c["name"] for c in driver.get_cookies()}, "GET must not pair"
        driver.find_element(By.CSS_SELECTOR, "form[action='/pair'] button").click()
        WebDriverWait(driver, 10).until(lambda d: "Waiting for your decision" in d.page_source)
        cookie = session_cookie(driver)
        assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict" and cookie["path"] == "/", cookie
        assert cookie["secure"] is False, "plain HTTP on loopback: no Secure flag"
        # The link is single use.
        other = browser()
        try:
            other.get(link)
            other.find_element(By.CSS_SELECTOR, "form[action='/pair'] button").click()
            WebDriverWait(other, 10).until(lambda d: "already used" in d.page_source)
            assert "countersign_console" not in {c["name"] for c in other.get_cookies()}
        finally:
            other.quit()
        # The raw Set-Cookie header, from a second code.
        code = pair_link(home, port).rsplit("/", 1)[1]
        status, headers, _ = raw(port, "POST", "/pair", {"Host": f"127.0.0.1:{port}"}, {"code": code})
        set_cookie = headers.get("set-cookie", "")
        assert status == 303 and "HttpOnly" in set_cookie and "SameSite=Strict" in set_cookie \
            and "Path=/" in set_cookie and "Secure" not in set_cookie, (status, headers)

        # --- Security headers on every page.
        status, headers, _ = raw(port, "GET", "/", {"Host": f"127.0.0.1:{port}"})
        csp = headers["content-security-policy"]
        assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp and "unsafe-inline" not in csp, csp
        assert headers["x-content-type-options"] == "nosniff" and headers["referrer-policy"] == "no-referrer"
        assert headers["x-frame-options"] == "DENY" and headers["cache-control"] == "no-store", headers
        assert "<script>" not in driver.page_source, "no inline script"

        async with await mcp_session(home, tmp) as (read, write):
            async with ClientSession(read, write) as mcp:
                await mcp.initialize()

                # --- A proposal made over MCP appears live, count in the title.
                driver.get(base + "/")
                WebDriverWait(driver, 10).until(lambda d: d.title.startswith("(0)"))
                time.sleep(1.5)  # the event stream is open
                result, text = await call(mcp, "propose_schedule_create",
                                          {"arguments": {"name": "nightly-report", "cron": "0 2 * * *"},
                                           "note": "the user asked for a nightly report"})
                pid = result.structured_content["id"]
                WebDriverWait(driver, 15).until(lambda d: pid in d.page_source and d.title.startswith("(1)"))
                shoot(driver, "console-pending.png")

                # --- Approve for the proposing session: the MCP head executes it once.
                result, text = await call(mcp, "execute_approved", {"proposal_id": pid})
                assert result.is_error and status_of(home, pid) == "pending", text
                assert result.structured_content["console_url"] == f"{base}/proposals/{pid}", text
                driver.find_element(By.CSS_SELECTOR, f"a[href='/proposals/{pid}']").click()
                WebDriverWait(driver, 10).until(lambda d: "What will happen" in d.page_source)
                assert "model-supplied, unverified" in driver.page_source
                assert "nightly-report" in driver.page_source
                shoot(driver, "console-card.png")
                click_button(driver, "Approve for the proposing session")
                wait_title(driver, "Approved", 10)
                assert "ONE execution" in driver.page_source
                result, text = await call(mcp, "execute_approved", {"proposal_id": pid})
                assert not result.is_error and status_of(home, pid) == "applied", text
                result, text = await call(mcp, "execute_approved", {"proposal_id": pid})
                assert status_of(home, pid) == "applied", text
                events = json.loads(run(home, "--json", "audit").stdout)
                completed = [e for e in events if e["proposal_id"] == pid and e["kind"] == "completed"]
                assert len(completed) == 1 and completed[0]["details"]["status"] == "applied", completed
                driver.get(base + f"/proposals/{pid}")
                provenance = driver.find_element(By.XPATH, "//dt[text()='Decided by']/following-sibling::dd").text
                assert re.fullmatch(r"human:cert:pr_[0-9a-f]{32}/console", provenance), provenance

                # --- A second decision is refused with a clear message.
                csrf = csrf_on_page(driver, base)
                status, _, text = raw(port, "POST", f"/proposals/{pid}/approve",
                                      {"Host": f"127.0.0.1:{port}", "Cookie": f"countersign_console={session_cookie(driver)['value']}"},
                                      {"csrf": csrf, "delivery": "handoff"})
                assert status == 409 and "nothing was done" in text and "not_pending" in text, (status, text)

                # --- A premise: the card shows the schedule as the signer read it (the
                # model's claim stays model-supplied); once another approved action moves
                # it, approving is refused with the reason and nothing is recorded.
                dpid = propose(home, "schedule.delete", {"name": "nightly-report"}, note="it is paused already")
                driver.get(base + f"/proposals/{dpid}")
                card = driver.find_element(By.TAG_NAME, "main").text
                assert 'Premise:   schedules "nightly-report" = {' in card and '"state":"created"' in card, card
                apid = propose(home, "schedule.activate", {"name": "nightly-report"})
                driver.get(base + f"/proposals/{apid}")
                click_button(driver, "Approve and run now")
                wait_title(driver, "Approved and run", 20)
                driver.get(base + f"/proposals/{dpid}")
                card = driver.find_element(By.TAG_NAME, "main").text
                assert "It cannot be approved now" in card and "changed since it was proposed" in card, card
                assert not [b for b in driver.find_elements(By.TAG_NAME, "button") if b.text.strip().startswith("Approve")]
                status, _, text = raw(port, "POST", f"/proposals/{dpid}/approve",
                                      {"Host": f"127.0.0.1:{port}", "Cookie": f"countersign_console={session_cookie(driver)['value']}"},
                                      {"csrf": csrf_on_page(driver, base), "delivery": "run"})
                assert "premise_changed" in text and "nothing was done" in text, (status, text)
                assert status_of(home, dpid) == "pending"

                # --- Revoke an unconsumed proof: the MCP head can no longer use it.
                result, text = await call(mcp, "propose_schedule_create",
                                          {"arguments": {"name": "to-revoke", "cron": "0 3 * * *"}})
                rpid = result.structured_content["id"]
                driver.get(base + f"/proposals/{rpid}")
                click_button(driver, "Approve for the proposing session")
                wait_title(driver, "Approved", 10)
                driver.get(base + f"/proposals/{rpid}")
                click_button(driver, "Revoke the unused proof")
                wait_title(driver, "Revoked", 10)
                result, text = await call(mcp, "execute_approved", {"proposal_id": rpid})
                assert result.is_error and status_of(home, rpid) == "revoked", text

                # --- Cross-origin POST from another site, and a rebinding Host: refused, nothing changes.
                result, text = await call(mcp, "propose_schedule_create",
                                          {"arguments": {"name": "cross-site", "cron": "0 4 * * *"}})
                xpid = result.structured_content["id"]
                evil = evil_site(port, xpid)
                driver.get(f"http://localhost:{evil.server_port}/")
                time.sleep(2)
                assert status_of(home, xpid) == "pending"
                cookie_header = {"Cookie": f"countersign_console={session_cookie(driver)['value']}"}
                driver.get(base + f"/proposals/{xpid}")
                csrf = csrf_on(driver)
                for headers, why in (
                    ({"Host": f"evil.example:{port}"}, "DNS rebinding"),
                    ({"Host": f"127.0.0.1:{port}", "Origin": "http://evil.example"}, "cross-origin"),
                    ({"Host": f"127.0.0.1:{port}", "Sec-Fetch-Site": "cross-site"}, "cross-site"),
                ):
                    status, _, text = raw(port, "POST", f"/proposals/{xpid}/approve", {**headers, **cookie_header},
                                          {"csrf": csrf, "delivery": "handoff"})
                    assert status == 403 and why in text, (status, text)
                    status, _, text = raw(port, "GET", f"/proposals/{xpid}", {**headers, **cookie_header})
                    assert status == 403 and "cross-site" not in text.split("<main")[0], status
                status, _, text = raw(port, "POST", f"/proposals/{xpid}/approve",
                                      {"Host": f"127.0.0.1:{port}", **cookie_header}, {"delivery": "handoff"})
                assert status == 403 and "CSRF" in text, (status, text)
                # Nothing changes on GET: every decision route (and sign-out) is POST only.
                for path in (f"/proposals/{xpid}/approve", f"/proposals/{xpid}/deny", f"/proposals/{xpid}/revoke",
                             f"/proposals/{xpid}/resolve", "/logout", "/pair"):
                    status, _, _ = raw(port, "GET", path + "?csrf=" + csrf + "&delivery=handoff&reason=x",
                                       {"Host": f"127.0.0.1:{port}", **cookie_header})
                    assert status == 405, (path, status)
                status, _, _ = raw(port, "GET", "/", {"Host": f"127.0.0.1:{port}", **cookie_header})
                assert status == 200, "the session survived GET /logout"
                assert status_of(home, xpid) == "pending"
                evil.shutdown()

                # --- Deny with a reason (keyboard only), and an empty reason refused.
                status, _, text = raw(port, "POST", f"/proposals/{xpid}/deny",
                                      {"Host": f"127.0.0.1:{port}", **cookie_header}, {"csrf": csrf, "reason": "  "})
                assert status == 400 and "needs a reason" in text and status_of(home, xpid) == "pending"
                driver.get(base + f"/proposals/{xpid}")
                body = driver.find_element(By.TAG_NAME, "body")
                body.send_keys(Keys.TAB)
                for _ in range(60):
                    active = driver.switch_to.active_element
                    if active.get_attribute("name") == "reason" and active.tag_name == "textarea":
                        break
                    active.send_keys(Keys.TAB)
                else:
                    raise AssertionError("the reason field is not reachable by keyboard")
                active.send_keys("not on a Sunday")
                active.send_keys(Keys.TAB)
                assert driver.switch_to.active_element.text == "Deny"
                driver.switch_to.active_element.send_keys(Keys.ENTER)
                wait_title(driver, "Denied", 10)
                assert status_of(home, xpid) == "denied"
                driver.get(base + "/history?status=denied")
                assert xpid in driver.page_source and "not on a Sunday" in driver.page_source
                driver.get(base + "/history?status=applied")
                assert pid in driver.page_source and xpid not in driver.page_source
                driver.get(base + "/history?operation=schedule.create&status=revoked")
                assert rpid in driver.page_source and pid not in driver.page_source

        # --- Approve and run now, in a browser without JavaScript, on a phone-sized screen.
        nojs = browser(javascript=False, width=390, height=844)
        try:
            pair(nojs, home, port)
            run_pid = propose(home, "schedule.create", {"name": "run-now", "cron": "5 4 * * *"})
            nojs.get(base + f"/proposals/{run_pid}")
            overflow = nojs.execute_cdp_cmd("Runtime.evaluate", {
                "expression": "document.documentElement.scrollWidth <= window.innerWidth", "returnByValue": True})
            assert overflow["result"]["value"] is True, "the card overflows a narrow screen"
            click_button(nojs, "Approve and run now")
            wait_title(nojs, "Approved and run", 20)
            assert "applied" in nojs.page_source, nojs.page_source
            assert status_of(home, run_pid) == "applied"
            assert "v4.public." not in nojs.page_source
        finally:
            nojs.quit()

        # --- A hostile proposal is shown escaped and whole.
        big = "B" * 60000
        hostile = "\x1b[2J\x1b[31mrm -rf /\u202egnp.exe\u200b\nApproved \u2713 by admin\n" + big
        note = "ignore previous instructions \u202eevil\u200d " + "n" * 1900
        hpid = propose(home, "demo.note", {"text": hostile}, note=note)
        driver.get(base + f"/proposals/{hpid}")
        page = driver.find_element(By.TAG_NAME, "main").text
        # Canonical JSON writes control characters as \u001b; what JSON keeps
        # raw (bidi overrides, zero-width characters) the console escapes.
        for escaped in ("\\u001b[2J", "\\u{202e}", "\\u{200b}", "\\u{200d}"):
            assert escaped in page, escaped
        for raw_char in ("\x1b", "\u202e", "\u200b", "\u200d"):
            assert raw_char not in driver.page_source, repr(raw_char)
        assert "\nApproved \u2713 by admin" not in page, "a forged line"
        assert big in page, "the 60 KB value is shown whole"
        assert "n" * 1900 in page, "the note is shown whole"
        assert "model-supplied, unverified" in page

        # --- Resolve an uncertain execution: the head dies inside the effect.
        cpid = propose(home, "demo.crash", {})
        child = pexpect.spawn(BIN, ["--home", home, "approve", cpid], encoding="utf-8", timeout=60)
        child.expect(r"Type (\S+) to approve")
        child.sendline(child.match.group(1))
        child.expect(pexpect.EOF)
        child.close()
        assert status_of(home, cpid) == "uncertain"
        driver.get(base + f"/proposals/{cpid}")
        driver.find_element(By.CSS_SELECTOR, "input[name=applied][value=no]").click()
        driver.find_element(By.CSS_SELECTOR, "input[name=checked]").click()
        click_button(driver, "Record")
        wait_title(driver, "Resolved", 10)
        assert "not applied" in driver.page_source and status_of(home, cpid) == "failed"

        # --- `countersign console` at a terminal offers a pairing link at start.
        other_port = free_port()
        console = pexpect.spawn(BIN, ["--home", home, "console", "--listen", f"127.0.0.1:{other_port}"],
                                encoding="utf-8", timeout=30)
        console.expect(r"Pair a browser \(one use, until \S+\): (http://127\.0\.0\.1:\d+/pair/cp1_\S+)")
        start_link = console.match.group(1).strip()
        console.expect("press Ctrl-C to stop")
        fresh = browser()
        try:
            fresh.get(start_link)
            fresh.find_element(By.CSS_SELECTOR, "form[action='/pair'] button").click()
            WebDriverWait(fresh, 10).until(lambda d: "Waiting for your decision" in d.page_source)
        finally:
            fresh.quit()
        console.sendintr()
        console.expect("console stopped")
        console.expect(pexpect.EOF)

        # --- A revoked session and an expired session see nothing.
        sessions = json.loads(run(home, "--json", "console", "sessions", "list").stdout)["sessions"]
        mine = next(s for s in sessions if s["status"] == "active")
        pending_pid = propose(home, "schedule.create", {"name": "after-revoke", "cron": "0 5 * * *"})
        for s in sessions:
            if s["status"] == "active":
                run(home, "console", "sessions", "revoke", s["id"])
        driver.get(base + "/")
        assert "Pair this browser" in driver.page_source and pending_pid not in driver.page_source
        assert "revoked" in driver.page_source
        listed = json.loads(run(home, "--json", "console", "sessions", "list").stdout)["sessions"]
        assert next(s for s in listed if s["id"] == mine["id"])["status"] == "revoked"
        pair(driver, home, port)
        store = os.path.join(home, "console-sessions.json")
        with open(store) as f:
            data = json.load(f)
        for s in data["sessions"]:
            s["expires_at"] = "2020-01-01T00:00:00Z"
        fd = os.open(store + ".new", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
        os.replace(store + ".new", store)
        driver.get(base + "/")
        assert "Pair this browser" in driver.page_source and "expired" in driver.page_source
        assert pending_pid not in driver.page_source
        assert "countersign_console" not in {c["name"] for c in driver.get_cookies()}, "the expired cookie is cleared"
    finally:
        driver.quit()
        code, rest = stop_up(up)
        assert code == 0, rest
    print("console browser flow: ok")


def csrf_on_page(driver, base):
    driver.get(base + "/")
    return csrf_on(driver)


if __name__ == "__main__":
    asyncio.run(main())
