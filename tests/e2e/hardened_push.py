#!/usr/bin/env python3
"""Web Push in the privilege-separated installation (deploy/setup-system.sh,
set up and started by tests/integration/tests/hardened_push.rs as root):
the signer and the console run as the signer's user, the notify process as
a user of its own, which reads neither the console's session stores nor
the signer's home.

A browser paired with the console (the pairing link printed as the
signer's user, at a terminal) subscribes through the console's subscribe
endpoint with its page key. A proposal the agent's user makes is pushed to
it by the notify process, which learnt of the device from the signer
(`PushDevices`). The push is checked by independent code, as in push.py:
its VAPID JWT verifies (py-vapid) with the key the console gave the
browser, and its body decrypts (http_ece) to the proposal id, operation
and expiry only. `countersign notify status`, as the notify user, shows it
delivered.

Usage: hardened_push.py SIGNER_USER SIGNER_HOME NOTIFY_USER NOTIFY_HOME AGENT_USER AGENT_HOME
(env COUNTERSIGN_BIN: the countersign binary, which every one of them can run)
"""
import http.server
import json
import os
import subprocess
import sys
import threading

from harness import console_port, run
from push import Browser, PushService, check_push, pair, received, subscribe, wait_for


def main():
    signer_user, signer_home, notify_user, notify_home, agent_user, agent_home = sys.argv[1:7]
    service = http.server.ThreadingHTTPServer(("127.0.0.1", 0), PushService)
    threading.Thread(target=service.serve_forever, daemon=True).start()
    push_port = service.server_address[1]
    try:
        port = console_port(signer_home)
        with open(os.path.join(signer_home, "notify", "vapid.pub")) as f:
            public_key = f.read().strip()
        device = pair(signer_home, port, user=signer_user)
        browser = Browser("phone", push_port)
        status, _, page = subscribe(signer_home, port, device, browser.json)
        assert status == 200 and "This device will be notified" in page, (status, page[:400])

        # The notify user cannot read where the subscription is kept.
        sessions = os.path.join(signer_home, "console-sessions-console.json")
        assert os.path.exists(sessions), sessions
        denied = subprocess.run(["runuser", "-u", notify_user, "--", "cat", sessions],
                                capture_output=True, text=True, cwd="/")
        assert denied.returncode != 0 and "Permission denied" in denied.stderr, denied

        proposed = run(agent_home, "--json", "propose", "schedule.create", "--args-file", "-",
                       stdin=json.dumps({"name": "nightly", "cron": "0 3 * * *"}), user=agent_user)
        pid = json.loads(proposed.stdout)["id"]
        message = wait_for("the push to the paired browser", lambda: received("phone"))[0]
        check_push(message, browser, pid, public_key, push_port)

        def delivered():
            status = json.loads(run(notify_home, "--json", "notify", "status", user=notify_user).stdout)
            push = next(c for c in status["channels"] if c["channel"] == "push")
            states = [d["state"] for d in push["deliveries"] if d["proposal_id"] == pid]
            return states if states and "pending" not in states else None

        assert wait_for("the delivery's state", delivered) == ["delivered"]
        assert len(received("phone")) == 1, "pushed once"
    finally:
        service.shutdown()
    print("hardened push: ok")


if __name__ == "__main__":
    main()
