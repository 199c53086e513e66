#!/usr/bin/env python3
"""Record real WebAuthn browser output for the signer's `webauthn` tests.

What it does: serves a blank page on 127.0.0.1:<port> (Python's
http.server, an ephemeral port), opens it as http://localhost:<port> in
headless Chromium through
Selenium 4, adds a CDP virtual authenticator (ctap2, internal transport,
resident keys, user verification) and runs, once per algorithm:

  1. navigator.credentials.create with a fixed challenge and one
     pubKeyCredParams entry (ES256 = -7, then EdDSA = -8);
  2. navigator.credentials.get with userVerification "required" and the
     decision challenge derived, exactly as `DecisionChallenge::derive`
     documents, from fixed random bytes and a fixed proposal (this script
     computes it independently, so the Rust test also pins the encoding);
  3. after `WebAuthn.setUserVerified(false)`, navigator.credentials.get
     with userVerification "discouraged": an assertion whose UV flag is
     clear (the no-UV fixture).

Every byte string is written base64url without padding to `es256.json` and
`eddsa.json` beside this script.

The RP ID is `localhost`, not `127.0.0.1`: Chromium refuses an IP address
as a relying party ID ("SecurityError: This is an invalid domain"), given
or defaulted from an origin like http://127.0.0.1:7444, so a console that
asks for passkeys has to be opened as http://localhost:<port>. The fixtures are committed; CI never runs
this script (it needs Chromium).

Re-record (Debian: `apt-get install chromium chromium-driver`;
`pip install selenium==4.51.0`):

    python3 webauthn/tests/webauthn_fixtures/record.py

then run `cargo test -p countersign-webauthn` and commit the
JSON files. Re-recording makes new keys, so every fixture changes; the
tests read only the files and need no update unless the format changes.
"""

import base64
import hashlib
import http.server
import json
import pathlib
import struct
import threading

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

HERE = pathlib.Path(__file__).resolve().parent

RP_ID = "localhost"
REGISTRATION_CHALLENGE = bytes(range(32))
# The decision the browser is asked to sign: fixed inputs, so the challenge
# is reproducible from the fixture alone.
DECISION_RANDOM = bytes(range(0xA0, 0xC0))
PROPOSAL = {
    "operation": "deploy.release",
    "arguments_sha256": hashlib.sha256(b'{"service":"api","version":"1.4.2"}').hexdigest(),
    "contract_revision": "rev-3",
    "policy_revision": "pol-7",
    "session": "sess_fixture",
    "delivery": "direct",
}
PROPOSAL_FIELDS = (
    "operation",
    "arguments_sha256",
    "contract_revision",
    "policy_revision",
    "session",
    "delivery",
)
PROPOSAL_TAG = b"countersign-proposal-digest-v1\0"
DECISION_TAG = b"countersign-webauthn-decision-v1\0"

ALGORITHMS = {"es256": -7, "eddsa": -8}

PAGE = b"<!doctype html><meta charset=utf-8><title>countersign webauthn fixtures</title>"


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def proposal_digest(proposal: dict) -> bytes:
    """The module doc's encoding: tag, then each field as u64-BE length + UTF-8."""
    h = hashlib.sha256(PROPOSAL_TAG)
    for name in PROPOSAL_FIELDS:
        value = proposal[name].encode()
        h.update(struct.pack(">Q", len(value)))
        h.update(value)
    return h.digest()


def decision_challenge(random: bytes, digest: bytes) -> bytes:
    return hashlib.sha256(DECISION_TAG + random + digest).digest()


class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's naming)
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args):
        pass


# Byte strings cross the WebDriver boundary as base64url text.
JS_HELPERS = """
const b64u = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf)))
    .replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
const unb64u = (s) => Uint8Array.from(
    atob(s.replace(/-/g, '+').replace(/_/g, '/')), c => c.charCodeAt(0));
"""

JS_CREATE = JS_HELPERS + """
const [rpId, challenge, alg, done] = arguments;
navigator.credentials.create({publicKey: {
    rp: {id: rpId, name: "countersign fixtures"},
    user: {id: new TextEncoder().encode("approver-fixture"), name: "approver", displayName: "Approver"},
    challenge: unb64u(challenge),
    pubKeyCredParams: [{type: "public-key", alg: alg}],
    authenticatorSelection: {residentKey: "required", userVerification: "required"},
    attestation: "none",
    timeout: 20000,
}}).then(c => done({
    credential_id: b64u(c.rawId),
    attestation_object: b64u(c.response.attestationObject),
    client_data_json: b64u(c.response.clientDataJSON),
    public_key_spki: b64u(c.response.getPublicKey()),
    public_key_algorithm: c.response.getPublicKeyAlgorithm(),
}), e => done({error: String(e)}));
"""

JS_GET = JS_HELPERS + """
const [rpId, challenge, credentialId, uv, done] = arguments;
navigator.credentials.get({publicKey: {
    rpId: rpId,
    challenge: unb64u(challenge),
    allowCredentials: [{type: "public-key", id: unb64u(credentialId)}],
    userVerification: uv,
    timeout: 20000,
}}).then(c => done({
    credential_id: b64u(c.rawId),
    authenticator_data: b64u(c.response.authenticatorData),
    client_data_json: b64u(c.response.clientDataJSON),
    signature: b64u(c.response.signature),
    user_handle: c.response.userHandle ? b64u(c.response.userHandle) : null,
}), e => done({error: String(e)}));
"""


def run(script: str, driver, *args) -> dict:
    result = driver.execute_async_script(script, *args)
    if "error" in result:
        raise RuntimeError(result["error"])
    return result


def record(driver, origin: str, name: str, alg: int) -> None:
    authenticator = driver.execute_cdp_cmd(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
                "automaticPresenceSimulation": True,
            }
        },
    )["authenticatorId"]
    try:
        registration = run(JS_CREATE, driver, RP_ID, b64u(REGISTRATION_CHALLENGE), alg)
        challenge = decision_challenge(DECISION_RANDOM, proposal_digest(PROPOSAL))
        assertion = run(
            JS_GET, driver, RP_ID, b64u(challenge), registration["credential_id"], "required"
        )
        driver.execute_cdp_cmd(
            "WebAuthn.setUserVerified",
            {"authenticatorId": authenticator, "isUserVerified": False},
        )
        without_uv = run(
            JS_GET, driver, RP_ID, b64u(challenge), registration["credential_id"], "discouraged"
        )
    finally:
        driver.execute_cdp_cmd(
            "WebAuthn.removeVirtualAuthenticator", {"authenticatorId": authenticator}
        )
    fixture = {
        "recorded_with": driver.capabilities.get("browserVersion", "unknown"),
        "rp_id": RP_ID,
        "origin": origin,
        "algorithm": alg,
        "registration_challenge": b64u(REGISTRATION_CHALLENGE),
        "registration": registration,
        "decision_random": b64u(DECISION_RANDOM),
        "proposal": PROPOSAL,
        "decision_challenge": b64u(challenge),
        "assertion": assertion,
        "assertion_without_uv": without_uv,
    }
    path = HERE / f"{name}.json"
    path.write_text(json.dumps(fixture, indent=2) + "\n")
    print(f"wrote {path.relative_to(HERE.parent.parent.parent)}")


def main() -> None:
    server = http.server.HTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    origin = f"http://localhost:{server.server_address[1]}"

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))
    try:
        driver.set_script_timeout(30)
        driver.get(origin + "/")
        driver.execute_cdp_cmd("WebAuthn.enable", {"enableUI": False})
        for name, alg in ALGORITHMS.items():
            record(driver, origin, name, alg)
    finally:
        driver.quit()
        server.shutdown()


if __name__ == "__main__":
    main()
