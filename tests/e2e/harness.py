"""Shared by the end-to-end scripts: run the real `countersign` binary,
initialize a home on a free port, start `countersign up`, and approve at a
real pseudo-terminal (pexpect) the way a person does."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pexpect

BIN = os.environ["COUNTERSIGN_BIN"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(home, *args, stdin=None, ok=(0,), user=None):
    """`countersign --home HOME ARGS...` (as `user` through runuser, from
    /, when one is named)."""
    argv = [BIN, "--home", home, *args]
    if user:
        argv = ["runuser", "-u", user, "--", *argv]
    proc = subprocess.run(
        argv,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/" if user else None,
    )
    if proc.returncode not in ok:
        sys.exit(f"countersign {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def new_home(prefix):
    """A fresh temporary directory and an initialized home in it, its signer
    and its console on free ports."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    home = os.path.join(tmp, "home")
    run(home, "init")
    config = os.path.join(home, "config.toml")
    with open(config) as f:
        text = f.read()
    assert 'addr = "127.0.0.1:7444"' in text, text
    text = text.replace('addr = "127.0.0.1:7444"', f'addr = "127.0.0.1:{free_port()}"')
    text += f'\n[signer]\naddr = "127.0.0.1:{free_port()}"\n'
    os.remove(config)
    fd = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return tmp, home


def console_port(home):
    """The port of the console configured in the home."""
    with open(os.path.join(home, "config.toml")) as f:
        return int(re.search(r'\[console\]\s*addr = "127\.0\.0\.1:(\d+)"', f.read()).group(1))


def start_up(home, *extra):
    """`countersign up [extra...]`, once it says it is up. Its stderr lines
    read so far are returned with it."""
    up = subprocess.Popen([BIN, "--home", home, "up", *extra], stderr=subprocess.PIPE, text=True)
    seen = []
    deadline = time.time() + 60
    while True:
        line = up.stderr.readline()
        seen.append(line)
        if "countersign is up" in line:
            return up, seen
        if not line and up.poll() is not None or time.time() > deadline:
            sys.exit(f"countersign up did not come up (exit {up.poll()}): {''.join(seen)}")


def stop_up(up):
    """SIGINT, as a person would; returns the exit code and the rest of stderr."""
    up.send_signal(signal.SIGINT)
    try:
        code = up.wait(timeout=30)
    except subprocess.TimeoutExpired:
        up.kill()
        sys.exit("countersign up did not stop on SIGINT")
    return code, up.stderr.read()


def approve_at_terminal(home, pid, *extra, expect_text=None):
    """A person runs `countersign approve PID ...` at a terminal, reads the
    preview and types the challenge. Returns what the terminal showed."""
    child = pexpect.spawn(BIN, ["--home", home, "approve", pid, *extra], encoding="utf-8", timeout=60)
    if expect_text:
        child.expect(expect_text)
    child.expect(r"Type (\S+) to approve")
    shown = child.before + child.after
    child.sendline(child.match.group(1))
    child.expect(pexpect.EOF)
    shown += child.before
    child.close()
    assert child.exitstatus == 0, (child.exitstatus, shown)
    return shown


class McpAgent:
    """The agent: one MCP client session on `countersign mcp` over stdio
    (the official Python SDK's client). `env` is added to the server's
    minimal environment; every result is kept in `seen`."""

    def __init__(self, home, tmp, seen, env=None, elicitation_callback=None, modern=False):
        from mcp import StdioServerParameters
        self.seen = seen
        self.elicitation_callback = elicitation_callback
        self.modern = modern
        self.params = StdioServerParameters(command=BIN, args=["--home", home, "mcp"],
                                            env={"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/"),
                                                 "COUNTERSIGN_LOG": "info", **(env or {})})
        self.errlog = open(os.path.join(tmp, "mcp.stderr"), "w")

    async def __aenter__(self):
        from mcp import ClientSession
        from mcp.client.stdio import stdio_client
        self.stdio = stdio_client(self.params, errlog=self.errlog)
        read, write = await self.stdio.__aenter__()
        self.session_cm = ClientSession(read, write, elicitation_callback=self.elicitation_callback)
        self.session = await self.session_cm.__aenter__()
        if self.modern:
            await self.session.discover()  # protocol 2026-07-28: no handshake
            assert self.session.protocol_version == "2026-07-28", self.session.protocol_version
        else:
            await self.session.initialize()
        return self

    async def __aexit__(self, *exc):
        await self.session_cm.__aexit__(*exc)
        await self.stdio.__aexit__(*exc)

    async def call(self, tool, arguments):
        print(f"call {tool}", flush=True)
        import asyncio
        return await asyncio.wait_for(call_tool(self.session, tool, arguments, self.seen), 90)


def run_checked(main):
    """asyncio.run(main()), ending the process at once on a failure: the
    SDK's stdio client can hang while asyncio cancels it after an
    exception."""
    import asyncio
    import traceback

    async def checked():
        try:
            await main()
        except BaseException:
            traceback.print_exc()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1)

    asyncio.run(checked())


async def call_tool(session, tool, arguments, seen):
    """Call an MCP tool through an SDK `session`; keep everything it
    returned in `seen`. Returns the result and its text content."""
    result = await session.call_tool(tool, arguments)
    seen.append(result.model_dump_json())
    text = "\n".join(c.text for c in result.content if getattr(c, "text", None))
    return result, text


# --- The console over TLS ----------------------------------------------------
# The console is served at https://console.localhost:PORT only. Chromium
# resolves *.localhost to loopback itself; this machine's resolver may not,
# so programs connect to 127.0.0.1 and name console.localhost in SNI and Host.

CONSOLE_NAME = "console.localhost"
COOKIE = "__Host-countersign-console"


def console_base(port):
    return f"https://{CONSOLE_NAME}:{port}"


def console_host(port):
    return f"{CONSOLE_NAME}:{port}"


def console_ca(home):
    return os.path.join(home, "pki", "console-ca.pem")


def trusting_home(home):
    """A throwaway HOME whose NSS database (which Chromium reads on Linux)
    trusts the console CA of `home`, made by the real
    `countersign console trust --import`."""
    browser_home = tempfile.mkdtemp(prefix="cs-browser-home-")
    status, shown = trust_import(["--home", home], {**os.environ, "HOME": browser_home})
    if status != 0:
        sys.exit(f"console trust --import failed: {shown}")
    return browser_home


def trust_import(args, env, after=()):
    """`countersign <args> console trust --import <after>` at a
    pseudo-terminal, where the person confirms the CA's fingerprint by
    typing the challenge. `after` holds the options of `console trust`
    itself (`--ca FILE`). Returns (exit status, everything the terminal
    showed)."""
    child = pexpect.spawn(BIN, [*args, "console", "trust", "--import", *after], env=env, encoding="utf-8", timeout=60)
    index = child.expect([r"Type (\S+) to import it", pexpect.EOF])
    shown = child.before + (child.after if index == 0 else "")
    if index == 0:
        child.sendline(child.match.group(1))
        child.expect(pexpect.EOF)
        shown += child.before
    child.close()
    return child.exitstatus, shown


def console_raw(home, port, method, path, headers=None, body=None, addr="127.0.0.1", server_hostname=CONSOLE_NAME):
    """One HTTPS request to the console (exact headers, no browser), trusting
    only its CA. Returns (status, headers, text)."""
    import http.client
    import ssl
    import urllib.parse
    context = ssl.create_default_context(cafile=console_ca(home))

    class Connection(http.client.HTTPSConnection):
        def connect(self):
            sock = socket.create_connection((addr, port), timeout=10)
            self.sock = context.wrap_socket(sock, server_hostname=server_hostname)

    conn = Connection(addr, port, timeout=10, context=context)
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for k, v in (headers or {}).items():
        conn.putheader(k, v)
    data = urllib.parse.urlencode(body).encode() if body is not None else None
    if data is not None:
        conn.putheader("Content-Type", "application/x-www-form-urlencoded")
        conn.putheader("Content-Length", str(len(data)))
    conn.endheaders(data)
    resp = conn.getresponse()
    text = resp.read().decode()
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, text


def page_key(driver):
    """The page key the console's script keeps for this browser's pairing."""
    return driver.execute_script("return localStorage.getItem('countersign-page-key')")


def create_rule_at_terminal(home, tmp, rule):
    """A person creates the auto-approval rule `rule` (its definition) at a
    real pseudo-terminal: `rules create --file`, typing the challenge."""
    path = os.path.join(tmp, "rule.json")
    with open(path, "w") as f:
        json.dump(rule, f)
    child = pexpect.spawn(BIN, ["--home", home, "rules", "create", "--file", path], encoding="utf-8", timeout=60)
    child.expect(r"Type (\S+) to")
    child.sendline(child.match.group(1))
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
