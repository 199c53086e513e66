#!/usr/bin/env python3
"""countersign as Codex's PreToolUse hook, with the real `codex` binary
(npm @openai/codex, pinned in tests/agents) driven by a local mock of the
Responses API (tests/e2e/responses_mock.py), and a person deciding at a
terminal.

Set up as a user would: `countersign init codex --project DIR` writes
DIR/.codex/hooks.json; the Codex home's config.toml names the mock as the
model provider and trusts the project (Codex loads a project's `.codex/`
only then); the hook is trusted the way Codex's `/hooks` screen does it,
through `codex app-server` (`hooks/list` gives its key and hash,
`config/batchWrite` records `hooks.state.KEY.trusted_hash`). Codex runs
with no sandbox and no approval prompts of its own, so the hook decides.

Cases: an `exec_command` call denied at the terminal never runs and Codex
hands the person's reason to the model; approved, it runs exactly once
and is applied; an `apply_patch` is proposed as `agent.edit` showing its
patch, and approved, it writes the file; the hook entry changed (a
shorter wait) is no longer trusted until trusted again, and with no
decision within the wait the call never runs and is withdrawn.

Usage: codex_hook.py (env COUNTERSIGN_BIN; tests/agents installed by
scripts/test)
"""
import json
import os
import subprocess

from claude_code_hook import in_background, pending, status_of
from harness import approve_at_terminal, new_home, run, start_up, stop_up
from responses_mock import ResponsesMock

HERE = os.path.dirname(os.path.abspath(__file__))
CODEX = os.path.join(HERE, "..", "agents", "node_modules", ".bin", "codex")


def codex_env(codex_home):
    return {"PATH": os.environ["PATH"], "HOME": codex_home, "CODEX_HOME": codex_home, "MOCK_API_KEY": "sk-test"}


def write_codex_config(codex_home, project, mock):
    """The user's config.toml: the mock as model provider, no sandbox
    (this machine has no bubblewrap) and no approval prompts, so only the
    hook stands between the model and the call, and the project trusted."""
    os.makedirs(codex_home)
    with open(os.path.join(codex_home, "config.toml"), "w") as f:
        f.write(f'''model = "gpt-5.5"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.mock]
name = "mock"
base_url = "{mock.base_url}"
wire_api = "responses"
env_key = "MOCK_API_KEY"

[projects.{json.dumps(project)}]
trust_level = "trusted"
''')


def trust_hooks(codex_home, project):
    """What Codex's `/hooks` screen does when a person trusts the project's
    hooks, over `codex app-server` (JSON-RPC lines on stdio). Returns the
    hooks as listed before they were trusted."""
    server = subprocess.Popen([CODEX, "app-server"], cwd=project, env=codex_env(codex_home), text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    ids = iter(range(1, 100))

    def call(method, params):
        rid = next(ids)
        server.stdin.write(json.dumps({"id": rid, "method": method, "params": params}) + "\n")
        server.stdin.flush()
        while True:  # past notifications, to our answer
            line = server.stdout.readline()
            assert line, f"codex app-server closed during {method}"
            message = json.loads(line)
            if message.get("id") == rid and "method" not in message:
                assert "result" in message, (method, message)
                return message["result"]

    try:
        call("initialize", {"clientInfo": {"name": "countersign-e2e", "version": "0"}})
        server.stdin.write(json.dumps({"method": "initialized"}) + "\n")
        listed = call("hooks/list", {"cwds": [project]})["data"][0]["hooks"]
        call("config/batchWrite", {"edits": [{
            "keyPath": "hooks.state", "mergeStrategy": "upsert",
            "value": {h["key"]: {"trusted_hash": h["currentHash"]} for h in listed}}], "reloadUserConfig": True})
        after = call("hooks/list", {"cwds": [project]})["data"][0]["hooks"]
        assert [h["trustStatus"] for h in after] == ["trusted"] * len(listed), after
        return listed
    finally:
        server.stdin.close()
        server.wait(timeout=30)


def codex(codex_home, project):
    """One `codex exec` turn in `project` against the mock: its JSONL events."""
    proc = subprocess.run([CODEX, "exec", "--json", "do it"], cwd=project, env=codex_env(codex_home),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def shell_call(call_id, command):
    """The model asks for Codex's shell tool (unified exec) to run `command`."""
    return {"type": "function_call", "id": "fc_" + call_id, "call_id": call_id, "name": "exec_command",
            "arguments": json.dumps({"cmd": command})}


def ran(events, command):
    """Whether Codex reports having run `command`."""
    return any(e.get("item", {}).get("type") == "command_execution" and command in e["item"]["command"]
               for e in events)


def main():
    tmp, home = new_home("cs-codex-")
    project = os.path.join(tmp, "project")
    os.makedirs(project)
    subprocess.run(["git", "init", "-q", project], check=True)
    said = json.loads(run(home, "--json", "init", "codex", "--project", project).stdout)
    assert said["added"] == ["PreToolUse"], said
    hooks_json = os.path.join(project, ".codex", "hooks.json")
    with open(hooks_json) as f:
        entry = json.load(f)["hooks"]["PreToolUse"][0]
    assert entry["matcher"] == "*" and entry["hooks"][0]["timeout"] == 360, entry
    command = entry["hooks"][0]["command"]
    assert command.endswith(" hook codex"), command

    mock = ResponsesMock()
    codex_home = os.path.join(tmp, "codex-home")
    write_codex_config(codex_home, project, mock)
    listed = trust_hooks(codex_home, project)
    assert [(h["eventName"], h["command"], h["trustStatus"]) for h in listed] \
        == [("preToolUse", command, "untrusted")], listed
    up, _ = start_up(home)
    try:
        # --- Denied at the terminal: never runs; the model hears why.
        mock.next_call = shell_call("call_deny", "touch denied.marker")
        turn = in_background(lambda: codex(codex_home, project))
        proposal = pending(home)
        assert proposal["operation"] == "agent.shell" and proposal["session"].startswith("codex:"), proposal
        assert "  Command: touch denied.marker" in proposal["preview"], proposal["preview"]
        run(home, "deny", proposal["id"], "--reason", "not now")
        events = turn()
        assert not os.path.exists(os.path.join(project, "denied.marker"))
        assert not ran(events, "denied.marker"), events
        told = mock.outputs("call_deny")
        assert told.startswith("Command blocked by PreToolUse hook") and "not now" in told, told
        assert status_of(home, proposal["id"]) == "denied"

        # --- Approved at the terminal: runs exactly once, applied.
        mock.next_call = shell_call("call_yes", "echo once >> approved.marker")
        turn = in_background(lambda: codex(codex_home, project))
        proposal = pending(home)
        approve_at_terminal(home, proposal["id"], "--for-mcp")
        events = turn()
        assert ran(events, "approved.marker"), events
        with open(os.path.join(project, "approved.marker")) as f:
            assert f.read() == "once\n"
        shown = json.loads(run(home, "--json", "show", proposal["id"]).stdout)
        assert shown["status"] == "applied", shown
        assert shown["arguments"]["tool_input"] == {"command": "echo once >> approved.marker"}, shown

        # --- apply_patch is an edit whose preview is the patch; approved,
        # Codex writes the file.
        patch = "*** Begin Patch\n*** Add File: notes.txt\n+first line\n+second line\n*** End Patch\n"
        mock.next_call = {"type": "custom_tool_call", "id": "ctc_patch", "call_id": "call_patch",
                          "name": "apply_patch", "input": patch}
        turn = in_background(lambda: codex(codex_home, project))
        proposal = pending(home)
        assert proposal["operation"] == "agent.edit", proposal
        for line in ("  Diff:", "  | *** Add File: notes.txt", "  | +first line", "  | +second line"):
            assert line + "\n" in proposal["preview"], proposal["preview"]
        approve_at_terminal(home, proposal["id"], "--for-mcp")
        turn()
        with open(os.path.join(project, "notes.txt")) as f:
            assert f.read() == "first line\nsecond line\n"
        assert status_of(home, proposal["id"]) == "applied"

        # --- A changed hook entry (a 3-second wait) is no longer trusted,
        # so Codex would skip it: trusted again, as a person would in
        # /hooks. With no decision within the wait, the call never runs.
        with open(hooks_json) as f:
            text = f.read()
        with open(hooks_json, "w") as f:
            f.write(text.replace(" hook codex", " hook codex --wait-secs 3"))
        assert [h["trustStatus"] for h in trust_hooks(codex_home, project)] == ["modified"]
        mock.next_call = shell_call("call_late", "touch late.marker")
        events = codex(codex_home, project)
        assert not os.path.exists(os.path.join(project, "late.marker"))
        assert not ran(events, "late.marker"), events
        assert mock.outputs("call_late").startswith("Command blocked by PreToolUse hook"), mock.outputs("call_late")
        listed = json.loads(run(home, "--json", "list", "--status", "withdrawn").stdout)
        assert len(listed) == 1 and "late.marker" in json.dumps(listed[0]), listed
        print("codex_hook: ok")
    finally:
        stop_up(up)
        mock.close()


if __name__ == "__main__":
    main()
