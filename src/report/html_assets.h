// kc — the HTML report's stylesheet and script (not a public header). Both are
// inlined into every report: the page loads nothing from anywhere.
#pragma once

#include <string_view>

namespace kc::report::html {

inline constexpr std::string_view kStyle = R"css(
:root { --line: #d0d0d7; --head: #f3f3f6; --muted: #6b6b76; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 24px 40px; color: #1d1d1f; }
h1 { font-size: 22px; margin: 16px 0 2px; } h2 { font-size: 18px; margin: 26px 0 8px; } h3 { font-size: 15px; margin: 0; display: inline; }
a { color: #1d4ed8; }
.meta { color: var(--muted); }
nav.toc a { margin-right: 10px; white-space: nowrap; }
.controls { position: sticky; top: 0; z-index: 20; background: #fff; border-bottom: 1px solid var(--line); padding: 8px 0;
  display: flex; flex-wrap: wrap; gap: 8px; align-items: center; }
.controls input[type=search] { flex: 1 1 220px; min-width: 0; padding: 4px 8px; font: inherit; }
.controls select, .controls button { font: inherit; padding: 3px 6px; }
.off { display: none !important; }
table { border-collapse: separate; border-spacing: 0; margin: 6px 0; }
th, td { border-right: 1px solid var(--line); border-bottom: 1px solid var(--line); padding: 3px 7px; text-align: left; vertical-align: top; }
tr > :first-child { border-left: 1px solid var(--line); } thead tr > * { border-top: 1px solid var(--line); }
th { background: var(--head); }
.scroll { overflow: auto; max-height: 78vh; max-width: 100%; }
.scroll thead th { position: sticky; top: 0; z-index: 2; }
table.sortable thead th { cursor: pointer; user-select: none; }
table.sortable thead th[aria-sort=ascending]::after { content: " \25B2"; font-size: 10px; }
table.sortable thead th[aria-sort=descending]::after { content: " \25BC"; font-size: 10px; }
td.verdict, td.id { white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td code, .repro code { white-space: nowrap; }
table.matrix tbody th { position: sticky; left: 0; z-index: 1; white-space: nowrap; }
table.matrix thead th:first-child { left: 0; z-index: 3; }
table.matrix th.col { writing-mode: vertical-rl; transform: rotate(180deg); white-space: nowrap; font-weight: 600; }
table.matrix td.c { text-align: center; white-space: nowrap; font-size: 12px; min-width: 26px; }
table.matrix td.c a { color: inherit; text-decoration: none; }
.v-conforming { background: #d7f5dd; color: #14532d; }
.v-violation { background: #fbd5d5; color: #7f1d1d; font-weight: 600; }
.v-error { background: #fde2c8; color: #7c2d12; font-weight: 600; }
.v-under_specified { background: #fef3c7; color: #78350f; }
.v-not_applicable, .v-skipped { background: #f4f4f5; color: #71717a; }
tr.v-violation, tr.v-error, tr.v-conforming, details.case { background: none; font-weight: normal; color: inherit; }
td.verdict.v-violation, td.verdict.v-error { font-weight: 600; }
.l-conforming { color: #15803d; font-weight: 600; } .l-violating, .l-error { color: #b91c1c; font-weight: 600; }
.l-incomplete { color: #a16207; font-weight: 600; } .l-untested { color: #71717a; }
.chips a { display: inline-block; padding: 2px 10px; margin: 0 6px 6px 0; border: 1px solid var(--line); border-radius: 12px; text-decoration: none; }
details.op { border: 1px solid var(--line); border-radius: 6px; padding: 6px 10px; margin: 10px 0; }
details.op > summary { cursor: pointer; }
details.case { border-left: 4px solid var(--line); padding: 2px 12px; margin: 10px 0; }
details.case.v-violation { border-color: #dc2626; } details.case.v-error { border-color: #ea580c; }
details.case > summary { cursor: pointer; }
pre { background: #f6f8fa; border: 1px solid #e1e4e8; padding: 6px 10px; white-space: pre-wrap; word-break: break-all; }
code { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 12.5px; }
.plots { display: flex; flex-wrap: wrap; gap: 10px 18px; }
figure { margin: 0; } figcaption { font-size: 12.5px; max-width: 360px; overflow-wrap: anywhere; }
svg.plot { max-width: 100%; height: auto; display: block; }
svg.plot text { font-size: 10px; fill: var(--muted); }
svg.plot .axis, svg.plot .tick { stroke: #888; } svg.plot .grid { stroke: #e5e5ea; }
svg.plot .threshold { stroke: #dc2626; stroke-width: 1.5; stroke-dasharray: 4 3; }
svg.plot .series { fill: none; stroke: #9ca3af; }
svg.plot circle.pt { stroke: #333; stroke-width: .6; background: none; }
svg.plot circle.v-conforming { fill: #22c55e; } svg.plot circle.v-violation { fill: #dc2626; }
svg.plot circle.v-error { fill: #f97316; } svg.plot circle.pt:not(.v-conforming):not(.v-violation):not(.v-error) { fill: #a1a1aa; }
@media (max-width: 600px) { body { margin: 0 10px 30px; } .scroll { max-height: 70vh; } }
)css";

// The page's only behaviour: filter (search box, backend and verdict selects,
// all settable from the URL: #backend=B&verdict=V&q=TEXT), sort (click a
// column header), and open the evidence a link points to. It reads names only
// from data attributes and writes only textContent and classes.
inline constexpr std::string_view kScript = R"js(
(function () {
  "use strict";
  var q = document.getElementById("q"), fb = document.getElementById("fb"), fv = document.getElementById("fv");
  function params(withSearch) {
    var o = {}, parts = [location.hash.slice(1)];
    if (withSearch) parts.unshift(location.search.slice(1));
    parts.forEach(function (part) {
      if (part.indexOf("=") < 0) return;
      part.split("&").forEach(function (kv) {
        var i = kv.indexOf("=");
        if (i < 0) return;
        try { o[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1).replace(/\+/g, " ")); } catch (e) {}
      });
    });
    return o;
  }
  function choose(sel, v) {
    sel.selectedIndex = 0;
    for (var i = 0; i < sel.options.length; i++) if (sel.options[i].value === v) sel.selectedIndex = i;
  }
  function apply() {
    var b = fb.value, v = fv.value, terms = q.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    document.querySelectorAll(".f").forEach(function (el) {
      var ok = (!b || el.getAttribute("data-b") === b) &&
               (!v || (" " + el.getAttribute("data-v") + " ").indexOf(" " + v + " ") >= 0);
      var s = el.getAttribute("data-s") || "";
      for (var i = 0; ok && i < terms.length; i++) ok = s.indexOf(terms[i]) >= 0;
      el.classList.toggle("off", !ok);
    });
    document.querySelectorAll(".fc").forEach(function (c) { c.classList.toggle("off", !c.querySelector(".f:not(.off)")); });
    document.querySelectorAll("[data-count]").forEach(function (n) {
      var box = document.getElementById(n.getAttribute("data-count"));
      var all = box.querySelectorAll(".f").length, on = box.querySelectorAll(".f:not(.off)").length;
      n.textContent = on === all ? String(all) : on + " of " + all;
    });
    var st = state();
    document.getElementById("share").setAttribute("href", "#" + st);
    document.body.setAttribute("data-filter", st);
  }
  function state() {
    var p = [];
    if (fb.value) p.push("backend=" + encodeURIComponent(fb.value));
    if (fv.value) p.push("verdict=" + encodeURIComponent(fv.value));
    if (q.value.trim()) p.push("q=" + encodeURIComponent(q.value.trim()));
    return p.join("&");
  }
  function changed() {
    apply();
    var st = state();
    try { history.replaceState(null, "", st ? "#" + st : location.pathname + location.search); } catch (e) { location.hash = st; }
  }
  function load(withSearch) {
    var o = params(withSearch);
    if ("backend" in o || "verdict" in o || "q" in o) {
      choose(fb, o.backend || ""); choose(fv, o.verdict || ""); q.value = o.q || "";
    }
    apply();
    var h = location.hash.slice(1);
    if (h && h.indexOf("=") < 0) {
      var el = document.getElementById(h);
      for (var p = el; p; p = p.parentElement) if (p.tagName === "DETAILS") p.open = true;
      if (el) el.scrollIntoView();
    }
  }
  q.addEventListener("input", changed);
  fb.addEventListener("change", changed);
  fv.addEventListener("change", changed);
  document.getElementById("clear").addEventListener("click", function () {
    fb.selectedIndex = 0; fv.selectedIndex = 0; q.value = ""; changed();
  });
  window.addEventListener("hashchange", function () { load(false); });
  function key(row, i) {
    var c = row.children[i];
    if (!c) return "";
    var k = c.getAttribute("data-k");
    return k !== null ? k : c.textContent.trim();
  }
  document.querySelectorAll("table.sortable thead th").forEach(function (th) {
    th.tabIndex = 0;
    function sort() {
      var tr = th.parentNode, i = Array.prototype.indexOf.call(tr.children, th), tb = th.closest("table").tBodies[0];
      var rows = Array.prototype.slice.call(tb.rows);
      var numeric = rows.every(function (r) { var k = key(r, i); return k === "" || !isNaN(parseFloat(k)); });
      // Numbers sort worst (largest) first, text A to Z; a second click reverses.
      var first = numeric ? "descending" : "ascending";
      var next = th.getAttribute("aria-sort") !== first ? first : (first === "ascending" ? "descending" : "ascending");
      var dir = next === "ascending" ? 1 : -1;
      rows.sort(function (a, b) {
        var x = key(a, i), y = key(b, i);
        if (numeric) return dir * ((x === "" ? -Infinity : parseFloat(x)) - (y === "" ? -Infinity : parseFloat(y)));
        return dir * x.localeCompare(y);
      });
      rows.forEach(function (r) { tb.appendChild(r); });
      Array.prototype.forEach.call(tr.children, function (o) { o.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", next);
    }
    th.addEventListener("click", sort);
    th.addEventListener("keydown", function (e) { if (e.key === "Enter") sort(); });
  });
  load(true);
})();
)js";

}  // namespace kc::report::html
