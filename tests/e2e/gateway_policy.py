#!/usr/bin/env python3
"""The operator's Cedar policy on the MCP gateway's gated calls: the agent
(the official MCP Python SDK) calls `@modelcontextprotocol/server-filesystem`
(npm) through `countersign mcp`, with `[policy] cedar` forbidding writes
under `secret/`.

Cases: a forbidden write is recorded denied with the policy named, nobody
is asked, execute_approved runs nothing and a person cannot approve it;
the file never exists. Another write waits for a person and runs once
approved. The audit trail names the gateway as the head of both.

Usage: gateway_policy.py (env COUNTERSIGN_BIN; tests/mcp-servers installed by
scripts/test)
"""
import json
import os
import shutil

from harness import BIN, McpAgent, approve_at_terminal, new_home, run, run_checked, start_up, stop_up

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.realpath(os.path.join(HERE, "..", "mcp-servers", "node_modules", "@modelcontextprotocol",
                                       "server-filesystem", "dist", "index.js"))
NODE = shutil.which("node")
SEEN = []

POLICY = """
@id("no-secret-writes")
forbid (principal, action == Action::"mcp:files/write_file", resource)
when { context.arguments.path like "*/secret/*" };
"""


async def main():
    tmp, home = new_home("cs-gateway-policy-")
    root = os.path.realpath(os.path.join(tmp, "files"))
    os.makedirs(os.path.join(root, "secret"))
    with open(os.path.join(home, "gateway.toml"), "w") as f:
        f.write(f"""
decision_wait_secs = 0

[[upstream]]
name = "files"
[upstream.stdio]
program = "{NODE}"
args = ["{SERVER}", "{root}"]
[upstream.tools]
write_file = "approve"
""")

    # Pin write_file (a person's act), so that the policy can name it.
    up, _ = start_up(home)
    try:
        proposed = run(home, "--json", "gateway", "tools", "--accept", "files/write_file")
        pin_id = json.loads(proposed.stdout)["id"]
        approve_at_terminal(home, pin_id, "--for-mcp")
        run(home, "exec", pin_id, "--handoff")
    finally:
        stop_up(up)

    # The operator's policy, validated against the registry with the pin.
    policy = os.path.join(home, "policy.cedar")
    with open(policy, "w") as f:
        f.write(POLICY)
    os.chmod(policy, 0o600)
    checked = run(home, "policy", "validate", policy)
    assert ": valid: 1 policy, digest " in checked.stdout, checked.stdout
    with open(os.path.join(home, "config.toml"), "a") as f:
        f.write('\n[policy]\ncedar = "policy.cedar"\n')

    up, _ = start_up(home)
    try:
        async with McpAgent(home, tmp, SEEN) as agent:
            secret = os.path.join(root, "secret", "key.txt")
            result, text = await agent.call("files__write_file", {"path": secret, "content": "x"})
            assert "forbidden by the operator's policy (no-secret-writes)" in text, text
            denied = result.structured_content["id"]
            assert result.structured_content["status"] == "denied", result.structured_content
            again, _ = await agent.call("execute_approved", {"proposal_id": denied})
            assert again.structured_content["applied"] is False, again.structured_content
            assert not os.path.exists(secret)
            # Nobody is asked, and a person cannot approve it.
            pending = run(home, "--json", "pending")
            assert denied not in pending.stdout, pending.stdout
            refused = run(home, "approve", denied, "--for-mcp", ok=(1, 2, 3))
            assert "not_pending" in refused.stderr or "not pending" in refused.stderr, refused.stderr

            # Another write: a person decides, and it runs once.
            plain = os.path.join(root, "notes.txt")
            result, text = await agent.call("files__write_file", {"path": plain, "content": "hello"})
            assert result.structured_content["status"] == "pending", result.structured_content
            pid = result.structured_content["id"]
            approve_at_terminal(home, pid, "--for-mcp")
            done, text = await agent.call("execute_approved", {"proposal_id": pid})
            assert not done.is_error, text
            with open(plain) as f:
                assert f.read() == "hello"

        events = json.loads(run(home, "--json", "audit", "--verify").stdout)
        assert events["intact"] is True, events
        trail = run(home, "--json", "audit").stdout
        heads = [(e["details"]["policy"]["head"], e["details"]["policy"]["binding"]["verdict"])
                 for e in json.loads(trail)
                 if e["kind"] == "proposed" and e["details"].get("policy")]
        assert heads == [("gateway", "forbid"), ("gateway", "person")], heads
    finally:
        code, rest = stop_up(up)
        assert code == 0, rest
    print("gateway policy: ok")


if __name__ == "__main__":
    run_checked(main)
