#!/usr/bin/env python3
"""The agent in the hardened installation: the official MCP Python SDK as
the client, over stdio, of `countersign mcp` run as the agent's OS user
(`runuser -u AGENT -- CLI --home AGENT_HOME mcp`), so that the MCP head has
the agent's head-only home and nothing else.

Driven line by line by tests/integration/tests/hardened_install.rs, which
keeps this one MCP connection (one session) open while the person decides:
each command read from stdin is answered with one JSON line on stdout.

  propose NAME CRON  -> {"id", "session", "status", "text"}
                        (propose_schedule_create)
  execute ID         -> {"is_error", "applied", "reason", "status", "text"}
                        (execute_approved)
  quit               -> closes the connection; the head exits

Usage: hardened_agent.py AGENT_USER CLI AGENT_HOME
       hardened_agent.py AGENT_USER CLI --connect unix:PATH SERVER_USER
  (the second: the MCP gateway of another user, reached through
  `countersign mcp --connect unix:PATH --server-user SERVER_USER`, the
  agent's stdio relay to the gateway's Unix socket)
"""
import asyncio
import json
import os
import shutil
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def say(value):
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "text", None))


async def main():
    user, cli, home = sys.argv[1:4]
    if home == "--connect":
        socket, server_user = sys.argv[4:6]
        head = ["mcp", "--connect", socket, "--server-user", server_user]
    else:
        head = ["--home", home, "mcp"]
    params = StdioServerParameters(
        command=shutil.which("runuser") or "/usr/sbin/runuser",
        args=["-u", user, "--", cli, *head],
        env={"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")},
        cwd="/",
    )
    async with stdio_client(params, errlog=sys.stderr) as (read, write):
        async with ClientSession(read, write) as mcp:
            await mcp.initialize()
            while True:
                line = (await asyncio.to_thread(sys.stdin.readline)).split()
                if not line or line[0] == "quit":
                    break
                if line[0] == "propose":
                    result = await mcp.call_tool("propose_schedule_create",
                                                 {"arguments": {"name": line[1], "cron": " ".join(line[2:])}})
                    out = result.structured_content or {}
                    assert not result.is_error, text_of(result)
                    say({"id": out["id"], "session": out["session"], "status": out["status"],
                         "text": text_of(result)})
                elif line[0] == "execute":
                    result = await mcp.call_tool("execute_approved", {"proposal_id": line[1]})
                    out = result.structured_content or {}
                    assert "v4.public." not in result.model_dump_json(), "a proof reached the agent"
                    say({"is_error": bool(result.is_error), "applied": out.get("applied"),
                         "reason": out.get("reason"), "status": out.get("status"),
                         "text": text_of(result)})
                else:
                    raise SystemExit(f"unknown command {line!r}")


if __name__ == "__main__":
    asyncio.run(main())
