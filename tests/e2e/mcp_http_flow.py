"""The MCP head over streamable HTTP (`countersign mcp --listen ADDR`),
driven by the official MCP Python SDK's streamable HTTP client, with API
bearer credentials (`countersign api token create`).

Refusals, on the raw wire with exact status and header: no credential, an
invalid, a revoked and an expired one (401 naming the RFC 9728 metadata),
a foreign Origin, Host or Sec-Fetch-Site (403), a body with a duplicate key (the
stdio head's JSON-RPC error); none of them proposes anything. Then the
whole flow: propose, a person approves at a real pseudo-terminal with
`countersign approve ID --for-mcp` (pexpect), execute_approved applies once,
a second call is already_used; a second credential is a second session and
cannot execute the first one's approval. SIGTERM stops the server cleanly.
No proof and no credential appears in any result or log.
"""

import asyncio
import http.client
import json
import os
import signal
import subprocess
import sys
import time

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from harness import BIN, approve_at_terminal, call_tool, free_port, new_home, run, start_up, stop_up

PROOF_PREFIX = "v4.public."
SEEN = []


def start_mcp(home, port, tmp):
    """`countersign mcp --listen 127.0.0.1:PORT`, once it says it serves."""
    errlog = open(os.path.join(tmp, "mcp-http.stderr"), "w+")
    env = dict(os.environ, COUNTERSIGN_LOG="trace")
    server = subprocess.Popen([BIN, "--home", home, "mcp", "--listen", f"127.0.0.1:{port}"],
                              stderr=errlog, env=env)
    deadline = time.time() + 60
    while time.time() < deadline:
        errlog.seek(0)
        if "serving MCP on http://" in errlog.read():
            return server, errlog
        if server.poll() is not None:
            break
        time.sleep(0.1)
    errlog.seek(0)
    sys.exit(f"countersign mcp --listen did not start (exit {server.poll()}): {errlog.read()}")


def token(home, ttl="1d"):
    created = json.loads(run(home, "--json", "api", "token", "create", "--ttl", ttl, "--stdout").stdout)
    return created["id"], created["token"]


def raw(port, method, path, body=None, headers=None):
    """One request on its own connection; (status, headers, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    SEEN.append(data.decode(errors="replace"))
    return response.status, response.headers, data


INIT = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def proposals(home):
    return json.loads(run(home, "--json", "list").stdout)


def effects(home):
    events = json.loads(run(home, "--json", "audit").stdout)
    return [e["proposal_id"] for e in events if e["kind"] == "effect_applied"]


def refusals(home, port, good, revoked, expired):
    base = f"http://127.0.0.1:{port}"
    challenge = f'Bearer resource_metadata="{base}/.well-known/oauth-protected-resource"'
    # RFC 9728 metadata: public, `resource` required; no authorization server.
    status, _, body = raw(port, "GET", "/.well-known/oauth-protected-resource")
    meta = json.loads(body)
    assert status == 200 and meta["resource"] == f"{base}/mcp", (status, meta)
    assert meta["bearer_methods_supported"] == ["header"] and "authorization_servers" not in meta, meta
    for name, auth in (("missing", None), ("invalid", "Bearer cs1_" + "0" * 16 + "_" + "A" * 43),
                       ("revoked", f"Bearer {revoked}"), ("expired", f"Bearer {expired}"),
                       ("not bearer", f"Basic {good}")):
        headers = dict(MCP_HEADERS)
        if auth:
            headers["Authorization"] = auth
        status, got, body = raw(port, "POST", "/mcp", INIT, headers)
        assert status == 401, (name, status, body)
        assert got.get_all("WWW-Authenticate") == [challenge], (name, got.get_all("WWW-Authenticate"))
    ok = dict(MCP_HEADERS, Authorization=f"Bearer {good}")
    for name, extra in (("foreign origin", {"Origin": "http://evil.example"}),
                        ("cross-site fetch", {"Sec-Fetch-Site": "cross-site"}),
                        ("foreign host", {"Host": "evil.example"})):
        status, _, body = raw(port, "POST", "/mcp", INIT, dict(ok, **extra))
        assert status == 403, (name, status, body)
    # Guards come before the credential: a foreign origin without one is 403.
    status, _, _ = raw(port, "POST", "/mcp", INIT, dict(MCP_HEADERS, Origin="http://evil.example"))
    assert status == 403, status
    # A duplicate key: the strict parser answers, the SDK never sees it.
    dup = ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"propose_schedule_create",'
           '"arguments":{"arguments":{"name":"a","name":"b","cron":"0 3 * * *","description":"x"}}}}')
    status, _, body = raw(port, "POST", "/mcp", dup, ok)
    answer = json.loads(body)
    assert status == 400 and answer["id"] == 7 and "duplicate" in answer["error"]["message"], (status, answer)
    # A well-formed request with a good credential passes.
    status, _, body = raw(port, "POST", "/mcp", INIT, ok)
    assert status == 200 and json.loads(body)["result"]["serverInfo"]["name"] == "countersign", (status, body)
    assert proposals(home) == [], proposals(home)




async def call(session, tool, arguments):
    return await call_tool(session, tool, arguments, SEEN)


async def flow(home, port, a_token, b_token):
    url = f"http://127.0.0.1:{port}/mcp"
    (a_id, a_secret), (_, b_secret) = a_token, b_token
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {a_secret}"}, timeout=120) as ca, \
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {b_secret}"}, timeout=120) as cb, \
            streamable_http_client(url, http_client=ca) as (ra, wa), \
            streamable_http_client(url, http_client=cb) as (rb, wb), \
            ClientSession(ra, wa) as a, ClientSession(rb, wb) as b:
        SEEN.append((await a.initialize()).model_dump_json())
        await b.initialize()
        listed = await a.list_tools()
        assert "execute_approved" in {t.name for t in listed.tools}

        args = {"name": "nightly-report", "cron": "0 3 * * *", "description": "email the KPIs"}
        proposed, text = await call(a, "propose_schedule_create", {"arguments": args, "note": "asked"})
        assert not proposed.is_error, text
        proposal = proposed.structured_content
        pid = proposal["id"]
        # The session comes from the credential, not from the client.
        assert proposal["session"] == f"api:{a_id}", proposal

        early, text = await call(a, "execute_approved", {"proposal_id": pid})
        assert early.structured_content["reason"] == "no_live_handoff", text
        assert effects(home) == []

        shown = await asyncio.to_thread(approve_at_terminal, home, pid, "--for-mcp", expect_text="nightly-report")
        SEEN.append(shown)
        assert f"api:{a_id}" in shown, shown

        # Another credential is another session: refused, nothing applied.
        other, text = await call(b, "execute_approved", {"proposal_id": pid})
        assert other.is_error and other.structured_content["reason"] == "handoff_session_mismatch", text
        assert effects(home) == []

        done, text = await call(a, "execute_approved", {"proposal_id": pid})
        assert not done.is_error and done.structured_content["applied"] is True, text
        assert effects(home).count(pid) == 1

        again, text = await call(a, "execute_approved", {"proposal_id": pid})
        assert again.is_error and again.structured_content["reason"] == "already_used", text
        assert again.structured_content["applied"] is False, text
        assert effects(home).count(pid) == 1


def main():
    tmp, home = new_home("countersign-mcp-http-")
    up, up_lines = start_up(home)
    port = free_port()
    server = None
    try:
        good, revoked, second = token(home), token(home), token(home)
        run(home, "api", "token", "revoke", revoked[0])
        # Expiry is stored in whole seconds, rounded down: 1 s lives at most 1 s.
        expired, made = token(home, "1s"), time.time()
        server, errlog = start_mcp(home, port, tmp)
        time.sleep(max(0.0, made + 1.1 - time.time()))
        refusals(home, port, good[1], revoked[1], expired[1])
        asyncio.run(flow(home, port, good, second))
        # SIGTERM: stops taking requests, drains, exits 0.
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) == 0, server.returncode
        errlog.seek(0)
        log = errlog.read()
        SEEN.append(log)
        assert "MCP head stopped" in log, log
        assert "TRACE" in log, "the server did not log at TRACE"
    finally:
        if server is not None and server.poll() is None:
            server.kill()
        code, rest = stop_up(up)
        SEEN.append("".join(up_lines) + rest)
    assert code == 0, f"countersign up exited {code}"
    everything = "\n".join(SEEN)
    assert PROOF_PREFIX not in everything, "a proof appeared in a result, an answer or a log"
    for _, secret in (good, revoked, expired, second):
        assert secret not in "\n".join(SEEN[-2:]), "a credential appeared in a log"
    print(f"mcp_http_flow: 1 passed, 0 failed ({len(SEEN)} results, answers and logs checked)")


if __name__ == "__main__":
    main()
