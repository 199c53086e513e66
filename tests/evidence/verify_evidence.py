#!/usr/bin/env python3
"""An independent verifier of countersign evidence bundles (format version 1).

Written from docs/evidence.md only, as an auditor's reference:

    python3 verify_evidence.py BUNDLE --trust POLICY [--keys KEYSET] [--reveal SALT_FILE]

It runs the 19 checks of the doc's "Verification" table in order and stops
at the first failure with `refused: <code>: <message>` (exit 1). Exit 2 is
for a file it cannot read or a usage error. On success it prints one
`ok <code>: ...` line per check and exits 0.

Dependencies: pyseto (PASETO v4.public), cryptography (Ed25519, ECDSA),
cbor2 (COSE keys), rfc8785 (canonical JSON). Everything else, the C2SP
signed notes, checkpoints, cosignatures, tlog-policy and tlog-proof texts
and the RFC 6962 inclusion proof, is implemented here.
"""

import argparse
import base64
import binascii
import hashlib
import json
import re
import sys

import cbor2
import pyseto
import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

FORMAT = "countersign-evidence/v1"
TLOG_PROOF_HEADER = "c2sp.org/tlog-proof@v1"
LEAF_VERSION = "countersign-event/v1"
KEY_SET_ISSUER = "countersign-signer"
TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
HEX64 = re.compile(r"^[0-9a-f]{64}$")
DECIMAL = re.compile(r"^(0|[1-9][0-9]*)$")


class Refused(Exception):
    """A check failed: its code and what failed."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


class Unreadable(Exception):
    """An input file cannot be read (exit status 2)."""


def refuse_unless(condition, code, message):
    if not condition:
        raise Refused(code, message)


# ---------------------------------------------------------------- encodings


def sha256(data):
    return hashlib.sha256(data).digest()


def sha256_hex(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def b64decode_std(text):
    """Canonical standard base64 (with padding), or None."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if base64.b64encode(raw).decode() == text else None


def b64url_decode(text):
    """Canonical base64url without padding, or None."""
    if not isinstance(text, str) or "=" in text:
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
    return raw if base64.urlsafe_b64encode(raw).decode().rstrip("=") == text else None


def canonical(value):
    """RFC 8785 canonical JSON text of a value."""
    return rfc8785.dumps(value).decode("utf-8")


def strict_json(text):
    """JSON that refuses duplicate object keys."""

    def no_duplicates(pairs):
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            raise ValueError("duplicate key")
        return dict(pairs)

    return json.loads(text, object_pairs_hook=no_duplicates)


# ------------------------------------------------------ signed notes (C2SP)


class VerifierKey:
    """A signed-note verifier key `name+hexid+base64(type || pubkey)`."""

    def __init__(self, text):
        parts = text.split("+", 2)  # names have no "+"; base64 may
        if len(parts) != 3 or not parts[0] or not re.fullmatch(r"[0-9a-f]{8}", parts[1]):
            raise ValueError(f"malformed verifier key {text!r}")
        raw = b64decode_std(parts[2])
        if raw is None or len(raw) != 33 or raw[0] not in (0x01, 0x04):
            raise ValueError(f"unsupported verifier key {text!r}")
        self.name, self.type, self.public = parts[0], raw[0], raw[1:]
        self.id = key_id(self.name, self.type, self.public)
        if self.id.hex() != parts[1]:
            raise ValueError(f"the key ID of {text!r} does not match its key")
        self.key = Ed25519PublicKey.from_public_bytes(self.public)


def key_id(name, sig_type, public):
    """First 4 bytes of SHA-256(name || "\\n" || type || public key)."""
    return sha256(name.encode() + b"\n" + bytes([sig_type]) + public)[:4]


def parse_note(text):
    """A signed note: (text with its final newline, [(name, key id, sig)])."""
    if any(c < " " and c != "\n" for c in text):
        raise ValueError("control character in the note")
    split = text.rfind("\n\n")
    if split < 0:
        raise ValueError("no signature block")
    body, block = text[: split + 1], text[split + 2 :]
    if not block or not block.endswith("\n"):
        raise ValueError("no signature lines, or the last is unterminated")
    signatures = []
    for line in block[:-1].split("\n"):
        if not line.startswith("\u2014 "):
            raise ValueError(f"malformed signature line {line!r}")
        name, _, encoded = line[2:].partition(" ")
        raw = b64decode_std(encoded)
        if not name or raw is None or len(raw) < 5:
            raise ValueError(f"malformed signature line {line!r}")
        signatures.append((name, raw[:4], raw[4:]))
    return body, signatures


def parse_checkpoint(body):
    """A checkpoint body `origin\\nsize\\nbase64(root)\\n[extensions]`."""
    lines = body[:-1].split("\n")
    if len(lines) < 3 or not lines[0]:
        raise ValueError("a checkpoint has an origin, a size and a root")
    if not DECIMAL.match(lines[1]):
        raise ValueError("the tree size is not a canonical decimal")
    root = b64decode_std(lines[2])
    if root is None or len(root) != 32:
        raise ValueError("the root is not base64 of 32 bytes")
    return lines[0], int(lines[1]), root


def ed25519_ok(public_key, signature, message):
    try:
        public_key.verify(signature, message)
        return True
    except InvalidSignature:
        return False


def cosignature_ok(witness, note_body, signature):
    """cosignature/v1: 8-byte big-endian time || Ed25519 over the message."""
    if len(signature) != 72:
        return False
    timestamp = int.from_bytes(signature[:8], "big")
    if timestamp >= 2**63:
        return False
    message = f"cosignature/v1\ntime {timestamp}\n{note_body}".encode()
    return ed25519_ok(witness.key, signature[8:], message)


# ------------------------------------------------------- tlog-policy (C2SP)


class Policy:
    """log / witness / group / quorum lines; names defined before use."""

    def __init__(self, text):
        self.logs, self.witnesses, self.groups, self.quorum = [], {}, {}, None
        quorum_seen = False
        for number, line in enumerate(text.split("\n"), 1):
            items = line.split()
            if not items or items[0].startswith("#"):
                continue
            keyword, rest = items[0], items[1:]
            where = f"policy line {number}"
            if keyword == "log" and len(rest) in (1, 2):
                key = VerifierKey(rest[0])
                if key.type != 0x01:
                    raise ValueError(f"{where}: a log key has type 0x01")
                self.logs.append(key)
            elif keyword == "witness" and len(rest) in (2, 3):
                key = VerifierKey(rest[1])
                if key.type != 0x04:
                    raise ValueError(f"{where}: a witness key has type 0x04")
                self.define(rest[0], where)
                self.witnesses[rest[0]] = key
            elif keyword == "group" and len(rest) >= 3:
                name, threshold, members = rest[0], rest[1], rest[2:]
                for member in members:
                    if member not in self.witnesses and member not in self.groups:
                        raise ValueError(f"{where}: {member!r} is not defined before")
                if len(set(members)) != len(members):
                    raise ValueError(f"{where}: a member is listed twice")
                if threshold == "all":
                    k = len(members)
                elif threshold == "any":
                    k = 1
                elif DECIMAL.match(threshold) and 1 <= int(threshold) <= len(members):
                    k = int(threshold)
                else:
                    raise ValueError(f"{where}: bad threshold {threshold!r}")
                self.define(name, where)
                self.groups[name] = (k, members)
            elif keyword == "quorum" and len(rest) == 1:
                if quorum_seen:
                    raise ValueError(f"{where}: a second quorum line")
                quorum_seen = True
                if rest[0] != "none":
                    if rest[0] not in self.witnesses and rest[0] not in self.groups:
                        raise ValueError(f"{where}: {rest[0]!r} is not defined before")
                    self.quorum = rest[0]
            else:
                raise ValueError(f"{where}: not a valid log, witness, group or quorum line")
        if not quorum_seen:
            raise ValueError("the policy has no quorum line")

    def define(self, name, where):
        if name == "none" or name in self.witnesses or name in self.groups:
            raise ValueError(f"{where}: the name {name!r} is already defined")

    def satisfied(self, name, cosigned):
        """Whether witness or group `name` is satisfied by `cosigned` names."""
        if name in self.witnesses:
            return name in cosigned
        k, members = self.groups[name]
        return sum(self.satisfied(m, cosigned) for m in members) >= k


# -------------------------------------------------------- tlog-proof (C2SP)


def parse_tlog_proof(text):
    """(leaf index, [proof hashes], checkpoint note text)."""
    lines = text.split("\n")
    if lines[0] != TLOG_PROOF_HEADER:
        raise ValueError("the first line is not " + TLOG_PROOF_HEADER)
    if len(lines) < 3 or not lines[1].startswith("index "):
        raise ValueError("no index line (a bundle's tlog-proof has no extra line)")
    index = lines[1][len("index ") :]
    if not DECIMAL.match(index):
        raise ValueError("the index is not a canonical decimal")
    proof, at = [], 2
    while True:
        if at >= len(lines) - 1:
            raise ValueError("the proof ends before its checkpoint")
        if lines[at] == "":
            break
        node = b64decode_std(lines[at])
        if node is None or len(node) != 32 or len(proof) == 64:
            raise ValueError(f"inclusion proof line {len(proof) + 1} is not a base64 hash")
        proof.append(node)
        at += 1
    return int(index), proof, "\n".join(lines[at + 1 :])


def leaf_hash(leaf):
    return sha256(b"\x00" + leaf)


def node_hash(left, right):
    return sha256(b"\x01" + left + right)


def root_from_inclusion_proof(leaf, index, size, proof):
    """RFC 9162 section 2.1.3.2: the root the proof leads to, or None."""
    if index >= size:
        return None
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            return None
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    return r if sn == 0 else None


# ---------------------------------------------------------- PASETO key set


def paserk_pid(public):
    """PASERK k4.pid of an Ed25519 public key."""
    paserk = "k4.public." + base64.urlsafe_b64encode(public).decode().rstrip("=")
    digest = hashlib.blake2b(("k4.pid." + paserk).encode(), digest_size=33).digest()
    return "k4.pid." + base64.urlsafe_b64encode(digest).decode().rstrip("=")


def parse_key_set(value):
    """{kid: pyseto key} of the key set's active and verifying keys."""
    if isinstance(value, str):
        value = strict_json(value)
    if not isinstance(value, dict) or set(value) != {"issuer", "keys", "version"}:
        raise ValueError("a key set has exactly issuer, keys and version")
    if value["version"] != 1 or value["issuer"] != KEY_SET_ISSUER:
        raise ValueError("not a version 1 key set of " + KEY_SET_ISSUER)
    usable = {}
    for entry in value["keys"]:
        if not isinstance(entry, dict) or set(entry) != {"id", "paserk", "status"}:
            raise ValueError("a key has exactly id, paserk and status")
        paserk = entry["paserk"]
        public = b64url_decode(paserk[len("k4.public.") :]) if isinstance(paserk, str) else None
        if not paserk.startswith("k4.public.") or public is None or len(public) != 32:
            raise ValueError("a key is not a k4.public PASERK")
        if entry["id"] != paserk_pid(public):
            raise ValueError("a key id does not match its key")
        if entry["status"] not in ("active", "verifying", "retired"):
            raise ValueError(f"unknown key status {entry['status']!r}")
        if entry["status"] != "retired":
            usable[entry["id"]] = pyseto.Key.from_paserk(paserk)
    return usable


# ----------------------------------------------------------------- WebAuthn


def proposal_digest(proposal, delivery):
    h = hashlib.sha256(b"countersign-proposal-digest-v1\0")
    for field in (
        proposal["operation"],
        proposal["arguments_sha256"],
        proposal["contract_revision"],
        proposal["policy_revision"],
        proposal["session"],
        delivery,
    ):
        data = field.encode("utf-8")
        h.update(len(data).to_bytes(8, "big") + data)
    return h.digest()


def decision_challenge(random, digest):
    return sha256(b"countersign-webauthn-decision-v1\0" + random + digest)


def cose_verify(cose, message, signature):
    """Verify under a COSE key: ES256 (P-256) or EdDSA (Ed25519) only."""
    key = cbor2.loads(cose)
    if not isinstance(key, dict) or not set(key) <= {1, 3, -1, -2, -3}:
        raise ValueError("not a COSE key of ES256 or EdDSA")
    kty, alg, crv, x = key.get(1), key.get(3), key.get(-1), key.get(-2)
    if not isinstance(x, bytes) or len(x) != 32:
        raise ValueError("the COSE key's x is not 32 bytes")
    if (kty, alg, crv) == (2, -7, 1):
        y = key.get(-3)
        if not isinstance(y, bytes) or len(y) != 32:
            raise ValueError("the COSE key's y is not 32 bytes")
        public = ec.EllipticCurvePublicNumbers(
            int.from_bytes(x, "big"), int.from_bytes(y, "big"), ec.SECP256R1()
        ).public_key()
        try:
            public.verify(signature, message, ec.ECDSA(hashes.SHA256()))
            return True
        except InvalidSignature:
            return False
    if (kty, alg, crv) == (1, -8, 6) and -3 not in key:
        return ed25519_ok(Ed25519PublicKey.from_public_bytes(x), signature, message)
    raise ValueError("not a COSE key of ES256 or EdDSA")


# ------------------------------------------------------------------- format

TOP = {"format", "exported_at", "proposal", "contract", "registry_sha256", "decision",
       "proof", "keys", "consumption", "events"}
PROPOSAL = {"id", "principal", "session", "operation", "arguments_sha256",
            "contract_revision", "policy_revision", "created_at"}
ASSERTION = {"approver", "credential_id", "public_key", "challenge_random", "delivery",
             "authenticator_data", "client_data_json", "signature"}
CONSUMPTION = {"nonce", "status", "error", "result"}
EVENT = {"chain", "seq", "at", "kind", "proposal_id", "actor", "details", "prev_hash",
         "hash", "tlog_proof"}


def check_format(b):
    def need(condition, what):
        refuse_unless(condition, "format", what)

    def text(obj, key, where):
        need(isinstance(obj.get(key), str), f"{where}.{key} is not a string")

    need(isinstance(b, dict), "the bundle is not a JSON object")
    need(b.get("format") == FORMAT, f"format is not {FORMAT!r}")
    need(set(b) == TOP, f"the members are not exactly {sorted(TOP)}")
    need(isinstance(b["exported_at"], str) and TIME.match(b["exported_at"]), "exported_at is not a time")
    need(isinstance(b["registry_sha256"], str) and HEX64.match(b["registry_sha256"]),
         "registry_sha256 is not a SHA-256")

    p = b["proposal"]
    need(isinstance(p, dict), "proposal is not an object")
    extra = set(p) - PROPOSAL
    need(set(p) >= PROPOSAL and extra in ({"arguments"}, {"arguments_commitment"}),
         "proposal's members are wrong (it needs arguments or arguments_commitment)")
    for key in set(p):
        text(p, key, "proposal")
    need(TIME.match(p["created_at"]), "proposal.created_at is not a time")
    committed = "arguments_commitment" in p
    need((b["proof"] is None) == committed, "the proof is null exactly when the arguments are committed")
    need(b["proof"] is None or isinstance(b["proof"], str), "proof is not a string")
    need(b["contract"] is None or isinstance(b["contract"], str), "contract is not a string or null")
    need(isinstance(b["keys"], dict), "keys is not a key set object")

    d = b["decision"]
    need(isinstance(d, dict) and set(d) == {"provenance", "relying_party", "assertions"},
         "decision is not {provenance, relying_party, assertions}")
    text(d, "provenance", "decision")
    rp = d["relying_party"]
    need(rp is None or (isinstance(rp, dict) and set(rp) == {"id", "origins"}
                        and isinstance(rp["id"], str) and isinstance(rp["origins"], list)
                        and all(isinstance(o, str) for o in rp["origins"])),
         "decision.relying_party is not {id, origins} or null")
    need(isinstance(d["assertions"], list), "decision.assertions is not a list")
    for a in d["assertions"]:
        need(isinstance(a, dict) and set(a) == ASSERTION, f"an assertion is not {sorted(ASSERTION)}")
        need(a["approver"] is None or isinstance(a["approver"], str), "assertion.approver is not a string or null")
        for key in ASSERTION - {"approver"}:
            text(a, key, "assertion")

    c = b["consumption"]
    need(isinstance(c, dict) and set(c) == CONSUMPTION, "consumption is not {nonce, status, error, result}")
    for key in ("nonce", "status", "result"):
        text(c, key, "consumption")
    need(c["error"] is None or isinstance(c["error"], str), "consumption.error is not a string or null")

    need(isinstance(b["events"], list) and b["events"], "events is not a non-empty list")
    for e in b["events"]:
        need(isinstance(e, dict) and set(e) == EVENT, f"an event is not {sorted(EVENT)}")
        for key in ("chain", "at", "kind", "actor", "tlog_proof"):
            text(e, key, "event")
        need(isinstance(e["seq"], int) and not isinstance(e["seq"], bool) and e["seq"] >= 1,
             "event.seq is not a positive integer")
        need(e["proposal_id"] is None or isinstance(e["proposal_id"], str), "event.proposal_id is not a string or null")
        for key in ("prev_hash", "hash"):
            need(isinstance(e[key], str) and HEX64.match(e[key]), f"event.{key} is not a SHA-256")
        need(isinstance(e["details"], dict), "event.details is not an object")


# ----------------------------------------------------------------- the checks


def name(e):
    return f"event {e['chain'] or '(global)'}/{e['seq']} ({e['kind']})"


def verify(bundle, policy, pinned_keys=None, reveal=None):
    """Run the 19 checks in order; return the ok lines, or raise Refused."""
    ok = []

    # 1 format
    check_format(bundle)
    p, d, events = bundle["proposal"], bundle["decision"], bundle["events"]
    ok.append(("format", f"{FORMAT}, {len(events)} events, {len(d['assertions'])} assertions"))

    # 2 checkpoint
    proofs = []
    for e in events:
        try:
            proofs.append(parse_tlog_proof(e["tlog_proof"]))
        except ValueError as error:
            raise Refused("checkpoint", f"the tlog-proof of {name(e)} is malformed: {error}")
    note = proofs[0][2]
    refuse_unless(all(proof[2] == note for proof in proofs), "checkpoint",
                  "the events do not all carry the same checkpoint")
    try:
        body, signatures = parse_note(note)
        origin, size, root = parse_checkpoint(body)
    except ValueError as error:
        raise Refused("checkpoint", f"the checkpoint is malformed: {error}")
    log_keys = [k for k in policy.logs if k.name == origin]
    refuse_unless(log_keys, "checkpoint", f"no log of the policy has origin {origin!r}")
    ok.append(("checkpoint", f"{origin} at size {size}"))

    # 3 checkpoint_signature: any of the log's keys (more than one after a rotation)
    def signed_by(key, check):
        sigs = [s for n, i, s in signatures if n == key.name and i == key.id]
        return any(check(s) for s in sigs), bool(sigs)

    refuse_unless(
        any(signed_by(k, lambda s, k=k: ed25519_ok(k.key, s, body.encode()))[0] for k in log_keys),
        "checkpoint_signature", f"the checkpoint is not signed by the key of log {origin!r}")
    ok.append(("checkpoint_signature", f"signed by {origin}"))

    # 4 witness_quorum: a known witness's signature that fails refuses the note
    cosigned = set()
    for witness_name, key in policy.witnesses.items():
        valid, present = signed_by(key, lambda s, k=key: cosignature_ok(k, body, s))
        refuse_unless(valid or not present, "witness_quorum",
                      f"the cosignature of witness {witness_name!r} does not verify")
        if valid:
            cosigned.add(witness_name)
    if policy.quorum is None:
        ok.append(("witness_quorum", "quorum none: the checkpoint is the log's word only"))
    else:
        refuse_unless(policy.satisfied(policy.quorum, cosigned), "witness_quorum",
                      f"quorum {policy.quorum!r} not met (cosigned by {sorted(cosigned)})")
        ok.append(("witness_quorum", f"quorum {policy.quorum!r} met by {sorted(cosigned)}"))

    # 5 event_hash
    for e in events:
        content = {"id": e["seq"], "at": e["at"], "kind": e["kind"],
                   "proposal_id": e["proposal_id"], "actor": e["actor"], "details": e["details"]}
        if e["chain"] != "":
            content["chain"] = e["chain"]
        try:
            text = canonical(content)
        except Exception as error:  # rfc8785 refuses what it cannot canonicalize
            raise Refused("event_hash", f"{name(e)} has no canonical JSON form: {error}")
        computed = hashlib.sha256(e["prev_hash"].encode() + text.encode()).hexdigest()
        refuse_unless(computed == e["hash"], "event_hash", f"{name(e)} does not hash to its hash")
    ok.append(("event_hash", f"{len(events)} events hash to their hashes"))

    # 6 not_in_checkpoint
    for e, (index, _, _) in zip(events, proofs):
        refuse_unless(index < size, "not_in_checkpoint",
                      f"{name(e)} is leaf {index}, beyond the checkpoint's {size} leaves")
    ok.append(("not_in_checkpoint", f"every leaf index is below {size}"))

    # 7 inclusion
    for e, (index, path, _) in zip(events, proofs):
        leaf = f"{LEAF_VERSION}\n{e['chain']}\n{e['seq']}\n{e['hash']}".encode()
        refuse_unless(root_from_inclusion_proof(leaf_hash(leaf), index, size, path) == root,
                      "inclusion", f"the inclusion proof of {name(e)} does not lead to the root")
    ok.append(("inclusion", "every event is in the checkpoint's tree"))

    # 8 missing_event
    mine = [e for e in events if e["chain"] == p["principal"] and e["proposal_id"] == p["id"]]

    def the(*kinds):
        found = [e for e in mine if e["kind"] in kinds]
        refuse_unless(found, "missing_event", f"no {' or '.join(kinds)} event of {p['id']} on {p['principal']}'s chain")
        refuse_unless(len(found) == 1, "missing_event", f"more than one {' or '.join(kinds)} event of {p['id']}")
        return found[0]

    proposed, approved, intent, completed = the("proposed"), the("approved"), the("intent"), the("completed", "resolved")
    ok.append(("missing_event", "proposed, approved, intent and " + completed["kind"] + " are present"))

    # 9 proposal
    for field in ("session", "operation", "arguments_sha256", "contract_revision", "policy_revision"):
        refuse_unless(proposed["details"].get(field) == p[field], "proposal",
                      f"the proposed event's {field} is not the proposal's")
    refuse_unless(proposed["at"] == p["created_at"], "proposal", "the proposed event is not at created_at")
    ok.append(("proposal", f"{p['operation']} in session {p['session']}, proposed at {p['created_at']}"))

    # 10 arguments
    if "arguments" in p:
        refuse_unless(sha256_hex(p["arguments"]) == p["arguments_sha256"], "arguments",
                      "the arguments do not hash to arguments_sha256")
        ignored = " (--reveal ignored: the arguments are in the bundle)" if reveal else ""
        ok.append(("arguments", "the arguments hash to arguments_sha256" + ignored))
    elif reveal is None:
        ok.append(("arguments", "committed and not opened (no --reveal): not checked"))
    else:
        arguments, salt = reveal
        commitment = hashlib.sha256(b"countersign-evidence/v1 arguments\n" + salt + arguments.encode()).hexdigest()
        refuse_unless(commitment == p["arguments_commitment"], "arguments", "the opening does not match the commitment")
        refuse_unless(sha256_hex(arguments) == p["arguments_sha256"], "arguments",
                      "the revealed arguments do not hash to arguments_sha256")
        ok.append(("arguments", "the opening matches the commitment and hashes to arguments_sha256"))

    # 11 contract
    if bundle["contract"] is None:
        ok.append(("contract", "not in the bundle: not checked"))
    else:
        refuse_unless(sha256_hex(bundle["contract"]) == p["contract_revision"], "contract",
                      "the contract does not hash to contract_revision")
        ok.append(("contract", "the contract hashes to contract_revision"))

    # 12 assertion_event
    refuse_unless(d["provenance"] == approved["details"].get("provenance"), "assertion_event",
                  "the decision's provenance is not the approved event's")
    for a in d["assertions"]:
        if a["approver"] is None:
            named = approved["details"].get("passkey") == a["credential_id"]
        else:
            named = any(e["kind"] == "quorum_approved" and e["details"].get("approver") == a["approver"]
                        and e["details"].get("passkey") == a["credential_id"] for e in mine)
        refuse_unless(named, "assertion_event",
                      f"no event records the assertion of credential {a['credential_id']} by {a['approver'] or 'the principal'}")
    # And every passkey an event names has its assertion in the bundle.
    given = {(a["approver"], a["credential_id"]) for a in d["assertions"]}
    wanted = set()
    if isinstance(approved["details"].get("passkey"), str):
        wanted.add((None, approved["details"]["passkey"]))
    for e in mine:
        if e["kind"] == "quorum_approved" and isinstance(e["details"].get("passkey"), str):
            wanted.add((e["details"].get("approver"), e["details"]["passkey"]))
    missing = sorted(wanted - given, key=str)
    refuse_unless(not missing, "assertion_event",
                  f"the log names a passkey whose assertion the bundle leaves out: {missing[:1]}")
    ok.append(("assertion_event", f"provenance {d['provenance']!r}; "
               + (f"{len(d['assertions'])} assertions named by their events" if d["assertions"]
                  else "no passkey assertion: the approval is the log's word only")))

    # 13 credential
    for a in d["assertions"]:
        refuse_unless(any(
            e["kind"] == "passkey_enrolled" and e["chain"] == p["principal"]
            and e["details"].get("credential_id") == a["credential_id"]
            and e["details"].get("principal") == p["principal"]
            and e["details"].get("public_key_sha256") == sha256_hex(a["public_key"])
            for e in events), "credential",
            f"no passkey_enrolled event of {p['principal']} fixes credential {a['credential_id']} with this public key")
    ok.append(("credential", f"{len(d['assertions'])} assertions by enrolled credentials"))

    # 14 assertion_challenge
    client_data = []
    for a in d["assertions"]:
        random, raw = b64url_decode(a["challenge_random"]), b64url_decode(a["client_data_json"])
        refuse_unless(random is not None and len(random) == 32, "assertion_challenge",
                      "challenge_random is not base64url of 32 bytes")
        try:
            data = strict_json(raw.decode("utf-8"))
        except (AttributeError, UnicodeDecodeError, ValueError):
            raise Refused("assertion_challenge", "the client data is not JSON")
        refuse_unless(isinstance(data, dict) and data.get("type") == "webauthn.get",
                      "assertion_challenge", "the client data is not a webauthn.get")
        expected = decision_challenge(random, proposal_digest(p, a["delivery"]))
        refuse_unless(b64url_decode(data.get("challenge")) == expected, "assertion_challenge",
                      f"the challenge of credential {a['credential_id']} is not derived from this proposal")
        client_data.append((raw, data))
    ok.append(("assertion_challenge", "every challenge is derived from this proposal and its delivery"))

    # 15 assertion_signature
    rp = d["relying_party"]
    for a, (raw, data) in zip(d["assertions"], client_data):
        refuse_unless(rp is not None, "assertion_signature", "an assertion but no relying party")
        auth = b64url_decode(a["authenticator_data"])
        signature, cose = b64url_decode(a["signature"]), b64url_decode(a["public_key"])
        refuse_unless(auth is not None and len(auth) >= 37 and signature is not None and cose is not None,
                      "assertion_signature", "malformed authenticator data, signature or public key")
        refuse_unless(auth[:32] == sha256(rp["id"].encode()), "assertion_signature",
                      f"the RP ID hash is not that of {rp['id']!r}")
        refuse_unless(data.get("origin") in rp["origins"], "assertion_signature",
                      f"origin {data.get('origin')!r} is not one the relying party lists")
        refuse_unless(data.get("crossOrigin", False) is False and "topOrigin" not in data,
                      "assertion_signature", "a cross-origin assertion")
        refuse_unless(auth[32] & 0x01 and auth[32] & 0x04, "assertion_signature",
                      "user presence or user verification is not set")
        try:
            valid = cose_verify(cose, auth + sha256(raw), signature)
        except ValueError as error:
            raise Refused("assertion_signature", f"the credential's public key: {error}")
        refuse_unless(valid, "assertion_signature", f"the signature of credential {a['credential_id']} does not verify")
    ok.append(("assertion_signature", f"{len(d['assertions'])} assertion signatures verify"
               + (f" for {rp['id']}" if rp and d["assertions"] else "")))

    # 16 proof_hash
    proof = bundle["proof"]
    if proof is None:
        ok.append(("proof_hash", "no proof in the bundle (arguments committed): not checked"))
    else:
        digest = sha256_hex(proof)
        refuse_unless(intent["details"].get("proof_sha256") == digest, "proof_hash",
                      "the proof's SHA-256 is not the intent event's proof_sha256")
        issued = approved["details"].get("proof_sha256")
        if issued == digest:
            ok.append(("proof_hash", "the proof is the one the approved and intent events recorded"))
        else:
            # Signed again by another signer for the same nonce: its
            # proof_resigned event names the approved event's proof.
            resigned = [e for e in mine if e["kind"] == "proof_resigned"
                        and e["details"].get("proof_sha256") == digest
                        and issued is not None
                        and e["details"].get("replaces_proof_sha256") == issued]
            refuse_unless(resigned, "proof_hash",
                          "the proof's SHA-256 is not the approved event's proof_sha256")
            ok.append(("proof_hash", "the proof is the intent event's, signed again by key "
                       f"{resigned[0]['details'].get('key_id')} for the approved event's"))

    # 17 proof_signature (expiry deliberately not checked)
    if proof is not None:
        source = "the pinned key set (--keys)" if pinned_keys is not None else "the bundle's own key set (not pinned: pass --keys)"
        try:
            keys = parse_key_set(pinned_keys if pinned_keys is not None else bundle["keys"])
        except Exception as error:  # malformed JSON, or a key pyseto refuses
            raise Refused("proof_signature", f"{source} is refused: {error}")
        parts = proof.split(".")
        footer = b64url_decode(parts[3]) if len(parts) == 4 and parts[:2] == ["v4", "public"] else None
        try:
            kid = strict_json(footer.decode())["kid"]
        except (AttributeError, UnicodeDecodeError, ValueError, TypeError, KeyError):
            raise Refused("proof_signature", "the proof is not v4.public with a footer naming its kid")
        refuse_unless(isinstance(kid, str) and kid in keys, "proof_signature", f"key {kid} is not in {source}")
        try:
            payload = pyseto.decode(keys[kid], proof).payload
        except Exception as error:  # pyseto raises its own types
            raise Refused("proof_signature", f"the proof does not verify under {kid}: {error}")
        ok.append(("proof_signature", f"verifies under {kid} of {source}"))

        # 18 proof_claims
        try:
            claims = strict_json(payload.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise Refused("proof_claims", "the claims are not JSON")
        refuse_unless(isinstance(claims, dict), "proof_claims", "the claims are not an object")
        ad = approved["details"]
        expected = {"pid": p["id"], "sub": p["principal"], "sid": p["session"], "op": p["operation"],
                    "args_sha256": p["arguments_sha256"], "crev": p["contract_revision"],
                    "prev": p["policy_revision"], "prov": ad.get("provenance"),
                    "aud": ad.get("audience"), "exp": ad.get("expires_at"), "jti": intent["details"].get("nonce")}
        for claim, value in expected.items():
            refuse_unless(value is not None and claims.get(claim) == value, "proof_claims",
                          f"claim {claim} is {claims.get(claim)!r}, not {value!r}")
        try:
            args_hash = sha256_hex(canonical(claims.get("args")))
        except Exception:
            args_hash = None
        refuse_unless(args_hash == p["arguments_sha256"], "proof_claims", "the proof's args do not hash to args_sha256")
        ok.append(("proof_claims", f"the claims bind {p['id']}, nonce {claims['jti']}, expired {claims['exp']}"))
    else:
        ok.append(("proof_signature", "no proof in the bundle: not checked"))
        ok.append(("proof_claims", "no proof in the bundle: not checked"))

    # 19 consumption
    c, cd = bundle["consumption"], completed["details"]
    refuse_unless(c is not None, "consumption", "the bundle records no consumption")
    refuse_unless(c["nonce"] == intent["details"].get("nonce") == cd.get("nonce"), "consumption",
                  "the consumed nonce is not the intent and completion events'")
    refuse_unless(c["status"] == cd.get("status") and c["error"] == cd.get("error"), "consumption",
                  f"status or error is not the {completed['kind']} event's")
    if "result_sha256" in cd:
        refuse_unless(sha256_hex(c["result"]) == cd["result_sha256"], "consumption",
                      f"the result does not hash to the {completed['kind']} event's result_sha256")
        ok.append(("consumption", f"nonce {c['nonce']} consumed once: {c['status']}, result pinned by the log"))
    else:
        ok.append(("consumption", f"nonce {c['nonce']} consumed once: {c['status']} (the event predates result_sha256: result not pinned)"))
    return ok


# --------------------------------------------------------------------- main


def read_text(path, what):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise Unreadable(f"cannot read the {what} {path}: {error}")


def main(argv=None):
    parser = argparse.ArgumentParser(description="Verify a countersign evidence bundle.")
    parser.add_argument("bundle")
    parser.add_argument("--trust", required=True, help="the C2SP tlog-policy file")
    parser.add_argument("--keys", help="the pinned key set (countersign keys export)")
    parser.add_argument("--reveal", help="the salt file opening committed arguments")
    args = parser.parse_args(argv)  # exits 2 on a usage error
    try:
        bundle_text = read_text(args.bundle, "bundle")
        try:
            policy = Policy(read_text(args.trust, "trust policy"))
        except ValueError as error:
            raise Unreadable(f"the trust policy is refused: {error}")
        pinned = None
        if args.keys:
            try:
                pinned = strict_json(read_text(args.keys, "key set"))
            except ValueError as error:
                raise Unreadable(f"the key set is not JSON: {error}")
        reveal = None
        if args.reveal:
            try:
                opening = strict_json(read_text(args.reveal, "salt file"))
                reveal = (opening["arguments"], bytes.fromhex(opening["salt"]))
                assert isinstance(reveal[0], str)
            except (ValueError, KeyError, TypeError, AssertionError) as error:
                raise Unreadable(f"the salt file is not {{arguments, salt}}: {error}")
    except Unreadable as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        try:
            bundle = strict_json(bundle_text)
        except ValueError as error:
            raise Refused("format", f"the bundle is not JSON: {error}")
        lines = verify(bundle, policy, pinned, reveal)
    except Refused as refusal:
        print(f"refused: {refusal.code}: {refusal.message}")
        return 1
    for code, message in lines:
        print(f"ok {code}: {message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
