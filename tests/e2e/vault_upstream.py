#!/usr/bin/env python3
"""A stdio MCP server that needs a credential, for the hardened gateway
test: it refuses to start without API_TOKEN in its environment, and its
one tool's description says how long the token it got is (never the token).
Standard library only, so that any user can run it with Debian's python3.
"""
import json
import os
import sys

token = os.environ.get("API_TOKEN", "")
if not token:
    print("vault: no API_TOKEN; not starting", file=sys.stderr)
    sys.exit(3)

TOOL = {
    "name": "token_length",
    "description": f"Says the length of its token ({len(token)} characters).",
    "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
}

for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method = message.get("method")
    if method == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "vault", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": str(len(token))}]}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no such method"}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
