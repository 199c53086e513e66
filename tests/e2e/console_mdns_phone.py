#!/usr/bin/env python3
"""The phone of tests/e2e/console_mdns.py, run inside its network
namespace (`ip netns exec`, which gives it a mount namespace of its own).

    console_mdns_phone.py reach NAME PHONE_ADDR LAPTOP_ADDR PORT LINK_FILE BROWSER_HOME PROPOSAL_ID IMPOSTOR_ADDR
    console_mdns_phone.py gone  NAME PHONE_ADDR LAPTOP_ADDR

`reach` prints PAIRED once Chromium is paired and shown the proposal,
then waits for a line on stdin (the console stopped, an impostor claiming
the name at IMPOSTOR_ADDR), opens the console's origin again and prints
REFUSED when Chromium refused the impostor's certificate.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

from zeroconf import AddressResolver, ServiceInfo, Zeroconf

SERVICE_TYPE = "_https._tcp.local."

AVAHI_CONF = """[server]
use-ipv4=yes
use-ipv6=no
enable-dbus=no
[wide-area]
enable-wide-area=no
[publish]
disable-publishing=yes
disable-user-service-publishing=yes
[reflector]
enable-reflector=no
"""


def zeroconf_resolves(name, phone_addr, timeout_ms):
    """python-zeroconf, an mDNS implementation of its own, asked on the
    phone's interface: the name's IPv4 addresses and the console's service
    instance (server, port), or ([], None)."""
    zc = Zeroconf(interfaces=[phone_addr])
    try:
        host = AddressResolver(name + ".")
        addresses = host.parsed_addresses() if host.request(zc, timeout_ms) else []
        label = name.removesuffix(".local")
        info = ServiceInfo(SERVICE_TYPE, f"countersign console on {label}.{SERVICE_TYPE}")
        service = (info.server, info.port, info.parsed_addresses()) if info.request(zc, timeout_ms) else None
        return addresses, service
    finally:
        zc.close()


def system_resolves(name):
    proc = subprocess.run(["getent", "ahostsv4", name], capture_output=True, text=True)
    return sorted({line.split()[0] for line in proc.stdout.splitlines() if line.strip()})


def start_avahi():
    """Avahi in this namespace: its socket (which nss-mdns asks) on a tmpfs
    mounted in this mount namespace only, so no Avahi of the machine's is
    asked, and none is disturbed."""
    os.makedirs("/run/avahi-daemon", exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", "/run/avahi-daemon"], check=True)
    conf = tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False)
    conf.write(AVAHI_CONF)
    conf.close()
    avahi = subprocess.Popen(["avahi-daemon", "-f", conf.name, "--no-drop-root", "--no-chroot", "--no-rlimits",
                              "--no-proc-title"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 20
    while not os.path.exists("/run/avahi-daemon/socket"):
        if avahi.poll() is not None or time.time() > deadline:
            sys.exit(f"avahi-daemon did not start: {avahi.stderr.read() if avahi.poll() is not None else 'timeout'}")
        time.sleep(0.1)
    return avahi


def reach(name, phone_addr, laptop_addr, port, link_file, browser_home, proposal_id, impostor_addr):
    # 1. An independent mDNS resolver finds the name and the service.
    addresses, service = zeroconf_resolves(name, phone_addr, 5000)
    assert addresses == [laptop_addr], addresses
    assert service == (name + ".", int(port), [laptop_addr]), service
    print(f"zeroconf: {name} is {addresses[0]}, service on port {service[1]}")

    # 2. The system resolver: nothing without Avahi, the laptop with it.
    assert system_resolves(name) == [], "resolved before Avahi runs"
    avahi = start_avahi()
    try:
        deadline = time.time() + 15
        while (found := system_resolves(name)) != [laptop_addr]:
            assert time.time() < deadline, f"getent ahostsv4 {name}: {found}"
            time.sleep(0.3)
        print(f"avahi (nss-mdns): {name} is {found[0]}")
        driver = browse(name, port, link_file, browser_home, proposal_id)
        try:
            print("PAIRED", flush=True)
            sys.stdin.readline()
            refuse_impostor(driver, name, port, impostor_addr)
            print("REFUSED", flush=True)
        finally:
            driver.quit()
    finally:
        avahi.terminate()
        avahi.wait(timeout=10)


def browse(name, port, link_file, browser_home, proposal_id):
    """Chromium, trusting the console CA, pairs at the .local name and sees
    the proposal; its card leads with the action."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from console_browser import browser

    with open(link_file) as f:
        link = f.read().strip()
    origin = f"https://{name}:{port}"
    assert link.startswith(origin + "/pair/"), link
    driver = browser(browser_home, width=390, height=844)
    try:
        driver.get(link)
        driver.find_element(By.CSS_SELECTOR, "form[action='/pair'] button").click()
        WebDriverWait(driver, 20).until(lambda d: proposal_id in d.page_source)
        assert driver.current_url.startswith(origin + "/"), driver.current_url
        driver.get(f"{origin}/proposals/{proposal_id}")
        body = driver.find_element(By.TAG_NAME, "body").text
        assert "phone-job" in body, body[:2000]
        assert "0 5 * * *" in body, body[:2000]
        print(f"chromium: paired at {origin} and shown {proposal_id}")
        return driver
    except BaseException:
        driver.quit()
        raise


def refuse_impostor(driver, name, port, impostor_addr):
    """Another device answers for the name now: the phone resolves it
    there, and the paired Chromium, opening the console's origin, refuses
    the impostor's certificate (the console CA it trusts never signed it)."""
    from selenium.webdriver.common.by import By

    deadline = time.time() + 20
    while (found := system_resolves(name)) != [impostor_addr]:
        assert time.time() < deadline, f"the impostor's claim never reached the phone: {found}"
        time.sleep(0.3)
    print(f"avahi (nss-mdns): {name} is now {found[0]}, the impostor")
    # Chromium keeps what it resolved for a minute: forget it.
    driver.get("chrome://net-internals/#dns")
    driver.find_element(By.ID, "dns-view-clear-cache").click()
    driver.get(f"https://{name}:{port}/")
    page = driver.page_source
    assert "ERR_CERT_AUTHORITY_INVALID" in page, page[:3000]
    print("chromium: refused the impostor's certificate (ERR_CERT_AUTHORITY_INVALID)")


def gone(name, phone_addr):
    addresses, service = zeroconf_resolves(name, phone_addr, 3000)
    assert addresses == [] and service is None, (addresses, service)
    print(f"zeroconf: {name} no longer resolves")


def main():
    mode, name, phone_addr, laptop_addr, *rest = sys.argv[1:]
    if mode == "reach":
        reach(name, phone_addr, laptop_addr, *rest)
    elif mode == "gone":
        gone(name, phone_addr)
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    shutil.which("getent") or sys.exit("getent is missing")
    main()
