#!/usr/bin/env python3
"""Web Push end to end with the real binaries, checked by independent
implementations: `countersign up --console` with a `[notify.push]`
channel, and a local RFC 8030 push service written here (plain http on
127.0.0.1, which the channel allows only to a loopback address). Each
"browser" is paired the way a person pairs one, makes its own P-256 key
pair and auth secret, and registers its subscription through the
console's subscribe endpoint with its page key, as the console's script
does. Then:

- the console serves the VAPID public key (notify/vapid.pub, made by
  `init`, 0600 like the private key) to a paired browser only;
- each push's VAPID JWT verifies (py-vapid's JWT code) with the served
  public key, with `aud` the endpoint's origin, `exp` within 24 hours and
  `sub` the configured contact; TTL, Urgency and Content-Encoding are set;
- http_ece decrypts the body with the subscription's private key and auth
  secret, and it holds only the proposal id and operation;
- a push service answering 410 drops that subscription (nothing more is
  pushed to it); one answering 500 is retried per the retry policy, and
  `countersign notify status` shows the attempts and the reason;
- a device unpaired (from another device) or revoked (`console sessions
  revoke`) receives nothing more, and the unpaired one's session approves
  nothing (the proposal stays pending);
- a console giving browsers another VAPID key than the notify process
  signs with gets nothing sent: the delivery fails at once, naming the
  file to copy;
- refused subscriptions (no page key, a plain-http endpoint off loopback,
  not a subscription) keep nothing, with the exact refusal; "Stop
  notifying this device" needs the page key too, and then that device
  gets nothing; no auth secret reaches a log.

Usage: push.py  (env COUNTERSIGN_BIN = path of the countersign binary;
countersign-signer must sit next to it)
"""
import base64
import datetime
import html
import http.server
import json
import os
import re
import stat
import threading
import time

import http_ece
import pexpect
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from py_vapid import jwt as vapid_jwt

from harness import BIN, COOKIE, console_base, console_host, console_port, console_raw, new_home, run, start_up, stop_up


NO_PAGE_KEY = ("This request does not carry the page key of this browser's pairing (only the console's own pages, "
               "with JavaScript on, hold it); nothing was done. If this browser's site data was cleared, pair it again "
               "with <code>countersign console pair</code>.")


def b64u(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class PushService(http.server.BaseHTTPRequestHandler):
    """An RFC 8030 push service: POST /push/NAME stores the message; the
    answer for NAME is taken from `answers` (201 Created by default)."""
    received = {}
    answers = {}
    lock = threading.Lock()

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        name = self.path.rsplit("/", 1)[-1]
        with PushService.lock:
            PushService.received.setdefault(name, []).append({"headers": dict(self.headers), "body": body, "at": time.time()})
            status = PushService.answers.get(name, 201)
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def received(name):
    with PushService.lock:
        return list(PushService.received.get(name, []))


def pair(home, port, user=None):
    """Pairs as a browser would: the link from `countersign console pair`
    at a terminal (run as `user`, when one is named), its code POSTed to
    /pair; returns the cookie, the page key the answer hands the page's
    script, and the session id."""
    argv = [BIN, "--home", home, "console", "pair"]
    if user:
        argv = ["runuser", "-u", user, "--", *argv]
    child = pexpect.spawn(argv[0], argv[1:], encoding="utf-8", timeout=30, cwd="/")
    child.expect(r"https://console\.localhost:\d+/pair/(cp1_[0-9a-f]{16}_[A-Za-z0-9_-]{43})")
    code = child.match.group(1)
    child.expect(pexpect.EOF)
    child.close()
    status, headers, page = console_raw(home, port, "POST", "/pair", same_origin(port), {"code": code})
    cookie = headers.get("set-cookie", "").split(";")[0]
    assert status == 200 and cookie.startswith(COOKIE + "="), (status, cookie)
    key = re.search(r'id="new-page-key"[^>]*data-key="(ck1_[^"]+)"', page).group(1)
    session_id = re.match(r"[^=]+=cc1_([0-9a-f]{16})_", cookie).group(1)
    return {"cookie": cookie, "page_key": key, "id": session_id}


def same_origin(port, cookie=None):
    headers = {"Host": console_host(port), "Origin": console_base(port), "Sec-Fetch-Site": "same-origin"}
    if cookie:
        headers["Cookie"] = cookie
    return headers


class Browser:
    """A browser's push subscription: its own P-256 key pair and auth secret."""

    def __init__(self, name, push_port):
        self.name = name
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.auth = os.urandom(16)
        public = self.key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        self.endpoint = f"http://127.0.0.1:{push_port}/push/{name}"
        self.json = json.dumps({"endpoint": self.endpoint, "expirationTime": None,
                                "keys": {"p256dh": b64u(public), "auth": b64u(self.auth)}})

    def decrypt(self, body):
        return http_ece.decrypt(body, private_key=self.key, auth_secret=self.auth, version="aes128gcm")


def subscribe(home, port, device, subscription_json, page_key=None):
    fields = {"subscription": subscription_json}
    if page_key is not False:
        fields["page_key"] = page_key or device["page_key"]
    return console_raw(home, port, "POST", "/push/subscribe", same_origin(port, device["cookie"]), fields)


def store(home):
    with open(os.path.join(home, "console-sessions-console.json")) as f:
        return json.load(f)


def pushed(home, pid):
    """notify status's push deliveries of proposal `pid`, by device."""
    status = json.loads(run(home, "--json", "notify", "status").stdout)
    push = next(c for c in status["channels"] if c["channel"] == "push")
    return {d["device"]: d for d in push["deliveries"] if d["proposal_id"] == pid}


def wait_for(what, check, timeout=30):
    deadline = time.time() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def propose(home, name):
    return json.loads(run(home, "--json", "propose", "schedule.create", "--args-file", "-",
                          stdin=json.dumps({"name": name, "cron": "0 3 * * *"})).stdout)["id"]


def check_push(message, browser, pid, public_key, push_port):
    headers = {k.lower(): v for k, v in message["headers"].items()}
    assert headers["content-encoding"] == "aes128gcm", headers
    assert headers["ttl"] == "600" and headers["urgency"] == "high", headers
    match = re.fullmatch(r"vapid t=([A-Za-z0-9_.-]+), k=([A-Za-z0-9_-]+)", headers["authorization"])
    assert match, headers["authorization"]
    token, k = match.groups()
    assert k == public_key, (k, public_key)
    claims = vapid_jwt.decode(token, public_key)  # raises InvalidSignature
    assert claims["aud"] == f"http://127.0.0.1:{push_port}", claims
    assert claims["sub"] == "mailto:ops@example.com", claims
    assert message["at"] < claims["exp"] <= message["at"] + 24 * 3600, claims
    header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    assert header == {"typ": "JWT", "alg": "ES256"}, header
    payload = json.loads(browser.decrypt(message["body"]))
    # The id, the operation and when its decision window closes (an hour
    # after it was proposed, the default): nothing else.
    closes = payload.pop("expires_at")
    assert payload == {"id": pid, "operation": "schedule.create"}, payload
    left = datetime.datetime.fromisoformat(closes.replace("Z", "+00:00")).timestamp() - time.time()
    assert 3000 < left <= 3600, closes
    assert b"schedule.create" not in message["body"] and pid.encode() not in message["body"]


def main():
    service = http.server.ThreadingHTTPServer(("127.0.0.1", 0), PushService)
    threading.Thread(target=service.serve_forever, daemon=True).start()
    push_port = service.server_address[1]
    tmp, home = new_home("cs-push-")
    # init made the VAPID key pair: both files private.
    for name in ("vapid.key", "vapid.pub"):
        mode = stat.S_IMODE(os.stat(os.path.join(home, "notify", name)).st_mode)
        assert mode == 0o600, (name, oct(mode))
    with open(os.path.join(home, "notify", "vapid.pub")) as f:
        public_key = f.read().strip()
    # A home without the key (made before push existed): `init` again makes
    # it and changes nothing else; a key that is there is never replaced.
    for name in ("vapid.key", "vapid.pub"):
        os.remove(os.path.join(home, "notify", name))
    made = [line for line in run(home, "init").stdout.splitlines() if line.startswith("created ")]
    assert made == [f"created {os.path.join(home, 'notify', n)}" for n in ("vapid.key", "vapid.pub")], made
    assert "created" not in run(home, "init").stdout
    with open(os.path.join(home, "notify", "vapid.pub")) as f:
        assert f.read().strip() != public_key, "a new home key"
    with open(os.path.join(home, "notify", "vapid.pub")) as f:
        public_key = f.read().strip()
    with open(os.path.join(home, "config.toml"), "a") as f:
        f.write("\n[notify]\nretry_initial_ms = 100\nretry_max_ms = 200\nmax_attempts = 3\n"
                '[notify.push]\ncontact = "mailto:ops@example.com"\nttl_secs = 600\n')
    port = console_port(home)
    up, up_lines = start_up(home, "--console")
    browsers = {}
    try:
        # The key is served to paired browsers only.
        status, _, page = console_raw(home, port, "GET", "/devices", {"Host": console_host(port)})
        assert status == 401 and public_key not in page, (status, page[:300])
        devices = {name: pair(home, port) for name in ("good", "gone", "failing", "unpaired", "revoked", "stopped")}
        status, _, page = console_raw(home, port, "GET", "/devices", {"Host": console_host(port), "Cookie": devices["good"]["cookie"],
                                                                     "X-Countersign-Page-Key": devices["good"]["page_key"]})
        assert status == 200 and f'data-push-key="{public_key}"' in page and "Notify this device" in page, page

        # Refusals keep nothing.
        probe = Browser("probe", push_port)
        status, _, page = subscribe(home, port, devices["good"], probe.json, page_key=False)
        assert status == 403 and NO_PAGE_KEY in html.unescape(page), (status, page[:400])
        offsite = probe.json.replace(f"http://127.0.0.1:{push_port}", "http://10.0.0.1")
        status, _, page = subscribe(home, port, devices["good"], offsite)
        expected = ("The subscription's endpoint is refused: plain http:// is allowed only to a loopback IP address "
                    "(127.0.0.1 or [::1]), not \"10.0.0.1\"; nothing was kept.")
        assert status == 400 and expected in html.unescape(page), (status, page)
        status, _, page = subscribe(home, port, devices["good"], '{"endpoint": 1}')
        assert status == 400 and "The subscription is not the JSON of a browser's PushSubscription; nothing was kept." in html.unescape(page), page
        assert all("push" not in s for s in store(home)["sessions"]), store(home)

        for name, device in devices.items():
            browsers[name] = Browser(name, push_port)
            status, _, page = subscribe(home, port, device, browsers[name].json)
            assert status == 200 and "This device will be notified" in page, (status, page[:400])
        PushService.answers.update({"gone": 410, "failing": 500})
        # Stop notifying this device: refused without the page key (the
        # subscription stays), then done with it (the subscription goes).
        stopped = devices["stopped"]
        status, _, page = console_raw(home, port, "POST", "/push/unsubscribe", same_origin(port, stopped["cookie"]), {})
        assert status == 403 and NO_PAGE_KEY in html.unescape(page), (status, page[:400])
        assert next(s for s in store(home)["sessions"] if s["id"] == stopped["id"]).get("push"), store(home)
        status, _, page = console_raw(home, port, "POST", "/push/unsubscribe", same_origin(port, stopped["cookie"]),
                                      {"page_key": stopped["page_key"]})
        assert status == 200 and "This device is no longer notified." in page, (status, page[:400])
        assert "push" not in next(s for s in store(home)["sessions"] if s["id"] == stopped["id"]), store(home)
        kept = {s["id"]: s.get("push") for s in store(home)["sessions"]}
        assert kept[devices["good"]["id"]]["endpoint"] == browsers["good"].endpoint, kept

        # One device unpaired from another before the proposal: its
        # subscription ends with its session.
        status, _, page = console_raw(home, port, "POST", f"/devices/{devices['unpaired']['id']}/unpair",
                                      same_origin(port, devices["good"]["cookie"]), {"page_key": devices["good"]["page_key"]})
        assert status == 200 and "is no longer paired" in page, (status, page[:400])
        unpaired = next(s for s in store(home)["sessions"] if s["id"] == devices["unpaired"]["id"])
        assert "push" not in unpaired and unpaired["revoked_at"], unpaired

        first = propose(home, "nightly")
        by_device = wait_for("the first proposal's pushes to settle", lambda: (
            lambda d: d if len(d) == 4 and all(x["state"] != "pending" for x in d.values()) else None)(pushed(home, first)))
        assert by_device[devices["good"]["id"]]["state"] == "delivered", by_device
        assert by_device[devices["revoked"]["id"]]["state"] == "delivered", by_device
        gone = by_device[devices["gone"]["id"]]
        assert gone["state"] == "failed" and gone["attempts"] == 1, gone
        assert gone["last_error"] == "the push service answered status 410: the subscription is gone, nothing more is pushed to it", gone
        failing = by_device[devices["failing"]["id"]]
        assert failing["state"] == "failed" and failing["attempts"] == 3, failing
        assert failing["last_error"] == "the push service answered status 500", failing
        assert devices["unpaired"]["id"] not in by_device, by_device
        text = run(home, "notify", "status").stdout
        assert text.startswith("push: 2 delivered, 0 pending, 2 failed\n"), text
        assert (f"failed    {first} schedule.create attempts 3 device {devices['failing']['id']} "
                "last error: the push service answered status 500") in text, text

        # A lost phone, unpaired: its session decides nothing, whatever the
        # POST carries (a passkey assertion is read only after the session
        # and its page key are accepted).
        status, _, page = console_raw(home, port, "POST", f"/proposals/{first}/approve",
                                      same_origin(port, devices["unpaired"]["cookie"]),
                                      {"page_key": devices["unpaired"]["page_key"], "delivery": "handoff",
                                       "assertion": "{}"})
        assert status == 401 and "This browser's pairing was revoked." in html.unescape(page), (status, page[:400])
        assert json.loads(run(home, "--json", "show", first).stdout)["status"] == "pending"

        assert len(received("good")) == 1 and len(received("gone")) == 1, PushService.received.keys()
        assert len(received("failing")) == 3 and received("unpaired") == [] and received("stopped") == []
        check_push(received("good")[0], browsers["good"], first, public_key, push_port)
        check_push(received("revoked")[0], browsers["revoked"], first, public_key, push_port)
        check_push(received("failing")[2], browsers["failing"], first, public_key, push_port)

        # Revoked at the terminal: its subscription ends with its session.
        run(home, "console", "sessions", "revoke", devices["revoked"]["id"])
        revoked = next(s for s in store(home)["sessions"] if s["id"] == devices["revoked"]["id"])
        assert "push" not in revoked and revoked["revoked_at"], revoked

        PushService.answers["failing"] = 201
        second = propose(home, "weekly")
        by_device = wait_for("the second proposal's pushes", lambda: (
            lambda d: d if len(d) == 2 and all(x["state"] == "delivered" for x in d.values()) else None)(pushed(home, second)))
        assert set(by_device) == {devices["good"]["id"], devices["failing"]["id"]}, by_device
        assert len(received("failing")) == 4, "a 500 does not end a subscription"
        assert len(received("good")) == 2, "the good device gets the second proposal"
        check_push(received("good")[1], browsers["good"], second, public_key, push_port)
        assert len(received("gone")) == 1, "a subscription its push service said is gone gets nothing more"
        assert len(received("revoked")) == 1, "a revoked device gets nothing more"
        assert received("unpaired") == [], "an unpaired device gets nothing"
        assert received("stopped") == [], "a device no longer notified gets nothing"

        # The console giving browsers another key than the notify process
        # signs with (a key made anew in one home and not the other): every
        # push service would refuse the push, so nothing is sent and the
        # delivery fails at once, saying which file to copy.
        other = Browser("other-key", push_port)
        pub_path = os.path.join(home, "notify", "vapid.pub")
        os.remove(pub_path)
        fd = os.open(pub_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        other_key = b64u(other.key.public_key().public_bytes(serialization.Encoding.X962,
                                                               serialization.PublicFormat.UncompressedPoint))
        os.write(fd, (other_key + "\n").encode())
        os.close(fd)
        # A browser subscribing now: the console publishes its devices
        # (to the ledger, through the signer) with the key it now gives.
        devices["other"] = pair(home, port)
        status, _, page = subscribe(home, port, devices["other"], other.json)
        assert status == 200 and "This device will be notified" in page, (status, page[:400])
        third = propose(home, "monthly")
        by_device = wait_for("the third proposal's pushes", lambda: (
            lambda d: d if len(d) == 3 and all(x["state"] == "failed" for x in d.values()) else None)(pushed(home, third)))
        assert set(by_device) == {devices[n]["id"] for n in ("good", "failing", "other")}, by_device
        for failed in by_device.values():
            assert failed["attempts"] == 1, failed
            assert failed["last_error"] == (
                f"the console gave browsers the VAPID key {other_key}, but this notify process signs with "
                f"{public_key} ({os.path.join(home, 'notify', 'vapid.key')}), so every push service would "
                "refuse the push: give this process the console home's notify/vapid.key "
                "(deploy/setup-system.sh moves it)"), failed
        assert len(received("good")) == 2 and len(received("failing")) == 4 and received("other-key") == [], \
            "nothing sent with the other key"
    finally:
        code, rest = stop_up(up)
        service.shutdown()
    assert code == 0, rest
    log = "".join(up_lines) + rest
    for browser in browsers.values():
        assert b64u(browser.auth) not in log and browser.endpoint not in log, "a subscription reached a log"
    print("push e2e: ok")


if __name__ == "__main__":
    main()
