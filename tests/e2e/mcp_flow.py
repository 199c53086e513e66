#!/usr/bin/env python3
"""The MCP head driven by a client nobody on this project wrote: the official
MCP Python SDK (`mcp` on PyPI) launches `countersign mcp` over stdio, the way
Claude Desktop, Claude Code or Cursor do, against a real `countersign up`.

The flow: initialize; list tools (schemas, annotations, and no tool with a
proof, challenge or decision parameter); propose; execute before approval
(refused, nothing applied); a person approves with `countersign approve ID
--for-mcp` at a real pseudo-terminal (pexpect); execute (applied once);
execute again (recorded disposition, no second effect); execute from another
MCP connection (another session: refused, nothing applied); a person
authorizes another session explicitly (`--execute-in-session`); withdraw;
arguments that claim an approval are refused; and, without an SDK in
between, stdout carries protocol frames only.

Across the whole flow every tool result, every error, and the MCP servers'
stderr at COUNTERSIGN_LOG=trace are kept, and no proof (`v4.public.`) may appear in
any of them.

Usage: mcp_flow.py  (env COUNTERSIGN_BIN = path of the countersign binary;
countersign-signer must sit next to it)
"""
import asyncio
import base64
import json
import os
import subprocess
from contextlib import asynccontextmanager

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from harness import BIN, approve_at_terminal, call_tool, new_home, run, start_up, stop_up

PROOF_PREFIX = "v4.public."
# Proof-shaped (header, base64url body, footer), not a real proof.
PASTED_PROOF = PROOF_PREFIX + base64.urlsafe_b64encode(bytes(range(96))).decode().rstrip("=") + ".Zm9vdGVy"
SEEN = []  # every tool result and error, as text

READ_ONLY = {"list_operations", "get_proposal", "list_proposals", "get_result"}
BANNED_PARAMS = ("proof", "token", "challenge", "decision", "approve", "approval")


@asynccontextmanager
async def connection(home, tmp, name):
    """One MCP client connection: `countersign mcp` as a child process, with
    its stderr at TRACE in a file."""
    errlog_path = os.path.join(tmp, f"{name}.stderr")
    env = {"PATH": os.environ.get("PATH", ""), "COUNTERSIGN_LOG": "trace", "HOME": os.environ.get("HOME", "/")}
    params = StdioServerParameters(command=BIN, args=["--home", home, "mcp"], env=env)
    with open(errlog_path, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                SEEN.append(init.model_dump_json())
                yield session
    with open(errlog_path) as f:
        SEEN.append(f.read())


async def call(session, tool, arguments):
    """Call a tool; keep everything it returned."""
    return await call_tool(session, tool, arguments, SEEN)


def session_of(text):
    return text.split(" in session ")[1].split(";")[0]


async def check_tools(session):
    listed = await session.list_tools()
    SEEN.append(listed.model_dump_json())
    tools = {t.name: t for t in listed.tools}
    for name in ("list_operations", "propose_schedule_create", "get_proposal", "list_proposals",
                 "withdraw_proposal", "execute_approved", "get_result"):
        assert name in tools, (name, sorted(tools))
    assert "execute_with_proof" not in tools, sorted(tools)
    for name, tool in tools.items():
        # A model may propose a rule (an ordinary proposal a person decides);
        # no tool decides, revokes, or creates or changes a rule.
        words = name.split("_")
        if name == "propose_rule_create":
            words = ["propose"]
        assert not any(w in words for w in ("approve", "deny", "decide", "revoke", "rule")), name
        schema = tool.input_schema
        assert schema["type"] == "object" and schema.get("additionalProperties") is False, (name, schema)
        for prop in schema.get("properties", {}):
            assert not any(b in prop.lower() for b in BANNED_PARAMS), (name, prop)
        assert tool.output_schema and tool.output_schema["type"] == "object", (name, tool.output_schema)
        hints = tool.annotations
        assert hints.read_only_hint is (name in READ_ONLY), (name, hints)
    assert tools["execute_approved"].annotations.destructive_hint is True
    # Each propose tool carries its operation's own argument schema.
    create = tools["propose_schedule_create"].input_schema
    assert create["required"] == ["arguments"], create
    assert "cron" in create["properties"]["arguments"]["properties"], create
    return tools


async def propose(session, name, note="the user asked for it"):
    args = {"name": name, "cron": "0 3 * * *", "description": "email the KPIs"}
    result, text = await call(session, "propose_schedule_create", {"arguments": args, "note": note})
    assert not result.is_error, text
    proposal = result.structured_content
    assert proposal["status"] == "pending" and proposal["session"].startswith("mcp-"), proposal
    assert name in proposal["preview"], proposal
    assert f"countersign approve {proposal['id']} --hand-off" in text, text
    return proposal


def effects(home):
    """The proposals whose effect ran, one entry per run, from the audit trail
    (what a person would check)."""
    events = json.loads(run(home, "--json", "audit").stdout)
    return [e["proposal_id"] for e in events if e["kind"] == "effect_applied"]


async def flow(home, tmp):
    async with connection(home, tmp, "first") as a:
        await check_tools(a)
        ops, text = await call(a, "list_operations", {})
        assert any(o["name"] == "schedule.create" for o in ops.structured_content["items"]), text

        proposal = await propose(a, "nightly-report")
        pid, session_a = proposal["id"], proposal["session"]

        # Before approval: refused, with the exact command; nothing applied.
        early, text = await call(a, "execute_approved", {"proposal_id": pid})
        assert early.is_error, text
        assert early.structured_content["reason"] == "no_live_handoff", early.structured_content
        assert early.structured_content["applied"] is False
        assert f"countersign approve {pid} --hand-off" in text and "nothing was applied" in text, text
        none, text = await call(a, "get_result", {"proposal_id": pid})
        assert none.is_error and "has not been executed" in text, text
        assert effects(home) == []

        # A model's claim of approval is no approval: an extra argument is refused.
        claim, text = await call(a, "execute_approved", {"proposal_id": pid, "approved": True})
        assert claim.is_error and "input schema" in text, text
        # A proof pasted into an argument is refused, not echoed, and redacted
        # from the server's log (the SDK logs whole requests at DEBUG).
        pasted, text = await call(a, "execute_approved", {"proposal_id": pid, "proof": PASTED_PROOF})
        assert pasted.is_error and "input schema" in text, text
        try:
            await session_call_unknown(a)
        except MCPError as e:
            SEEN.append(str(e))
        else:
            raise AssertionError("an approve tool answered")

        # The person approves at a terminal, for one MCP execution.
        shown = await asyncio.to_thread(approve_at_terminal, home, pid, "--for-mcp", expect_text="nightly-report")
        SEEN.append(shown)
        assert session_a in shown, shown
        status, text = await call(a, "get_proposal", {"proposal_id": pid})
        assert status.structured_content["handoff_waiting"] is True, status.structured_content

        # Another connection is another session: refused, nothing applied, approval kept.
        async with connection(home, tmp, "second") as b:
            other, text = await call(b, "execute_approved", {"proposal_id": pid})
            assert other.is_error and other.structured_content["reason"] == "handoff_session_mismatch", text
            assert "--execute-in-session mcp-" in text, text
            assert effects(home) == []

            # Unless the person authorizes that other session explicitly.
            moved = await propose(a, "moved-report")
            session_b_hint = text.split("--execute-in-session ")[1].split("`")[0]
            await asyncio.to_thread(approve_at_terminal, home, moved["id"], "--for-mcp",
                                    "--execute-in-session", session_b_hint)
            from_a, text = await call(a, "execute_approved", {"proposal_id": moved["id"]})
            assert from_a.structured_content["reason"] == "handoff_session_mismatch", text
            from_b, text = await call(b, "execute_approved", {"proposal_id": moved["id"]})
            assert from_b.structured_content["applied"] is True, text

        # The proposing session executes: applied once.
        done, text = await call(a, "execute_approved", {"proposal_id": pid})
        assert not done.is_error, text
        assert done.structured_content["applied"] is True and done.structured_content["status"] == "applied", text
        assert text.startswith("applied"), text
        assert effects(home).count(pid) == 1

        # Again: the recorded disposition, no second effect.
        again, text = await call(a, "execute_approved", {"proposal_id": pid})
        assert again.is_error, text
        out = again.structured_content
        assert out["reason"] == "already_used" and out["recorded_status"] == "applied" and out["applied"] is False, out
        assert effects(home).count(pid) == 1
        result, text = await call(a, "get_result", {"proposal_id": pid})
        assert result.structured_content["status"] == "applied", text

        # Withdraw one's own pending proposal; list proposals.
        spare = await propose(a, "spare-report")
        gone, text = await call(a, "withdraw_proposal", {"proposal_id": spare["id"]})
        assert gone.structured_content["status"] == "withdrawn", text
        listed, text = await call(a, "list_proposals", {"limit": 10})
        statuses = {p["id"]: p["status"] for p in listed.structured_content["items"]}
        assert statuses[pid] == "applied" and statuses[spare["id"]] == "withdrawn", statuses


def raw_stdout_is_protocol_frames_only(home):
    """Without an SDK in between: every line `countersign mcp` writes to
    stdout is a JSON-RPC frame, and it exits 0 when the client closes stdin."""
    frames = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "execute_approved", "arguments": {"proposal_id": "prop_" + "0" * 32}}},
    ]
    proc = subprocess.run([BIN, "--home", home, "mcp"], input="".join(json.dumps(f) + "\n" for f in frames),
                          capture_output=True, text=True, timeout=60,
                          env={"PATH": os.environ.get("PATH", ""), "COUNTERSIGN_LOG": "trace"})
    SEEN.extend([proc.stdout, proc.stderr])
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    answered = []
    for line in proc.stdout.splitlines():
        frame = json.loads(line)
        assert frame["jsonrpc"] == "2.0", line
        answered.append(frame.get("id"))
    # Every request answered exactly once; JSON-RPC does not order the
    # answers (the server handles requests concurrently).
    assert sorted(answered) == [1, 2, 3], answered
    assert "session mcp-" in proc.stderr, proc.stderr[:500]


async def session_call_unknown(session):
    """Ask for a tool that does not exist (and must never exist)."""
    await session.call_tool("approve", {"proposal_id": "prop_" + "0" * 32})


def main():
    tmp, home = new_home("countersign-mcp-")
    up, up_lines = start_up(home)
    try:
        asyncio.run(flow(home, tmp))
        raw_stdout_is_protocol_frames_only(home)
    finally:
        code, rest = stop_up(up)
        SEEN.append("".join(up_lines) + rest)
    assert code == 0, f"countersign up exited {code}"
    everything = "\n".join(SEEN)
    assert "TRACE" in everything, "the MCP server did not log at TRACE"
    assert PROOF_PREFIX not in everything, "a proof appeared in a tool result, an error or a log"
    print(f"mcp_flow: 1 passed, 0 failed ({len(SEEN)} results, errors and logs checked for proofs)")


if __name__ == "__main__":
    main()
