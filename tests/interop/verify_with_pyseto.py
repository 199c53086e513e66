#!/usr/bin/env python3
"""Verify a countersign proof with pyseto, an independent PASETO implementation.

Usage: verify_with_pyseto.py <k4.public PASERK>   (the token is read from stdin,
never from the command line, because a proof is a secret).

Prints one JSON object on stdout and never echoes the token:
  {"ok": true, "payload_hex": ..., "footer_hex": ..., "key_id": <pyseto's k4.pid>}
  {"ok": false, "error": <exception class>}            (exit status 1)
Exit status 3 if pyseto is not installed.
"""
import json
import sys

try:
    import pyseto
    from pyseto import Key
except ImportError:
    print("pyseto is not installed: pip install pyseto", file=sys.stderr)
    sys.exit(3)


def main() -> int:
    if len(sys.argv) != 2 or not sys.argv[1].startswith("k4.public."):
        print("usage: verify_with_pyseto.py <k4.public PASERK> < token", file=sys.stderr)
        return 2
    key = Key.from_paserk(sys.argv[1])
    token = sys.stdin.read().strip()
    try:
        # No deserializer: the payload comes back as the exact signed bytes,
        # and the implicit assertion is empty, as countersign uses it.
        decoded = pyseto.decode(key, token, implicit_assertion=b"")
    except pyseto.PysetoError as e:
        print(json.dumps({"ok": False, "error": type(e).__name__}))
        return 1
    payload = decoded.payload if isinstance(decoded.payload, bytes) else decoded.payload.encode()
    footer = decoded.footer if isinstance(decoded.footer, bytes) else decoded.footer.encode()
    print(json.dumps({
        "ok": True,
        "payload_hex": payload.hex(),
        "footer_hex": footer.hex(),
        "key_id": key.to_paserk_id(),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
