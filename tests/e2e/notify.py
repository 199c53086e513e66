#!/usr/bin/env python3
"""Notifications end to end with the real binaries: `countersign up
--console` runs the signer process with a `[notify]` webhook to a sink in
this script, which checks each Standard Webhooks signature with Python's
own hmac (an implementation independent of the signer's) and fails the
first attempt. A proposal made at the CLI is notified; `countersign notify
status` shows the retry and the delivery; the notification holds no proof;
and opening its console link (unpaired, then as a paired browser would)
decides nothing: the proposal is still pending and nothing was issued.

Usage: notify.py  (env COUNTERSIGN_BIN = path of the countersign binary;
countersign-signer must sit next to it)
"""
import base64
import hashlib
import hmac
import http.server
import json
import os
import re
import sqlite3
import threading
import time
import urllib.parse

import pexpect

from harness import BIN, COOKIE, console_base, console_host, console_port, console_raw, new_home, run, start_up, stop_up

SECRET = "whsec_" + base64.b64encode(os.urandom(32)).decode()
KEY = base64.b64decode(SECRET[len("whsec_"):])


class Sink(http.server.BaseHTTPRequestHandler):
    received = []
    failures_left = 1

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        msg_id = self.headers["webhook-id"]
        ts = self.headers["webhook-timestamp"]
        signed = f"{msg_id}.{ts}.".encode() + body
        expected = base64.b64encode(hmac.new(KEY, signed, hashlib.sha256).digest()).decode()
        given = [s[3:] for s in self.headers["webhook-signature"].split(" ") if s.startswith("v1,")]
        valid = any(hmac.compare_digest(expected, g) for g in given) and abs(time.time() - int(ts)) < 300
        Sink.received.append({"headers": dict(self.headers), "body": body, "valid": valid})
        if not valid:
            self.send_response(401)
        elif Sink.failures_left > 0:
            Sink.failures_left -= 1
            self.send_response(503)
        else:
            self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def paired_cookie(home, port):
    """Pairs as a browser would: the link from `countersign console pair`
    at a terminal, its code POSTed to /pair over https; the session cookie
    and the page key the answer hands the page."""
    child = pexpect.spawn(BIN, ["--home", home, "console", "pair"], encoding="utf-8", timeout=30)
    child.expect(r"https://console\.localhost:\d+/pair/(cp1_[0-9a-f]{16}_[A-Za-z0-9_-]{43})")
    code = child.match.group(1)
    child.expect(pexpect.EOF)
    child.close()
    status, headers, page = console_raw(home, port, "POST", "/pair", {
        "Host": console_host(port),
        "Origin": console_base(port),
        "Sec-Fetch-Site": "same-origin",
    }, {"code": code})
    cookie = headers.get("set-cookie", "")
    assert status == 200 and cookie.startswith(COOKIE + "="), (status, cookie)
    key = re.search(r'id="new-page-key"[^>]*data-key="(ck1_[^"]+)"', page).group(1)
    return cookie.split(";")[0], key


def issuances(home):
    with sqlite3.connect(os.path.join(home, "ledger.db")) as db:
        return db.execute("SELECT COUNT(*) FROM issuances").fetchone()[0]


def main():
    sink = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    tmp, home = new_home("cs-notify-")
    secret_path = os.path.join(tmp, "whsec")
    fd = os.open(secret_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(SECRET + "\n")
    config = os.path.join(home, "config.toml")
    with open(config, "a") as f:
        f.write(
            "\n[notify]\nretry_initial_ms = 200\n"
            f'[notify.webhook]\nurl = "http://127.0.0.1:{sink.server_address[1]}/hook"\n'
            f'secret_file = "{secret_path}"\n'
        )
    port = console_port(home)
    up, up_lines = start_up(home, "--console")
    try:
        started = time.time()
        pid = json.loads(run(home, "--json", "propose", "schedule.create", "--args-file", "-",
                             stdin=json.dumps({"name": "nightly", "cron": "0 3 * * *"})).stdout)["id"]
        assert time.time() - started < 10

        deadline = time.time() + 30
        while True:
            status = json.loads(run(home, "--json", "notify", "status").stdout)
            webhook = status["channels"][0]
            if webhook["delivered"] == 1:
                break
            assert time.time() < deadline, status
            time.sleep(0.1)
        assert status["enabled"] is True, status
        delivery = webhook["deliveries"][0]
        assert delivery["proposal_id"] == pid and delivery["state"] == "delivered", delivery
        assert delivery["attempts"] == 2, delivery
        assert delivery["last_error"] == "the receiver answered status 503", delivery
        text = run(home, "notify", "status").stdout
        assert text.startswith("webhook: 1 delivered, 0 pending, 0 failed\n"), text
        assert f"delivered {pid} schedule.create attempts 2 last error: the receiver answered status 503" in text, text

        assert len(Sink.received) == 2 and all(r["valid"] for r in Sink.received), Sink.received
        assert {r["headers"]["webhook-id"] for r in Sink.received} == {delivery["delivery_id"]}
        body = json.loads(Sink.received[-1]["body"])
        link = f"{console_base(port)}/proposals/{pid}"
        assert body["type"] == "proposal.waiting" and body["data"]["console_url"] == link, body
        for r in Sink.received:
            assert "v4.public." not in json.dumps(r["headers"]) + r["body"].decode(), r

        # The link decides nothing on GET: unpaired, it asks to pair; paired (the
        # page's script sends its key), it shows the proposal. Either way the proposal stays pending, unissued.
        path = urllib.parse.urlparse(link).path
        host = {"Host": console_host(port)}
        status_code, _, page = console_raw(home, port, "GET", path, dict(host))
        assert status_code == 401 and "Pair this browser" in page, (status_code, page[:300])
        cookie, key = paired_cookie(home, port)
        for _ in range(2):
            status_code, _, page = console_raw(home, port, "GET", path, {**host, "Cookie": cookie,
                                                                         "X-Countersign-Page-Key": key})
            assert status_code == 200 and pid in page, (status_code, page[:300])
        shown = json.loads(run(home, "--json", "show", pid).stdout)
        assert shown["status"] == "pending", shown
        assert issuances(home) == 0
    finally:
        code, rest = stop_up(up)
        sink.shutdown()
    assert code == 0, rest
    log = "".join(up_lines) + rest
    assert "notification delivered" in log, log
    assert SECRET not in log and SECRET[len("whsec_"):] not in log and KEY.hex() not in log, "the secret reached a log"
    print("notify e2e: ok")


if __name__ == "__main__":
    main()
