#!/usr/bin/env python3
"""Synthetic evidence bundles, built from scratch for testing the verifier.

    python3 synthetic.py OUTDIR

writes into OUTDIR:
  bundle.json     a valid bundle (proposal B, with an ES256 passkey assertion)
  older.json      a valid bundle of an earlier proposal A, at a smaller,
                  cosigned checkpoint of the same log (for --older)
  other.json      a valid bundle of proposal C, same person and credential (--other)
  committed.json  bundle.json's proposal exported with --commit-arguments
  salt.json       its opening (for --reveal)
  quorum.json     a valid bundle approved by quorum approver bob's EdDSA passkey
  policy.txt      the tlog-policy (log, one witness, group, quorum)
  keys.json       the key set (for --keys)

Everything is fresh on each run: log key, witness key, proof key, passkey.
"""

import base64
import hashlib
import json
import os
import secrets
import sys
import time

import cbor2
import pyseto
import rfc8785
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import verify_evidence as v  # noqa: E402  (shares the encodings under test)

RP_ID = "countersign.example"
ORIGIN = "https://countersign.example"
PRINCIPAL = "pr_a11ce0000000000000000000000000a1"  # ids as countersign writes them


def b64(raw):
    return base64.b64encode(raw).decode()


def b64url(raw):
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def canonical(value):
    return rfc8785.dumps(value).decode()


def sha256_hex(text):
    return hashlib.sha256(text.encode()).hexdigest()


def raw_public(private):
    return private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


# ------------------------------------------------------------- note keys


class NoteKey:
    """An Ed25519 signed-note key: 0x01 for a log, 0x04 for a cosigner."""

    def __init__(self, name, sig_type):
        self.name, self.type = name, sig_type
        self.private = Ed25519PrivateKey.generate()
        self.public = raw_public(self.private)
        self.id = v.key_id(name, sig_type, self.public)

    def vkey(self):
        return f"{self.name}+{self.id.hex()}+{b64(bytes([self.type]) + self.public)}"

    def signature_line(self, body):
        if self.type == 0x01:
            signature = self.private.sign(body.encode())
        else:
            timestamp = int(time.time())
            message = f"cosignature/v1\ntime {timestamp}\n{body}".encode()
            signature = timestamp.to_bytes(8, "big") + self.private.sign(message)
        return f"\u2014 {self.name} {b64(self.id + signature)}\n"


def sign_checkpoint(origin, size, root, signers):
    body = f"{origin}\n{size}\n{b64(root)}\n"
    return body + "\n" + "".join(s.signature_line(body) for s in signers)


# ---------------------------------------------------------- RFC 6962 tree


def tree_hash(leaves):
    if len(leaves) == 1:
        return leaves[0]
    k = 1 << ((len(leaves) - 1).bit_length() - 1)  # largest power of 2 < n
    return v.node_hash(tree_hash(leaves[:k]), tree_hash(leaves[k:]))


def inclusion_path(index, leaves):
    if len(leaves) == 1:
        return []
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    if index < k:
        return inclusion_path(index, leaves[:k]) + [tree_hash(leaves[k:])]
    return inclusion_path(index - k, leaves[k:]) + [tree_hash(leaves[:k])]


def tlog_proof(index, leaves, note):
    lines = [v.TLOG_PROOF_HEADER, f"index {index}"] + [b64(h) for h in inclusion_path(index, leaves)]
    return "\n".join(lines) + "\n\n" + note


# --------------------------------------------------------------- passkey


def cose_eddsa(private):
    return cbor2.dumps({1: 1, 3: -8, -1: 6, -2: raw_public(private)})


def cose_es256(private):
    numbers = private.public_key().public_numbers()
    return cbor2.dumps({1: 2, 3: -7, -1: 1, -2: numbers.x.to_bytes(32, "big"), -3: numbers.y.to_bytes(32, "big")})


# ------------------------------------------------------------------ world


class World:
    """One installation: its keys, its log (chains and leaves), its proposals."""

    def __init__(self):
        self.origin = "countersign/synthetic_" + secrets.token_hex(3)
        self.log_key = NoteKey(self.origin, 0x01)
        self.witness = NoteKey("w1.synthetic.example", 0x04)
        self.proof_key_private = Ed25519PrivateKey.generate()
        pem = self.proof_key_private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        self.proof_key = pyseto.Key.new(version=4, purpose="public", key=pem)
        self.paserk = "k4.public." + b64url(raw_public(self.proof_key_private))
        self.kid = v.paserk_pid(raw_public(self.proof_key_private))
        self.passkey = ec.generate_private_key(ec.SECP256R1())
        self.credential_id = b64url(secrets.token_bytes(16))
        self.public_key = b64url(cose_es256(self.passkey))
        self.leaves = []  # leaf hashes, in log order
        self.heads = {}  # chain -> (count, hash)
        self.positions = {}  # (chain, seq) -> leaf index
        self.events = {}  # (chain, seq) -> event without tlog_proof
        self.clock = 1_780_000_000
        self.enrolment = self.append(PRINCIPAL, "passkey_enrolled", None, PRINCIPAL, {
            "credential_id": self.credential_id, "principal": PRINCIPAL, "name": "laptop",
            "authorized_by": "enrolment-code", "public_key_sha256": sha256_hex(self.public_key)})
        # a quorum approver's EdDSA passkey, held for the principal (enrolled by bob)
        self.approver_key = Ed25519PrivateKey.generate()
        self.approver_credential = b64url(secrets.token_bytes(16))
        self.approver_public_key = b64url(cose_eddsa(self.approver_key))
        self.approver_enrolment = self.append(PRINCIPAL, "passkey_enrolled", None, "bob", {
            "credential_id": self.approver_credential, "principal": PRINCIPAL, "name": "bob's key",
            "authorized_by": "enrolment-code", "public_key_sha256": sha256_hex(self.approver_public_key)})

    def policy(self):
        return (f"# synthetic trust policy\nlog {self.log_key.vkey()}\n"
                f"witness w1 {self.witness.vkey()} https://w1.synthetic.example/\n"
                "group g 1 w1\nquorum g\n")

    def key_set(self):
        return {"issuer": "countersign-signer", "version": 1,
                "keys": [{"id": self.kid, "paserk": self.paserk, "status": "active"}]}

    def now(self, step=7):
        self.clock += step
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.clock))

    def append(self, chain, kind, proposal_id, actor, details):
        count, prev = self.heads.get(chain, (0, "0" * 64))
        event = {"chain": chain, "seq": count + 1, "at": self.now(), "kind": kind,
                 "proposal_id": proposal_id, "actor": actor, "details": details, "prev_hash": prev}
        content = {"id": event["seq"], "at": event["at"], "kind": kind, "proposal_id": proposal_id,
                   "actor": actor, "details": details}
        if chain:
            content["chain"] = chain
        event["hash"] = hashlib.sha256(prev.encode() + canonical(content).encode()).hexdigest()
        self.heads[chain] = (event["seq"], event["hash"])
        leaf = f"{v.LEAF_VERSION}\n{chain}\n{event['seq']}\n{event['hash']}".encode()
        self.positions[(chain, event["seq"])] = len(self.leaves)
        self.leaves.append(v.leaf_hash(leaf))
        self.events[(chain, event["seq"])] = event
        return event

    def filler(self, n):
        """Events of other chains, so the tree is not just this proposal."""
        for i in range(n):
            chain = ["pr_bob", "pr_carol", ""][i % 3]
            self.append(chain, "proposed", f"prop_{secrets.token_hex(4)}", chain or "signer",
                        {"note": f"filler {i}"})

    def proposal(self, session, arguments, delivery="direct", approver=None):
        """A proposal, approved with a passkey (the principal's, or a quorum
        approver's), consumed and completed."""
        pid = "prop_" + secrets.token_hex(16)
        args_text = canonical(arguments)
        contract = canonical({"operation": "deploy.release", "arguments": {"version": "string"}})
        p = {"id": pid, "principal": PRINCIPAL, "session": session, "operation": "deploy.release",
             "arguments_sha256": sha256_hex(args_text), "contract_revision": sha256_hex(contract),
             "policy_revision": secrets.token_hex(32)}
        proposed = self.append(PRINCIPAL, "proposed", pid, PRINCIPAL, {
            k: p[k] for k in ("session", "operation", "arguments_sha256", "contract_revision", "policy_revision")})
        p["created_at"] = proposed["at"]
        self.filler(3)
        # the passkey assertion over the decision challenge
        random = secrets.token_bytes(32)
        challenge = v.decision_challenge(random, v.proposal_digest(p, delivery))
        client_data = json.dumps({"type": "webauthn.get", "challenge": b64url(challenge),
                                  "origin": ORIGIN, "crossOrigin": False}, separators=(",", ":")).encode()
        auth = hashlib.sha256(RP_ID.encode()).digest() + bytes([0x05]) + (0).to_bytes(4, "big")
        signed = auth + hashlib.sha256(client_data).digest()
        if approver is None:
            credential, public_key = self.credential_id, self.public_key
            signature = self.passkey.sign(signed, ec.ECDSA(hashes.SHA256()))
            provenance, extra_events = f"human:cert:{PRINCIPAL}", [self.enrolment]
        else:
            credential, public_key = self.approver_credential, self.approver_public_key
            signature = self.approver_key.sign(signed)
            provenance = f"human:quorum:{PRINCIPAL}/{approver}"
            extra_events = [self.approver_enrolment, self.append(PRINCIPAL, "quorum_approved", pid, approver, {
                "approver": approver, "seq": 1, "required": 1, "passkey": credential})]
        assertion = {"approver": approver, "credential_id": credential, "public_key": public_key,
                     "challenge_random": b64url(random), "delivery": delivery,
                     "authenticator_data": b64url(auth), "client_data_json": b64url(client_data),
                     "signature": b64url(signature)}
        # the proof, expired by the time anyone reads the bundle
        nonce = b64url(secrets.token_bytes(32))
        issued = self.now()
        expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.clock + 300))
        claims = {"iss": "countersign-signer", "aud": "deploy-head", "sub": PRINCIPAL, "sid": session,
                  "pid": pid, "op": p["operation"], "args": arguments, "args_sha256": p["arguments_sha256"],
                  "crev": p["contract_revision"], "prev": p["policy_revision"], "grant": None, "prov": provenance,
                  "jti": nonce, "iat": issued, "nbf": issued, "exp": expires, "amr": ["passkey-uv"],
                  "pkh": hashlib.sha256(base64.urlsafe_b64decode(credential + "==")).hexdigest()}
        proof = pyseto.encode(self.proof_key, canonical(claims).encode(),
                              footer=canonical({"kid": self.kid}).encode()).decode()
        proof_sha256 = sha256_hex(proof)
        approved_details = {"proof_sha256": proof_sha256, "session": session, "provenance": provenance,
                            "audience": "deploy-head", "expires_at": expires}
        if approver is None:
            approved_details["passkey"] = credential
        approved = self.append(PRINCIPAL, "approved", pid, PRINCIPAL, approved_details)
        self.filler(2)
        intent = self.append(PRINCIPAL, "intent", pid, PRINCIPAL, {
            "nonce": nonce, "proof_sha256": proof_sha256, "session": session, "operation": p["operation"]})
        result = canonical({"deployed": arguments.get("version"), "ok": True})
        applied = self.append(PRINCIPAL, "effect_applied", pid, PRINCIPAL, {"nonce": nonce, "effect": "deploy"})
        completed = self.append(PRINCIPAL, "completed", pid, PRINCIPAL, {
            "nonce": nonce, "status": "applied", "error": None, "result_sha256": sha256_hex(result)})
        self.filler(2)
        return {"proposal": p, "arguments": args_text, "contract": contract, "assertion": assertion,
                "provenance": provenance, "proof": proof, "result": result, "nonce": nonce,
                "events": extra_events + [proposed, approved, intent, applied, completed]}

    def bundle(self, made, commit=False):
        """The bundle of a proposal `made`, at a checkpoint of the log as it is now."""
        size, root = len(self.leaves), tree_hash(self.leaves)
        note = sign_checkpoint(self.origin, size, root, [self.log_key, self.witness])
        events = []
        for e in made["events"]:
            events.append(dict(e, tlog_proof=tlog_proof(self.positions[(e["chain"], e["seq"])], self.leaves, note)))
        proposal = dict(made["proposal"])
        salt_file = None
        if commit:
            salt = secrets.token_bytes(32)
            proposal["arguments_commitment"] = hashlib.sha256(
                b"countersign-evidence/v1 arguments\n" + salt + made["arguments"].encode()).hexdigest()
            salt_file = {"arguments": made["arguments"], "salt": salt.hex()}
        else:
            proposal["arguments"] = made["arguments"]
        bundle = {
            "format": v.FORMAT, "exported_at": self.now(),
            "proposal": proposal, "contract": made["contract"], "registry_sha256": secrets.token_hex(32),
            "decision": {"provenance": made["provenance"], "relying_party": {"id": RP_ID, "origins": [ORIGIN]},
                         "assertions": [made["assertion"]]},
            "proof": None if commit else made["proof"], "keys": self.key_set(),
            "consumption": {"nonce": made["nonce"], "status": "applied", "error": None, "result": made["result"]},
            "events": events,
        }
        return bundle, salt_file


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f, indent=2, ensure_ascii=False)
        f.write("\n")


def build(outdir):
    """Write the synthetic files into outdir; return their paths by name."""
    os.makedirs(outdir, exist_ok=True)
    world = World()
    world.filler(5)
    a = world.proposal("sess_a", {"env": "staging", "version": "1.2.2"})
    older, _ = world.bundle(a)
    world.filler(4)
    b = world.proposal("sess_b", {"env": "prod", "version": "1.2.3"})
    c = world.proposal("sess_c", {"env": "prod", "version": "1.2.4"})
    world.filler(6)
    bundle, _ = world.bundle(b)
    other, _ = world.bundle(c)
    committed, salt = world.bundle(b, commit=True)
    quorum, _ = world.bundle(world.proposal("sess_q", {"env": "prod", "version": "1.3.0"}, approver="bob"))
    paths = {name: os.path.join(outdir, name) for name in (
        "bundle.json", "older.json", "other.json", "committed.json", "salt.json", "quorum.json", "policy.txt", "keys.json")}
    for name, value in (("bundle.json", bundle), ("older.json", older), ("other.json", other),
                        ("committed.json", committed), ("salt.json", salt), ("quorum.json", quorum), ("keys.json", world.key_set())):
        write_json(paths[name], value)
    with open(paths["policy.txt"], "w") as f:
        f.write(world.policy())
    return paths


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    for path in build(sys.argv[1]).values():
        print(path)
