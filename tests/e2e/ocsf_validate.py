#!/usr/bin/env python3
"""`countersign audit export --format ocsf` with the real binaries, every
exported event validated against OCSF 1.8.0.

A home with one proposal approved at a terminal and applied (its proof
consumed), one denied, one withdrawn and one left pending. Every line the
export writes must validate against the JSON Schema of OCSF 1.8.0 API
Activity (class 6003) with the Security Control profile, compiled from the
OCSF schema repository's own files (tests/vectors/ocsf/, see
generate_schema.py there for why no registry package does this), checked
with `jsonschema`; the schema itself must refuse a broken event. Then each
proposal's events carry their disposition, the ledger's hashes and leaf
indexes (`audit --json` is the reference); the notify process `up` runs
with `[notify.ocsf]` streams the same objects to a collector, valid, in leaf
order, as the events are written; `--since` keeps the later events
only, and the refusals (an unknown format, an existing output file, a time
that is not RFC 3339) say exactly why and write nothing.

Usage: ocsf_validate.py  (env COUNTERSIGN_BIN = path of the countersign binary;
countersign-signer must sit next to it)
"""
import copy
import json
import os
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jsonschema

from harness import BIN, approve_at_terminal, new_home, run, start_up, stop_up

SCHEMA = os.path.join(
    os.path.dirname(__file__), "..", "vectors", "ocsf", "api_activity_security_control.schema.json"
)
ARGS = '{"name":"nightly-report","cron":"0 3 * * *","description":"email the KPIs"}'


def propose(home):
    out = json.loads(run(home, "--json", "propose", "schedule.create", "--args-file", "-", stdin=ARGS).stdout)
    return out["id"]


def export(home, *extra):
    """The export's lines, parsed (stdout)."""
    out = run(home, "audit", "export", "--format", "ocsf", *extra).stdout
    assert out.endswith("\n") or out == "", out
    return [json.loads(line) for line in out.splitlines()]


def refused(home, args, code, stderr):
    proc = subprocess.run([BIN, "--home", home, *args], capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (code, "", stderr), (
        proc.returncode,
        proc.stdout,
        proc.stderr,
    )


class Collector:
    """An OCSF collector on 127.0.0.1: keeps every JSON line POSTed to
    /ocsf and answers 204."""

    def __init__(self):
        self.lines = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers["content-length"]))
                assert self.path == "/ocsf", self.path
                assert self.headers["content-type"] == "application/x-ndjson", self.headers
                collector.lines.extend(json.loads(line) for line in body.decode().splitlines())
                self.send_response(204)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, count, timeout=30):
        deadline = time.time() + timeout
        while len(self.lines) < count and time.time() < deadline:
            time.sleep(0.05)
        assert len(self.lines) >= count, (len(self.lines), count)
        return list(self.lines)


def main():
    with open(SCHEMA) as f:
        schema = json.load(f)
    validator = jsonschema.Draft202012Validator(schema)
    validator.check_schema(schema)

    tmp, home = new_home("countersign-ocsf-")
    # The notify process streams every event to a collector as it goes.
    collector = Collector()
    with open(os.path.join(home, "config.toml"), "a") as f:
        f.write(f'\n[notify]\npoll_ms = 50\n[notify.ocsf]\nurl = "http://127.0.0.1:{collector.port}/ocsf"\n')
    # `up` runs the notify process's work too, with `[notify]` configured.
    up, _ = start_up(home)
    try:
        applied = propose(home)
        approve_at_terminal(home, applied)
        denied = propose(home)
        run(home, "deny", denied, "--reason", "not tonight")
        withdrawn = propose(home)
        run(home, "withdraw", withdrawn)
        # A second later, so that --since can tell it apart.
        time.sleep(1.1)
        pending = propose(home)
        # Exported while the signer runs: leaf indexes are numbers, or null
        # for an event not sequenced yet. The signer sequences at start,
        # every minute, and whenever the OCSF stream below reads (it asks
        # for what was written since its last read), so the pending
        # proposal may or may not have its leaf yet: either is valid.
        live = export(home)
        for event in live:
            validator.validate(event)
            leaf = event["unmapped"]["countersign"]["leaf_index"]
            assert leaf is None or isinstance(leaf, int), event
        assert live[-1]["api"]["request"]["uid"] == pending, live[-1]
        # Streamed: every event written so far, in leaf order, at once.
        streamed = collector.wait_for(len(live))
    finally:
        code, rest = stop_up(up)
        assert code == 0, (code, rest)

    path = os.path.join(tmp, "events.ocsf.jsonl")
    written = run(home, "audit", "export", "--format", "ocsf", "--output", path)
    assert written.stdout == "", written.stdout
    with open(path) as f:
        events = [json.loads(line) for line in f.read().splitlines()]
    assert written.stderr == f"wrote {len(events)} events to {path}\n", written.stderr
    assert events == export(home), "--output writes what stdout shows"

    # Every event validates against OCSF 1.8.0 API Activity + Security Control.
    for event in events:
        errors = sorted(validator.iter_errors(event), key=str)
        assert not errors, (event, [e.message for e in errors])
        assert event["type_uid"] == event["class_uid"] * 100 + event["activity_id"], event
        assert event["metadata"]["version"] == "1.8.0", event
        assert event["metadata"]["profiles"] == ["security_control"], event

    # The stream carried the export's own objects, leaf by leaf, each valid.
    by_leaf = {e["unmapped"]["countersign"]["leaf_index"]: e for e in events}
    assert [e["unmapped"]["countersign"]["leaf_index"] for e in streamed] == list(range(len(streamed))), streamed
    for line in streamed:
        validator.validate(line)
        assert line == by_leaf[line["unmapped"]["countersign"]["leaf_index"]], line

    # The validator is not vacuous: a missing required attribute, an unknown
    # attribute and a disposition outside the enum are each refused.
    broken = copy.deepcopy(events[0])
    del broken["api"]["operation"]
    assert not validator.is_valid(broken)
    broken = copy.deepcopy(events[0])
    broken["disposition_id"] = 30
    assert not validator.is_valid(broken)
    broken = copy.deepcopy(events[0])
    broken["api"]["operaton"] = broken["api"].pop("operation")
    assert not validator.is_valid(broken)
    broken = copy.deepcopy(events[0])
    broken["actor"]["usr"] = broken["actor"].pop("user")
    assert not validator.is_valid(broken)

    # The ledger is the reference: one OCSF event per ledger event, in
    # order, with its chain, position and hash; sequenced once the signer
    # has stopped.
    ledger = json.loads(run(home, "--json", "audit").stdout)
    assert len(events) == len(ledger), (len(events), len(ledger))
    for event, row in zip(events, ledger):
        mine = event["unmapped"]["countersign"]
        assert (mine["chain"], mine["seq"], mine["hash"]) == (row["chain"], row["seq"], row["hash"]), (mine, row)
        assert event["metadata"]["event_code"] == row["kind"], (event, row)
        assert event["metadata"]["uid"] == row["hash"], (event, row)
        assert isinstance(mine["leaf_index"], int), mine
    leaves = [e["unmapped"]["countersign"]["leaf_index"] for e in events]
    assert sorted(leaves) == list(range(len(leaves))), leaves

    def of(pid):
        return [(e["metadata"]["event_code"], e["activity_id"], e["disposition"], e["disposition_id"])
                for e in events if e["api"].get("request", {}).get("uid") == pid]

    assert of(pending) == [("proposed", 1, "Delayed", 14)], of(pending)
    assert of(denied) == [("proposed", 1, "Delayed", 14), ("denied", 3, "Rejected", 25)], of(denied)
    assert of(withdrawn) == [("proposed", 1, "Delayed", 14), ("withdrawn", 4, "Logged", 17)], of(withdrawn)
    consumed = of(applied)
    assert consumed[0] == ("proposed", 1, "Delayed", 14), consumed
    kinds = [k for k, *_ in consumed]
    for kind in ("approved", "intent", "effect_applied", "completed"):
        assert kind in kinds, consumed
    assert all((d, i) == ("Approved", 8) for _, _, d, i in consumed[1:]), consumed
    for e in events:
        if e["api"].get("request"):
            assert e["api"]["operation"] == "schedule.create", e
    denial = next(e for e in events if e["metadata"]["event_code"] == "denied")
    assert (denial["status_id"], denial["action_id"]) == (2, 2), denial

    # --since: only the events at or after that time.
    cut = next(e["time"] for e in events if e["api"].get("request", {}).get("uid") == pending)
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(cut // 1000))
    later = export(home, "--since", since)
    assert later == [e for e in events if e["time"] >= cut], (since, later)
    assert 0 < len(later) < len(events), (since, len(later))
    assert later[0]["api"]["request"]["uid"] == pending, later[0]
    assert export(home, "--since", "2999-01-01T00:00:00Z") == []

    # Refusals: exact messages, nothing written.
    refused(home, ["audit", "export", "--format", "cef", "--output", os.path.join(tmp, "cef.jsonl")], 2,
            "error: invalid value 'cef' for '--format <FORMAT>'\n"
            "  [possible values: ocsf]\n\n"
            "  tip: a similar value exists: 'ocsf'\n\n"
            "For more information, try '--help'.\n")
    assert not os.path.exists(os.path.join(tmp, "cef.jsonl"))
    before = open(path).read()
    refused(home, ["audit", "export", "--format", "ocsf", "--output", path], 1,
            f"countersign: cannot write {path}: File exists (os error 17)\n")
    assert open(path).read() == before, "an existing file is never replaced"
    refused(home, ["audit", "export", "--format", "ocsf", "--since", "yesterday"], 2,
            "error: invalid value 'yesterday' for '--since <TIME>': "
            "expected an RFC 3339 time, for example 2026-12-06T09:30:00Z\n\n"
            "For more information, try '--help'.\n")
    print(f"ocsf export: {len(events)} events valid against OCSF 1.8.0 API Activity + security_control; "
          f"{len(streamed)} streamed identically")


if __name__ == "__main__":
    main()
