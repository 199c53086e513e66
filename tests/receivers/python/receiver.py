#!/usr/bin/env python3
"""A service that receives countersign proofs and checks them itself, with pyseto.

Usage:
  receiver.py --keys KEYSET.json --audience AUD --operation OP \
              --arguments FILE [--nonces NONCES.sqlite] < proof

The proof is read from stdin, never from the command line (it is a secret),
and is never printed. --arguments holds the canonical arguments exactly as
received (countersign sends the RFC 8785 text the proof's `args_sha256`
hashes). --nonces is this receiver's own table of used proofs (`jti`), a
SQLite file; without it, an in-memory table that lasts one invocation.

Checks, in countersign's order: the key (pinned key set, active keys only),
the signature (pyseto, v4.public, empty implicit assertion), the issuer and
the optional passkey claims, the audience, the operation, the SHA-256 of the
arguments received, expiry (strict) and not-before, then single use. Prints
one JSON verdict:
  {"ok": true, "jti": ..., "proposal_id": ..., "key_id": ...}       exit 0
  {"ok": false, "reason": <countersign refusal code, or "replayed">} exit 3
An accepted proof whose signer checked a passkey also carries
  "passkey": {"amr": ["passkey-uv"], "pkh": <SHA-256 hex of the credential id>}
in its verdict; the optional claims `amr` and `pkh` come together or not at
all, `amr` non-empty, without duplicates, each method known (only
"passkey-uv" today), `pkh` 64 lowercase hex digits; anything else is
refused as "malformed", as countersign refuses it.
"""
import argparse
import base64
import datetime
import hashlib
import hmac
import json
import re
import sqlite3
import sys

import pyseto
from pyseto import Key

ISSUER = "countersign-signer"
# The authentication methods a proof's `amr` may name (countersign's AuthMethod).
KNOWN_AMR = ("passkey-uv",)
SHA256_HEX = re.compile(r"[0-9a-f]{64}")


class Refused(Exception):
    """A proof this receiver does not accept; the argument is the reason code."""


def strict_json(data):
    """json.loads that refuses duplicate keys (countersign's claims never have any)."""

    def pairs(items):
        out = {}
        for key, value in items:
            if key in out:
                raise Refused("malformed")
            out[key] = value
        return out

    try:
        return json.loads(data, object_pairs_hook=pairs)
    except ValueError:
        raise Refused("malformed") from None


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def load_key_set(path):
    """The pinned key set: id -> pyseto key, active keys only, each id checked."""
    with open(path, "rb") as f:
        doc = strict_json(f.read())
    if doc.get("version") != 1 or doc.get("issuer") != ISSUER:
        sys.exit(f"{path}: not a version 1 countersign key set")
    keys = {}
    for entry in doc["keys"]:
        key = Key.from_paserk(entry["paserk"])
        if key.to_paserk_id() != entry["id"]:
            sys.exit(f"{path}: key id {entry['id']} does not match its key")
        if entry["status"] in ("active", "verifying"):
            keys[entry["id"]] = key
    return keys


def timestamp(text):
    if not isinstance(text, str) or not text.endswith("Z"):
        raise Refused("malformed")
    try:
        return datetime.datetime.fromisoformat(text[:-1] + "+00:00")
    except ValueError:
        raise Refused("malformed") from None


def passkey_assurance(claims):
    """The proof's optional passkey claims, {"amr": [...], "pkh": ...}, or None."""
    present = [name for name in ("amr", "pkh") if name in claims]
    if not present:
        return None
    if len(present) != 2:
        raise Refused("malformed")
    amr, pkh = claims["amr"], claims["pkh"]
    if (
        not isinstance(amr, list)
        or not amr
        or not all(isinstance(m, str) and m in KNOWN_AMR for m in amr)
        or len(set(amr)) != len(amr)
        or not isinstance(pkh, str)
        or not SHA256_HEX.fullmatch(pkh)
    ):
        raise Refused("malformed")
    return {"amr": amr, "pkh": pkh}


def check(token, keys, expect, nonces):
    """The claims of an acceptable proof, or Refused."""
    parts = token.split(".")
    if len(parts) != 4 or parts[0] != "v4" or parts[1] != "public":
        raise Refused("malformed")
    try:
        footer = strict_json(b64url_decode(parts[3]))
    except ValueError:
        raise Refused("malformed") from None
    if not isinstance(footer, dict) or set(footer) != {"kid"}:
        raise Refused("malformed")
    key = keys.get(footer["kid"])
    if key is None:
        raise Refused("unknown_key_id")
    try:
        decoded = pyseto.decode(key, token, implicit_assertion=b"")
    except pyseto.VerifyError:
        raise Refused("bad_signature") from None
    except pyseto.PysetoError:
        raise Refused("malformed") from None
    claims = strict_json(decoded.payload)
    if not isinstance(claims, dict) or claims.get("iss") != ISSUER:
        raise Refused("malformed")
    passkey_assurance(claims)
    if not hmac.compare_digest(str(claims.get("aud", "")), expect["audience"]):
        raise Refused("wrong_audience")
    if not hmac.compare_digest(str(claims.get("op", "")), expect["operation"]):
        raise Refused("operation_mismatch")
    if not hmac.compare_digest(str(claims.get("args_sha256", "")), expect["arguments_sha256"]):
        raise Refused("arguments_mismatch")
    now = datetime.datetime.now(datetime.timezone.utc)
    if now >= timestamp(claims.get("exp")):
        raise Refused("expired")
    if now < timestamp(claims.get("nbf")):
        raise Refused("not_yet_valid")
    # Single use, last: only a proof that passed every check is consumed.
    try:
        with nonces:
            nonces.execute(
                "INSERT INTO used (jti, exp) VALUES (?, ?)", (claims["jti"], claims["exp"])
            )
    except sqlite3.IntegrityError:
        raise Refused("replayed") from None
    return claims


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", required=True)
    parser.add_argument("--audience", required=True)
    parser.add_argument("--operation", required=True)
    parser.add_argument("--arguments", required=True)
    parser.add_argument("--nonces", default=":memory:")
    args = parser.parse_args()

    keys = load_key_set(args.keys)
    with open(args.arguments, "rb") as f:
        arguments_sha256 = hashlib.sha256(f.read()).hexdigest()
    nonces = sqlite3.connect(args.nonces, isolation_level="IMMEDIATE")
    nonces.execute("CREATE TABLE IF NOT EXISTS used (jti TEXT PRIMARY KEY, exp TEXT NOT NULL)")
    expect = {
        "audience": args.audience,
        "operation": args.operation,
        "arguments_sha256": arguments_sha256,
    }
    token = sys.stdin.read().strip()
    try:
        claims = check(token, keys, expect, nonces)
    except Refused as refused:
        print(json.dumps({"ok": False, "reason": refused.args[0]}))
        return 3
    verdict = {
        "ok": True,
        "jti": claims["jti"],
        "proposal_id": claims["pid"],
        "key_id": footer_kid(token),
    }
    passkey = passkey_assurance(claims)
    if passkey is not None:
        verdict["passkey"] = passkey
    print(json.dumps(verdict))
    return 0


def footer_kid(token):
    return strict_json(b64url_decode(token.split(".")[3]))["kid"]


if __name__ == "__main__":
    sys.exit(main())
