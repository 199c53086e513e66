#!/usr/bin/env python3
"""A phone on the same network as the console, with no DNS set up.

Two network namespaces joined by one veth pair, both ends inside them (no
bridge, nothing of the pair in the machine's own namespace, so no
multicast packet can leave the test's namespaces): "laptop" runs the real
`countersign up --console` with `[console] mdns = true`, listening on its
address on that link and answering for `cs-laptop-<pid>.local` over
multicast DNS; "phone" (tests/e2e/console_mdns_phone.py) resolves the name
with two independent resolvers and reaches the console through it with
Chromium:

1. python-zeroconf resolves the host name to the laptop's address, and
   the `_https._tcp` instance to the name and the console's port;
2. before Avahi runs, the phone's system resolver (nsswitch with
   nss-mdns) does not resolve the name; with Avahi running in the phone's
   namespace, it does (`getent ahostsv4`), to the laptop's address;
3. Debian's Chromium, trusting the console CA, opens the pairing link at
   the `.local` name (which nothing but multicast DNS resolves here: no
   hosts file entry, no DNS server), is paired, sees the proposal the
   laptop's agent made, and its card shows the action.

`countersign console pair --qr` shows the link at the `.local` name (its
QR code is decoded by tests/integration/tests/console_cli.rs). When the
console stops, it says goodbye: zeroconf no longer resolves the name.

4. mDNS authenticates nothing, so another device can claim the name
   (tests/e2e/console_mdns_impostor.py, at its own address, with a
   certificate for the name it made itself): the phone then resolves the
   name there, and the paired Chromium opening the console's origin
   refuses the certificate (ERR_CERT_AUTHORITY_INVALID); the impostor saw
   the connection and no completed handshake, so no request and no
   cookie.

Needs root, `ip`, avahi-daemon, libnss-mdns, Chromium (scripts/test
installs them); prints SKIPPED and passes without them.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pexpect

from harness import BIN, free_port, new_home, run, trusting_home

HERE = os.path.dirname(os.path.abspath(__file__))
TAG = f"csm{os.getpid() % 100000}"
LAPTOP, PHONE = f"{TAG}-laptop", f"{TAG}-phone"
LAPTOP_ADDR, PHONE_ADDR, IMPOSTOR_ADDR = "10.77.0.2", "10.77.0.3", "10.77.0.4"
NAME = f"cs-laptop-{os.getpid()}.local"


def missing():
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "avahi-daemon", "chromium", "chromedriver", "getent"):
        if not shutil.which(tool):
            return f"{tool} is not installed"
    if not any(os.path.exists(p) for p in ("/lib/x86_64-linux-gnu/libnss_mdns4_minimal.so.2",
                                           "/usr/lib/x86_64-linux-gnu/libnss_mdns4_minimal.so.2",
                                           "/lib/aarch64-linux-gnu/libnss_mdns4_minimal.so.2")):
        return "libnss-mdns is not installed"
    return None


def ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def build_link():
    """The two namespaces and the veth pair between them."""
    ip("netns", "add", LAPTOP)
    ip("netns", "add", PHONE)
    ip("link", "add", f"{TAG}a", "type", "veth", "peer", "name", f"{TAG}b")
    ip("link", "set", f"{TAG}a", "netns", LAPTOP)
    ip("link", "set", f"{TAG}b", "netns", PHONE)
    for ns, dev, addr in ((LAPTOP, f"{TAG}a", LAPTOP_ADDR), (PHONE, f"{TAG}b", PHONE_ADDR)):
        ip("-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
        ip("-n", ns, "link", "set", dev, "up")
        ip("-n", ns, "link", "set", "lo", "up")
    # Nothing of the link is left in this namespace.
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    assert TAG not in links, links
    # The phone's system resolver asks Avahi for .local names (nss-mdns),
    # in its namespace only: `ip netns exec` mounts /etc/netns/<ns>/* over /etc.
    os.makedirs(f"/etc/netns/{PHONE}", exist_ok=True)
    with open("/etc/nsswitch.conf") as f:
        conf = f.read()
    hosts = "hosts:          files mdns4_minimal [NOTFOUND=return] dns"
    conf = "\n".join(hosts if line.startswith("hosts:") else line for line in conf.splitlines()) + "\n"
    with open(f"/etc/netns/{PHONE}/nsswitch.conf", "w") as f:
        f.write(conf)


def remove_link():
    for ns in (LAPTOP, PHONE):
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    shutil.rmtree(f"/etc/netns/{PHONE}", ignore_errors=True)


def configure(home):
    """The console on the laptop's address, its first name the .local one,
    advertised; a console CA made for these names."""
    path = os.path.join(home, "config.toml")
    with open(path) as f:
        text = f.read()
    port = free_port()
    head, sep, rest = text.partition("[console]\n")
    assert sep, text
    rest = rest.split("\n", 1)[1]  # the addr line new_home wrote
    text = (head + sep + f'addr = "{LAPTOP_ADDR}:{port}"\nnames = ["{NAME}", "console.localhost"]\n'
            + "mdns = true\n" + rest)
    with open(path, "w") as f:
        f.write(text)
    run(home, "console", "trust", "--new-ca")
    return port


def pair_link(home, port):
    """`countersign console pair --qr` at a terminal: the link, at the .local
    name, and the QR code under it."""
    child = pexpect.spawn(BIN, ["--home", home, "console", "pair", "--qr"], encoding="utf-8", timeout=30)
    child.expect(rf"(https://{NAME.replace('.', r'[.]')}:{port}/pair/cp1_[0-9a-f]{{16}}_[A-Za-z0-9_-]{{43}})")
    link = child.match.group(1)
    child.expect(pexpect.EOF)
    shown = child.before
    child.close()
    assert child.exitstatus == 0, shown
    assert "\u2580" in shown or "\u2584" in shown, f"no QR code under the link: {shown!r}"
    return link


def in_laptop(home, *args, stdin=None):
    proc = subprocess.run(["ip", "netns", "exec", LAPTOP, BIN, "--home", home, *args], input=stdin,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"countersign {' '.join(args)}: {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def start_console(home):
    up = subprocess.Popen(["ip", "netns", "exec", LAPTOP, BIN, "--home", home, "up", "--console"],
                          stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen = []
    deadline = time.time() + 60
    while "countersign is up" not in "".join(seen):
        line = up.stderr.readline()
        seen.append(line)
        if not line and up.poll() is not None or time.time() > deadline:
            sys.exit(f"countersign up --console did not come up: {''.join(seen)}")
    shown = "".join(seen)
    assert f"answering for {NAME} over mDNS with {LAPTOP_ADDR} (on that address's network only)" in shown, shown
    assert f"listening on https://{NAME}:" in shown, shown
    return up


def phone_argv(mode, *args):
    return ["ip", "netns", "exec", PHONE, sys.executable, os.path.join(HERE, "console_mdns_phone.py"), mode, NAME,
            PHONE_ADDR, LAPTOP_ADDR, *args]


def phone(mode, *args):
    proc = subprocess.run(phone_argv(mode, *args), capture_output=True, text=True, timeout=240)
    print(proc.stdout, end="")
    assert proc.returncode == 0, f"the phone ({mode}) failed:\n{proc.stdout}\n{proc.stderr}"


def read_until(proc, word, what):
    """The phone's stdout up to the line `word`; fails with all it said."""
    said = []
    while True:
        line = proc.stdout.readline()
        if not line:
            proc.wait(timeout=30)
            sys.exit(f"the phone stopped before {what}:\n{''.join(said)}\n{proc.stderr.read()}")
        if line.strip() == word:
            print("".join(said), end="")
            return
        said.append(line)


def impostor(port, report):
    """Another device claims the name (console_mdns_impostor.py) at its
    own address on the link, once the console has stopped."""
    ip("-n", LAPTOP, "addr", "add", f"{IMPOSTOR_ADDR}/24", "dev", f"{TAG}a")
    proc = subprocess.Popen(["ip", "netns", "exec", LAPTOP, sys.executable,
                             os.path.join(HERE, "console_mdns_impostor.py"), NAME, IMPOSTOR_ADDR, str(port), report],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.startswith("claiming"), f"{line}{proc.stderr.read() if proc.poll() is not None else ''}"
    return proc


def main():
    why = missing()
    if why:
        print(f"console_mdns SKIPPED: {why}")
        return
    tmp, home = new_home("cs-mdns-")
    port = configure(home)
    browser_home = trusting_home(home)
    build_link()
    up = reach = claim = None
    try:
        up = start_console(home)
        link = pair_link(home, port)
        pid = json.loads(in_laptop(home, "--json", "propose", "schedule.create", "--args-file", "-",
                                   stdin=json.dumps({"name": "phone-job", "cron": "0 5 * * *"})))["id"]
        link_file = os.path.join(tmp, "pair-link")
        fd = os.open(link_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(link)
        reach = subprocess.Popen(phone_argv("reach", str(port), link_file, browser_home, pid, IMPOSTOR_ADDR),
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        read_until(reach, "PAIRED", "it was paired")
        up.send_signal(signal.SIGINT)
        assert up.wait(timeout=30) == 0
        up = None
        phone("gone")
        report = os.path.join(tmp, "impostor.json")
        claim = impostor(port, report)
        reach.stdin.write("go\n")
        reach.stdin.flush()
        read_until(reach, "REFUSED", "it refused the impostor")
        assert reach.wait(timeout=30) == 0, reach.stderr.read()
        reach = None
        with open(report) as f:
            seen = json.load(f)
        # The phone went to the impostor, and sent it nothing: no handshake
        # completed, so no request and no cookie.
        assert seen["connections"] >= 1 and seen["handshakes"] == 0 and seen["bytes_after_handshake"] == 0, seen
        print(f"impostor: {seen['connections']} connection(s) from the phone, no handshake, nothing received")
        print("console_mdns: ok")
    finally:
        if up is not None:
            up.kill()
        for proc in (reach, claim):
            if proc is not None and proc.poll() is None:
                proc.kill()
        remove_link()
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(browser_home, ignore_errors=True)


if __name__ == "__main__":
    main()
