// Strata console: the live tail. A button with data-tail opens an
// EventSource on that URL; each "record" event is a table row put on top
// of #rows. Clicking again stops it.
(function () {
  let source = null;
  function stop(btn) {
    if (source) { source.close(); source = null; }
    if (btn) { btn.textContent = "Live tail"; }
    const st = document.getElementById("tail-state");
    if (st) { st.textContent = ""; }
  }
  document.addEventListener("click", function (ev) {
    const btn = ev.target.closest("[data-tail]");
    if (!btn) { return; }
    ev.preventDefault();
    if (source) { stop(btn); return; }
    source = new EventSource(btn.getAttribute("data-tail"));
    btn.textContent = "Stop tail";
    const st = document.getElementById("tail-state");
    source.addEventListener("open", function () { if (st) { st.textContent = "tailing…"; } });
    source.addEventListener("record", function (e) {
      const rows = document.getElementById("rows");
      if (!rows) { return; }
      const t = document.createElement("tbody");
      t.innerHTML = e.data;
      const tr = t.firstElementChild;
      if (tr) { tr.classList.add("new"); rows.insertBefore(tr, rows.firstChild); }
      const none = document.getElementById("none");
      if (none) { none.remove(); }
    });
    source.addEventListener("failure", function (e) { if (st) { st.textContent = e.data; } });
  });
  document.addEventListener("htmx:beforeSwap", function () { stop(null); });
  // A refused request (4xx, 5xx) is shown, not swapped in.
  document.addEventListener("htmx:responseError", function (e) {
    const f = document.getElementById("flash");
    if (f) { f.textContent = e.detail.xhr.status + ": " + e.detail.xhr.responseText; }
  });
})();
