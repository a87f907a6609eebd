"""The HTML report's stylesheet and its one small script, inline in the page (nothing is fetched).

The stylesheet gives light and dark colours through ``prefers-color-scheme`` and uses only fonts already on the
reader's machine. The script only enhances the per-task table (sorting, paging, a filter): with JavaScript off the
page reads the same, the table in plain pages. The page's Content-Security-Policy allows this script by its hash
and nothing else: no other script, no request for any resource.
"""

from __future__ import annotations

import base64
import hashlib

CSS = """\
:root{color-scheme:light dark;--bg:#ffffff;--fg:#1c2329;--muted:#5d6872;--line:#d7dde3;--panel:#f4f6f8;
--accent:#2a66b0;--good:#1d7a3a;--bad:#b3261e;--warn-bg:#fff3e0;--warn-fg:#6b3a00;--demo-bg:#fde7f0;
--demo-fg:#7d1742;--band:rgba(42,102,176,.16)}
@media (prefers-color-scheme:dark){:root{--bg:#111518;--fg:#e3e7eb;--muted:#9aa5af;--line:#2d353c;--panel:#1a2025;
--accent:#76adff;--good:#62c983;--bad:#ff8a80;--warn-bg:#35270f;--warn-fg:#ffd28f;--demo-bg:#3b1627;
--demo-fg:#ffb8d3;--band:rgba(118,173,255,.2)}}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%;text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--fg);
font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1180px;margin:0 auto;padding:12px 16px 40px}
h1{font-size:1.55rem;margin:.3em 0 .2em;line-height:1.25;overflow-wrap:anywhere}
h2{font-size:1.2rem;border-bottom:1px solid var(--line);padding-bottom:.2em;margin:1.8em 0 .6em}
h3{font-size:1.05rem;margin:1.4em 0 .4em;overflow-wrap:anywhere}
p,li{overflow-wrap:anywhere}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;font-size:.88em;
overflow-wrap:anywhere}
a{color:var(--accent)}
.meta,.note{color:var(--muted);font-size:.92em}
.banner{background:var(--demo-bg);color:var(--demo-fg);border:2px solid currentColor;border-radius:6px;
padding:.6em 1em;font-weight:600;margin:.8em 0}
.banner.training{background:var(--warn-bg);color:var(--warn-fg)}
.warnings{background:var(--warn-bg);color:var(--warn-fg);border-radius:6px;padding:.6em 1em .6em 2.2em;margin:0}
.warnings li+li{margin-top:.3em}
nav{font-size:.92em;margin:.6em 0}
nav a{margin-right:.9em;white-space:nowrap;display:inline-block}
.scroll{overflow-x:auto;max-width:100%}
.scroll tbody th[scope=row]:first-child{position:sticky;left:0;background:var(--bg)}
td code{white-space:nowrap}
table{border-collapse:collapse;font-variant-numeric:tabular-nums;margin:.4em 0}
th,td{border-bottom:1px solid var(--line);padding:.28em .6em;text-align:left;vertical-align:top}
thead th{background:var(--panel);font-weight:600;white-space:nowrap}
table.wrap-head thead th{white-space:normal;vertical-align:bottom;min-width:4.5em}
.num{text-align:right;white-space:nowrap}
table.kv th{font-weight:500;color:var(--muted);white-space:nowrap}
.verdict{font-weight:600;padding:.4em .8em;border-left:4px solid var(--muted);background:var(--panel)}
.verdict.improvement{border-color:var(--good)}
.verdict.regression{border-color:var(--bad)}
.hurt{color:var(--bad);font-weight:bold}
.small{color:var(--muted)}
.tag{display:inline-block;font-size:.8em;font-weight:700;padding:0 .45em;border-radius:4px;margin-right:.4em;
border:1px solid currentColor}
.improvement .tag{color:var(--good)}
.regression .tag{color:var(--bad)}
.check-error{color:var(--bad);font-weight:600}
.check-warning{color:var(--warn-fg);font-weight:600}
.pos{color:var(--good)}
.neg{color:var(--bad)}
.plots{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,280px),1fr));gap:10px 18px;
align-items:start}
.plots.wide{grid-template-columns:repeat(auto-fit,minmax(min(100%,420px),1fr))}
figure{margin:.4em 0}
figcaption{color:var(--muted);font-size:.88em}
svg.plot{display:block;width:100%;height:auto;max-width:600px}
svg.plot.dist{max-width:340px}
.plot text{fill:var(--fg);font-size:12px;font-family:inherit}
.plot .tick{fill:var(--muted);font-size:11px}
.plot .axis{stroke:var(--muted);stroke-width:1}
.plot .grid{stroke:var(--line);stroke-width:1}
.plot .ci{stroke:var(--accent);stroke-width:2.5}
.plot .pt{fill:var(--accent)}
.plot .bar{fill:var(--accent)}
.plot .bar.pos{fill:var(--good)}
.plot .bar.neg{fill:var(--bad)}
.plot .bar.tie{fill:var(--muted)}
.plot .mean{stroke:var(--fg);stroke-width:1.5;stroke-dasharray:5 3}
.plot .band{fill:var(--band)}
table.tasks th[scope=row]{position:sticky;left:0;background:var(--bg);font-weight:500;white-space:nowrap;
font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.88em}
table.tasks th.long{white-space:normal;overflow-wrap:anywhere;min-width:12em;max-width:22em}
#results-table td{white-space:nowrap}
table.tasks td{text-align:right;white-space:nowrap}
table.tasks th,table.tasks td{vertical-align:baseline}
table.tasks td.s::after,table.tasks td.u::after{content:"";display:inline-block;width:1.3em;text-align:right;
color:var(--good)}
table.tasks td.s::after{content:"\\2713"}
table.tasks th button{font:inherit;color:inherit;background:none;border:0;padding:0;cursor:pointer;
text-decoration:underline dotted}
table.tasks th[aria-sort=ascending] button::after{content:" \\25B2"}
table.tasks th[aria-sort=descending] button::after{content:" \\25BC"}
.controls{display:flex;flex-wrap:wrap;gap:.5em 1em;align-items:center;margin:.4em 0}
.controls input{font:inherit;padding:.15em .4em;background:var(--bg);color:var(--fg);border:1px solid var(--line);
border-radius:4px}
.controls button{font:inherit;padding:.1em .7em;background:var(--panel);color:var(--fg);
border:1px solid var(--line);border-radius:4px;cursor:pointer}
.controls button:disabled{opacity:.45;cursor:default}
details>summary{cursor:pointer;color:var(--accent)}
.err{color:#c2410c;font-weight:600}
#attempts details.task{border-top:1px solid var(--line);padding:.2em 0}
#attempts details.attempt{margin:.3em 0 .3em 1.2em}
#attempts pre{white-space:pre-wrap;overflow-wrap:anywhere;max-height:32em;overflow:auto;background:var(--panel);
padding:.4em .6em;border-radius:4px;margin:.2em 0 .6em}
#attempts h4{margin:.5em 0 .1em;font-size:.9em;color:var(--muted)}
footer{margin-top:3em;color:var(--muted);font-size:.85em;border-top:1px solid var(--line);padding-top:.6em}
@media (max-width:560px){body{font-size:14px}main{padding:8px 10px 30px}th,td{padding:.24em .4em}
table.kv th{white-space:normal}}
@media print{nav,.controls{display:none}details{display:block}}
"""

# Sorting, paging and filtering for the per-task table. It reads the rows the page already holds (every page of
# them) and their data-v attributes (the exact figures); a missing figure sorts last either way.
SCRIPT = """\
(function () {
  "use strict";
  var box = document.getElementById("task-table");
  if (!box) { return; }
  var tables = box.querySelectorAll("table.tasks");
  if (!tables.length) { return; }
  var table = tables[0], body = table.tBodies[0], rows = [];
  Array.prototype.forEach.call(tables, function (t) {
    Array.prototype.push.apply(rows, Array.prototype.slice.call(t.tBodies[0].rows));
  });
  var scroller = table.parentNode, size = 100, page = 0, view = rows, col = -1, dir = 1, ids = null;
  function el(tag, text) { var e = document.createElement(tag); if (text) { e.textContent = text; } return e; }
  var controls = el("div"), label = el("label", "Filter by task id "), input = el("input");
  var prev = el("button", "Previous"), next = el("button", "Next"), info = el("span");
  controls.className = "controls";
  input.type = "search";
  prev.type = next.type = "button";
  info.setAttribute("aria-live", "polite");
  label.appendChild(input);
  [label, prev, info, next].forEach(function (e) { controls.appendChild(e); });
  box.textContent = "";
  box.appendChild(controls);
  box.appendChild(scroller);
  function key(row, c) {
    var cell = row.cells[c], v = cell.getAttribute("data-v");
    if (v === null) { return cell.textContent; }
    return v === "" ? null : parseFloat(v);
  }
  function render() {
    var pages = Math.max(1, Math.ceil(view.length / size));
    page = Math.min(Math.max(page, 0), pages - 1);
    var start = page * size, shown = view.slice(start, start + size);
    body.replaceChildren.apply(body, shown);
    info.textContent = view.length ? "rows " + (start + 1).toLocaleString() + "\\u2013" +
      (start + shown.length).toLocaleString() + " of " + view.length.toLocaleString() +
      (view.length < rows.length ? " (filtered from " + rows.length.toLocaleString() + ")" : "") : "no row matches";
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
    prev.hidden = next.hidden = rows.length <= size;
  }
  function sort() {
    if (col < 0) { return; }
    var keyed = view.map(function (r) { return [key(r, col), r]; });
    keyed.sort(function (a, b) {
      var x = a[0], y = b[0];
      if (x === null || y === null) { return (x === null) - (y === null); }
      if (typeof x === "string") { return dir * x.localeCompare(y, undefined, {numeric: true}); }
      return dir * (x - y);
    });
    view = keyed.map(function (p) { return p[1]; });
  }
  var heads = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(heads, function (th, i) {
    var button = el("button");
    while (th.firstChild) { button.appendChild(th.firstChild); }
    button.type = "button";
    button.title = "Sort by this column";
    th.appendChild(button);
    button.addEventListener("click", function () {
      dir = col === i ? -dir : (i === 0 ? 1 : -1);
      col = i;
      Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending");
      sort();
      page = 0;
      render();
    });
  });
  input.addEventListener("input", function () {
    var q = input.value.trim().toLowerCase();
    if (ids === null) { ids = rows.map(function (r) { return r.cells[0].textContent.toLowerCase(); }); }
    view = q ? rows.filter(function (r, i) { return ids[i].indexOf(q) >= 0; }) : rows.slice();
    sort();
    page = 0;
    render();
  });
  prev.addEventListener("click", function () { page -= 1; render(); });
  next.addEventListener("click", function () { page += 1; render(); });
  document.documentElement.classList.add("js");
  render();
})();
"""

SCRIPT_HASH = "sha256-" + base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii")
# No network, no plugin, no form, no base URL, no script but the one above; inline styles allowed.
CSP = (
    f"default-src 'none'; script-src '{SCRIPT_HASH}'; style-src 'unsafe-inline'; img-src data:; "
    "base-uri 'none'; form-action 'none'"
)

__all__ = ["CSP", "CSS", "SCRIPT", "SCRIPT_HASH"]
