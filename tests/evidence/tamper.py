#!/usr/bin/env python3
"""Tampered variants of an evidence bundle, each caught by one check.

    python3 tamper.py BUNDLE OUTDIR [--older OLDER_BUNDLE] [--other OTHER_BUNDLE]

Writes one file per tamper into OUTDIR and OUTDIR/expected.json, mapping
each file name to the refusal code its change must meet first, in the order
of docs/evidence.md. Each tamper changes one thing. A tamper its inputs
cannot make (no assertion in the bundle, no --older, ...) is skipped and
named on stderr.

--older: a bundle of the same log at a smaller, cosigned checkpoint (the
rollback tamper). --other: a bundle of another proposal by the same person
and credential (the swapped assertion and swapped proof tampers).
"""

import argparse
import base64
import copy
import json
import os
import secrets
import sys

from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import synthetic  # noqa: E402  (NoteKey, COSE and base64 helpers)
import verify_evidence as v  # noqa: E402


class Skip(Exception):
    """This tamper cannot be made from these inputs."""


# ---------------------------------------------------------------- helpers


def note_of(bundle):
    """The checkpoint note the events carry (that of the first event)."""
    return bundle["events"][0]["tlog_proof"].partition("\n\n")[2]


def put_note(bundle, note):
    """Put `note` as the checkpoint of every event, keeping index and proof."""
    for e in bundle["events"]:
        head = e["tlog_proof"].partition("\n\n")[0]
        e["tlog_proof"] = head + "\n\n" + note


def resign(bundle, origin, keep_cosignatures):
    """The bundle's checkpoint body under `origin`, signed by a fresh log key."""
    body, signatures = v.parse_note(note_of(bundle))
    old_origin, size, root = v.parse_checkpoint(body)
    fresh = synthetic.NoteKey(origin, 0x01)
    new_body = f"{origin}\n{size}\n{base64.b64encode(root).decode()}\n"
    lines = fresh.signature_line(new_body)
    if keep_cosignatures:
        lines += "".join(f"\u2014 {n} {base64.b64encode(i + s).decode()}\n"
                         for n, i, s in signatures if n != old_origin)
    put_note(bundle, new_body + "\n" + lines)


def details(event):
    """An event's details as an object, and a function to store it back."""
    raw = event["details"]
    value = json.loads(raw) if isinstance(raw, str) else raw

    def store(new):
        event["details"] = v.canonical(new) if isinstance(raw, str) else new

    return value, store


def event_of(bundle, kind):
    p = bundle["proposal"]
    for e in bundle["events"]:
        if e["kind"] == kind and e["proposal_id"] == p["id"] and e["chain"] == p["principal"]:
            return e
    raise Skip(f"the bundle has no {kind} event")


def assertion(bundle):
    if not bundle["decision"]["assertions"]:
        raise Skip("the bundle carries no passkey assertion")
    return bundle["decision"]["assertions"][0]


def flip(text):
    """Base64url text with one bit of its last byte flipped."""
    raw = bytearray(v.b64url_decode(text))
    raw[-1] ^= 0x01
    return synthetic.b64url(bytes(raw))


# ---------------------------------------------------------------- tampers


def t_format(b, older, other):
    b["format"] = "countersign-evidence/v2"


def t_checkpoint(b, older, other):
    origin = v.parse_checkpoint(v.parse_note(note_of(b))[0])[0]
    resign(b, origin + "-elsewhere", keep_cosignatures=False)


def t_checkpoint_signature(b, older, other):
    origin = v.parse_checkpoint(v.parse_note(note_of(b))[0])[0]
    resign(b, origin, keep_cosignatures=True)


def t_witness_quorum(b, older, other):
    body, signatures = v.parse_note(note_of(b))
    origin = v.parse_checkpoint(body)[0]
    kept = [(n, i, s) for n, i, s in signatures if n == origin]
    if len(kept) == len(signatures):
        raise Skip("the checkpoint carries no cosignature to drop")
    put_note(b, body + "\n" + "".join(
        f"\u2014 {n} {base64.b64encode(i + s).decode()}\n" for n, i, s in kept))


def t_event_hash(b, older, other):
    e = event_of(b, "proposed")
    value, store = details(e)
    value["tampered"] = True
    store(value)


def t_not_in_checkpoint(b, older, other):
    if older is None:
        raise Skip("no --older bundle")
    note = note_of(older)
    size = v.parse_checkpoint(v.parse_note(note)[0])[1]
    indices = [v.parse_tlog_proof(e["tlog_proof"])[0] for e in b["events"]]
    if max(indices) < size:
        raise Skip("the --older checkpoint already holds every event")
    put_note(b, note)


def t_inclusion(b, older, other):
    for e in b["events"]:
        lines = e["tlog_proof"].split("\n")
        if lines[2] != "":  # the event has an inclusion proof line
            raw = bytearray(base64.b64decode(lines[2]))
            raw[0] ^= 0x01
            lines[2] = base64.b64encode(bytes(raw)).decode()
            e["tlog_proof"] = "\n".join(lines)
            return
    raise Skip("no event has an inclusion proof hash")


def t_missing_event(b, older, other):
    b["events"].remove(event_of(b, "intent"))


def t_proposal(b, older, other):
    b["proposal"]["session"] += "-tampered"


def t_arguments(b, older, other):
    if "arguments" not in b["proposal"]:
        raise Skip("the arguments are committed, not in the bundle")
    arguments = json.loads(b["proposal"]["arguments"])
    if not isinstance(arguments, dict):
        raise Skip("the arguments are not an object")
    arguments["tampered"] = True
    b["proposal"]["arguments"] = v.canonical(arguments)


def t_contract(b, older, other):
    contract = json.loads(b["contract"]) if b["contract"] is not None else {}
    contract["tampered"] = True
    b["contract"] = v.canonical(contract)


def t_assertion_event(b, older, other):
    b["decision"]["provenance"] = "rule:tampered@1"


def t_credential(b, older, other):
    assertion(b)["public_key"] = synthetic.b64url(synthetic.cose_es256(ec.generate_private_key(ec.SECP256R1())))


def t_assertion_challenge(b, older, other):
    if other is None:
        raise Skip("no --other bundle")
    mine = assertion(b)
    theirs = [a for a in other["decision"]["assertions"]
              if a["credential_id"] == mine["credential_id"] and a["approver"] == mine["approver"]]
    if not theirs:
        raise Skip("the --other bundle has no assertion by the same credential")
    b["decision"]["assertions"][0] = theirs[0]


def t_assertion_signature(b, older, other):
    a = assertion(b)
    a["signature"] = flip(a["signature"])


def t_proof_hash(b, older, other):
    if other is None:
        raise Skip("no --other bundle")
    if b["proof"] is None or other["proof"] is None:
        raise Skip("a bundle carries no proof")
    b["proof"] = other["proof"]


def t_proof_signature(b, older, other):
    if b["proof"] is None:
        raise Skip("the bundle carries no proof")
    public = Ed25519PrivateKey.generate().public_key().public_bytes_raw()
    keys = {"issuer": v.KEY_SET_ISSUER, "version": 1,
            "keys": [{"id": v.paserk_pid(public), "paserk": "k4.public." + synthetic.b64url(public),
                      "status": "active"}]}
    b["keys"] = v.canonical(keys) if isinstance(b["keys"], str) else keys


def t_consumption(b, older, other):
    if b["consumption"] is None:
        raise Skip("the bundle records no consumption")
    completed = [e for e in b["events"] if e["kind"] in ("completed", "resolved")]
    if not completed or "result_sha256" not in details(completed[0])[0]:
        raise Skip("the completion predates result_sha256: a changed result is not detectable")
    b["consumption"]["result"] = v.canonical({"tampered": secrets.token_hex(4)})


def t_consumption_status(b, older, other):
    if b["consumption"] is None:
        raise Skip("the bundle records no consumption")
    c = b["consumption"]
    c["status"] = "failed" if c["status"] == "applied" else "applied"


TAMPERS = [  # (file name, expected code, tamper)
    ("format_version.json", "format", t_format),
    ("checkpoint_other_log.json", "checkpoint", t_checkpoint),
    ("checkpoint_fresh_key.json", "checkpoint_signature", t_checkpoint_signature),
    ("cosignature_dropped.json", "witness_quorum", t_witness_quorum),
    ("event_details_altered.json", "event_hash", t_event_hash),
    ("tree_rolled_back.json", "not_in_checkpoint", t_not_in_checkpoint),
    ("inclusion_hash_altered.json", "inclusion", t_inclusion),
    ("intent_removed.json", "missing_event", t_missing_event),
    ("session_changed.json", "proposal", t_proposal),
    ("arguments_altered.json", "arguments", t_arguments),
    ("contract_altered.json", "contract", t_contract),
    ("provenance_changed.json", "assertion_event", t_assertion_event),
    ("public_key_replaced.json", "credential", t_credential),
    ("assertion_swapped.json", "assertion_challenge", t_assertion_challenge),
    ("assertion_signature_flipped.json", "assertion_signature", t_assertion_signature),
    ("proof_swapped.json", "proof_hash", t_proof_hash),
    ("key_set_replaced.json", "proof_signature", t_proof_signature),
    ("result_altered.json", "consumption", t_consumption),
    ("status_altered.json", "consumption", t_consumption_status),
]


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Write tampered evidence bundles.")
    parser.add_argument("bundle")
    parser.add_argument("outdir")
    parser.add_argument("--older", help="a bundle of the same log at a smaller checkpoint")
    parser.add_argument("--other", help="a bundle of another proposal, same person and credential")
    args = parser.parse_args(argv)
    try:
        bundle = load(args.bundle)
        older = load(args.older) if args.older else None
        other = load(args.other) if args.other else None
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    os.makedirs(args.outdir, exist_ok=True)
    expected = {}
    for file_name, code, tamper in TAMPERS:
        tampered = copy.deepcopy(bundle)
        try:
            tamper(tampered, older, other)
        except Skip as reason:
            print(f"skipped {file_name} ({code}): {reason}", file=sys.stderr)
            continue
        synthetic.write_json(os.path.join(args.outdir, file_name), tampered)
        expected[file_name] = code
    synthetic.write_json(os.path.join(args.outdir, "expected.json"), expected)
    print(f"wrote {len(expected)} tampered bundles into {args.outdir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
