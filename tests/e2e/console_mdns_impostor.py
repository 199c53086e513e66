#!/usr/bin/env python3
"""Another device on the phone's network that claims the console's `.local`
name (tests/e2e/console_mdns.py): it answers for the name over mDNS with
its own address (python-zeroconf) and serves TLS there, on the console's
port, with a certificate for the name that it made itself (no console CA
key can be had). Every connection and every byte that arrives after a
completed handshake are counted in REPORT (JSON), rewritten as they change.

    console_mdns_impostor.py NAME ADDR PORT REPORT

Runs until SIGTERM, then withdraws the name.
"""
import datetime
import json
import signal
import socket
import ssl
import sys
import tempfile
import threading

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from zeroconf import ServiceInfo, Zeroconf


def self_signed(name):
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .sign(key, hashes.SHA256()))
    files = tempfile.mkdtemp(prefix="cs-impostor-")
    with open(f"{files}/cert.pem", "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(f"{files}/key.pem", "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return f"{files}/cert.pem", f"{files}/key.pem"


def main():
    name, addr, port, report = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    seen = {"connections": 0, "handshakes": 0, "bytes_after_handshake": 0}
    lock = threading.Lock()

    def write():
        with open(report + ".tmp", "w") as f:
            json.dump(seen, f)
        import os
        os.replace(report + ".tmp", report)

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*self_signed(name))
    server = socket.create_server((addr, port))

    def handle(conn):
        with conn:
            conn.settimeout(10)
            try:
                tls = context.wrap_socket(conn, server_side=True)
            except (ssl.SSLError, OSError):
                return
            with lock:
                seen["handshakes"] += 1
                write()
            try:
                data = tls.recv(65536)
            except (ssl.SSLError, OSError):
                data = b""
            with lock:
                seen["bytes_after_handshake"] += len(data)
                write()

    def accept():
        while True:
            conn, _ = server.accept()
            with lock:
                seen["connections"] += 1
                write()
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    write()
    threading.Thread(target=accept, daemon=True).start()
    zc = Zeroconf(interfaces=[addr])
    label = name.removesuffix(".local")
    info = ServiceInfo("_https._tcp.local.", f"countersign console on {label}._https._tcp.local.",
                       addresses=[socket.inet_aton(addr)], port=port, server=name + ".")
    zc.register_service(info, allow_name_change=True)
    print("claiming", name, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()
    zc.unregister_service(info)
    zc.close()


if __name__ == "__main__":
    main()
