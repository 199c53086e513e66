#!/usr/bin/env python3
"""Self-test of verify_evidence.py and tamper.py on synthetic bundles.

    python3 tests/evidence/test_verifier.py

Exits 0 when every case passes. Runs the command-line tools as a user
would, so their interfaces are tested too.
"""

import base64
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import synthetic  # noqa: E402
import tamper  # noqa: E402
import verify_evidence as v  # noqa: E402

failures = []


def run(script, *args):
    done = subprocess.run([sys.executable, os.path.join(HERE, script), *args],
                          capture_output=True, text=True)
    return done.returncode, done.stdout, done.stderr


def check(name, condition, detail=""):
    print(("pass " if condition else "FAIL ") + name + ("" if condition else f": {detail}"))
    if not condition:
        failures.append(name)


def test_inclusion_proofs():
    """Every leaf of trees of 1..33 leaves, against the tree's root."""
    for n in range(1, 34):
        leaves = [v.leaf_hash(bytes([i])) for i in range(n)]
        root = synthetic.tree_hash(leaves)
        for i in range(n):
            path = synthetic.inclusion_path(i, leaves)
            if v.root_from_inclusion_proof(leaves[i], i, n, path) != root:
                check(f"inclusion proof {i} of {n}", False)
                return
            if n > 1 and v.root_from_inclusion_proof(leaves[i], i, n, path[:-1]) == root:
                check(f"short inclusion proof {i} of {n} refused", False)
                return
    check("RFC 9162 inclusion proofs of trees of 1 to 33 leaves", True)


def main():
    test_inclusion_proofs()
    with tempfile.TemporaryDirectory() as tmp:
        files = synthetic.build(os.path.join(tmp, "synthetic"))
        trust = ["--trust", files["policy.txt"]]
        for name, extra in (("bundle.json", []), ("bundle.json", ["--keys", files["keys.json"]]),
                            ("older.json", []), ("other.json", []), ("committed.json", []),
                            ("committed.json", ["--reveal", files["salt.json"]])):
            code, out, err = run("verify_evidence.py", files[name], *trust, *extra)
            oks = [line for line in out.splitlines() if line.startswith("ok ")]
            check(f"{name} {' '.join(extra[:1])} verifies", code == 0 and len(oks) == 19, out + err)

        # the quorum bundle, and every tamper its inputs allow
        code, out, err = run("verify_evidence.py", files["quorum.json"], *trust)
        check("quorum.json (EdDSA, quorum approver) verifies", code == 0, out + err)
        quorum_dir = os.path.join(tmp, "tampered-quorum")
        run("tamper.py", files["quorum.json"], quorum_dir)
        with open(os.path.join(quorum_dir, "expected.json")) as f:
            for file_name, want in sorted(json.load(f).items()):
                code, out, err = run("verify_evidence.py", os.path.join(quorum_dir, file_name), *trust)
                check(f"quorum {file_name} refused as {want}", code == 1 and out.startswith(f"refused: {want}:"),
                      out + err)

        # the key set and the event details as JSON text rather than objects
        with open(files["bundle.json"]) as f:
            bundle = json.load(f)
        bundle["keys"] = v.canonical(bundle["keys"])
        for e in bundle["events"]:
            e["details"] = v.canonical(e["details"])
        as_text = os.path.join(tmp, "as-text.json")
        synthetic.write_json(as_text, bundle)
        code, out, err = run("verify_evidence.py", as_text, *trust)
        check("keys and details as JSON text are refused as format", code == 1 and "refused: format:" in out, out + err)

        # policies: quorum none accepts an uncosigned checkpoint; 2 of 2 refuses it
        with open(files["policy.txt"]) as f:
            policy = f.read()
        with open(files["bundle.json"]) as f:
            bundle = json.load(f)
        tamper.t_witness_quorum(bundle, None, None)
        dropped = os.path.join(tmp, "uncosigned.json")
        synthetic.write_json(dropped, bundle)
        for name, text, want in (
            ("quorum none", policy.replace("quorum g", "quorum none"), 0),
            ("quorum w1", policy.replace("quorum g", "quorum w1"), 1),
        ):
            path = os.path.join(tmp, "policy-" + name.replace(" ", "-"))
            with open(path, "w") as f:
                f.write(text)
            code, out, err = run("verify_evidence.py", dropped, "--trust", path)
            check(f"an uncosigned checkpoint under {name}", code == want, out + err)
        w2 = synthetic.NoteKey("w2.synthetic.example", 0x04)
        path = os.path.join(tmp, "policy-2of2")
        with open(path, "w") as f:
            f.write(policy.replace("group g 1 w1", f"witness w2 {w2.vkey()}\ngroup g all w1 w2"))
        code, out, err = run("verify_evidence.py", files["bundle.json"], "--trust", path)
        check("a 2-of-2 quorum with one cosignature is refused",
              code == 1 and out.startswith("refused: witness_quorum:"), out + err)
        code, out, err = run("verify_evidence.py", files["bundle.json"], "--trust", files["keys.json"])
        check("a trust file that is not a policy exits 2", code == 2, out + err)

        # a witness's cosignature that does not verify refuses the checkpoint
        with open(files["bundle.json"]) as f:
            bundle = json.load(f)
        body, signatures = v.parse_note(tamper.note_of(bundle))
        lines = ""
        for n, i, sig in signatures:
            if n == "w1.synthetic.example":
                sig = sig[:-1] + bytes([sig[-1] ^ 1])
            lines += f"\u2014 {n} {base64.b64encode(i + sig).decode()}\n"
        tamper.put_note(bundle, body + "\n" + lines)
        bad = os.path.join(tmp, "bad-cosignature.json")
        synthetic.write_json(bad, bundle)
        code, out, err = run("verify_evidence.py", bad, *trust)
        check("a bad cosignature is refused as witness_quorum",
              code == 1 and out.startswith("refused: witness_quorum:"), out + err)

        # a wrong opening of the commitment
        wrong = os.path.join(tmp, "wrong-salt.json")
        with open(files["salt.json"]) as f:
            opening = json.load(f)
        opening["salt"] = "00" * 32
        with open(wrong, "w") as f:
            json.dump(opening, f)
        code, out, _ = run("verify_evidence.py", files["committed.json"], *trust, "--reveal", wrong)
        check("a wrong opening is refused as arguments", code == 1 and out.startswith("refused: arguments:"), out)

        # unreadable inputs and usage errors exit 2
        code, _, _ = run("verify_evidence.py", os.path.join(tmp, "absent.json"), *trust)
        check("an absent bundle exits 2", code == 2)
        code, _, _ = run("verify_evidence.py", files["bundle.json"])
        check("a missing --trust exits 2", code == 2)

        # every tamper, refused with its own code
        out_dir = os.path.join(tmp, "tampered")
        code, _, err = run("tamper.py", files["bundle.json"], out_dir,
                           "--older", files["older.json"], "--other", files["other.json"])
        check("tamper.py runs", code == 0, err)
        with open(os.path.join(out_dir, "expected.json")) as f:
            expected = json.load(f)
        check("tamper.py skips nothing with --older and --other", "skipped" not in err, err)
        check("at least 12 tampers", len(expected) >= 12, str(len(expected)))
        for file_name, want in sorted(expected.items()):
            code, out, err = run("verify_evidence.py", os.path.join(out_dir, file_name), *trust)
            check(f"{file_name} refused as {want}", code == 1 and out.startswith(f"refused: {want}:"), out + err)

        # without --older and --other, those tampers are skipped and said so
        code, _, err = run("tamper.py", files["bundle.json"], os.path.join(tmp, "alone"))
        check("tamper.py names the tampers it skips", code == 0 and err.count("skipped") == 3, err)

    if failures:
        print(f"{len(failures)} failed", file=sys.stderr)
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
