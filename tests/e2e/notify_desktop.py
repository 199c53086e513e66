#!/usr/bin/env python3
"""The desktop notification channel with the real binaries: a private
`dbus-daemon --session`, a stub org.freedesktop.Notifications server on it
(dbus-next, pure Python), and `countersign up` started with
DBUS_SESSION_BUS_ADDRESS naming that bus and `[notify] desktop = true`. A
proposal made at the CLI reaches the stub as a Notify call naming the
proposal and its console page, with no action (nothing to click that could
decide) and no proof; `countersign notify status` shows it delivered. A
signer started without a session bus shows the channel unavailable.

Prints SKIPPED and succeeds when dbus-daemon is missing (Debian package
`dbus`; scripts/test installs it).

Usage: notify_desktop.py  (env COUNTERSIGN_BIN = path of the countersign
binary; countersign-signer must sit next to it)
"""
import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
import time

from harness import console_base, console_port, new_home, run, start_up, stop_up


def start_bus():
    daemon = subprocess.Popen(
        ["dbus-daemon", "--session", "--nofork", "--print-address=1"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    address = daemon.stdout.readline().strip()
    assert address.startswith("unix:"), address
    return daemon, address


def start_stub(address):
    """The stub notification server, in a thread with its own event loop;
    returns the list its Notify calls are appended to."""
    from dbus_next.aio import MessageBus
    from dbus_next.service import ServiceInterface, method

    received = []

    class Notifications(ServiceInterface):
        def __init__(self):
            super().__init__("org.freedesktop.Notifications")

        @method()
        def Notify(self, app_name: 's', replaces_id: 'u', app_icon: 's', summary: 's',
                   body: 's', actions: 'as', hints: 'a{sv}', expire_timeout: 'i') -> 'u':
            received.append({"app_name": app_name, "summary": summary, "body": body,
                             "actions": list(actions), "hints": sorted(hints)})
            return len(received)

        @method()
        def GetCapabilities(self) -> 'as':
            return ["body"]

    ready = threading.Event()

    async def serve():
        bus = await MessageBus(bus_address=address).connect()
        bus.export("/org/freedesktop/Notifications", Notifications())
        await bus.request_name("org.freedesktop.Notifications")
        ready.set()
        await asyncio.Event().wait()

    threading.Thread(target=lambda: asyncio.run(serve()), daemon=True).start()
    assert ready.wait(20), "the stub did not take its bus name"
    return received


def desktop_status(home):
    status = json.loads(run(home, "--json", "notify", "status").stdout)
    return next(c for c in status["channels"] if c["channel"] == "desktop")


def main():
    if shutil.which("dbus-daemon") is None:
        print("SKIPPED: dbus-daemon is missing (Debian package dbus)")
        return
    daemon, address = start_bus()
    try:
        received = start_stub(address)
        tmp, home = new_home("cs-notify-desktop-")
        with open(os.path.join(home, "config.toml"), "a") as f:
            f.write("\n[notify]\ndesktop = true\nretry_initial_ms = 200\n")

        # Without a session bus: configured, shown unavailable, nothing sent.
        os.environ.pop("DBUS_SESSION_BUS_ADDRESS", None)
        up, _ = start_up(home)
        try:
            desktop = desktop_status(home)
            assert desktop["unavailable"].startswith("no session bus"), desktop
            assert desktop["deliveries"] == [], desktop
            text = run(home, "notify", "status").stdout
            assert text.startswith("desktop: unavailable: no session bus"), text
        finally:
            stop_up(up)

        os.environ["DBUS_SESSION_BUS_ADDRESS"] = address
        up, _ = start_up(home)
        try:
            pid = json.loads(run(home, "--json", "propose", "schedule.create", "--args-file", "-",
                                 stdin=json.dumps({"name": "nightly", "cron": "0 3 * * *"})).stdout)["id"]
            deadline = time.time() + 30
            while desktop_status(home)["delivered"] < 1:
                assert time.time() < deadline, desktop_status(home)
                time.sleep(0.1)
            assert len(received) == 1, received
            call = received[0]
            assert call["app_name"] == "countersign", call
            assert call["summary"] == f"countersign: schedule.create waits for your decision ({pid})", call
            link = f"{console_base(console_port(home))}/proposals/{pid}"
            assert link in call["body"] and "carries no approval" in call["body"], call
            assert call["actions"] == [], call
            assert "v4.public." not in json.dumps(call), call
            delivery = desktop_status(home)["deliveries"][0]
            assert delivery["proposal_id"] == pid and delivery["attempts"] == 1, delivery
        finally:
            code, rest = stop_up(up)
        assert code == 0, rest
    finally:
        daemon.terminate()
        daemon.wait()
    print("notify desktop e2e: ok")


if __name__ == "__main__":
    main()
