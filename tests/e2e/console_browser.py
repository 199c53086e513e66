#!/usr/bin/env python3
"""The approval console in a real browser: Debian's Chromium, headless,
driven through chromedriver by Selenium, against a real `countersign up
--console`, with the official MCP Python SDK as the agent.

The console is served at https://console.localhost:PORT only, with a
certificate from the home's name-constrained console CA; the browser trusts
it through the NSS database of a throwaway $HOME made by the real
`countersign console trust --import`. Non-browser requests go to 127.0.0.1
with console.localhost in SNI and Host.

A person supervises an MCP agent from the browser alone: pairing through a
one-time link made at a real pseudo-terminal (the answer hands the page a
page key, kept in the origin's localStorage); a proposal made over MCP
appearing live in the pending list (count in the title); approve for the
proposing session and the MCP head executing it exactly once; approve and
run now; deny with a reason; revoke; resolve an uncertain execution; a
premise shown as the signer read it, and a decision refused once it moved. And
what must not work: an unpaired, revoked or expired session sees nothing;
plain http gets only a redirect to the https root; a page on another origin
posting to the console, a request with a rebinding Host (or the bare
127.0.0.1), a POST without the page key or with a wrong one, and a second
decision are refused and change nothing.

Another OS user (`cs-attacker`, a real system user; the script creates it,
so it runs as root, and skips these cases otherwise): cannot listen on the
console's port on [::1] or 127.0.0.1 while the console runs, and a server it
runs on 127.0.0.2:PORT is never reached by the browser opening the console;
its plain-http server on another port, opened by the paired browser as
http://console.localhost:Q/, may get the session cookie (recorded), but
with that cookie every page it GETs is the empty page and the event stream
is refused, any page key it finds or guesses is refused (403), and a POST
with that cookie is refused (page key) and changes nothing; and holding [::1]:PORT it makes
`countersign console` refuse to start, naming that address. A hostile proposal (ANSI escapes, a right-to-left override,
zero-width characters, a fake "Approved" line, a 60 KB value: the largest a
signer accepts is 64 KB of canonical arguments, and a note is at most 2000
characters) is shown escaped and whole. Reading and deciding need
JavaScript (the console's script sends the page key with every read and
puts it in every form): a no-JS browser is told so and shown nothing of a
proposal. Pages work by keyboard alone, and on a narrow screen.

Screenshots of the pending list and of a card are written to
$COUNTERSIGN_SCREENSHOTS (if set).

Usage: console_browser.py  (env COUNTERSIGN_BIN = path of the countersign
binary; countersign-signer must sit next to it)
"""
import asyncio
import http.server
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time

import pexpect
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from harness import (BIN, COOKIE, console_base, console_host, console_port, console_raw, free_port, new_home,
                     page_key, run, start_up, stop_up, trusting_home)

PAGE_KEY_REFUSED = "does not carry the page key of this browser's pairing"
ATTACKER = "cs-attacker"

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


def browser(browser_home, javascript=True, width=1200, height=900):
    """Headless Chromium whose $HOME (`browser_home`, from `trusting_home`)
    trusts the console CA."""
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", f"--window-size={width},{height}"):
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tempfile.mkdtemp(prefix='cs-chrome-')}")
    if not javascript:
        options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver",
                      env={**os.environ, "HOME": browser_home})
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(30)
    if javascript:
        # A console page arrives empty ("Loading…") and its script fetches it
        # with the page key: a navigation is done when the page is in place.
        navigate = driver.get

        def get(url):
            navigate(url)
            WebDriverWait(driver, 20).until(lambda d: d.execute_script(
                "return !document.getElementById('load') && (document.documentElement.hasAttribute('data-ready')"
                " || !document.querySelector('script[src=\"/assets/console.js\"]'))"))

        driver.get = get
    return driver


def status_of(home, pid):
    return json.loads(run(home, "--json", "show", pid).stdout)["status"]


def pair_link(home, port):
    """A person runs `countersign console pair` at a terminal; the link is
    shown there (and not on stdout)."""
    child = pexpect.spawn(BIN, ["--home", home, "console", "pair"],
                          encoding="utf-8", timeout=30)
    child.expect(r"(https://console\.localhost:\d+/pair/cp1_[0-9a-f]{16}_[A-Za-z0-9_-]{43})")
    link = child.match.group(1)
    assert link.startswith(console_base(port) + "/pair/"), link
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    return link


def pair(driver, home, port, javascript=True):
    """Pair through a fresh link. With JavaScript the paired page keeps the
    page key and goes on to the pending list; without, it only says paired."""
    driver.get(pair_link(home, port))
    driver.find_element(By.CSS_SELECTOR, "form[action='/pair'] button").click()
    if javascript:
        WebDriverWait(driver, 10).until(lambda d: "Waiting for your decision" in d.page_source)
        assert (page_key(driver) or "").startswith("ck1_"), "the page key is kept in localStorage"
    else:
        WebDriverWait(driver, 10).until(lambda d: "This browser is paired" in d.page_source)
        driver.get(console_base(port) + "/")
        WebDriverWait(driver, 10).until(lambda d: "Turn JavaScript on for this site" in d.page_source)


def propose(home, op, args, note=""):
    extra = ["--note", note] if note else []
    out = run(home, "--json", "propose", op, "--args-file", "-", *extra, stdin=json.dumps(args)).stdout
    return json.loads(out)["id"]


def session_cookie(driver):
    return next(c for c in driver.get_cookies() if c["name"] == COOKIE)


def plain_http(port, path, host):
    """One plain-http request to the console's port: what it answers."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nCookie: {COOKIE}=x\r\n\r\n".encode())
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    return data.decode("latin-1")


def wait_title(driver, word, seconds=10):
    """Wait until the page title names `word`; fail with what the page says."""
    try:
        WebDriverWait(driver, seconds).until(lambda d: word in d.title)
    except Exception:
        raise AssertionError(f"expected a page titled {word!r}, got {driver.title!r}: "
                             f"{driver.find_element(By.TAG_NAME, 'body').text[:2000]}")


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
    page = f"""<!doctype html><form id=f method=post action="{console_base(target_port)}/proposals/{pid}/approve">
<input name=delivery value=handoff><input name=page_key value=guess></form>
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


# --- Another OS user on the same host ----------------------------------------
# Its programs run as `cs-attacker` (runuser), with Debian's python3 (the
# test's own interpreter may sit in a home it cannot read).

ATTACKER_BIND = r"""
import errno, json, socket, sys
port = int(sys.argv[1])
out = {}
for family, host in ((socket.AF_INET6, "::1"), (socket.AF_INET, "127.0.0.1")):
    for reuse in (False, True):
        s = socket.socket(family, socket.SOCK_STREAM)
        if reuse:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        try:
            s.bind((host, port))
            s.listen()
            out[f"{host} reuse={reuse}"] = "bound"
        except OSError as e:
            out[f"{host} reuse={reuse}"] = errno.errorcode.get(e.errno, str(e.errno))
        s.close()
print(json.dumps(out))
"""

ATTACKER_SERVER = r"""
import json, socket, sys, threading
addrs = json.loads(sys.argv[1])
page = b"<!doctype html><title>attacker</title><p>ATTACKER PAGE</p>"
def handle(conn, peer):
    conn.settimeout(5)
    data = b""
    try:
        while b"\r\n\r\n" not in data and len(data) < 65536:
            chunk = conn.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    head = data.split(b"\r\n\r\n")[0].decode("latin-1")
    print(json.dumps({"peer": peer[0], "head": head}), flush=True)
    try:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                     % len(page) + page)
    except OSError:
        pass
    conn.close()
def serve(sock):
    while True:
        conn, peer = sock.accept()
        threading.Thread(target=handle, args=(conn, peer), daemon=True).start()
socks = []
for host, port in addrs:
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    s.bind((host, port))
    s.listen(16)
    socks.append(s)
print(json.dumps({"listening": addrs}), flush=True)
for s in socks[1:]:
    threading.Thread(target=serve, args=(s,), daemon=True).start()
serve(socks[0])
"""

ATTACKER_FORGE = r"""
import json, re, socket, ssl, sys, urllib.parse
port, pid, cookie = int(sys.argv[1]), sys.argv[2], sys.argv[3]
host = f"console.localhost:{port}"
context = ssl._create_unverified_context()
def request(method, path, body=None, key=None):
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock = context.wrap_socket(raw, server_hostname="console.localhost")
    head = (f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nCookie: {cookie}\r\nOrigin: https://{host}\r\n"
            "Sec-Fetch-Site: same-origin\r\nConnection: close\r\n")
    if key is not None:
        head += f"X-Countersign-Page-Key: {key}\r\n"
    data = urllib.parse.urlencode(body).encode() if body is not None else b""
    if body is not None:
        head += f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(data)}\r\n"
    sock.sendall(head.encode() + b"\r\n" + data)
    reply = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except (ssl.SSLError, OSError):
            break
        if not chunk:
            break
        reply += chunk
    sock.close()
    text = reply.decode("utf-8", "replace")
    return int(text.split(" ", 2)[1]), text
out = {"pages": {}, "keyed": [], "posts": []}
candidates = {"", "guess", cookie.split("=", 1)[1]}
for path in ("/", f"/proposals/{pid}", "/history", "/rules", "/devices", "/passkeys", "/events"):
    status, text = request("GET", path)
    out["pages"][path] = {"status": status, "has_ck1": "ck1_" in text, "has_pid": pid in text,
                          "empty": 'id="load"' in text or "sent only to the console's own script" in text}
    candidates.update(re.findall(r'value="([^"]*)"', text))
    candidates.update(re.findall(r"ck1_[A-Za-z0-9_-]+", text))
for key in sorted(candidates):
    for path in ("/", f"/proposals/{pid}"):
        status, text = request("GET", path, key=key)
        out["keyed"].append({"key": key, "path": path, "status": status, "has_pid": pid in text})
for key in sorted(candidates):
    status, text = request("POST", f"/proposals/{pid}/approve", {"delivery": "handoff", "page_key": key})
    out["posts"].append({"key": key, "status": status, "refused": "does not carry the page key" in text})
status, text = request("POST", f"/proposals/{pid}/approve", {"delivery": "handoff"})
out["posts"].append({"key": None, "status": status, "refused": "does not carry the page key" in text})
print(json.dumps(out))
"""


def host_has_ipv6():
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def attacker_command(code, *args):
    return ["runuser", "-u", ATTACKER, "--", "/usr/bin/python3", "-c", code, *map(str, args)]


def attacker_ready():
    """The attacker user exists (created if missing); False if this script
    cannot act as another user (not root)."""
    if os.geteuid() != 0 or not shutil.which("runuser"):
        return False
    if subprocess.run(["id", "-u", ATTACKER], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "--system", "--no-create-home", ATTACKER], check=True)
    return True


class AttackerServer:
    """A server the attacker runs on `addrs` [(host, port)], recording every
    request head it gets."""

    def __init__(self, addrs):
        self.proc = subprocess.Popen(attacker_command(ATTACKER_SERVER, json.dumps(addrs)), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, start_new_session=True)
        first = self.proc.stdout.readline()
        if not first.startswith('{"listening"'):
            self.proc.wait(timeout=10)
            raise AssertionError(f"the attacker's server did not start on {addrs}: {first}{self.proc.stderr.read()}")
        self.seen = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.seen.append(json.loads(line))

    def stop(self):
        os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(timeout=10)


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
    up, said = start_up(home, "--console")
    base = console_base(port)
    host = {"Host": console_host(port)}
    assert any(f"listening on {base}/" in line for line in said), said
    browser_home = trusting_home(home)
    driver = browser(browser_home)
    try:
        # --- An unpaired browser sees only the pairing page.
        secret_pid = propose(home, "schedule.create", {"name": "secret-job", "cron": "0 1 * * *"})
        driver.get(base + "/")
        assert "Pair this browser" in driver.page_source
        driver.get(base + f"/proposals/{secret_pid}")
        assert secret_pid not in driver.page_source and "secret-job" not in driver.page_source
        status, _, text = console_raw(home, port, "GET", "/history", host)
        assert status == 401 and secret_pid not in text, (status, text)
        run(home, "deny", secret_pid, "--reason", "setup")

        # --- HTTPS only: plain http gets one fixed redirect to the root (the
        # path, a pairing code say, is dropped), in the browser too.
        answer = plain_http(port, "/pair/cp1_0000000000000000_x?y", console_host(port))
        assert answer.startswith("HTTP/1.1 301"), answer
        assert f"\r\nLocation: {base}/\r\n" in answer and "cp1_" not in answer, answer
        driver.get(f"http://console.localhost:{port}/history")
        assert driver.current_url == base + "/", driver.current_url
        assert "Pair this browser" in driver.page_source
        # The certificate vouches for console.localhost only, not for an IP address.
        try:
            console_raw(home, port, "GET", "/", host, server_hostname="127.0.0.1")
            raise AssertionError("the console certificate was accepted for 127.0.0.1")
        except ssl.SSLCertVerificationError:
            pass

        # --- Pairing: a one-time link from the terminal; cookie flags.
        link = pair_link(home, port)
        driver.get(link)
        assert COOKIE not in {c["name"] for c in driver.get_cookies()}, "GET must not pair"
        driver.find_element(By.CSS_SELECTOR, "form[action='/pair'] button").click()
        WebDriverWait(driver, 10).until(lambda d: "Waiting for your decision" in d.page_source)
        assert driver.current_url == base + "/", driver.current_url
        cookie = session_cookie(driver)
        assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict" and cookie["path"] == "/", cookie
        assert cookie["secure"] is True, cookie
        key = page_key(driver)
        assert key and key.startswith("ck1_") and key != cookie["value"], key
        status, _, text = console_raw(home, port, "GET", "/", {**host, "Cookie": f"{COOKIE}={cookie['value']}"})
        assert status == 200 and 'id="load"' in text and "Waiting for your decision" not in text, \
            "a navigation (the cookie alone) gets the empty page"
        status, _, text = console_raw(home, port, "GET", "/", {**host, "Cookie": f"{COOKIE}={cookie['value']}",
                                                               "X-Countersign-Page-Key": key})
        assert status == 200 and "Waiting for your decision" in text and key not in text and "ck1_" not in text, \
            "the page key stays out of the pages the console serves"
        assert driver.find_element(By.CSS_SELECTOR, "input[name=page_key]").get_attribute("value") == key
        # The link is single use.
        other = browser(browser_home)
        try:
            other.get(link)
            other.find_element(By.CSS_SELECTOR, "form[action='/pair'] button").click()
            WebDriverWait(other, 10).until(lambda d: "already used" in d.page_source)
            assert COOKIE not in {c["name"] for c in other.get_cookies()}
            assert not page_key(other)
        finally:
            other.quit()
        # The raw answer to a pairing, from a second code: the cookie's flags,
        # and the page key handed to the page alone (not in the cookie).
        code = pair_link(home, port).rsplit("/", 1)[1]
        status, headers, text = console_raw(home, port, "POST", "/pair", {**host, "Origin": base}, {"code": code})
        set_cookie = headers.get("set-cookie", "")
        assert status == 200 and set_cookie.startswith(COOKIE + "=cc1_") and "HttpOnly" in set_cookie \
            and "SameSite=Strict" in set_cookie and "Path=/" in set_cookie and "Secure" in set_cookie \
            and "Domain" not in set_cookie, (status, headers)
        handed = re.search(r'id="new-page-key"[^>]*data-key="(ck1_[^"]+)"', text)
        assert handed and handed.group(1) not in set_cookie, text

        # --- Security headers on every page.
        status, headers, _ = console_raw(home, port, "GET", "/", host)
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
                assert "handed off to session" in driver.page_source
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
                cookie_header = {"Cookie": f"{COOKIE}={session_cookie(driver)['value']}"}
                key = page_key(driver)
                status, _, text = console_raw(home, port, "POST", f"/proposals/{pid}/approve",
                                              {**host, **cookie_header}, {"page_key": key, "delivery": "handoff"})
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
                status, _, text = console_raw(home, port, "POST", f"/proposals/{dpid}/approve",
                                              {**host, **cookie_header}, {"page_key": key, "delivery": "run"})
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

                # --- Cross-origin POST from another site, a rebinding Host (or the bare
                # address), a POST without the page key or with a wrong one: refused,
                # nothing changes.
                result, text = await call(mcp, "propose_schedule_create",
                                          {"arguments": {"name": "cross-site", "cron": "0 4 * * *"}})
                xpid = result.structured_content["id"]
                evil = evil_site(port, xpid)
                driver.get(f"http://localhost:{evil.server_port}/")
                time.sleep(2)
                assert status_of(home, xpid) == "pending"
                driver.get(base + f"/proposals/{xpid}")
                key = page_key(driver)
                for headers, why in (
                    ({"Host": f"evil.example:{port}"}, "DNS rebinding"),
                    ({"Host": f"127.0.0.1:{port}"}, "DNS rebinding"),
                    ({"Host": f"localhost:{port}"}, "DNS rebinding"),
                    ({**host, "Origin": "http://evil.example"}, "cross-origin"),
                    ({**host, "Origin": f"http://console.localhost:{port}"}, "cross-origin"),
                    ({**host, "Sec-Fetch-Site": "cross-site"}, "cross-site"),
                ):
                    status, _, text = console_raw(home, port, "POST", f"/proposals/{xpid}/approve",
                                                  {**headers, **cookie_header}, {"page_key": key, "delivery": "handoff"})
                    assert status == 403 and why in text, (headers, status, text)
                    status, _, text = console_raw(home, port, "GET", f"/proposals/{xpid}", {**headers, **cookie_header})
                    assert status == 403 and "cross-site" not in text.split("<main")[0], status
                for body in ({"delivery": "handoff"}, {"delivery": "handoff", "page_key": ""},
                             {"delivery": "handoff", "page_key": cookie_header["Cookie"].split("=", 1)[1]},
                             {"delivery": "handoff", "page_key": "ck1_" + key[4:20] + "_" + "A" * 43}):
                    status, _, text = console_raw(home, port, "POST", f"/proposals/{xpid}/approve",
                                                  {**host, "Origin": base, **cookie_header}, body)
                    assert status == 403 and PAGE_KEY_REFUSED in text, (body, status, text)
                # Nothing changes on GET: every decision route (and sign-out) is POST only.
                for path in (f"/proposals/{xpid}/approve", f"/proposals/{xpid}/deny", f"/proposals/{xpid}/revoke",
                             f"/proposals/{xpid}/resolve", "/logout", "/pair"):
                    status, _, _ = console_raw(home, port, "GET", path + "?page_key=" + key + "&delivery=handoff&reason=x",
                                               {**host, **cookie_header})
                    assert status == 405, (path, status)
                status, _, _ = console_raw(home, port, "GET", "/", {**host, **cookie_header})
                assert status == 200, "the session survived GET /logout"
                assert status_of(home, xpid) == "pending"
                evil.shutdown()

                # --- Deny with a reason (keyboard only), and an empty reason refused.
                status, _, text = console_raw(home, port, "POST", f"/proposals/{xpid}/deny",
                                              {**host, **cookie_header}, {"page_key": key, "reason": "  "})
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

        # --- A browser without JavaScript, on a phone-sized screen: it pairs,
        # but holds no page key, so it reads nothing and is told why.
        nojs = browser(browser_home, javascript=False, width=390, height=844)
        try:
            pair(nojs, home, port, javascript=False)
            run_pid = propose(home, "schedule.create", {"name": "run-now", "cron": "5 4 * * *"})
            nojs.get(base + f"/proposals/{run_pid}")
            body = nojs.find_element(By.TAG_NAME, "body").text
            assert "Turn JavaScript on for this site" in body, body
            assert "run-now" not in nojs.page_source and run_pid not in nojs.page_source
            assert not nojs.find_elements(By.CSS_SELECTOR, "form[action^='/proposals/']")
            overflow = nojs.execute_cdp_cmd("Runtime.evaluate", {
                "expression": "document.documentElement.scrollWidth <= window.innerWidth", "returnByValue": True})
            assert overflow["result"]["value"] is True, "the notice overflows a narrow screen"
            assert status_of(home, run_pid) == "pending"
            run(home, "deny", run_pid, "--reason", "no-js check")
        finally:
            nojs.quit()

        if attacker_ready():
            await hostile_os_user(home, port, driver)
        else:
            print("hostile OS-user cases SKIPPED: they need root (runuser, useradd)")

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
        console.expect(r"Pair a browser \(one use, until \S+\): (https://console\.localhost:\d+/pair/cp1_\S+)")
        start_link = console.match.group(1).strip()
        assert start_link.startswith(console_base(other_port) + "/pair/"), start_link
        console.expect("press Ctrl-C to stop")
        fresh = browser(browser_home)
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
        store = os.path.join(home, "console-sessions-console.json")
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
        assert COOKIE not in {c["name"] for c in driver.get_cookies()}, "the expired cookie is cleared"
    finally:
        driver.quit()
        code, rest = stop_up(up)
        assert code == 0, rest
    print("console browser flow: ok")


async def hostile_os_user(home, port, driver):
    """Another OS user against the running console and the paired browser."""
    base = console_base(port)
    has_ipv6 = host_has_ipv6()
    # (1) It cannot listen on the console's port on either loopback address,
    # not even with SO_REUSEADDR/SO_REUSEPORT. (A host without ::1 gives
    # nobody that address.)
    probe = subprocess.run(attacker_command(ATTACKER_BIND, port), capture_output=True, text=True, timeout=30)
    binds = json.loads(probe.stdout)
    assert len(binds) == 4, (binds, probe.stderr)
    for where, result in binds.items():
        expected = "EADDRINUSE" if has_ipv6 or not where.startswith("::1") else "EADDRNOTAVAIL"
        assert result == expected, (where, result, binds)
    # A server of its own on 127.0.0.2, same port: the browser opening the
    # console's name never reaches it.
    squatter = AttackerServer([["127.0.0.2", port]])
    try:
        driver.get(base + "/")
        WebDriverWait(driver, 10).until(lambda d: "Waiting for your decision" in d.page_source)
        assert "ATTACKER PAGE" not in driver.page_source
        for path in ("/history", "/"):
            driver.get(base + path)
        assert "ATTACKER PAGE" not in driver.page_source and driver.current_url == base + "/"
        time.sleep(0.5)
        assert squatter.seen == [], squatter.seen
        # It was listening all along.
        with socket.create_connection(("127.0.0.2", port), timeout=5) as s:
            s.sendall(b"GET /probe HTTP/1.1\r\nHost: x\r\n\r\n")
            assert b"ATTACKER PAGE" in s.recv(4096)
    finally:
        squatter.stop()

    # (2) Its plain-http server on another port, opened by the paired person's
    # browser by the console's name: whatever cookie it gets, it cannot decide.
    pid = propose(home, "schedule.create", {"name": "attacker-target", "cron": "0 6 * * *"})
    q = free_port()
    catcher = AttackerServer(([["::1", q]] if has_ipv6 else []) + [["127.0.0.1", q]])
    try:
        driver.get(f"http://console.localhost:{q}/")
        WebDriverWait(driver, 10).until(lambda d: "ATTACKER PAGE" in d.page_source)
        time.sleep(0.5)
        heads = [s["head"] for s in catcher.seen]
    finally:
        catcher.stop()
    captured = None
    for head in heads:
        for line in head.split("\r\n"):
            if line.lower().startswith("cookie:"):
                found = re.search(re.escape(COOKIE) + r"=([^;\s]+)", line)
                if found:
                    captured = found.group(1)
    real = session_cookie(driver)["value"]
    print(f"Chromium sent the {COOKIE} cookie to http://console.localhost:{q}/ (another user's port): "
          f"{'yes' if captured else 'no'}")
    assert captured in (None, real), (captured, heads)
    # Whether or not it was sent, the worst case: the attacker holds the real cookie.
    stolen = captured or real
    forged = subprocess.run(attacker_command(ATTACKER_FORGE, port, pid, f"{COOKIE}={stolen}"),
                            capture_output=True, text=True, timeout=120)
    assert forged.returncode == 0, forged.stderr
    out = json.loads(forged.stdout)
    assert not any(p["has_ck1"] for p in out["pages"].values()), out["pages"]
    # The cookie alone reads an empty page everywhere (the event stream is
    # refused), and with any key it could find or guess, a refusal.
    assert all(p["empty"] and not p["has_pid"] for p in out["pages"].values()), out["pages"]
    assert out["keyed"] and all(k["status"] == 403 and not k["has_pid"] for k in out["keyed"]), out["keyed"]
    print("with that cookie the other user GETs: " +
          ", ".join(f"{path} {page['status']} (empty)" for path, page in out["pages"].items()) +
          f"; with {len(out['keyed'])} found or guessed page keys: 403")
    assert out["posts"] and all(p["status"] == 403 and p["refused"] for p in out["posts"]), out["posts"]
    assert status_of(home, pid) == "pending"
    # The person's own browser still decides (its page key is intact).
    driver.get(base + f"/proposals/{pid}")
    click_button(driver, "Approve for the proposing session")
    wait_title(driver, "Approved", 10)
    assert status_of(home, pid) != "pending"

    # (3) Holding [::1]:P it makes a console on 127.0.0.1:P refuse to start,
    # naming the address taken.
    if not has_ipv6:
        print("the [::1] squatting case SKIPPED: this host has no ::1")
        return
    p = free_port()
    holder = AttackerServer([["::1", p]])
    try:
        started = subprocess.run([BIN, "--home", home, "console", "--listen", f"127.0.0.1:{p}"],
                                 capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    finally:
        holder.stop()
    assert started.returncode != 0, (started.returncode, started.stderr)
    assert f"[::1]:{p}" in started.stderr and "already taken" in started.stderr, started.stderr
    # and it let 127.0.0.1:P go again.
    with socket.socket() as s:
        s.bind(("127.0.0.1", p))


if __name__ == "__main__":
    asyncio.run(main())
