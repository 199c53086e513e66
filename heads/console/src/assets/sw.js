// countersign console: the service worker that makes the console an
// installable web app and shows Web Push notifications. It caches nothing: every page is
// fetched from the console each time, so nothing it shows can be stale
// and nothing can be decided offline. It holds no key, reads no page key
// and changes no request: its fetch handler leaves every request to the
// network (it never calls respondWith). Served at /sw.js, so its scope is
// the whole console ("/").
"use strict";

self.addEventListener("install", function () {
  // A new version takes over at once: there is no cache to hand over.
  self.skipWaiting();
});

self.addEventListener("activate", function (event) {
  event.waitUntil(self.clients.claim());
});

self.addEventListener("fetch", function () {
  // Passthrough: the browser fetches the request itself.
});

// Web Push: a push names a proposal waiting for a decision (its id, its
// operation, and its expiry if it has one; never its arguments, never
// anything that decides). The notification's title is the operation, its
// body a fixed sentence, and the only place it opens is the proposal's
// card on this console's own origin, built here from the id: no URL is
// ever taken from a push. Opening the card decides nothing; deciding
// still needs this paired browser (and a passkey where one is required).
const PROPOSAL_ID = /^prop_[0-9A-Za-z]{1,64}$/;

function cardUrl(id) {
  return new URL("/proposals/" + id, self.location.origin).href;
}

self.addEventListener("push", function (event) {
  let data = {};
  try {
    data = event.data ? event.data.json() : {};
  } catch (e) {
    data = {};
  }
  const id = typeof data.id === "string" && PROPOSAL_ID.test(data.id) ? data.id : null;
  const operation = typeof data.operation === "string" ? data.operation.slice(0, 120) : "";
  const title = operation || "countersign";
  const options = {
    body: "A proposal waits for your decision",
    tag: id || "countersign",
    data: { url: id ? cardUrl(id) : new URL("/", self.location.origin).href },
    requireInteraction: true,
  };
  event.waitUntil(self.registration.showNotification(title, options));
});

self.addEventListener("notificationclick", function (event) {
  event.notification.close();
  const url = event.notification.data && event.notification.data.url;
  const target = typeof url === "string" && url.startsWith(self.location.origin + "/")
    ? url
    : new URL("/", self.location.origin).href;
  event.waitUntil(
    self.clients.matchAll({ type: "window", includeUncontrolled: true }).then(function (windows) {
      for (const w of windows) {
        if (w.url === target && "focus" in w) {
          return w.focus();
        }
      }
      return self.clients.openWindow(target);
    })
  );
});
