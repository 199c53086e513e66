#!/usr/bin/env python3
"""The console's service worker receives a Web Push in a real browser
(Debian's Chromium, headless, through chromedriver) against a real
`countersign up --console`: a paired browser, notifications allowed for
the console's origin (CDP Browser.grantPermissions), the worker
registered by the console's own script.

- CDP `ServiceWorker.enable` reports the registration (its id, for the
  console's origin); `ServiceWorker.deliverPushMessage` delivers a push
  whose data is what the notify process encrypts ({"id", "operation"});
  `registration.getNotifications()`, evaluated in the page, shows one
  notification titled with the operation, with the fixed body and the
  card's URL on the console's own origin.
- A push carrying a `url` (or anything else) does not change where the
  notification leads: the URL is built from the id on the worker's
  origin; a push whose id is not a proposal id leads to the pending list.
- "Notify this device" runs the browser's push subscription with the
  VAPID key the page carries (the same as notify/vapid.pub); headless
  Chromium reaches no push service here, so its subscribe() does not
  answer: the page says it is subscribing and posts nothing (the subscribe
  endpoint itself is tested in push.py).
- CDP cannot click a notification, so the click is dispatched in the
  worker's own context (CDP Target.attachToTarget + Runtime.evaluate: a
  `NotificationEvent("notificationclick")` with the shown notification);
  `clients.openWindow` is wrapped there to record the URL it is asked to
  open, and the test checks that a window on the card opened (or, where
  the browser refuses a window without a user gesture, that the card URL
  was the one asked for).
- An iPhone's Safari tab (its User-Agent, no PushManager, as iOS offers
  Web Push only to Home Screen web apps): the Devices page hides "Notify
  this device" and says to add the console to the Home Screen.

Usage: push_worker.py  (env COUNTERSIGN_BIN = path of the countersign
binary; countersign-signer must sit next to it)
"""
import json
import time
import urllib.request

import websocket
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from console_browser import browser, pair, propose
from harness import console_base, console_port, new_home, start_up, stop_up, trusting_home


class Cdp:
    """A DevTools protocol client on the browser target, beside
    chromedriver's own connection (flat sessions for page and worker)."""

    def __init__(self, driver):
        address = driver.capabilities["goog:chromeOptions"]["debuggerAddress"]
        with urllib.request.urlopen(f"http://{address}/json/version", timeout=10) as r:
            url = json.load(r)["webSocketDebuggerUrl"]
        self.ws = websocket.create_connection(url, timeout=20, suppress_origin=True)
        self.next_id = 0
        self.events = []

    def call(self, method, params=None, session=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self.ws.send(json.dumps(message))
        while True:
            answer = json.loads(self.ws.recv())
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise AssertionError(f"{method}: {answer['error']}")
                return answer["result"]
            self.events.append(answer)

    def wait_event(self, method, check, timeout=20):
        deadline = time.time() + timeout
        while True:
            for e in self.events:
                if e.get("method") == method and check(e["params"]):
                    return e["params"]
            assert time.time() < deadline, f"no {method} event: {[e.get('method') for e in self.events]}"
            self.ws.settimeout(max(0.1, deadline - time.time()))
            try:
                self.events.append(json.loads(self.ws.recv()))
            except websocket.WebSocketTimeoutException:
                pass

    def attach(self, target_type, url_prefix):
        targets = self.call("Target.getTargets")["targetInfos"]
        target = next(t for t in targets if t["type"] == target_type and t["url"].startswith(url_prefix))
        return self.call("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})["sessionId"]

    def evaluate(self, session, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                                "returnByValue": True}, session)
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")


NOTIFICATIONS = """
const done = arguments[arguments.length - 1];
navigator.serviceWorker.ready
  .then(r => r.getNotifications())
  .then(ns => done(ns.map(n => ({title: n.title, body: n.body, tag: n.tag, data: n.data}))))
  .catch(e => done({error: String(e)}));
"""

CLEAR = """
const done = arguments[arguments.length - 1];
navigator.serviceWorker.ready.then(r => r.getNotifications())
  .then(ns => { ns.forEach(n => n.close()); done(true); });
"""


def notifications(driver, count, timeout=20):
    deadline = time.time() + timeout
    while True:
        shown = driver.execute_async_script(NOTIFICATIONS)
        if isinstance(shown, list) and len(shown) >= count:
            return shown
        assert time.time() < deadline, shown
        time.sleep(0.2)


def deliver(cdp, page, origin, registration_id, driver, data, count):
    """`ServiceWorker.deliverPushMessage` with `data`, until `count`
    notifications show. Headless Chromium now and then drops a message
    delivered this way (the worker is running and shows notifications when
    asked directly), so an unseen message is delivered again, up to five
    times; a repeated push replaces its notification (same tag)."""
    for _ in range(5):
        cdp.call("ServiceWorker.deliverPushMessage", {
            "origin": origin, "registrationId": registration_id, "data": json.dumps(data)}, page)
        try:
            return notifications(driver, count, timeout=3)
        except AssertionError:
            continue
    raise AssertionError(f"no notification for a push of {data}")


IPHONE_SAFARI = ("Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 "
                 "(KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1")


def main():
    tmp, home = new_home("cs-push-worker-")
    port = console_port(home)
    origin = console_base(port)
    up, _ = start_up(home, "--console")
    driver = None
    try:
        driver = browser(trusting_home(home))
        pair(driver, home, port)
        pid = propose(home, "schedule.create", {"name": "nightly", "cron": "0 3 * * *"})
        cdp = Cdp(driver)
        cdp.call("Browser.grantPermissions", {"origin": origin, "permissions": ["notifications"]})
        driver.get(origin + "/devices")
        ready = driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "navigator.serviceWorker.ready.then(r => done(r.scope)).catch(e => done(String(e)));")
        assert ready == origin + "/", ready
        assert driver.execute_script("return Notification.permission") == "granted"

        # "Notify this device" runs the browser's subscription with the
        # page's VAPID key. Headless Chromium here reaches no push service,
        # so its subscribe() does not answer: the page says it is subscribing
        # and posts nothing (after 30 s it says the push service did not
        # answer); where it succeeds, the console says the device is notified.
        key = driver.find_element(By.ID, "push-subscribe").get_attribute("data-push-key")
        with open(f"{home}/notify/vapid.pub") as f:
            assert key == f.read().strip(), key
        driver.find_element(By.CSS_SELECTOR, "#push-subscribe button").click()
        WebDriverWait(driver, 10).until(lambda d: "Subscribing this device" in d.page_source
                                        or "This device will be notified" in d.page_source)
        if "This device will be notified" not in driver.page_source:
            # It waits for the push service (up to 30 s, then says so); nothing was posted.
            assert driver.current_url == origin + "/devices", driver.current_url
            print("Notify this device: subscribing (no push service reachable here)")
        driver.get(origin + "/devices")

        page = cdp.attach("page", origin)
        cdp.call("ServiceWorker.enable", session=page)
        registration = cdp.wait_event(
            "ServiceWorker.workerRegistrationUpdated",
            lambda p: any(r["scopeURL"] == origin + "/" and not r["isDeleted"] for r in p["registrations"]))
        registration_id = next(r["registrationId"] for r in registration["registrations"] if r["scopeURL"] == origin + "/")
        # Its worker activated (a push to a worker still installing is lost).
        cdp.wait_event("ServiceWorker.workerVersionUpdated", lambda p: any(
            v["registrationId"] == registration_id and v["status"] == "activated" for v in p["versions"]))

        card = f"{origin}/proposals/{pid}"
        shown = deliver(cdp, page, origin, registration_id, driver, {"id": pid, "operation": "schedule.create"}, 1)
        assert shown == [{"title": "schedule.create", "body": "A proposal waits for your decision",
                          "tag": pid, "data": {"url": card}}], shown

        # Nothing in a push chooses where the notification leads.
        driver.execute_async_script(CLEAR)
        deliver(cdp, page, origin, registration_id, driver,
                {"id": pid, "operation": "schedule.create", "url": "https://evil.example/"}, 1)
        shown = deliver(cdp, page, origin, registration_id, driver, {"id": "../../evil", "operation": "x"}, 2)
        shown = sorted(shown, key=lambda n: n["tag"])
        assert [n["data"]["url"] for n in shown] == [origin + "/", card], shown
        assert "evil" not in json.dumps(shown), shown
        driver.execute_async_script(CLEAR)

        # The click, dispatched in the worker's context.
        deliver(cdp, page, origin, registration_id, driver, {"id": pid, "operation": "schedule.create"}, 1)
        worker = cdp.attach("service_worker", origin)
        click = """
            (async () => {
              const asked = [];
              const open = self.clients.openWindow.bind(self.clients);
              self.clients.openWindow = (url) => { asked.push(url); return open(url); };
              const [n] = await self.registration.getNotifications();
              self.dispatchEvent(new NotificationEvent("notificationclick", {notification: n}));
              await new Promise((r) => setTimeout(r, 1500));
              self.clients.openWindow = open;
              const windows = await self.clients.matchAll({type: "window", includeUncontrolled: true});
              return {asked, windows: windows.map((w) => w.url),
                      left: (await self.registration.getNotifications()).length};
            })()
        """
        outcome = cdp.evaluate(worker, click)
        assert outcome["asked"] == [card], outcome
        assert outcome["left"] == 0, ("the click closes the notification", outcome)
        opened = card in outcome["windows"]
        print(f"notificationclick: openWindow asked for {outcome['asked']}; window on the card opened: {opened}")

        # With the card already open in a window, the click focuses that
        # window and opens none.
        driver.get(card)
        deliver(cdp, page, origin, registration_id, driver, {"id": pid, "operation": "schedule.create"}, 1)
        outcome = cdp.evaluate(worker, click)
        assert outcome["asked"] == [] and card in outcome["windows"], outcome

        # An iPhone's Safari tab has no PushManager (iOS offers Web Push to
        # Home Screen web apps only): the page says how to get there.
        driver.execute_cdp_cmd("Emulation.setUserAgentOverride", {"userAgent": IPHONE_SAFARI, "platform": "iPhone"})
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": "delete window.PushManager;"})
        driver.get(origin + "/devices")
        state = driver.find_element(By.ID, "push-state").text
        assert state.startswith("On an iPhone or iPad, notifications need the console on the Home Screen"), state
        assert not driver.find_element(By.ID, "push-subscribe").is_displayed()
    finally:
        if driver:
            driver.quit()
        code, rest = stop_up(up)
    assert code == 0, rest
    print("push worker e2e: ok")


if __name__ == "__main__":
    main()
