"""Generates cosigned_checkpoint.json, an independent known-answer vector for
c2sp.org/signed-note (Ed25519, type 0x01), c2sp.org/tlog-checkpoint and
c2sp.org/tlog-cosignature (timestamped Ed25519, type 0x04).

Written from the specifications alone with Python's `cryptography` package
(no code shared with the Rust crate), so the crate's signer and verifier are
checked against bytes neither produced. Ed25519 is deterministic: rerunning
this script reproduces the file exactly.

    python3 generate_cosigned_checkpoint.py > cosigned_checkpoint.json
"""

import base64
import hashlib
import json
import struct

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat


def seed(label):
    return hashlib.sha256(label.encode()).digest()


def public(seed_bytes):
    key = Ed25519PrivateKey.from_private_bytes(seed_bytes)
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def key_id(name, sig_type, pub):
    return hashlib.sha256(name.encode() + b"\n" + bytes([sig_type]) + pub).digest()[:4]


def vkey(name, sig_type, pub):
    kid = key_id(name, sig_type, pub)
    return "%s+%s+%s" % (name, kid.hex(), base64.b64encode(bytes([sig_type]) + pub).decode())


def line(name, kid, sig):
    return "\u2014 %s %s\n" % (name, base64.b64encode(kid + sig).decode())


LOG = "example.com/behind-the-sofa"
WITNESS = "witness.example/w1"
TIMESTAMP = 1679315147

log_seed = seed("countersign-tlog test vector: log key")
witness_seed = seed("countersign-tlog test vector: witness key")
log_pub, witness_pub = public(log_seed), public(witness_seed)

# The body of the checkpoint example in c2sp.org/tlog-checkpoint.
body = LOG + "\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"

log_sig = Ed25519PrivateKey.from_private_bytes(log_seed).sign(body.encode())
message = ("cosignature/v1\ntime %d\n" % TIMESTAMP + body).encode()
witness_sig = struct.pack(">Q", TIMESTAMP) + Ed25519PrivateKey.from_private_bytes(
    witness_seed
).sign(message)

note = (
    body
    + "\n"
    + line(LOG, key_id(LOG, 0x01, log_pub), log_sig)
    + line(WITNESS, key_id(WITNESS, 0x04, witness_pub), witness_sig)
)

print(
    json.dumps(
        {
            "source": "tlog/tests/vectors/c2sp/generate_cosigned_checkpoint.py",
            "log_seed_hex": log_seed.hex(),
            "log_vkey": vkey(LOG, 0x01, log_pub),
            "log_skey": "PRIVATE+KEY+%s+%s+%s"
            % (LOG, key_id(LOG, 0x01, log_pub).hex(), base64.b64encode(b"\x01" + log_seed).decode()),
            "witness_seed_hex": witness_seed.hex(),
            "witness_vkey": vkey(WITNESS, 0x04, witness_pub),
            "timestamp": TIMESTAMP,
            "cosignature_message": message.decode(),
            "note": note,
        },
        indent=2,
        ensure_ascii=False,
    )
)
