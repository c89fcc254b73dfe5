// Fleet's web console: one script, no build step, no library.
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
  for (const c of children.flat()) {
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

// Server-sent events over fetch (EventSource cannot send the token header).
async function stream(path, onEvent, signal) {
  const headers = {};
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  const live = document.getElementById("live");
  try {
    const res = await fetch(path, { headers, signal });
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
    live.classList.remove("on");
  }
}

function debounce(fn, ms) {
  let t = null;
  return () => { clearTimeout(t); t = setTimeout(fn, ms); };
}

// ---------------------------------------------------------------------------- list page

const listState = { filters: {}, token: "", tokens: [] };

async function listPage() {
  const f = listState.filters;
  const inputs = {
    status: el("select", { name: "status" }, el("option", { value: "" }, "any status"),
      STATUSES.map((s) => el("option", { value: s, selected: f.status === s }, s))),
    role: el("input", { name: "role", placeholder: "role", value: f.role || "" }),
    plan: el("input", { name: "plan", placeholder: "plan id", value: f.plan || "" }),
    story: el("input", { name: "story", placeholder: "story id", value: f.story || "" }),
    after: el("input", { name: "after", type: "datetime-local", value: f.after || "" }),
    before: el("input", { name: "before", type: "datetime-local", value: f.before || "" }),
  };
  const form = el("form", { class: "filters", onsubmit: (ev) => {
    ev.preventDefault();
    listState.filters = Object.fromEntries(Object.entries(inputs).map(([k, i]) => [k, i.value]));
    listState.token = ""; listState.tokens = [];
    listPage();
  } }, Object.entries(inputs).map(([k, i]) => el("label", {}, k, i)), el("button", { type: "submit" }, "Filter"));
  const counts = el("div", { class: "counts", id: "counts" });
  const tbody = el("tbody", { id: "rows" });
  const more = el("div", { class: "row" });
  render(el("h1", { text: "Deliberations" }), form, counts,
    el("table", { id: "deliberations" }, el("thead", {}, el("tr", {},
      ["task", "role", "status", "agents", "rounds", "created", "winner", "plan", "task text"].map((h) => el("th", {}, h)))), tbody),
    more);
  const query = new URLSearchParams({ ...f, page_size: "50", page_token: listState.token });
  for (const [k, v] of [...query.entries()]) if (!v) query.delete(k);
  let page;
  try { page = await api(`/api/deliberations?${query}`); } catch (e) { return render(el("p", { class: "error" }, e.message)); }
  showCounts(counts, page.counts);
  tbody.replaceChildren(...page.items.map(listRow));
  window.fleetMarks.listRendered = performance.now();
  if (listState.tokens.length) more.append(el("button", { onclick: () => { listState.token = listState.tokens.pop(); listPage(); } }, "← newer"));
  if (page.next_token) more.append(el("button", { onclick: () => { listState.tokens.push(listState.token); listState.token = page.next_token; listPage(); } }, "older →"));
  const refreshCounts = debounce(async () => {
    try { showCounts(counts, (await api(`/api/deliberations?page_size=1`)).counts); } catch (e) { /* shown next time */ }
  }, 500);
  const filtered = Object.values(f).some(Boolean) || listState.token;
  stream("/api/stream", (ev) => {
    if (ev.type === "Requested" && !filtered) {
      const d = ev.data;
      tbody.prepend(listRow({ deliberation_id: ev.deliberation_id, task_id: d.task_id, role: d.role,
        status: "PENDING", num_agents: d.num_agents, rounds: d.rounds, created_at: ev.at, winner: "",
        plan_id: d.plan_id, task: d.task }));
    }
    const row = tbody.querySelector(`tr[data-id="${CSS.escape(ev.deliberation_id)}"]`);
    if (row) {
      const s = { Started: "IN_PROGRESS", Completed: "COMPLETED", Failed: "FAILED", TimedOut: "TIMEOUT", Cancelled: "CANCELLED" }[ev.type];
      if (s) row.querySelector(".status").replaceWith(statusEl(s));
      if (ev.type === "Completed") row.querySelector(".winner").textContent = ev.data.winner;
    }
    if (["Requested", "Started", "Completed", "Failed", "TimedOut", "Cancelled"].includes(ev.type)) refreshCounts();
  }, pageAbort.signal);
}

function showCounts(node, counts) {
  if (!counts) return;
  const chips = [];
  for (const [k, n] of Object.entries(counts.status)) chips.push(el("span", { class: "chip" }, statusEl(k), ` ${n}`));
  for (const [k, n] of Object.entries(counts.role)) chips.push(el("span", { class: "chip" }, `${k} ${n}`));
  node.replaceChildren(...chips);
}

function listRow(d) {
  return el("tr", { "data-id": d.deliberation_id, "data-task": d.task_id },
    el("td", {}, taskLink(d.task_id)), el("td", {}, d.role), el("td", {}, statusEl(d.status)),
    el("td", {}, d.num_agents), el("td", {}, d.rounds), el("td", {}, fmtTime(d.created_at)),
    el("td", { class: "winner" }, d.winner), el("td", {}, d.plan_id ? link(`#/plans/${encodeURIComponent(d.plan_id)}`, d.plan_id) : ""),
    el("td", { class: "task" }, d.task));
}

// ---------------------------------------------------------------------- deliberation page

async function deliberationPage(taskId) {
  let version = 0; // 0: follow the latest
  let d;
  const load = async () => {
    try {
      d = await api(`/api/deliberations/${encodeURIComponent(taskId)}${version ? `?to_version=${version}` : ""}`);
    } catch (e) { return render(el("p", { class: "error" }, e.message)); }
    drawDeliberation(d, (v) => { version = v >= d.latest_version ? 0 : v; load(); });
    window.fleetMarks.detailRendered = performance.now();
  };
  await load();
  const liveSince = Date.now(); // events recorded from now on are the live ones
  if (d && !TERMINAL.has(d.status)) {
    const refresh = debounce(() => { if (!version) load(); }, 60);
    stream(`/api/deliberations/${encodeURIComponent(taskId)}/stream`, (ev) => {
      // How long after the event was recorded the page had it (the live-latency figure).
      const at = Date.parse(ev.at);
      if (at >= liveSince) (window.fleetMarks.lags ||= []).push(Date.now() - at);
      const tail = document.getElementById("events-body");
      if (tail && !version && !tail.querySelector(`[data-version="${ev.version}"]`)) tail.append(eventRow(ev));
      refresh();
    }, pageAbort.signal);
  }
}

function drawDeliberation(d, onVersion) {
  const slider = el("input", { type: "range", id: "version", min: 1, max: d.latest_version, value: d.version,
    oninput: () => { label.textContent = `version ${slider.value} of ${d.latest_version}`; },
    onchange: () => onVersion(Number(slider.value)) });
  const label = el("span", { id: "version-label" }, `version ${d.version} of ${d.latest_version}`);
  const actions = [];
  if (!TERMINAL.has(d.status)) {
    actions.push(el("button", { class: "danger", id: "cancel", onclick: async () => {
      try { await api(`/api/deliberations/${encodeURIComponent(d.task_id)}/cancel`, { method: "POST", body: { reason: "cancelled from the web console" } }); route(); }
      catch (e) { notice(e.message); }
    } }, "Cancel"));
  }
  render(
    el("h1", {}, "Deliberation ", el("span", { id: "task-id" }, d.task_id), " ", el("span", { id: "status" }, statusEl(d.status)), " ", ...actions),
    el("dl", { class: "kv" },
      el("dt", {}, "role"), el("dd", {}, d.role),
      el("dt", {}, "agents × rounds"), el("dd", {}, `${d.num_agents} × ${d.rounds}`),
      el("dt", {}, "winner"), el("dd", { id: "winner" }, d.winner || "-"),
      el("dt", {}, "ranking"), el("dd", { id: "ranking" }, d.ranking.join(", ") || "-"),
      d.plan_id ? [el("dt", {}, "plan / story"), el("dd", {}, link(`#/plans/${encodeURIComponent(d.plan_id)}`, d.plan_id), ` / ${d.story_id}`)] : null,
      d.reason ? [el("dt", {}, "reason"), el("dd", {}, d.reason)] : null,
      el("dt", {}, "task"), el("dd", {}, el("pre", { class: "plain" }, d.task))),
    el("div", { class: "slider" }, el("span", {}, "replay"), slider, label),
    d.architect ? architectBox(d.architect) : null,
    el("h2", { text: "Proposals" }),
    el("div", { class: "grid", id: "proposals" }, byRank(d.final).map((p) => proposalCard(p, d.winner))),
    el("h2", { text: "Score parts" }), scoreTable(d),
    el("h2", { text: "Agent calls per round" }), timelineSvg(d.calls),
    el("h2", { text: "Critique graph" }), critiqueSvg(d.agents, d.edges),
    el("h2", { text: "Revisions" }), revisionList(d.proposals),
    el("h2", { text: "Events" }),
    el("table", {}, el("thead", {}, el("tr", {}, ["v", "at", "event", "summary"].map((h) => el("th", {}, h)))),
      el("tbody", { id: "events-body" }, d.events.map(eventRow))),
  );
}

function byRank(final) {
  // The winner first, then the ranking; unranked (still running) by agent id, numbers in order.
  const key = (p) => [p.rank ?? 1e9, p.agent_id.length, p.agent_id];
  return [...final].sort((a, b) => { const x = key(a), y = key(b); return x[0] - y[0] || x[1] - y[1] || (x[2] < y[2] ? -1 : 1); });
}

function architectBox(a) {
  const rationale = a.rationale || a.reason || a.explanation || "";
  return el("div", { class: "rationale", id: "architect" }, el("strong", {}, `Architect chose ${a.winner || a.winner_id || "?"}`),
    rationale ? el("div", {}, rationale) : null);
}

function proposalCard(p, winner) {
  return el("div", { class: `card proposal${p.agent_id === winner ? " winner" : ""}`, "data-agent": p.agent_id },
    el("div", { class: "row" }, el("strong", {}, p.agent_id), el("span", { class: "rank" }, `rank ${p.rank ?? "-"}`),
      el("span", { class: "score" }, `score ${fmtScore(p.score)}`), el("span", { class: "muted" }, `round ${p.round + 1} · ${p.tokens} tokens · ${p.latency_ms} ms · ${p.model}`)),
    code(p.content, "content"),
    p.checks.map(checkBlock));
}

function checkRan(c) {
  // A check that could not apply, or a dry run that executed nothing (no sandbox), did not run:
  // it is shown as "–", never as passed (events stored before this rule said passed for them).
  const d = c.details || {};
  return d.applicable !== "false" && !String(d.executed || "").startsWith("not run");
}

function checkBlock(c) {
  const details = Object.entries(c.details || {});
  const ran = checkRan(c);
  const mark = !ran ? ["skip", "– "] : c.passed ? ["pass", "✓ "] : ["fail", "✗ "];
  const scored = ran || (c.details || {}).applicable !== "false";  // a compile-only dry run still ranks
  return el("div", { class: "check", "data-check": c.check_type, "data-ran": String(ran) },
    el("span", { class: mark[0] }, mark[1]), el("strong", {}, c.check_type),
    ` score ${scored ? fmtScore(c.score) : "-"} `, el("span", { class: "muted" }, c.message),
    details.map(([k, v]) => el("details", {}, el("summary", {}, k), el("pre", { class: "plain" }, v))));
}

function scoreTable(d) {
  const types = [...new Set(d.final.flatMap((p) => p.checks.map((c) => c.check_type)))];
  const ratings = {};
  for (const e of d.edges) if (e.kind === "rating" && e.score !== null) (ratings[e.to] ||= []).push(e.score);
  return el("table", { id: "scores" }, el("thead", {}, el("tr", {}, el("th", {}, "agent"), types.map((t) => el("th", {}, t)), el("th", {}, "peer rating"), el("th", {}, "score"), el("th", {}, "rank"))),
    el("tbody", {}, d.final.map((p) => el("tr", {}, el("td", {}, p.agent_id),
      types.map((t) => { const c = p.checks.find((x) => x.check_type === t); return el("td", {}, c ? fmtScore(c.score) : "-"); }),
      el("td", {}, ratings[p.agent_id] ? fmtScore(ratings[p.agent_id].reduce((a, b) => a + b, 0) / ratings[p.agent_id].length) : "-"),
      el("td", {}, fmtScore(p.score)), el("td", {}, p.rank ?? "-")))));
}

function timelineSvg(calls) {
  if (!calls.length) return el("p", { class: "muted" }, "no agent calls yet");
  const spans = calls.map((c) => { const end = Date.parse(c.end); return { ...c, end, start: end - c.latency_ms }; });
  const t0 = Math.min(...spans.map((s) => s.start));
  const t1 = Math.max(...spans.map((s) => s.end));
  const W = 900, left = 230, rowH = 16, scale = (W - left - 10) / Math.max(1, t1 - t0);
  const root = svg("svg", { width: W, height: spans.length * rowH + 24, id: "timeline", viewBox: `0 0 ${W} ${spans.length * rowH + 24}` });
  spans.forEach((s, i) => {
    const y = 4 + i * rowH;
    const color = s.kind === "failure" || s.kind === "timeout" ? "#b3261e" : s.kind === "critique" || s.kind === "rating" ? "#7c3aed" : s.kind === "revision" ? "#0f766e" : "#2454c6";
    const label = `${s.round >= 0 ? `r${s.round + 1} ` : ""}${s.agent_id} ${s.kind}`;
    root.append(svg("text", { x: 4, y: y + 11 }, label));
    const bar = svg("rect", { x: left + (s.start - t0) * scale, y, width: Math.max(2, s.latency_ms * scale), height: rowH - 4, fill: color, rx: 2 });
    bar.append(svg("title", {}, `${label}: ${s.latency_ms} ms, ${s.tokens} tokens${s.error ? `, ${s.error}` : ""}${s.thinking_retried ? ", retried without thinking" : ""}`));
    root.append(bar);
  });
  root.append(svg("text", { x: left, y: spans.length * rowH + 20 }, `${((t1 - t0) / 1000).toFixed(2)} s from first call start to last call end`));
  return root;
}

function critiqueSvg(agents, edges) {
  const names = [...new Set([...agents, ...edges.flatMap((e) => [e.from, e.to])])].filter(Boolean);
  if (!names.length) return el("p", { class: "muted" }, "no agents yet");
  const W = names.length > 8 ? 680 : 520, H = names.length > 8 ? 520 : 380, cx = W / 2, cy = H / 2, r = Math.min(W, H) / 2 - 50;
  const pos = {};
  names.forEach((n, i) => { const a = (2 * Math.PI * i) / names.length - Math.PI / 2; pos[n] = [cx + r * Math.cos(a), cy + r * Math.sin(a)]; });
  const root = svg("svg", { width: W, height: H, id: "critique-graph", viewBox: `0 0 ${W} ${H}` });
  root.append(svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 28, refY: 5, markerWidth: 8, markerHeight: 8, markerUnits: "userSpaceOnUse", orient: "auto" },
    svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#7c3aed" }))));
  for (const e of edges) {
    if (!pos[e.from] || !pos[e.to]) continue;
    const [x1, y1] = pos[e.from], [x2, y2] = pos[e.to];
    const w = e.score === null ? 1 : 1 + 4 * e.score;
    const line = svg("line", { x1, y1, x2, y2, stroke: e.kind === "rating" ? "#7c3aed" : "#0f766e", "stroke-width": w, "stroke-opacity": 0.6, "marker-end": "url(#arrow)", class: "edge" });
    line.append(svg("title", {}, `${e.from} → ${e.to} (${e.kind}${e.round !== null && e.round !== undefined ? ` round ${e.round + 1}` : ""}): ${fmtScore(e.score)}\n${e.text}`));
    root.append(line);
  }
  for (const n of names) {
    const [x, y] = pos[n];
    root.append(svg("circle", { cx: x, cy: y, r: 14, fill: "#dbe7ff", stroke: "#2454c6", class: "node" }));
    root.append(svg("text", { x: x - 20, y: y + 28 }, n));
  }
  return root;
}

function revisionList(proposals) {
  const revised = proposals.filter((p) => p.diff);
  if (!revised.length) return el("p", { class: "muted" }, "no revisions");
  return el("div", { class: "grid", id: "revisions" }, revised.map((p) => {
    const pre = el("pre", { class: "diff" });
    for (const line of p.diff) {
      const cls = line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : null;
      pre.append(el("span", { class: cls }, line), "\n");
    }
    return el("div", { class: "card" }, el("strong", {}, `${p.agent_id} round ${p.round + 1}`),
      p.addressed.length ? el("span", { class: "muted" }, ` addressed ${p.addressed.join(", ")}`) : null, pre);
  }));
}

function eventRow(ev) {
  return el("tr", { "data-version": ev.version }, el("td", {}, ev.version), el("td", {}, fmtTime(ev.at)), el("td", {}, ev.type), el("td", {}, ev.summary));
}

// ------------------------------------------------------------------------- other pages

async function submitPage() {
  const f = {
    task: el("textarea", { name: "task", required: true, placeholder: "what to deliberate" }),
    role: el("input", { name: "role", value: "DEV" }),
    num_agents: el("input", { name: "num_agents", type: "number", value: 3, min: 1, max: 16 }),
    rounds: el("input", { name: "rounds", type: "number", value: 1, min: 1, max: 5 }),
    task_id: el("input", { name: "task_id", placeholder: "optional task id" }),
    acceptance_tests: el("textarea", { name: "acceptance_tests", placeholder: "optional: acceptance tests the checks run against each proposal" }),
  };
  const out = el("p", { id: "submit-result" });
  render(el("h1", { text: "Submit a deliberation" }), el("form", { class: "box", id: "submit", onsubmit: async (ev) => {
    ev.preventDefault();
    const body = Object.fromEntries(Object.entries(f).map(([k, i]) => [k, i.value]));
    body.num_agents = Number(body.num_agents); body.rounds = Number(body.rounds);
    try { const r = await api("/api/deliberations", { method: "POST", body }); location.hash = `#/d/${encodeURIComponent(r.task_id)}`; }
    catch (e) { out.className = "error"; out.textContent = e.message; }
  } }, Object.entries(f).map(([k, i]) => el("label", {}, k.replace("_", " "), i)), el("button", { type: "submit" }, "Submit")), out);
}

async function plansPage(planId) {
  const out = el("p", { id: "approve-result" });
  const f = { plan_id: el("input", { name: "plan_id", value: planId || "" }), story_id: el("input", { name: "story_id" }),
    roles: el("input", { name: "roles", placeholder: "roles, comma-separated (empty: the default set)" }), description: el("textarea", { name: "description" }) };
  const form = el("form", { class: "box", onsubmit: async (ev) => {
    ev.preventDefault();
    const body = { plan_id: f.plan_id.value, story_id: f.story_id.value, description: f.description.value, roles: f.roles.value.split(",").map((s) => s.trim()).filter(Boolean) };
    try { const r = await api("/api/plans", { method: "POST", body }); out.className = ""; out.textContent = `approved: ${r.task_ids.join(", ")}`; }
    catch (e) { out.className = "error"; out.textContent = e.message; }
  } }, Object.entries(f).map(([k, i]) => el("label", {}, k, i)), el("button", { type: "submit" }, "Approve plan"));
  let data;
  try { data = await api("/api/plans"); } catch (e) { return render(el("p", { class: "error" }, e.message)); }
  const plans = planId ? data.plans.filter((p) => p.plan_id === planId) : data.plans;
  render(el("h1", { text: planId ? `Plan ${planId}` : "Plans and stories" }),
    plans.length ? el("table", { id: "plans" }, el("thead", {}, el("tr", {}, ["plan", "story", "deliberations per role"].map((h) => el("th", {}, h)))),
      el("tbody", {}, plans.map((p) => el("tr", {}, el("td", {}, link(`#/plans/${encodeURIComponent(p.plan_id)}`, p.plan_id)), el("td", {}, p.story_id),
        el("td", {}, Object.entries(p.roles).map(([role, ds]) => el("div", {}, el("strong", {}, `${role}: `),
          ds.map((x) => el("span", {}, taskLink(x.task_id), " ", statusEl(x.status), x.winner ? ` won by ${x.winner}` : "", "  ")))))))))
      : el("p", { class: "muted" }, "no plans yet"),
    el("h2", { text: "Approve a plan" }), form, out);
}

async function councilsPage() {
  let data;
  try { data = await api("/api/councils"); } catch (e) { return render(el("p", { class: "error" }, e.message)); }
  if (!data.councils.length) return render(el("h1", { text: "Councils" }), el("p", { class: "muted", id: "no-councils" }, "no councils"));
  render(el("h1", { text: "Councils" }), el("div", { class: "grid" }, data.councils.map((c) => el("div", { class: "card" },
    el("strong", {}, `${c.role} council`), el("span", { class: "muted" }, ` v${c.version} · ${c.deliberation_rounds} round(s) · peer review ${c.enable_peer_review ? "on" : "off"}`),
    el("table", {}, el("tbody", {}, (c.agents || []).map((a) => el("tr", {}, el("td", {}, a.agent_id), el("td", {}, a.model || c.model || "default model"), el("td", {}, a.endpoint || ""))))),
    el("details", { class: "council-history", "data-role": c.role }, el("summary", {}, "history"), el("div", { class: "history-body" }, "…"))))));
  document.querySelectorAll("details.council-history").forEach((d) => d.addEventListener("toggle", async () => {
    if (!d.open || d.dataset.loaded) return;
    d.dataset.loaded = "1";
    const body = d.querySelector(".history-body");
    try {
      const h = await api(`/api/councils/${encodeURIComponent(d.dataset.role)}/history`);
      body.replaceChildren(el("table", {}, el("tbody", {}, h.changes.map((x) => el("tr", {},
        el("td", {}, `v${x.version}`), el("td", {}, x.kind), el("td", {}, x.agent_id || ""), el("td", { class: "muted" }, x.at))))));
    } catch (e) { body.replaceChildren(el("p", { class: "error" }, e.message)); }
  }));
}

async function projectionsPage() {
  let s;
  try { s = await api("/api/status"); } catch (e) { return render(el("p", { class: "error" }, e.message)); }
  const out = el("div", { id: "verify-result" });
  render(el("h1", { text: "Projections" }), el("p", {}, `stream head ${s.stream_head || 0} · ${s.deliberations_in_flight || 0} deliberation(s) in flight · Fleet ${s.version}`),
    el("table", { id: "projections" }, el("thead", {}, el("tr", {}, ["projection", "position", "lag (events)", "lag (s)"].map((h) => el("th", {}, h)))),
      el("tbody", {}, (s.projections || []).map((p) => el("tr", {}, el("td", {}, p.name), el("td", {}, p.position || 0), el("td", {}, p.lag_events || 0), el("td", {}, (p.lag_seconds || 0).toFixed(2)))))),
    el("p", {}, el("button", { onclick: async () => {
      out.textContent = "verifying…";
      try { const v = await api("/api/projections/verify", { method: "POST", body: {} });
        out.replaceChildren(el("p", {}, `${v.deliberations || 0} deliberation(s) compared at head ${v.stream_head || 0}: ${(v.differences || []).length} difference(s), ${v.cache_misses || 0} cache miss(es)`),
          ...(v.differences || []).map((x) => el("pre", { class: "plain" }, JSON.stringify(x, null, 1))));
      } catch (e) { out.className = "error"; out.textContent = e.message; }
    } }, "Verify")), out,
    el("h2", { text: "Sandbox" }), sandboxEl(s.sandbox),
    el("h2", { text: "Endpoints" }), el("dl", { class: "kv" }, Object.entries(s.endpoints || {}).map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])));
}

// Where this node's agent checks run model code, as those processes found it at start.
function sandboxEl(b) {
  if (!b) return el("p", { id: "sandbox", class: "muted" }, "not known here: this node runs no agents, or its checks run in `fleet worker` processes (each logs its sandbox at start)");
  if (b.available) return el("p", { id: "sandbox" }, `bubblewrap (FLEET_SANDBOX=${b.mode}): model code runs behind walls`);
  return el("p", { id: "sandbox", class: "error" }, `unavailable (FLEET_SANDBOX=${b.mode}): ${b.reason}. Model code does not run; DEV checks say "not run".`);
}

async function eventsPage() {
  const body = el("tbody", { id: "tail" });
  render(el("h1", { text: "Event stream" }), el("p", { class: "muted" }, "Every event this node routes, newest first (the last 200)."),
    el("table", {}, el("thead", {}, el("tr", {}, ["at", "deliberation", "v", "event", "summary"].map((h) => el("th", {}, h)))), body));
  stream("/api/stream", (ev) => {
    body.prepend(el("tr", {}, el("td", {}, fmtTime(ev.at)), el("td", {}, ev.data.task_id ? taskLink(ev.data.task_id) : ev.deliberation_id.slice(0, 8)),
      el("td", {}, ev.version), el("td", {}, ev.type), el("td", {}, ev.summary)));
    while (body.children.length > 200) body.lastChild.remove();
  }, pageAbort.signal);
}

async function queryPage() {
  const text = el("textarea", { name: "cypher", id: "cypher" }, "MATCH (d:Deliberation)-[w:WON_BY]->(a) RETURN d.task_id AS task, a.id AS agent LIMIT 50");
  const limit = el("input", { name: "limit", type: "number", value: 200 });
  const out = el("div", { id: "query-result" });
  render(el("h1", { text: "Cypher (read-only)" }),
    el("p", { class: "muted" }, "Read-only, with the row and time limits of QueryHistory. The graph view draws the first two columns of each row as nodes joined by an edge."),
    el("form", { class: "box", onsubmit: async (ev) => {
      ev.preventDefault();
      try {
        const r = await api("/api/query", { method: "POST", body: { cypher: text.value, limit: Number(limit.value) } });
        const rows = (r.rows_json || []).map((j) => JSON.parse(j));
        const cols = r.columns || [];
        out.replaceChildren(el("p", {}, `${rows.length} row(s)${r.truncated ? " (truncated)" : ""}`),
          el("table", { id: "result-table" }, el("thead", {}, el("tr", {}, cols.map((c) => el("th", {}, c)))),
            el("tbody", {}, rows.map((row) => el("tr", {}, cols.map((c) => el("td", {}, typeof row[c] === "object" ? JSON.stringify(row[c]) : String(row[c]))))))),
          cols.length >= 2 ? resultGraph(rows, cols) : null);
      } catch (e) { out.replaceChildren(el("p", { class: "error" }, e.message)); }
    } }, text, el("label", {}, "row limit", limit), el("button", { type: "submit" }, "Run")), out);
}

function resultGraph(rows, cols) {
  const edges = rows.map((r) => ({ from: String(JSON.stringify(r[cols[0]])), to: String(JSON.stringify(r[cols[1]])), kind: "row", score: null, text: "" }));
  const g = critiqueSvg([], edges.slice(0, 300));
  g.setAttribute("id", "result-graph");
  return g;
}

// --------------------------------------------------------------------------------- router

function route() {
  pageAbort.abort();
  pageAbort = new AbortController();
  notice("");
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const pages = { "": listPage, d: () => deliberationPage(parts[1]), submit: submitPage, plans: () => plansPage(parts[1]),
    councils: councilsPage, projections: projectionsPage, events: eventsPage, query: queryPage };
  (pages[parts[0]] || listPage)();
}

window.addEventListener("hashchange", route);
route();
