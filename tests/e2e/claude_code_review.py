#!/usr/bin/env python3
"""The fourth review's findings that involve the agent, replayed with the
real `claude` binary (tests/agents) against the mock model
(tests/e2e/model_mock.py). Each case failed before its fix.

1. Item 3: Claude Code's `type: "http"` hook, configured as docs/hooks.md
   shows but WITHOUT `onFailure: "block"` (the condition of the finding),
   posting a Write of 1.1 MiB. The API head used to answer 413, a failed
   hook, and Claude Code ran the Write with no proposal. Now it answers 200
   with a deny: the file is never written and nothing is proposed. A small
   Write through the same hook is proposed (the hook is live), and denied
   at the terminal. `--allowedTools Write` grants Claude Code's own
   permission, so the hook's answer alone decides.
2. Item 2: a person approves three different `python3 -c` one-liners.
   `rules suggest` used to turn them into "python3 -c then ANY further
   arguments"; now an interpreter's lines are never grouped, and with
   `--min 1` each suggestion is one exact line. The rule created from one
   of them lets exactly that line run without asking, while the agent's
   `python3 -c` that writes a file is asked, and (undecided) never runs.

Usage: claude_code_review.py (env COUNTERSIGN_BIN; tests/agents installed
by scripts/test)
"""
import json
import os
import socket
import subprocess
import sys
import time

from claude_code_hook import claude, in_background, pending, status_of
from harness import BIN, approve_at_terminal, create_rule_at_terminal, free_port, new_home, run, start_up, stop_up
from model_mock import ModelMock

BIG = 1_100_000  # bytes of content: the hook input is over 1 MiB


def proposals(home):
    return json.loads(run(home, "--json", "list").stdout)


def start_api(home, port):
    api = subprocess.Popen([BIN, "--home", home, "api", "serve", "--listen", f"127.0.0.1:{port}"],
                           stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return api
        except OSError:
            if api.poll() is not None:
                sys.exit(f"api serve exited {api.returncode}: {api.stderr.read()}")
            time.sleep(0.1)
    sys.exit("api serve did not listen")


def http_hook(tmp, home, mock):
    project = os.path.join(tmp, "http-project")
    os.makedirs(os.path.join(project, ".claude"))
    port = free_port()
    api = start_api(home, port)
    try:
        created = json.loads(run(home, "--json", "api", "token", "create", "--ttl", "1h", "--stdout").stdout)
        hook = {"type": "http", "url": f"http://127.0.0.1:{port}/v1/hooks/claude-code",
                "headers": {"Authorization": "Bearer $COUNTERSIGN_TOKEN"},
                "allowedEnvVars": ["COUNTERSIGN_TOKEN"], "timeout": 360}
        with open(os.path.join(project, ".claude", "settings.local.json"), "w") as f:
            json.dump({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [hook]}]}}, f)
        env = {"COUNTERSIGN_TOKEN": created["token"]}
        extra = ("--allowedTools", "Write")

        # The hook is live: a small Write is proposed, and denied.
        small = os.path.join(project, "small.txt")
        mock.next_call = ("toolu_small", "Write", {"file_path": small, "content": "small\n"})
        turn = in_background(lambda: claude(project, mock, extra=extra, env_extra=env))
        proposal = pending(home)
        assert proposal["operation"] == "agent.edit", proposal
        run(home, "deny", proposal["id"], "--reason", "not this one")
        result = turn()
        assert [d["tool_use_id"] for d in result.get("permission_denials", [])] == ["toolu_small"], result
        assert not os.path.exists(small)
        before = len(proposals(home))

        # Over 1 MiB: a 200 deny, so Claude Code never writes it.
        big = os.path.join(project, "big.txt")
        mock.next_call = ("toolu_big", "Write", {"file_path": big, "content": "x" * BIG})
        result = claude(project, mock, extra=extra, env_extra=env)
        assert not os.path.exists(big), "the oversized Write ran"
        assert [d["tool_use_id"] for d in result.get("permission_denials", [])] == ["toolu_big"], result
        assert len(proposals(home)) == before, "an oversized input was proposed"
    finally:
        api.terminate()
        api.wait(timeout=30)


def python_one_liners(tmp, home, mock):
    project = os.path.join(tmp, "py-project")
    os.makedirs(project)
    said = json.loads(run(home, "--json", "init", "claude-code", "--project", project).stdout)
    assert said["added"] == ["PreToolUse"], said
    lines = ["python3 -c 'print(1)'", "python3 -c 'print(2)'", "python3 -c 'print(3)'"]
    for n, line in enumerate(lines):
        mock.next_call = (f"toolu_py{n}", "Bash", {"command": line, "description": "Print"})
        turn = in_background(lambda: claude(project, mock))
        approve_at_terminal(home, pending(home)["id"])
        result = turn()
        assert result.get("permission_denials", []) == [], result

    grouped = json.loads(run(home, "--json", "rules", "suggest").stdout)
    assert grouped == [], f"three different interpreter lines were grouped: {grouped}"
    exact = json.loads(run(home, "--json", "rules", "suggest", "--min", "1").stdout)
    assert sorted(line for s in exact for line in s["examples"]) == lines, exact
    for s in exact:
        (constraint,) = s["definition"]["constraints"]
        assert constraint["argv"]["more_args"] is False, s
        assert s["widest"].startswith("exactly python3 -c print("), s
    chosen = next(s for s in exact if lines[0] in s["examples"])
    create_rule_at_terminal(home, tmp, chosen["definition"])

    # Exactly that line runs without asking.
    mock.next_call = ("toolu_again", "Bash", {"command": lines[0], "description": "Print"})
    result = claude(project, mock)
    assert result.get("permission_denials", []) == [], result
    rules = json.loads(run(home, "--json", "rules", "list").stdout)["rules"]
    assert [r["uses"] for r in rules] == [1], rules

    # Another one-liner is asked; undecided within 3 s, it never runs.
    settings = os.path.join(project, ".claude", "settings.local.json")
    with open(settings) as f:
        text = f.read()
    with open(settings, "w") as f:
        f.write(text.replace("hook claude-code", "hook claude-code --wait-secs 3"))
    pwned = os.path.join(project, "pwned")
    mock.next_call = ("toolu_pwn", "Bash", {"command": f"python3 -c 'open(\"{pwned}\", \"w\")'",
                                            "description": "Print"})
    result = claude(project, mock)
    assert not os.path.exists(pwned), "a python3 -c nobody approved ran"
    assert [d["tool_use_id"] for d in result.get("permission_denials", [])] == ["toolu_pwn"], result
    withdrawn = json.loads(run(home, "--json", "list", "--status", "withdrawn").stdout)
    assert any("pwned" in json.dumps(p) for p in withdrawn), withdrawn


def main():
    tmp, home = new_home("cs-claude-review-")
    with open(os.path.join(home, "config.toml"), "a") as f:
        f.write("\n[rules]\nenabled = true\n")
    mock = ModelMock()
    up, _ = start_up(home)
    try:
        http_hook(tmp, home, mock)
        python_one_liners(tmp, home, mock)
        assert all(status_of(home, p["id"]) != "pending" for p in proposals(home))
        print("claude_code_review: ok")
    finally:
        stop_up(up)
        mock.close()


if __name__ == "__main__":
    main()
