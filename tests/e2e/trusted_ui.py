#!/usr/bin/env python3
"""A minimal trusted approver UI, as docs/trusted-ui.md describes one, written
against the signer's gRPC API with grpcio only (no countersign code).

It generates its stubs from proto/countersign/v1/*.proto into a temporary
directory at run time, connects with mutual TLS presenting the approver
credential it is given, lists the pending proposals, shows the one it was
asked to approve (escaped, untruncated), asks the signer for a dry run and
then approves it with DELIVERY_HANDOFF, so that the proof never leaves the
signer. In this test the "person's explicit act" is the --approve argument
given by the test driver.

Modes:
  approve        (default) approve PROPOSAL_ID; print one JSON line:
                 {"listed": [...], "status": ..., "handoff_waiting": ...,
                  "proof_sha256": ..., "expires_at": ...}
  expect-denied  call Decide and expect PERMISSION_DENIED; print
                 {"code": "PERMISSION_DENIED", "message": ...}
  deliveries     decide PROPOSAL_ID as the signer's view says it can be
                 carried out: a direct approval is tried (dry run, then for
                 real) and must be refused `delivery_not_offered`, with
                 nothing recorded, unless the view offers it; the UI then
                 approves with what is offered (DELIVERY_DIRECT for
                 DELIVERIES_ANY_HEAD, the proof written to --proof-out,
                 0600; else DELIVERY_HANDOFF). Prints {"deliveries": ...,
                 "direct_refused": ..., "delivery": ..., "status": ...}

Driven by tests/integration/tests/trusted_ui.rs. Never prints a proof.
"""

import argparse
import glob
import importlib
import json
import os
import sys
import tempfile
import unicodedata

import grpc
from grpc_tools import protoc

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PROTO_ROOT = os.path.join(ROOT, "proto")


def generate_stubs(out_dir):
    """Compile proto/countersign/v1/*.proto into out_dir and import them."""
    protos = sorted(glob.glob(os.path.join(PROTO_ROOT, "countersign", "v1", "*.proto")))
    if not protos:
        sys.exit(f"no .proto files under {PROTO_ROOT}")
    include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    rel = [os.path.relpath(p, PROTO_ROOT) for p in protos]
    code = protoc.main(
        ["grpc_tools.protoc", f"-I{PROTO_ROOT}", f"-I{include}",
         f"--python_out={out_dir}", f"--grpc_python_out={out_dir}", *rel]
    )
    if code != 0:
        sys.exit(f"protoc failed with {code}")
    sys.path.insert(0, out_dir)
    pb2 = importlib.import_module("countersign.v1.signer_pb2")
    pb2_grpc = importlib.import_module("countersign.v1.signer_pb2_grpc")
    return pb2, pb2_grpc


def escape(text):
    """Show every control, format (bidi, zero-width) and non-ASCII space
    character as an escape, so that what the person reads is what is there."""
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch == "\\":
            out.append("\\\\")
        elif cat in ("Cc", "Cf", "Zl", "Zp") or (cat == "Zs" and ch != " "):
            out.append(f"\\u{{{ord(ch):04x}}}")
        else:
            out.append(ch)
    return "".join(out)


def show(view):
    """What the person must see before deciding: everything, escaped, whole."""
    lines = [
        f"proposal:          {escape(view.id)}",
        f"operation:         {escape(view.operation)}",
        f"contract revision: {escape(view.contract_revision)}",
        f"proposing session: {escape(view.session)}",
        f"created at:        {escape(view.created_at)}",
        "preview (from the signer):",
        escape(view.preview),
        "canonical arguments:",
        escape(view.arguments_json),
        "note (model-supplied, UNVERIFIED):",
        escape(view.note),
    ]
    # stderr: the test driver's stdout carries one JSON document only.
    print("\n".join(lines), file=sys.stderr)


def channel(args):
    def read(path):
        with open(path, "rb") as f:
            return f.read()

    creds = grpc.ssl_channel_credentials(
        root_certificates=read(args.ca),
        private_key=read(args.key),
        certificate_chain=read(args.cert),
    )
    # The signer's certificate names `localhost` (and 127.0.0.1); verify that name.
    options = [("grpc.ssl_target_name_override", "localhost")]
    return grpc.secure_channel(args.addr, creds, options=options)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--addr", required=True, help="host:port of the signer")
    parser.add_argument("--ca", required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--approve", required=True, metavar="PROPOSAL_ID")
    parser.add_argument("--mode", choices=["approve", "expect-denied", "deliveries"], default="approve")
    parser.add_argument("--proof-out", help="deliveries mode: where a direct proof goes (a new 0600 file)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as gen:
        pb2, pb2_grpc = generate_stubs(gen)
        with channel(args) as ch:
            signer = pb2_grpc.SignerStub(ch)
            if args.mode == "expect-denied":
                return expect_denied(pb2, signer, args.approve)
            if args.mode == "deliveries":
                return by_deliveries(pb2, signer, args.approve, args.proof_out)
            return approve(pb2, signer, args.approve)


def decide_request(pb2, proposal_id, dry_run):
    return pb2.DecideRequest(
        proposal_id=proposal_id,
        approve=True,
        delivery=pb2.DELIVERY_HANDOFF,
        dry_run=dry_run,
    )


def approve(pb2, signer, proposal_id):
    pending = signer.ListPending(pb2.ListPendingRequest(), timeout=10).proposals
    listed = [p.id for p in pending]
    if proposal_id not in listed:
        sys.exit(f"{proposal_id} is not pending: {listed}")
    view = signer.GetProposal(pb2.GetProposalRequest(proposal_id=proposal_id), timeout=10)
    show(view)
    # Dry run first: the same answer the decision would get, nothing recorded.
    checked = signer.Decide(decide_request(pb2, proposal_id, True), timeout=10)
    if checked.proof or checked.proposal.status != pb2.PROPOSAL_STATUS_PENDING:
        sys.exit(f"dry run changed something: {checked.proposal.status}")
    # The person's explicit act (here: --approve) happened; decide.
    decided = signer.Decide(decide_request(pb2, proposal_id, False), timeout=10)
    if decided.proof:
        sys.exit("DELIVERY_HANDOFF returned a proof")
    print(json.dumps({
        "listed": listed,
        "status": pb2.ProposalStatus.Name(decided.proposal.status),
        "handoff_waiting": decided.proposal.handoff_waiting,
        "proof_sha256": decided.proof_sha256,
        "expires_at": decided.expires_at,
    }))
    return 0


def reason_of(err):
    return dict(err.trailing_metadata() or ()).get("countersign-reason")


def by_deliveries(pb2, signer, proposal_id, proof_out):
    """Offer only what the signer's view says can be carried out; prove a
    direct approval of anything else is refused before anything is
    recorded."""
    view = signer.GetProposal(pb2.GetProposalRequest(proposal_id=proposal_id), timeout=10)
    show(view)
    offered = view.deliveries == pb2.DELIVERIES_ANY_HEAD
    direct_refused = None
    if not offered:
        for dry_run in (True, False):
            request = pb2.DecideRequest(proposal_id=proposal_id, approve=True,
                                        delivery=pb2.DELIVERY_DIRECT, dry_run=dry_run)
            try:
                signer.Decide(request, timeout=10)
                sys.exit("a direct approval the view does not offer was accepted")
            except grpc.RpcError as err:
                if err.code() != grpc.StatusCode.FAILED_PRECONDITION or reason_of(err) != "delivery_not_offered":
                    sys.exit(f"unexpected refusal: {err.code().name} {reason_of(err)} {err.details()}")
                direct_refused = err.details()
            after = signer.GetProposal(pb2.GetProposalRequest(proposal_id=proposal_id), timeout=10)
            if after.status != pb2.PROPOSAL_STATUS_PENDING or after.provenance:
                sys.exit(f"a refused decision recorded something: {after.status}")
    delivery = pb2.DELIVERY_DIRECT if offered else pb2.DELIVERY_HANDOFF
    request = pb2.DecideRequest(proposal_id=proposal_id, approve=True, delivery=delivery)
    signer.Decide(pb2.DecideRequest(proposal_id=proposal_id, approve=True, delivery=delivery, dry_run=True),
                  timeout=10)
    decided = signer.Decide(request, timeout=10)
    if offered:
        fd = os.open(proof_out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(decided.proof)
    elif decided.proof:
        sys.exit("DELIVERY_HANDOFF returned a proof")
    print(json.dumps({
        "deliveries": pb2.Deliveries.Name(view.deliveries),
        "effect_kind": view.effect_kind,
        "risk": view.risk,
        "summary": view.action.summary,
        "direct_refused": direct_refused,
        "delivery": pb2.Delivery.Name(delivery),
        "status": pb2.ProposalStatus.Name(decided.proposal.status),
    }))
    return 0


def expect_denied(pb2, signer, proposal_id):
    try:
        signer.Decide(decide_request(pb2, proposal_id, False), timeout=10)
    except grpc.RpcError as err:
        print(json.dumps({"code": err.code().name, "message": err.details()}))
        return 0
    sys.exit("Decide succeeded with a credential that must not decide")


if __name__ == "__main__":
    sys.exit(main())
