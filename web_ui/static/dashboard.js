// Refreshes the dashboard's figures from /api/status every 2 s (no inline script: CSP).
"use strict";
(function () {
  var PERIOD_MS = 2000;

  function get(obj, path) {
    // extras are flattened server-side: their keys contain dots themselves
    if (path.indexOf("extras.") === 0) return (obj.extras || {})[path.slice(7)];
    return path.split(".").reduce(function (o, k) {
      return o === null || o === undefined ? undefined : o[k];
    }, obj);
  }

  function duration(s) {
    s = Math.floor(s);
    var h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
    var pad = function (n) { return (n < 10 ? "0" : "") + n; };
    if (h) return h + " h " + pad(m) + " min";
    if (m) return m + " min " + pad(sec) + " s";
    return sec + " s";
  }

  function format(value, fmt) {
    if (value === null || value === undefined || value === "") return "–";
    if (fmt === "camera") return value ? "connected" : "missing";
    if (fmt === "bool" || typeof value === "boolean") return value ? "yes" : "no";
    if (fmt === "fps") return Number(value).toFixed(1);
    if (fmt === "ms") return Number(value).toFixed(0) + " ms";
    if (fmt === "duration") return duration(Number(value));
    if (fmt === "int") return String(Math.trunc(value));
    if (fmt === "auto" && typeof value === "number" && !Number.isInteger(value)) return value.toFixed(1);
    if (Array.isArray(value)) return value.join(", ") || "–";
    return String(value);
  }

  function update(status) {
    document.querySelectorAll("[data-key]").forEach(function (el) {
      var value = get(status, el.getAttribute("data-key"));
      el.textContent = format(value, el.getAttribute("data-format"));
      if (el.getAttribute("data-format") === "health") {
        el.className = "badge " + value;
      }
    });
  }

  function refresh() {
    fetch("/api/status", { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) {
        if (r.status === 401 || r.status === 403) { window.location.reload(); return null; }
        return r.ok ? r.json() : null;
      })
      .then(function (status) { if (status) update(status); })
      .catch(function () { /* the mirror may be restarting; try again next time */ })
      .finally(function () { window.setTimeout(refresh, PERIOD_MS); });
  }

  window.setTimeout(refresh, PERIOD_MS);
})();
