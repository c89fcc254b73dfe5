// What every page shares beyond the DOM: the theme toggle, keyboard shortcuts and their help,
// sortable tables, and exports (JSON, CSV, SVG, PNG). Exports are made in the browser from what
// the page already holds: nothing is asked of the server, and what is saved is what was shown.
"use strict";

// ----------------------------------------------------------------------------------- theme

const THEME_KEY = "fleet-theme";
const THEMES = ["system", "dark", "light"];

function theme() { return localStorage.getItem(THEME_KEY) || "system"; }

function setTheme(t) {
  if (t === "system") { localStorage.removeItem(THEME_KEY); delete document.documentElement.dataset.theme; }
  else { localStorage.setItem(THEME_KEY, t); document.documentElement.dataset.theme = t; }
  const b = document.getElementById("theme");
  if (b) { b.textContent = `◐ ${t}`; b.title = `theme: ${t} (t to change)`; }
}

function nextTheme() { setTheme(THEMES[(THEMES.indexOf(theme()) + 1) % THEMES.length]); }

// ------------------------------------------------------------------------------- shortcuts

const SHORTCUTS = [
  ["?", "this help"], ["/", "search tasks and ids"], ["g l", "deliberation list"], ["g c", "Cypher"],
  ["g a", "agents"], ["g p", "plans"], ["g e", "event stream"], ["g s", "submit"], ["g r", "projections"],
  ["j / k", "next / previous row"], ["Enter", "open the selected row"], ["[ / ]", "replay one version back / on"],
  ["t", "theme: system, dark, light"], ["Esc", "close this help, leave a field"],
];
const GO = { l: "#/", c: "#/query", a: "#/agents", p: "#/plans", e: "#/events", s: "#/submit", r: "#/projections" };

function toggleHelp(show) {
  let box = document.getElementById("help");
  if (box && show !== true) { box.remove(); return; }
  if (box || show === false) return;
  box = el("div", { id: "help", role: "dialog", "aria-label": "keyboard shortcuts" },
    el("div", { class: "card" }, el("h2", {}, "Keyboard shortcuts"),
      el("table", {}, el("tbody", {}, SHORTCUTS.map(([k, what]) => el("tr", {}, el("td", {}, el("kbd", {}, k)), el("td", {}, what))))),
      el("p", { class: "muted" }, "Esc or ? closes this.")));
  box.addEventListener("click", (ev) => { if (ev.target === box) box.remove(); });
  document.body.append(box);
}

// Moves the selection in the page's main table (the one marked data-nav) by `step` rows.
function moveSelection(step) {
  const rows = [...document.querySelectorAll("table[data-nav] tbody tr")];
  if (!rows.length) return;
  const at = rows.findIndex((r) => r.classList.contains("selected"));
  const next = rows[Math.max(0, Math.min(rows.length - 1, at < 0 ? 0 : at + step))];
  rows.forEach((r) => r.classList.remove("selected"));
  next.classList.add("selected");
  next.scrollIntoView({ block: "nearest" });
}

function openSelection() {
  const row = document.querySelector("table[data-nav] tbody tr.selected");
  const a = row && (row.querySelector("a[href^='#/']") || row);
  if (a) a.click();
}

let pendingG = 0;
document.addEventListener("keydown", (ev) => {
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const t = ev.target;
  const typing = t instanceof HTMLElement && (t.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(t.tagName));
  if (ev.key === "Escape") { toggleHelp(false); if (typing) t.blur(); return; }
  if (typing) return;
  if (pendingG && Date.now() - pendingG < 1500) {
    pendingG = 0;
    if (GO[ev.key]) { ev.preventDefault(); go(GO[ev.key]); }
    return;
  }
  pendingG = 0;
  const slider = document.getElementById("version");
  const act = {
    "?": () => toggleHelp(),
    "/": () => { const s = document.getElementById("search"); s.focus(); s.select(); },
    g: () => { pendingG = Date.now(); },
    j: () => moveSelection(1),
    k: () => moveSelection(-1),
    Enter: openSelection,
    t: nextTheme,
    "[": () => slider && stepVersion(slider, -1),
    "]": () => slider && stepVersion(slider, 1),
  }[ev.key];
  if (act) { ev.preventDefault(); act(); }
});

function stepVersion(slider, step) {
  const v = Math.max(Number(slider.min), Math.min(Number(slider.max), Number(slider.value) + step));
  if (v === Number(slider.value)) return;
  slider.value = v;
  slider.dispatchEvent(new Event("change"));
}

// ---------------------------------------------------------------------------------- sorting

// Makes `table`'s columns sort on a click of their header; the order lives in the URL under
// `param` ("created" ascending, "-created" descending), so a shared link keeps it. Numbers sort
// as numbers, everything else as text; rows keep their order among equals.
function sortable(table, param) {
  const heads = [...table.querySelectorAll("thead th")];
  const name = (th) => th.dataset.col || th.textContent.trim();
  const apply = (spec) => {
    const desc = spec.startsWith("-");
    const col = heads.findIndex((th) => name(th) === (desc ? spec.slice(1) : spec));
    heads.forEach((th, i) => th.setAttribute("aria-sort", i === col ? (desc ? "descending" : "ascending") : "none"));
    if (col < 0) return;
    const body = table.tBodies[0];
    const rows = [...body.rows];
    const key = (r) => (r.cells[col] ? r.cells[col].textContent.trim() : "");
    const numeric = rows.every((r) => key(r) === "" || key(r) === "-" || !Number.isNaN(Number(key(r))));
    const cmp = (a, b) => {
      const x = key(a), y = key(b);
      const c = numeric ? (Number(x === "-" ? -Infinity : x) - Number(y === "-" ? -Infinity : y)) : x.localeCompare(y, undefined, { numeric: true });
      return desc ? -c : c;
    };
    body.append(...rows.map((r, i) => [r, i]).sort((a, b) => cmp(a[0], b[0]) || a[1] - b[1]).map(([r]) => r));
  };
  heads.forEach((th) => {
    th.classList.add("sortable");
    th.tabIndex = 0;
    const click = () => {
      const current = here().params.get(param) || "";
      const spec = current === name(th) ? `-${name(th)}` : name(th);
      remember({ [param]: spec });
      apply(spec);
    };
    th.addEventListener("click", click);
    th.addEventListener("keydown", (ev) => { if (ev.key === "Enter") click(); });
  });
  const spec = here().params.get(param);
  if (spec) apply(spec);
  table.resort = () => { const s = here().params.get(param); if (s) apply(s); };
  return table;
}

// ----------------------------------------------------------------------------------- export

function download(name, blob) {
  const a = document.createElement("a");
  a.setAttribute("href", URL.createObjectURL(blob)); // our own bytes, not a model's link
  a.setAttribute("download", name);
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

function jsonBlob(value) { return new Blob([JSON.stringify(value, null, 2)], { type: "application/json" }); }

// A table as CSV (RFC 4180 quoting), as shown: its header and its rows in their current order.
function tableCsv(table) {
  const cell = (c) => { const s = c.textContent.trim(); return /[",\n\r]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s; };
  const lines = [...table.rows].map((r) => [...r.cells].map(cell).join(","));
  return new Blob([lines.join("\r\n") + "\r\n"], { type: "text/csv" });
}

// An SVG as a standalone file: the page's colours written into it (the page's stylesheet does
// not travel with the file).
function svgText(node) {
  const copy = node.cloneNode(true);
  const style = getComputedStyle(document.documentElement);
  const fg = style.getPropertyValue("--fg").trim() || "#1d232b";
  const bg = style.getPropertyValue("--card").trim() || "#fff";
  copy.setAttribute("xmlns", SVG_NS);
  copy.insertBefore(svg("style", {}, `text { font: 11px sans-serif; fill: ${fg}; }`), copy.firstChild);
  copy.insertBefore(svg("rect", { width: "100%", height: "100%", fill: bg }), copy.querySelector("style").nextSibling);
  return new XMLSerializer().serializeToString(copy);
}

function svgBlob(node) { return new Blob([svgText(node)], { type: "image/svg+xml" }); }

// PNG through a canvas; the SVG is loaded as a data: URL (the only image source the CSP allows
// besides this origin).
function pngBlob(node) {
  return new Promise((resolve, reject) => {
    const img = new Image();
    const w = Number(node.getAttribute("width")) || node.clientWidth, h = Number(node.getAttribute("height")) || node.clientHeight;
    img.onload = () => {
      const canvas = document.createElement("canvas");
      canvas.width = w * 2; canvas.height = h * 2;
      const ctx = canvas.getContext("2d");
      ctx.scale(2, 2);
      ctx.drawImage(img, 0, 0, w, h);
      canvas.toBlob((b) => (b ? resolve(b) : reject(new Error("the PNG could not be made"))), "image/png");
    };
    img.onerror = () => reject(new Error("the SVG could not be drawn"));
    img.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svgText(node))}`;
  });
}

// A small row of export buttons; each item is [label, () => [filename, Blob or Promise<Blob>]].
function exportBar(items) {
  return el("span", { class: "export" }, "export ", items.map(([label, make]) => el("button", { type: "button", class: "small", "data-export": label,
    onclick: async () => {
      try { const [name, blob] = make(); download(name, await blob); } catch (e) { notice(`export failed: ${e.message}`); }
    } }, label)));
}

function safeName(s) { return String(s).replace(/[^A-Za-z0-9._-]+/g, "_").slice(0, 80) || "fleet"; }
