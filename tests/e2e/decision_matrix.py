#!/usr/bin/env python3
"""Decide what you see: every effect kind against every approver interface.

Kinds: a built-in (`schedule.create`), a `command` (a fixed program
appending its stdin to a log), a `webhook` (to a receiver in this test), a
coding agent's call (`countersign hook claude-code`, a real hook process
waiting for the decision) and a gated MCP call (`countersign mcp` in front
of a server on the official MCP Python SDK, called by the SDK's client,
waiting in its call).

Interfaces: the terminal (`countersign approve ID` at a real
pseudo-terminal), the console in Debian's Chromium (headless, Selenium),
and an outside trusted UI in Python over the signer's gRPC API
(trusted_ui.py --mode deliveries).

For each pair: the interface says what approving does before the person
commits, offers only what can succeed, and the decision then does exactly
that: an effect any head runs is run there, once; a hook's or a gated
call's approval is handed to the waiting agent, whose call then runs,
once. What is not offered is refused before anything is recorded (the
terminal's `--proof-out` and the trusted UI's direct delivery for the
last two: `delivery_not_offered`, the proposal still pending). On a
390x844 phone, every kind's card shows the action's first lines above the
first button in the first screen, and axe-core finds no serious or
critical violation; the screenshots go to $COUNTERSIGN_SCREENSHOTS
(matrix-<kind>.png) if set.

Usage: decision_matrix.py (env COUNTERSIGN_BIN; scripts/test installs the
Python tools, Chromium, chromedriver and axe-core)
"""
import asyncio
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time
import traceback

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from selenium.webdriver.common.by import By

from console_browser import browser, pair, wait_title
from console_phone import axe, emulate_phone, rect
from harness import (BIN, approve_at_terminal, console_base, console_port, free_port, new_home, run,
                     start_up, stop_up, trusting_home)

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = ["builtin", "command", "webhook", "hook", "mcp"]
RUNS_HERE = {"builtin", "command", "webhook"}
INTERFACES = ["cli", "console", "grpc"]


class Receiver(http.server.BaseHTTPRequestHandler):
    bodies = []

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        Receiver.bodies.append(self.rfile.read(length).decode())
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def registry_ops(tmp, port):
    return f"""
[[operation]]
name = "matrix.command"
description = "Append a tag to the matrix log."
class = "write"
replay_safe = false
preview = "Append {{tag}} to the log"
[operation.effect]
kind = "command"
program = "/bin/sh"
args = ["-c", "cat >> {tmp}/command.log"]
timeout_secs = 10
[operation.schema]
type = "object"
additionalProperties = false
required = ["tag"]
[operation.schema.properties.tag]
type = "string"

[[operation]]
name = "matrix.webhook"
description = "Tell the receiver a tag."
class = "network"
replay_safe = false
preview = "Send {{tag}} to the receiver"
[operation.effect]
kind = "webhook"
url = "http://127.0.0.1:{port}/hook"
timeout_secs = 10
allow_plain_http_loopback = true
[operation.schema]
type = "object"
additionalProperties = false
required = ["tag"]
[operation.schema.properties.tag]
type = "string"
"""


GATEWAY = """
decision_wait_secs = 120

[[upstream]]
name = "notes"
[upstream.stdio]
program = "{python}"
args = ["{script}", "{notes}"]
[upstream.tools]
note_write = "approve"
[upstream.risk]
note_write = "write"
"""


class Agent:
    """An MCP client (the official Python SDK) on `countersign mcp`, in an
    event loop of its own thread, so that its calls wait while the test
    decides."""

    def __init__(self, home, tmp):
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.params = StdioServerParameters(command=BIN, args=["--home", home, "mcp"],
                                            env={"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/")})
        self.errlog = open(os.path.join(tmp, "mcp.stderr"), "w")
        self.run(self._open())

    def run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(60)

    async def _open(self):
        self.stdio = stdio_client(self.params, errlog=self.errlog)
        read, write = await self.stdio.__aenter__()
        self.session_cm = ClientSession(read, write)
        self.session = await self.session_cm.__aenter__()
        await self.session.initialize()

    def call(self, tool, arguments):
        """The call, running: a concurrent future of its result."""
        return asyncio.run_coroutine_threadsafe(self.session.call_tool(tool, arguments), self.loop)


class World:
    def __init__(self, tmp, home, agent):
        self.tmp, self.home, self.agent = tmp, home, agent
        self.hooks = {}
        self.calls = {}
        self.notes = os.path.join(tmp, "notes")

    def pending_where(self, test):
        deadline = time.time() + 30
        while time.time() < deadline:
            for p in json.loads(run(self.home, "--json", "pending").stdout):
                if test(p):
                    return p
            time.sleep(0.2)
        raise AssertionError("nothing pending matched")

    def propose(self, kind, tag):
        """Propose one action of `kind`, tagged `tag`; its pending view."""
        if kind in ("builtin", "command", "webhook"):
            op, args = {
                "builtin": ("schedule.create", {"name": tag, "cron": "0 1 * * *"}),
                "command": ("matrix.command", {"tag": tag}),
                "webhook": ("matrix.webhook", {"tag": tag}),
            }[kind]
            pid = json.loads(run(self.home, "--json", "propose", op, "--args-file", "-",
                                 stdin=json.dumps(args)).stdout)["id"]
            return self.pending_where(lambda p: p["id"] == pid)
        if kind == "hook":
            command = f"echo {tag}"
            hook_input = {"session_id": f"s-{tag}", "transcript_path": "/tmp/t.jsonl", "cwd": self.tmp,
                          "hook_event_name": "PreToolUse", "tool_name": "Bash",
                          "tool_input": {"command": command, "description": "say the tag"},
                          "tool_use_id": f"toolu_{tag}"}
            proc = subprocess.Popen([BIN, "--home", self.home, "hook", "claude-code", "--wait-secs", "120"],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            proc.stdin.write(json.dumps(hook_input))
            proc.stdin.close()
            self.hooks[tag] = proc
            return self.pending_where(lambda p: p["arguments"].get("tool_input", {}).get("command") == command)
        self.calls[tag] = self.agent.call("notes__note_write", {"name": tag, "text": f"note {tag}"})
        return self.pending_where(lambda p: p["arguments"].get("name") == tag)

    def happened(self, kind, tag, pid):
        """The effect of `kind` for `tag` happened, once."""
        if kind in ("builtin", "command", "webhook"):
            deadline = time.time() + 20
            while json.loads(run(self.home, "--json", "show", pid).stdout)["status"] != "applied":
                assert time.time() < deadline, (kind, tag, run(self.home, "show", pid).stdout)
                time.sleep(0.2)
            if kind == "command":
                with open(os.path.join(self.tmp, "command.log")) as f:
                    assert f.read().count(f'"tag":"{tag}"') == 1, tag
            if kind == "webhook":
                assert sum(f'"tag":"{tag}"' in b for b in Receiver.bodies) == 1, Receiver.bodies
            return
        if kind == "hook":
            proc = self.hooks.pop(tag)
            # The hook ends once it answered (within its 120 s wait).
            out, err = proc.stdout.read(), proc.stderr.read()
            proc.wait(10)
            answer = json.loads(out)["hookSpecificOutput"]
            assert answer["permissionDecision"] == "allow", (answer, err)
            return
        result = self.calls.pop(tag).result(60)
        text = "\n".join(c.text for c in result.content if getattr(c, "text", None))
        assert not result.is_error and f"appended to {tag}" in text, text
        with open(os.path.join(self.notes, tag)) as f:
            assert f.read() == f"note {tag}\n"


def terminal(world, kind, tag):
    view = world.propose(kind, tag)
    pid = view["id"]
    if kind not in RUNS_HERE:
        # Not offered: refused before the person is asked, nothing recorded.
        proof = os.path.join(world.tmp, f"proof-{tag}.txt")
        refused = run(world.home, "--json", "approve", pid, "--proof-out", proof, ok=(3,))
        assert json.loads(refused.stdout)["reason"] == "delivery_not_offered", refused.stdout
        assert not os.path.exists(proof)
        assert json.loads(run(world.home, "--json", "show", pid).stdout)["status"] == "pending"
    shown = approve_at_terminal(world.home, pid)
    before = shown.split("Type ")[0]
    if kind in RUNS_HERE:
        assert "Approving executes it here, now, once." in before, before
    else:
        assert "Approving hands it off to the proposing session" in before, before
        assert "nothing runs here" in before, before
    # The action came first, before the preview.
    assert before.index("ACTION (risk: ") < before.index("Operation: "), before
    world.happened(kind, tag, pid)


def trusted_ui(world, credential, signer_addr, kind, tag):
    view = world.propose(kind, tag)
    pid = view["id"]
    proof = os.path.join(world.tmp, f"grpc-proof-{tag}.txt")
    out = subprocess.run([sys.executable, os.path.join(HERE, "trusted_ui.py"), "--addr", signer_addr,
                          "--ca", os.path.join(credential, "ca.pem"),
                          "--cert", os.path.join(credential, "approver-kiosk.pem"),
                          "--key", os.path.join(credential, "approver-kiosk.key"),
                          "--approve", pid, "--mode", "deliveries", "--proof-out", proof],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, (out.stdout, out.stderr)
    said = json.loads(out.stdout)
    assert said["effect_kind"] == kind, said
    assert said["summary"] == view["action"]["summary"], (said, view["action"])
    if kind in RUNS_HERE:
        assert said["deliveries"] == "DELIVERIES_ANY_HEAD" and said["direct_refused"] is None, said
        # What the UI told the person: it runs it. It hands the proof to a head.
        session = view["session"]
        with open(proof) as f:
            run(world.home, "exec", pid, "--proof-file", "-", "--session", session, stdin=f.read())
    else:
        assert said["delivery"] == "DELIVERY_HANDOFF", said
        assert f"{pid} has a {kind} effect: only the" in said["direct_refused"], said
    world.happened(kind, tag, pid)


def console(world, driver, phone_driver, base, kind, tag):
    view = world.propose(kind, tag)
    pid = view["id"]
    # On a phone: the action's first lines above the first button, in the
    # first screen; the page accessible.
    phone_driver.get(f"{base}/proposals/{pid}")
    # The action's first lines: its first part's value, or its summary
    # when that is all there is to say (a built-in's).
    parts = phone_driver.find_elements(By.CSS_SELECTOR, "#action dl.parts dd")
    first_part = parts[0] if parts else phone_driver.find_element(By.ID, "card-summary")
    first_button = phone_driver.find_elements(By.CSS_SELECTOR, "button.approve")[0]
    part, button = rect(phone_driver, first_part), rect(phone_driver, first_button)
    assert part["scrollY"] == 0 and part["top"] >= 0, part
    assert part["top"] + min(part["height"], 40) <= part["vh"], (kind, "the action's first lines are in the first screen", part)
    assert part["top"] < button["top"], (kind, "the action stands above the first button", part, button)
    summary = phone_driver.find_element(By.ID, "card-summary").text
    assert summary == view["action"]["summary"], (summary, view["action"])
    folder = os.environ.get("COUNTERSIGN_SCREENSHOTS")
    if folder:
        os.makedirs(folder, exist_ok=True)
        phone_driver.save_screenshot(os.path.join(folder, f"matrix-{kind}.png"))
    axe(phone_driver, f"the {kind} card on a phone")

    driver.get(f"{base}/proposals/{pid}")
    labels = [b.text.strip() for b in driver.find_elements(By.CSS_SELECTOR, "button.approve")]
    if kind in RUNS_HERE:
        assert labels == ["Approve for the proposing session", "Approve and run now"], labels
        next(b for b in driver.find_elements(By.CSS_SELECTOR, "button.approve")
             if b.text.strip() == "Approve and run now").click()
        wait_title(driver, "Approved and run")
    else:
        assert labels == ["Approve for the proposing session"], labels
        hint = driver.find_element(By.CSS_SELECTOR, "section.decide p.hint").text
        assert "Nothing runs in the console." in hint, hint
        driver.find_elements(By.CSS_SELECTOR, "button.approve")[0].click()
        wait_title(driver, "Approved")
        said = driver.find_element(By.CSS_SELECTOR, "p.message").text
        assert "handed off to session" in said, said
    world.happened(kind, tag, pid)


def main():
    tmp, home = new_home("cs-matrix-")
    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    with open(os.path.join(home, "operations.toml"), "a") as f:
        f.write(registry_ops(tmp, receiver.server_address[1]))
    notes = os.path.join(tmp, "notes")
    os.makedirs(notes)
    with open(os.path.join(home, "gateway.toml"), "w") as f:
        f.write(GATEWAY.format(python=sys.executable, script=os.path.join(HERE, "notes_upstream.py"), notes=notes))
    credential = os.path.join(tmp, "kiosk")
    os.makedirs(credential)
    run(home, "credential", "create", "--approver", "kiosk", "--out-dir", credential)
    with open(os.path.join(home, "config.toml")) as f:
        signer_addr = re.findall(r'^\[signer\]\naddr = "([^"]+)"', f.read(), re.M)[-1]
    port = console_port(home)
    base = console_base(port)
    up, _ = start_up(home, "--console")
    driver = phone_driver = agent = None
    try:
        # Pin the gated tool: a person reads its definition and approves.
        accepted = run(home, "--json", "gateway", "tools", "--accept", "notes/note_write")
        pin = json.loads(accepted.stdout)["id"]
        shown = approve_at_terminal(home, pin)
        assert "Approving executes it here, now, once." in shown, shown
        agent = Agent(home, tmp)
        world = World(tmp, home, agent)
        browser_home = trusting_home(home)
        driver = browser(browser_home)
        pair(driver, home, port)
        phone_driver = browser(browser_home, width=390, height=844)
        emulate_phone(phone_driver)
        pair(phone_driver, home, port)
        for interface in INTERFACES:
            for kind in KINDS:
                tag = f"{interface}-{kind}"
                print(f"{interface} x {kind}", flush=True)
                if interface == "cli":
                    terminal(world, kind, tag)
                elif interface == "grpc":
                    trusted_ui(world, credential, signer_addr, kind, tag)
                else:
                    console(world, driver, phone_driver, base, kind, tag)
        assert not world.hooks and not world.calls
        assert json.loads(run(home, "--json", "pending").stdout) == []
        verified = run(home, "audit", "--verify")
        assert "intact" in verified.stdout, verified.stdout
    finally:
        for d in (driver, phone_driver):
            if d:
                d.quit()
        stop_up(up)
        receiver.shutdown()
    print("decision matrix: ok")


if __name__ == "__main__":
    try:
        main()
    except BaseException:
        traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)
    os._exit(0)
