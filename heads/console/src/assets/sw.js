// countersign console: the service worker that makes the console an
// installable web app, and nothing more. It caches nothing: every page is
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

// Web Push (issue 35, item 4) goes here: a "push" handler that shows the
// notification (proposal id, operation, expiry; never the arguments, never
// anything that decides) and a "notificationclick" handler that opens the
// proposal's card. Not implemented yet: this worker receives no pushes.
