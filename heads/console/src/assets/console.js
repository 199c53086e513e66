// countersign console: live updates of the pending list. Everything else
// works without JavaScript. The server renders and escapes the list; this
// script only puts it in place and keeps the count in the title.
"use strict";
(function () {
  const target = document.getElementById("pending");
  if (!target || !window.EventSource) {
    return;
  }
  const source = new EventSource("/events");
  source.addEventListener("pending", function (event) {
    const data = JSON.parse(event.data);
    target.innerHTML = data.html;
    document.title = "(" + data.count + ") Pending · countersign console";
  });
})();
