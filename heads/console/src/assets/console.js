// countersign console: the pairing's page key, every page's loading,
// live updates of the pending list, and the WebAuthn ceremonies of passkey
// approvals, enrolments and removals. Reading and deciding both need
// JavaScript. The page key is handed to this script once, in the answer
// to the pairing; it keeps it in this origin's localStorage (which no
// other origin, port or scheme can read). A navigation carries only the
// cookie, which a browser also sends to other ports of this host, so the
// server answers it with an empty page; this script fetches the page
// again with the key in a header and puts it in place, and puts the key
// in every form's page_key field, so a page is read and a change is made
// by a page of this origin, not by whoever holds the cookie. The server
// renders and escapes every page and the live list; this script only
// puts them in place and keeps the count in the title. For a passkey form
// it asks this server (which asks the signer) for a challenge, runs the
// browser's ceremony with user verification required, puts the answer in
// the form's hidden field and submits the form; the signer checks
// everything. It also opens the card's details on a wide screen (on a
// phone they stay one tap away), keeps the time left in each decision
// window current (the server renders it once) and registers the web
// app's service worker (/sw.js, which caches nothing).
// "Notify this device" subscribes with the browser's push manager, with
// the VAPID public key the Devices page carries, and posts the
// subscription's JSON in its form (with the page key).
"use strict";

// base64url (no padding) to bytes: the passkey ceremonies' challenges and
// the VAPID public key arrive so.
function fromB64u(text) {
  const plain = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  const bytes = new Uint8Array(plain.length);
  for (let i = 0; i < plain.length; i++) {
    bytes[i] = plain.charCodeAt(i);
  }
  return bytes;
}
const PAGE_KEY = "countersign-page-key";
const PAGE_KEY_HEADER = "X-Countersign-Page-Key";

// Every time the server wrote (RFC 3339, UTC) in the browser's own zone,
// the UTC instant on hover; again after each live update of the list.
function localTime(at) {
  const when = new Date(at);
  return isNaN(when) ? at : when.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });
}
function localizeTimes(root) {
  root.querySelectorAll("time[datetime]").forEach(function (element) {
    const at = element.getAttribute("datetime");
    element.title = at + " (UTC)";
    if (!element.hasAttribute("data-window")) {
      element.textContent = localTime(at);
    }
  });
}

// The time left in each pending proposal's decision window, every second,
// in the server's words, from the close in the element's datetime; once
// it has passed, that the proposal can no longer be decided (deciding it
// is refused; the live list drops it).
function decisionWindows() {
  if (!document.querySelector("time[data-window]") && !document.getElementById("pending")) {
    return function () {};
  }
  function left(secs) {
    if (secs < 60) {
      return secs + " s";
    }
    if (secs < 3600) {
      return Math.floor(secs / 60) + " min";
    }
    return Math.floor(secs / 3600) + " h " + Math.floor((secs % 3600) / 60) + " min";
  }
  function tick() {
    const now = Date.now();
    document.querySelectorAll("time[data-window]").forEach(function (element) {
      const at = element.getAttribute("datetime");
      const closes = Date.parse(at);
      if (isNaN(closes)) {
        return;
      }
      element.textContent = now < closes
        ? "decide by " + localTime(at) + ", " + left(Math.floor((closes - now) / 1000)) + " left"
        : "decide by " + localTime(at) + ": its window has closed; it can no longer be decided";
    });
  }
  tick();
  setInterval(tick, 1000);
  return tick;
}

// The pending list as the server sends it whenever it changes: server-sent
// events read from a fetch, which (unlike an EventSource) can carry the
// page key; read again after a pause when the stream breaks.
function livePending(key, tick) {
  const target = document.getElementById("pending");
  if (!target || !window.TextDecoderStream) {
    return;
  }
  function apply(data) {
    target.innerHTML = data.html;
    localizeTimes(target);
    tick();
    // The list as the live stream last sent it (tests wait for this).
    target.setAttribute("data-live", "");
    document.title = "(" + data.count + ") Pending · countersign console";
  }
  async function listen() {
    const response = await fetch("/events", {
      credentials: "same-origin",
      cache: "no-store",
      headers: { [PAGE_KEY_HEADER]: key, Accept: "text/event-stream" },
    });
    if (!response.ok || !response.body) {
      // Refused (unpaired, another key): reading again will not help.
      return false;
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        return true;
      }
      buffer += value.replace(/\r\n?/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let name = "message";
        const data = [];
        block.split("\n").forEach(function (line) {
          if (line.startsWith("event:")) {
            name = line.slice(6).trim();
          } else if (line.startsWith("data:")) {
            data.push(line.slice(5).replace(/^ /, ""));
          }
        });
        if (name === "pending" && data.length) {
          apply(JSON.parse(data.join("\n")));
        }
      }
    }
  }
  (async function () {
    for (;;) {
      let again = true;
      try {
        again = await listen();
      } catch (error) {
        again = true;
      }
      if (!again) {
        return;
      }
      await new Promise(function (resolve) {
        setTimeout(resolve, 3000);
      });
    }
  })();
}

function passkeyForms() {
  const forms = document.querySelectorAll("form[data-passkey]");
  if (forms.length === 0) {
    return;
  }

  function toB64u(buffer) {
    const bytes = new Uint8Array(buffer);
    let text = "";
    for (let i = 0; i < bytes.length; i++) {
      text += String.fromCharCode(bytes[i]);
    }
    return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  async function post(url, fields) {
    const response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(fields).toString(),
    });
    const data = await response.json();
    if (!response.ok) {
      throw new Error(data.message || "refused");
    }
    return data;
  }

  function credentials(ids) {
    return ids.map(function (id) {
      return { type: "public-key", id: fromB64u(id) };
    });
  }

  // A ceremony's failure, naming the step (the browser's own message is
  // deliberately vague).
  function step(name, promise) {
    return promise.catch(function (error) {
      throw new Error(name + ": " + error.message);
    });
  }

  async function assertion(challengeId, challenge, rpId, allowed, timeout) {
    const credential = await step("no enrolled passkey confirmed", navigator.credentials.get({
      publicKey: {
        challenge: fromB64u(challenge),
        rpId: rpId,
        allowCredentials: credentials(allowed),
        userVerification: "required",
        timeout: timeout,
      },
    }));
    return {
      challenge_id: challengeId,
      credential_id: toB64u(credential.rawId),
      authenticator_data: toB64u(credential.response.authenticatorData),
      client_data_json: toB64u(credential.response.clientDataJSON),
      signature: toB64u(credential.response.signature),
    };
  }

  async function decision(form, pageKey) {
    const c = await post(form.dataset.challenge, {
      page_key: pageKey,
      delivery: form.elements.delivery.value,
    });
    const answer = await assertion(c.challenge_id, c.challenge, c.rp_id, c.allowed, c.timeout_ms);
    form.elements.passkey.value = JSON.stringify(answer);
  }

  async function enrol(form, pageKey) {
    const c = await post("/passkeys/enrolment-challenge", { page_key: pageKey });
    const created = await step("no passkey was created", navigator.credentials.create({
      publicKey: {
        rp: { id: c.rp_id, name: "countersign" },
        user: { id: fromB64u(c.user_id), name: c.user_name, displayName: c.user_name },
        challenge: fromB64u(c.creation_challenge),
        pubKeyCredParams: [
          { type: "public-key", alg: -7 },
          { type: "public-key", alg: -8 },
        ],
        excludeCredentials: credentials(c.exclude),
        authenticatorSelection: { userVerification: "required", residentKey: "preferred" },
        attestation: "none",
        timeout: c.timeout_ms,
      },
    }));
    const registration = {
      challenge_id: c.challenge_id,
      attestation_object: toB64u(created.response.attestationObject),
      client_data_json: toB64u(created.response.clientDataJSON),
    };
    form.elements.registration.value = JSON.stringify(registration);
  }

  async function removal(form, pageKey) {
    const c = await post(form.action.replace(/\/remove$/, "/removal-challenge"), { page_key: pageKey });
    const answer = await assertion(c.challenge_id, c.challenge, c.rp_id, c.allowed, c.timeout_ms);
    form.elements.assertion.value = JSON.stringify(answer);
  }

  const ceremonies = { decision: decision, enrol: enrol, remove: removal };

  forms.forEach(function (form) {
    form.addEventListener("submit", async function (event) {
      event.preventDefault();
      const alert = form.querySelector("[role=alert]");
      const button = form.querySelector("button[type=submit]");
      const ceremony = ceremonies[form.dataset.passkey];
      if (!ceremony || !window.PublicKeyCredential) {
        alert.textContent = "This browser cannot use passkeys; nothing was done.";
        alert.hidden = false;
        return;
      }
      button.disabled = true;
      try {
        await ceremony(form, form.elements.page_key.value);
        form.submit();
      } catch (error) {
        alert.textContent = "Passkey step failed: " + error.message + " Nothing was done.";
        alert.hidden = false;
        button.disabled = false;
      }
    });
  });
}

function wideDetails() {
  if (window.matchMedia && window.matchMedia("(min-width: 48rem)").matches) {
    document.querySelectorAll("details[data-wide-open]").forEach(function (details) {
      details.open = true;
    });
  }
}

(function () {
  if ("serviceWorker" in navigator) {
    navigator.serviceWorker.register("/sw.js", { scope: "/", updateViaCache: "none" }).catch(function () {
      // Not installable then; the console works the same.
    });
  }
})();

function pushSubscription() {
  const form = document.getElementById("push-subscribe");
  if (!form) {
    return;
  }
  if (!("serviceWorker" in navigator) || !("PushManager" in window) || !("Notification" in window)) {
    form.hidden = true;
    const state = document.getElementById("push-state");
    if (state) {
      // iOS and iPadOS offer Web Push only to a web app opened from the
      // Home Screen, never in a Safari tab (iPadOS reports itself a Mac).
      const apple = /iPhone|iPad|iPod/.test(navigator.userAgent)
        || (navigator.platform === "MacIntel" && navigator.maxTouchPoints > 1);
      state.textContent = apple && navigator.standalone !== true
        ? "On an iPhone or iPad, notifications need the console on the Home Screen: tap Share, then Add to Home Screen, open the console from its icon, pair it, and come back to this page there."
        : "This browser cannot receive push notifications.";
    }
    return;
  }

  form.addEventListener("submit", async function (event) {
    if (form.elements.subscription.value) {
      return;
    }
    event.preventDefault();
    const state = document.getElementById("push-state");
    try {
      if ((await Notification.requestPermission()) !== "granted") {
        throw new Error("notifications are not allowed for this site");
      }
      if (state) {
        state.textContent = "Subscribing this device with its browser's push service…";
      }
      const registration = await navigator.serviceWorker.ready;
      // A browser that cannot reach its push service may never answer.
      const timeout = new Promise(function (_, reject) {
        setTimeout(function () {
          reject(new Error("the browser's push service did not answer"));
        }, 30000);
      });
      const subscription = await Promise.race([
        registration.pushManager.subscribe({
          userVisibleOnly: true,
          applicationServerKey: fromB64u(form.dataset.pushKey),
        }),
        timeout,
      ]);
      form.elements.subscription.value = JSON.stringify(subscription);
      form.submit();
    } catch (error) {
      if (state) {
        state.textContent = "This device could not be subscribed: " + error.message;
      }
    }
  });
}

// Everything a page's own elements need, once they are in place; then
// the page says it is ready (tests wait for this).
function start(key) {
  document.querySelectorAll("input[data-page-key]").forEach(function (field) {
    field.value = key;
  });
  localizeTimes(document);
  livePending(key, decisionWindows());
  passkeyForms();
  wideDetails();
  pushSubscription();
  document.documentElement.setAttribute("data-ready", "");
}

// A page that could not be loaded says why, in place of "Loading…".
function notLoaded(shell, message) {
  shell.textContent = message;
  shell.id = "load-failed";
  document.documentElement.setAttribute("data-ready", "");
}

// The page key: kept when the pairing hands it over, forgotten when the
// browser is unpaired; the page itself, fetched with the key when the
// server answered the navigation with the empty page.
(function () {
  const fresh = document.getElementById("new-page-key");
  if (fresh) {
    localStorage.setItem(PAGE_KEY, fresh.dataset.key);
    fresh.remove();
    location.replace("/");
    return;
  }
  if (document.getElementById("forget-page-key")) {
    localStorage.removeItem(PAGE_KEY);
    start("");
    return;
  }
  const key = localStorage.getItem(PAGE_KEY) || "";
  const shell = document.getElementById("load");
  if (!shell) {
    start(key);
    return;
  }
  if (!key) {
    notLoaded(shell, "This browser holds no page key for its pairing (its site data was cleared?), so the console shows it nothing. Pair it again with `countersign console pair`.");
    return;
  }
  fetch(location.pathname + location.search, {
    credentials: "same-origin",
    cache: "no-store",
    headers: { [PAGE_KEY_HEADER]: key },
  })
    .then(function (response) {
      return response.text();
    })
    .then(function (text) {
      const loaded = new DOMParser().parseFromString(text, "text/html");
      // The page's own script is this one, already running.
      loaded.querySelectorAll("script").forEach(function (script) {
        script.remove();
      });
      document.title = loaded.title;
      document.body.replaceWith(document.adoptNode(loaded.body));
      start(key);
    })
    .catch(function (error) {
      notLoaded(shell, "This page could not be loaded (" + error.message + "); reload it.");
    });
})();
