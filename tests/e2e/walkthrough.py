#!/usr/bin/env python3
"""The README's walk-through with the real binaries and a real terminal.

Runs `countersign up` (which starts and supervises countersign-signer), proposes
an action, checks that approval is refused without a controlling terminal and
with a wrong challenge (nothing approved), approves it by typing the challenge
shown on a pseudo-terminal driven by pexpect, and checks the recorded result,
the audit chain, a proof file round trip with replay refused, and a clean stop.

Usage: walkthrough.py  (env COUNTERSIGN_BIN = path of the countersign binary;
countersign-signer must sit next to it)
"""
import json
import os
import subprocess
import urllib.error
import urllib.request

import pexpect

from harness import BIN, approve_at_terminal, free_port, new_home, run, start_up, stop_up


def status_of(home, pid):
    return json.loads(run(home, "--json", "show", pid).stdout)["status"]


def main():
    tmp, home = new_home("countersign-e2e-")
    second = run(home, "init").stdout
    assert "already initialized; nothing changed" in second, second

    api_port = free_port()
    up, up_lines = start_up(home, "--api", f"127.0.0.1:{api_port}")
    try:
        # `up --api` also serves the HTTP API head, on loopback, and says so.
        said = "".join(up_lines)
        assert f"countersign API listening on http://127.0.0.1:{api_port} (loopback only)" in said, said
        assert "note: plain HTTP on a port, which is no identity" in said, said
        # Then what to do next: decide at a terminal, or start the console.
        following = up.stderr.readline()
        assert following.startswith("next: in another terminal, `countersign pending`"), following
        assert "`countersign up --console`" in following, following
        with urllib.request.urlopen(f"http://127.0.0.1:{api_port}/healthz", timeout=10) as reply:
            assert reply.status == 200, reply.status
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{api_port}/v1/proposals", timeout=10)
            raise AssertionError("the API served data without a credential")
        except urllib.error.HTTPError as refused:
            assert refused.code == 401, refused.code

        args = '{"name":"nightly-report","cron":"0 3 * * *","description":"email the KPIs"}'
        proposed = json.loads(run(home, "--json", "propose", "schedule.create", "--args-file", "-",
                                  "--note", "user asked for a nightly report", stdin=args).stdout)
        pid = proposed["id"]
        assert proposed["status"] == "pending", proposed
        assert "unverified" in proposed["preview"].lower(), proposed["preview"]

        # No controlling terminal: refused, nothing approved.
        no_tty = subprocess.run(["setsid", "-w", BIN, "--home", home, "approve", pid],
                                stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        assert no_tty.returncode == 3, (no_tty.returncode, no_tty.stderr)
        assert "approval needs an interactive terminal" in no_tty.stderr, no_tty.stderr
        assert status_of(home, pid) == "pending"

        # A wrong challenge: refused, nothing approved.
        child = pexpect.spawn(BIN, ["--home", home, "approve", pid], encoding="utf-8", timeout=60)
        child.expect(r"Type (\S+) to approve")
        child.sendline("AAAA-AAAA" if child.match.group(1) != "AAAA-AAAA" else "CCCC-CCCC")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 3, child.exitstatus
        assert status_of(home, pid) == "pending"

        # The person reads the preview and types the challenge: applied once.
        child = pexpect.spawn(BIN, ["--home", home, "approve", pid], encoding="utf-8", timeout=60)
        child.expect("nightly-report")
        child.expect(r"Type (\S+) to approve")
        child.sendline(child.match.group(1))
        child.expect("applied")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0, (child.exitstatus, child.before)
        result = json.loads(run(home, "--json", "result", pid).stdout)
        assert result["status"] == "applied", result
        assert status_of(home, pid) == "applied"

        # Proof file round trip: exec once, replay refused with the recorded disposition.
        proposed = json.loads(run(home, "--json", "propose", "schedule.activate", "--args-file", "-",
                                  stdin='{"name":"nightly-report"}').stdout)
        pid2 = proposed["id"]
        proof_path = os.path.join(tmp, "proof.txt")
        approve_at_terminal(home, pid2, "--proof-out", proof_path)
        assert oct(os.stat(proof_path).st_mode & 0o777) == "0o600"
        first = json.loads(run(home, "--json", "exec", pid2, "--proof-file", proof_path).stdout)
        assert first["applied"] is True and first["ok"] is True, first
        again = run(home, "--json", "exec", pid2, "--proof-file", proof_path, ok=(3,))
        replay = json.loads(again.stdout)
        assert replay["reason"] == "already_used" and replay["applied"] is False, replay

        audit = run(home, "audit", "--verify").stdout
        assert audit.startswith("intact"), audit
    finally:
        code, _ = stop_up(up)
    assert code == 0, f"countersign up exited {code} on SIGINT"
    print("walkthrough: 1 passed, 0 failed")


if __name__ == "__main__":
    main()
