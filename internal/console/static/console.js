// mediagen console: the few things a page cannot do without script. Pages work without it;
// it adds live progress, copy buttons and confirmation of destructive buttons.
"use strict";

// Live progress: an element with data-poll="<url>" is refreshed from that JSON endpoint
// every second until the task ends; elements inside it with data-field="<name>" show the
// answer's fields. When the task ends the page reloads to show its result.
function poll(el) {
  const url = el.getAttribute("data-poll");
  let stopped = false;
  async function tick() {
    if (stopped) return;
    try {
      const res = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (res.status === 401 || res.status === 403) { stopped = true; return; }
      if (res.ok) {
        const v = await res.json();
        for (const f of el.querySelectorAll("[data-field]")) {
          const name = f.getAttribute("data-field");
          if (!(name in v)) continue;
          if (f.tagName === "PROGRESS") { f.value = Number(v[name]) || 0; continue; }
          f.textContent = String(v[name]);
          if (f.classList.contains("badge")) f.className = "badge " + String(v[name]);
        }
        if (v.terminal) { stopped = true; window.location.reload(); return; }
      }
    } catch (e) { /* a dropped connection: try again next tick */ }
    setTimeout(tick, 1000);
  }
  setTimeout(tick, 500);
}

// Copy buttons: <button data-copy="<element id>"> copies that element's text.
function copy(btn) {
  btn.addEventListener("click", async () => {
    const src = document.getElementById(btn.getAttribute("data-copy"));
    if (!src) return;
    try {
      await navigator.clipboard.writeText(src.textContent.trim());
      btn.textContent = "Copied";
    } catch (e) {
      const range = document.createRange();
      range.selectNodeContents(src);
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      btn.textContent = "Selected: press Ctrl+C";
    }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("[data-poll]").forEach(poll);
  document.querySelectorAll("button[data-copy]").forEach(copy);
});
