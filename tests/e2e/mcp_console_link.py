#!/usr/bin/env python3
"""How the MCP head points a person at the web console, driven by the
official MCP Python SDK (`mcp` on PyPI) against a real `countersign up`,
with `[console] addr` set to a free port (nothing listens there: the head
only names the page, it never fetches it).

- A client that declared URL-mode elicitation (`elicitation: {url: {}}`)
  and whose callback answers `accept`: `execute_approved` on a pending
  proposal asks it, once, to open `https://console.localhost:<port>/proposals/<id>`;
  the answer approves nothing: the proposal stays pending, no proof is
  issued, nothing runs, and the refusal names the console page.
- A callback that answers `decline`: the same refusal, the same link.
- A callback in which a person approves at a real terminal (pexpect)
  while the elicitation is open, then answers `accept`: the head asks the
  signer again and the approved action runs, once.
- A client without the capability: no elicitation request; the link is in
  the result's text and structured content (`console_url`).
- The proposal text and `get_proposal` name the console page too.

Usage: mcp_console_link.py  (env COUNTERSIGN_BIN = path of the countersign
binary; countersign-signer must sit next to it)
"""
import asyncio
import json
import os
import sqlite3
from contextlib import asynccontextmanager

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from harness import BIN, approve_at_terminal, call_tool, console_base, console_port, new_home, run, start_up, stop_up

PROOF_PREFIX = "v4.public."
SEEN = []  # every tool result and server log, checked for proofs at the end


@asynccontextmanager
async def connection(home, tmp, name, elicitation_callback=None):
    """One MCP connection; with `elicitation_callback` the SDK declares
    elicitation (form and URL mode) in its capabilities."""
    errlog_path = os.path.join(tmp, f"{name}.stderr")
    env = {"PATH": os.environ.get("PATH", ""), "COUNTERSIGN_LOG": "debug", "HOME": os.environ.get("HOME", "/")}
    params = StdioServerParameters(command=BIN, args=["--home", home, "mcp"], env=env)
    with open(errlog_path, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, elicitation_callback=elicitation_callback) as session:
                await session.initialize()
                yield session
    with open(errlog_path) as f:
        SEEN.append(f.read())


async def call(session, tool, arguments):
    return await call_tool(session, tool, arguments, SEEN)


async def propose(session, name, port):
    """Propose; the proposal's id, its console page, and the proposal text."""
    args = {"name": name, "cron": "0 3 * * *", "description": "email the KPIs"}
    result, text = await call(session, "propose_schedule_create", {"arguments": args, "note": "asked"})
    assert not result.is_error, text
    pid = result.structured_content["id"]
    return pid, f"{console_base(port)}/proposals/{pid}", text


async def execute(session, pid):
    return await call(session, "execute_approved", {"proposal_id": pid})


def effects(home):
    events = json.loads(run(home, "--json", "audit").stdout)
    return [e["proposal_id"] for e in events if e["kind"] == "effect_applied"]


def issuances(home, pid):
    with sqlite3.connect(os.path.join(home, "ledger.db")) as db:
        return db.execute("SELECT count(*) FROM issuances WHERE proposal_id = ?", (pid,)).fetchone()[0]


def status(home, pid):
    return json.loads(run(home, "--json", "show", pid).stdout)["status"]


def recorder(action, before=None):
    """An elicitation callback that records each request, runs `before`
    (blocking, in a thread) and answers `action`."""
    asked = []

    async def callback(context, params):
        asked.append(params)
        if before is not None:
            await asyncio.to_thread(before, params)
        return types.ElicitResult(action=action)

    return asked, callback


def check_asked(asked, url):
    assert len(asked) == 1, asked
    params = asked[0]
    assert params.mode == "url", params
    assert params.url == url, (params.url, url)
    assert params.elicitation_id, params
    assert "approves nothing" in params.message, params.message


async def accept_approves_nothing(home, tmp, port):
    asked, callback = recorder("accept")
    async with connection(home, tmp, "accept", callback) as session:
        pid, url, text = await propose(session, "accepted-report", port)
        assert f"countersign approve {pid} --hand-off" in text and url in text, text
        shown, text = await call(session, "get_proposal", {"proposal_id": pid})
        assert url in text and "countersign approve" in text, text
        assert asked == [], "proposing or reading asked the client something"

        result, text = await execute(session, pid)
        check_asked(asked, url)
        out = result.structured_content
        assert result.is_error, text
        assert out["reason"] == "no_live_handoff" and out["applied"] is False, out
        assert out["console_url"] == url, out
        assert url in text and f"countersign approve {pid} --hand-off" in text, text
        assert status(home, pid) == "pending"
        assert issuances(home, pid) == 0
        assert effects(home) == []


async def decline_ends_the_wait(home, tmp, port):
    asked, callback = recorder("decline")
    async with connection(home, tmp, "decline", callback) as session:
        pid, url, _ = await propose(session, "declined-report", port)
        result, text = await execute(session, pid)
        check_asked(asked, url)
        assert result.is_error and result.structured_content["console_url"] == url, text
        assert status(home, pid) == "pending" and issuances(home, pid) == 0


async def approval_while_asked_runs_once(home, tmp, port):
    pending = {}

    def person_approves(params):
        shown = approve_at_terminal(home, pending["id"], "--for-mcp", expect_text="approved-meanwhile")
        SEEN.append(shown)

    asked, callback = recorder("accept", before=person_approves)
    async with connection(home, tmp, "approve", callback) as session:
        pid, url, _ = await propose(session, "approved-meanwhile", port)
        pending["id"] = pid
        result, text = await execute(session, pid)
        check_asked(asked, url)
        out = result.structured_content
        assert not result.is_error and out["status"] == "applied" and out["applied"] is True, text
        assert "console_url" not in out and url not in text, text
        assert effects(home).count(pid) == 1 and issuances(home, pid) == 1

        again, text = await execute(session, pid)
        assert again.structured_content["reason"] == "already_used", text
        assert len(asked) == 1, asked
        assert effects(home).count(pid) == 1


async def without_the_capability_only_the_link(home, tmp, port):
    async with connection(home, tmp, "plain") as session:
        # Record any elicitation request that arrives anyway; set after
        # initialize, so the capability stays undeclared.
        asked, callback = recorder("accept")
        session._elicitation_callback = callback
        pid, url, _ = await propose(session, "plain-report", port)
        result, text = await execute(session, pid)
        assert asked == [], asked
        out = result.structured_content
        assert result.is_error and out["reason"] == "no_live_handoff", out
        assert out["console_url"] == url and url in text, (out, text)
        assert status(home, pid) == "pending" and issuances(home, pid) == 0


async def flow(home, tmp, port):
    await accept_approves_nothing(home, tmp, port)
    await decline_ends_the_wait(home, tmp, port)
    await approval_while_asked_runs_once(home, tmp, port)
    await without_the_capability_only_the_link(home, tmp, port)


def main():
    tmp, home = new_home("countersign-mcp-console-")
    port = console_port(home)
    up, up_lines = start_up(home)
    try:
        asyncio.run(flow(home, tmp, port))
    finally:
        code, rest = stop_up(up)
        SEEN.append("".join(up_lines) + rest)
    assert code == 0, f"countersign up exited {code}"
    assert PROOF_PREFIX not in "\n".join(SEEN), "a proof appeared in a tool result or a log"
    print("mcp_console_link: 4 passed, 0 failed")


if __name__ == "__main__":
    main()
