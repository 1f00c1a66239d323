// The software update page (no inline script: CSP). Uploads a bundle in slices, each a
// request well inside the server's small body limit (web_ui/bundle_upload.py), with the
// page's CSRF token; then shows the installer's progress from /updates/status every 2 s.
"use strict";
(function () {
  var POLL_MS = 2000;
  var JSON_TYPE = "application/json";

  function token() {
    return document.querySelector('meta[name="csrf-token"]').getAttribute("content");
  }

  function answer(r) {
    if (r.status === 401 || r.status === 403) { window.location.reload(); }
    return r.json()
      .catch(function () {
        return { error: "The mirror refused it (HTTP " + r.status + "): reload the page and try again." };
      })
      .then(function (data) {
        if (!r.ok) throw new Error(data.error || "HTTP " + r.status);
        return data;
      });
  }

  function post(url, body, type) {
    var headers = { "X-CSRF-Token": token(), Accept: JSON_TYPE };
    if (type) headers["Content-Type"] = type;
    return fetch(url, { method: "POST", credentials: "same-origin", headers: headers, body: body })
      .then(answer);
  }

  // the server takes only these characters; the rest of the name it checks itself
  function safeName(name) {
    return name.replace(/[^A-Za-z0-9._-]/g, "_");
  }

  function megabytes(bytes) {
    return (bytes / 1048576).toFixed(1) + " MB";
  }

  function uploader(form) {
    var input = form.querySelector("input[type=file]");
    var start = document.getElementById("upload-start");
    var cancel = document.getElementById("upload-cancel");
    var bar = document.getElementById("upload-bar");
    var message = document.getElementById("upload-message");
    var cancelled = false;

    function say(text, isError) {
      message.textContent = text;
      message.className = isError ? "error" : "";
    }

    async function send(file) {
      var fields = new URLSearchParams({ name: safeName(file.name), size: String(file.size) });
      var upload = await post(form.getAttribute("data-start"), fields);
      try {
        var offset = 0;
        while (offset < file.size) {
          if (cancelled) throw new Error("The upload was cancelled.");
          var end = Math.min(offset + upload.slice_bytes, file.size);
          var url = upload.append + "?offset=" + offset;
          var done = await post(url, file.slice(offset, end), "application/octet-stream");
          offset = done.received;
          bar.value = Math.floor((100 * offset) / file.size);
          say("Uploading " + upload.name + ": " + megabytes(offset) + " of " + megabytes(file.size));
        }
        return await post(upload.finish);
      } catch (error) {
        post(upload.abort).catch(function () { /* gone already */ });
        throw error;
      }
    }

    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var file = input.files[0];
      if (!file) { say("Choose a bundle (.raucb) first.", true); return; }
      cancelled = false;
      start.disabled = true;
      cancel.hidden = false;
      bar.hidden = false;
      bar.value = 0;
      say("Starting the upload of " + file.name + "…");
      send(file)
        .then(function (done) { say(done.message, false); })
        .catch(function (error) { say(error.message, true); })
        .finally(function () {
          start.disabled = false;
          cancel.hidden = true;
        });
    });
    cancel.addEventListener("click", function () { cancelled = true; });
  }

  function show(status) {
    document.querySelectorAll("[data-update]").forEach(function (el) {
      var key = el.getAttribute("data-update");
      var known = status.percent !== null && status.percent !== undefined;
      if (key === "bar") {
        el.hidden = !known;
        el.value = known ? status.percent : 0;
      } else if (key === "percent") {
        el.textContent = known ? status.percent + "%" : "";
      } else {
        el.textContent = status[key];
      }
    });
  }

  function poll() {
    fetch("/updates/status", { credentials: "same-origin", headers: { Accept: JSON_TYPE } })
      .then(function (r) {
        if (r.status === 401 || r.status === 403) { window.location.reload(); return null; }
        return r.ok ? r.json() : null;
      })
      .then(function (status) { if (status) show(status); })
      .catch(function () { /* the mirror may be restarting into the update */ })
      .finally(function () { window.setTimeout(poll, POLL_MS); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("upload-form");
    if (form) uploader(form);
    window.setTimeout(poll, POLL_MS);
  });
})();
