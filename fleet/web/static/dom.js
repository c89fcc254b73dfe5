// Fleet's web console: plain scripts, no build step. This one holds what every page uses: the
// DOM helpers, the highlighter, API access and the live stream.
//
// Rule of the house: everything that came from a model, a user or the store is put on the page
// with textContent (el() below makes text nodes of strings) or as an SVG attribute value, never
// as HTML. The Content-Security-Policy forbids inline scripts as a second wall.
"use strict";

const TOKEN_KEY = "fleet-token";
const STATUSES = ["PENDING", "IN_PROGRESS", "COMPLETED", "FAILED", "TIMEOUT", "CANCELLED"];
const TERMINAL = new Set(["COMPLETED", "FAILED", "TIMEOUT", "CANCELLED"]);
const SVG_NS = "http://www.w3.org/2000/svg";
const main = document.getElementById("main");
let pageAbort = new AbortController(); // aborts the current page's streams when leaving it
window.fleetMarks = {}; // timings the browser tests read

// ------------------------------------------------------------------------------- DOM helpers

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "text") node.textContent = String(v);
    else if (k === "href") node.setAttribute("href", safeHref(v));
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function safeHref(v) {
  // Only the console's own routes are links; anything else (javascript:, data:) is not.
  const s = String(v);
  return s.startsWith("#/") ? s : "#/";
}

function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function statusEl(s) { return el("span", { class: `status ${s}` }, s || "-"); }
function fmtTime(iso) { return iso ? iso.replace("T", " ").slice(0, 19) : ""; }
function fmtScore(x) { return x === null || x === undefined ? "-" : Number(x).toFixed(3); }
function link(route, text) { return el("a", { href: route }, text); }
function taskLink(id) { return link(`#/d/${encodeURIComponent(id)}`, id); }
function render(...nodes) { main.replaceChildren(...nodes.flat().filter((n) => n !== null && n !== undefined)); }
function notice(text) {
  const n = document.getElementById("notice");
  n.textContent = text || ""; n.hidden = !text;
}

// A tiny, safe highlighter: a regular expression splits the text into comments, strings,
// keywords and numbers; each piece becomes a text node inside a span. No HTML is ever parsed.
const TOKENS = /(#[^\n]*|\/\/[^\n]*)|("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`[^`]*`)|\b(def|class|return|if|else|elif|for|while|import|from|function|const|let|var|async|await|try|except|finally|with|as|in|not|and|or|None|True|False|null|true|false|new|yield|lambda|raise|pass|fn|pub|struct|impl|func|package|SELECT|FROM|WHERE|MATCH|RETURN)\b|\b(\d+(?:\.\d+)?)\b/g;
const TOKEN_CLASS = [null, "c-com", "c-str", "c-kw", "c-num"];

function code(text, extraClass) {
  const pre = el("pre", { class: extraClass || null });
  const s = String(text || "");
  let last = 0;
  for (const m of s.matchAll(TOKENS)) {
    if (m.index > last) pre.append(document.createTextNode(s.slice(last, m.index)));
    const group = m.slice(1).findIndex((g) => g !== undefined) + 1;
    pre.append(el("span", { class: TOKEN_CLASS[group] }, m[0]));
    last = m.index + m[0].length;
  }
  if (last < s.length) pre.append(document.createTextNode(s.slice(last)));
  return pre;
}

// ------------------------------------------------------------------------------ API access

async function api(path, options) {
  const opts = Object.assign({ headers: {} }, options || {});
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) opts.headers.Authorization = `Bearer ${token}`;
  if (opts.body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(opts.body);
  }
  const res = await fetch(path, opts);
  if (res.status === 401) { askToken(); return new Promise(() => {}); } // the page waits for a token
  const body = res.headers.get("Content-Type")?.includes("json") ? await res.json() : {};
  if (!res.ok) throw new Error(body.error || `${res.status} ${res.statusText}`);
  return body;
}

function askToken() {
  const input = el("input", { type: "password", name: "token", placeholder: "FLEET_API_TOKEN" });
  render(
    el("h1", { text: "API token" }),
    el("p", { class: "muted" }, "This node's API needs a bearer token. It is kept for this tab only."),
    el("form", { class: "filters", onsubmit: (ev) => {
      ev.preventDefault(); sessionStorage.setItem(TOKEN_KEY, input.value); route();
    } }, input, el("button", { type: "submit" }, "Use token")),
  );
}

// Server-sent events over fetch (EventSource cannot send the token header). `onOpen` is called
// when the server has subscribed this stream (its headers arrived), and at the latest when it ends.
async function stream(path, onEvent, signal, onOpen = () => {}) {
  const headers = {};
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  const live = document.getElementById("live");
  try {
    const res = await fetch(path, { headers, signal });
    onOpen();
    if (!res.ok) return;
    live.classList.add("on");
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const chunk = buf.slice(0, i); buf = buf.slice(i + 2);
        if (chunk.startsWith("event: end")) return;
        const data = chunk.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("");
        if (data) onEvent(JSON.parse(data));
      }
    }
  } catch (e) {
    if (e.name !== "AbortError") notice(`live updates stopped: ${e.message}`);
  } finally {
    onOpen(); // a stream that never opened must not hold its page back
    live.classList.remove("on");
  }
}

function debounce(fn, ms) {
  let t = null;
  return () => { clearTimeout(t); t = setTimeout(fn, ms); };
}

// ------------------------------------------------------------------------------- URL state
// Every view keeps its state in the URL's fragment, "#/path/segments?key=value&…": filters, the
// search, sort orders, the replay version, the selected call, the Cypher query. A deep link opens
// the same view, a reload keeps it, and Back goes to the previous view.

function here() {
  const raw = location.hash.replace(/^#\/?/, "");
  const i = raw.indexOf("?");
  const path = (i < 0 ? raw : raw.slice(0, i)).split("/").map((s) => { try { return decodeURIComponent(s); } catch { return s; } });
  return { path, params: new URLSearchParams(i < 0 ? "" : raw.slice(i + 1)) };
}

function hashFor(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v !== "" && v !== null && v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return `#/${path}${s ? `?${s}` : ""}`;
}

// Opens a view (a new history entry); the same view again is drawn afresh.
function go(hash) {
  if (location.hash === hash) route(); else location.hash = hash;
}

// The view changed in place (a sort, the slider): the URL follows without drawing it again.
function remember(updates) {
  const { path, params } = here();
  for (const [k, v] of Object.entries(updates)) {
    if (v === "" || v === null || v === undefined) params.delete(k); else params.set(k, String(v));
  }
  const s = params.toString();
  history.replaceState(null, "", `#/${path.map(encodeURIComponent).join("/")}${s ? `?${s}` : ""}`);
}

function title(...parts) { document.title = [...parts.filter(Boolean), "Fleet"].join(" · "); }
