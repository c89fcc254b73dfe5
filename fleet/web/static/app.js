// The deliberation list and one deliberation's page, and the router (this script loads last).
"use strict";

// ---------------------------------------------------------------------------- list page

const FILTERS = ["q", "status", "role", "plan", "story", "after", "before"];
const pageTokens = []; // the tokens of the newer pages, for "← newer" (the URL holds the current one)

async function listPage() {
  const { params } = here();
  const f = Object.fromEntries(FILTERS.map((k) => [k, params.get(k) || ""]));
  const pageToken = params.get("page") || "";
  if (!pageToken) pageTokens.length = 0;
  const inputs = {
    q: el("input", { name: "q", type: "search", placeholder: "words in the task or its ids", value: f.q }),
    status: el("select", { name: "status" }, el("option", { value: "" }, "any status"),
      STATUSES.map((s) => el("option", { value: s, selected: f.status === s }, s))),
    role: el("input", { name: "role", placeholder: "role", value: f.role }),
    plan: el("input", { name: "plan", placeholder: "plan id", value: f.plan }),
    story: el("input", { name: "story", placeholder: "story id", value: f.story }),
    after: el("input", { name: "after", type: "datetime-local", value: f.after }),
    before: el("input", { name: "before", type: "datetime-local", value: f.before }),
  };
  const form = el("form", { class: "filters", id: "filters", onsubmit: (ev) => {
    ev.preventDefault();
    go(hashFor("", { ...Object.fromEntries(Object.entries(inputs).map(([k, i]) => [k, i.value])), sort: params.get("sort") }));
  } }, Object.entries(inputs).map(([k, i]) => el("label", {}, k === "q" ? "search" : k, i)), el("button", { type: "submit" }, "Filter"));
  const counts = el("div", { class: "counts", id: "counts" });
  const tbody = el("tbody", { id: "rows" });
  const more = el("div", { class: "row" });
  const table = el("table", { id: "deliberations", "data-nav": "" }, el("thead", {}, el("tr", {},
    ["task", "role", "status", "agents", "rounds", "created", "winner", "plan", "task text"].map((h) => el("th", {}, h)))), tbody);
  const searching = f.q ? `search “${f.q}”` : "";
  title(searching || "Deliberations");
  document.getElementById("search").value = f.q;
  render(el("h1", {}, "Deliberations", searching ? el("span", { class: "muted" }, ` · ${searching}`) : null,
    exportBar([["CSV", () => ["deliberations.csv", tableCsv(table)]], ["JSON", () => ["deliberations.json", jsonBlob(shown)]]])),
  form, counts, table, more);
  const query = new URLSearchParams({ ...f, page_size: "50", page_token: pageToken });
  for (const [k, v] of [...query.entries()]) if (!v) query.delete(k);
  // Live first, then the page: what lands while the page is read waits in `early` and is applied
  // once the rows are drawn, so nothing falls between the page and the stream.
  let onLive = null;
  const early = [];
  await new Promise((opened) => stream("/api/stream", (ev) => (onLive ? onLive(ev) : early.push(ev)), pageAbort.signal, opened));
  let page, shown = [];
  try { page = await api(`/api/deliberations?${query}`); } catch (e) { return render(el("p", { class: "error" }, e.message)); }
  shown = page.items;
  showCounts(counts, page.counts);
  tbody.replaceChildren(...page.items.map(listRow));
  sortable(table, "sort");
  window.fleetMarks.listRendered = performance.now();
  if (f.q) more.append(el("p", { class: "muted", id: "search-note" }, page.more ? `the newest ${page.items.length} matches; narrow the search to see others` : `${page.items.length} match(es)`));
  if (pageToken) more.append(el("button", { onclick: () => go(hashFor("", { ...f, sort: params.get("sort"), page: pageTokens.pop() || "" })) }, "← newer"));
  if (page.next_token) more.append(el("button", { onclick: () => { pageTokens.push(pageToken); go(hashFor("", { ...f, sort: params.get("sort"), page: page.next_token })); } }, "older →"));
  const refreshCounts = debounce(async () => {
    try { showCounts(counts, (await api(`/api/deliberations?page_size=1`)).counts); } catch (e) { /* shown next time */ }
  }, 500);
  const filtered = Object.values(f).some(Boolean) || pageToken;
  onLive = (ev) => {
    const known = tbody.querySelector(`tr[data-id="${CSS.escape(ev.deliberation_id)}"]`);
    if (ev.type === "Requested" && !filtered && !known) {
      const d = ev.data;
      tbody.prepend(listRow({ deliberation_id: ev.deliberation_id, task_id: d.task_id, role: d.role,
        status: "PENDING", num_agents: d.num_agents, rounds: d.rounds, created_at: ev.at, winner: "",
        plan_id: d.plan_id, task: d.task }));
      table.resort();
    }
    const row = tbody.querySelector(`tr[data-id="${CSS.escape(ev.deliberation_id)}"]`);
    if (row) {
      const s = { Started: "IN_PROGRESS", Completed: "COMPLETED", Failed: "FAILED", TimedOut: "TIMEOUT", Cancelled: "CANCELLED" }[ev.type];
      if (s) row.querySelector(".status").replaceWith(statusEl(s));
      if (ev.type === "Completed") row.querySelector(".winner").textContent = ev.data.winner;
    }
    if (["Requested", "Started", "Completed", "Failed", "TimedOut", "Cancelled"].includes(ev.type)) refreshCounts();
  };
  early.splice(0).forEach(onLive);
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
  let version = Number(here().params.get("v")) || 0; // 0: follow the latest
  let d;
  // One Cancel button for the page's life: every live event redraws the page, and a button made
  // anew each time was never still long enough to be clicked while events kept coming.
  const cancel = el("button", { class: "danger", id: "cancel", onclick: async () => {
    try { await api(`/api/deliberations/${encodeURIComponent(taskId)}/cancel`, { method: "POST", body: { reason: "cancelled from the web console" } }); route(); }
    catch (e) { notice(e.message); }
  } }, "Cancel");
  const load = async () => {
    try {
      const url = `/api/deliberations/${encodeURIComponent(taskId)}${version ? `?to_version=${version}` : ""}`;
      const asked = here().params.get("view") === "markdown" ? markdownReady() : null; // fetched alongside
      d = await api(url);
      if (proposalView(d.role) === "markdown") await (asked || markdownReady());
    } catch (e) { title(taskId); return render(el("p", { class: "error" }, e.message)); }
    drawDeliberation(d, cancel, (v) => { version = v >= d.latest_version ? 0 : v; remember({ v: version || "" }); load(); });
    window.fleetMarks.detailRendered = performance.now();
  };
  await load();
  // Events recorded once the stream is open are the live ones; those recorded before it come
  // with the stream's stored part, so their wait is the page's loading, not live latency.
  let liveSince = Infinity;
  if (d && !TERMINAL.has(d.status)) {
    const refresh = debounce(() => { if (!version) load(); }, 60);
    stream(`/api/deliberations/${encodeURIComponent(taskId)}/stream`, (ev) => {
      // How long after the event was recorded the page had it (the live-latency figure).
      const at = Date.parse(ev.at);
      if (at >= liveSince) (window.fleetMarks.lags ||= []).push(Date.now() - at);
      const tail = document.getElementById("events-body");
      if (tail && !version && !tail.querySelector(`[data-version="${ev.version}"]`)) tail.append(eventRow(ev));
      refresh();
    }, pageAbort.signal, () => { if (liveSince === Infinity) window.fleetMarks.liveSince = liveSince = Date.now(); });
  }
}

function drawDeliberation(d, cancel, onVersion) {
  title(d.role, d.task_id, d.version < d.latest_version ? `v${d.version}` : "");
  const slider = el("input", { type: "range", id: "version", min: 1, max: d.latest_version, value: d.version,
    oninput: () => { label.textContent = `version ${slider.value} of ${d.latest_version}`; },
    onchange: () => onVersion(Number(slider.value)) });
  const label = el("span", { id: "version-label" }, `version ${d.version} of ${d.latest_version}`);
  const actions = TERMINAL.has(d.status) ? [] : [cancel];
  const scores = sortable(scoreTable(d), "scores");
  const events = el("table", { id: "events" }, el("thead", {}, el("tr", {}, ["v", "at", "event", "summary"].map((h) => el("th", {}, h)))),
    el("tbody", { id: "events-body" }, d.events.map(eventRow)));
  sortable(events, "events");
  const timeline = timelineSvg(d.calls);
  const graph = critiqueSvg(d.agents, d.edges);
  const name = safeName(`${d.task_id}-v${d.version}`);
  const svgExports = (node, what) => node instanceof SVGElement ? exportBar([["SVG", () => [`${name}-${what}.svg`, svgBlob(node)]], ["PNG", () => [`${name}-${what}.png`, pngBlob(node)]]]) : null;
  const callBox = el("div", { id: "call-box" });
  render(
    el("h1", {}, "Deliberation ", el("span", { id: "task-id" }, d.task_id), " ", el("span", { id: "status" }, statusEl(d.status)), " ", ...actions,
      exportBar([["JSON", () => [`${name}.json`, jsonBlob(d)]]])),
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
    el("h2", {}, "Proposals ", viewSwitch(d.role)),
    el("div", { class: "grid", id: "proposals" }, byRank(d.final).map((p) => proposalCard(p, d.winner, d.role))),
    el("h2", {}, "Score parts", exportBar([["CSV", () => [`${name}-scores.csv`, tableCsv(scores)]]])), scores,
    el("h2", {}, "Agent calls per round", svgExports(timeline, "calls")),
    el("p", { class: "muted" }, "Click a bar to see the call: the prompt it sent, the answer, tokens, latency and retries."),
    timeline, callBox,
    el("h2", {}, "Critique graph", svgExports(graph, "critiques")), critiqueLegend(), graph,
    el("h2", { text: "Revisions" }), revisionList(d.proposals),
    el("h2", {}, "Events", exportBar([["CSV", () => [`${name}-events.csv`, tableCsv(events)]]])), events,
  );
  timeline.querySelectorAll?.("rect.call").forEach((r) => r.addEventListener("click", () => {
    remember({ call: r.dataset.call });
    showCall(d, Number(r.dataset.call));
  }));
  const selected = here().params.get("call");
  if (selected !== null) showCall(d, Number(selected));
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

function viewSwitch(role) {
  const md = proposalView(role) === "markdown";
  return el("span", { class: "view-switch muted" }, " shown as ", el("button", { type: "button", class: "link", id: "view-switch",
    onclick: () => { remember({ view: md ? "text" : "markdown" }); route(); } }, md ? "markdown (show text)" : "text (show markdown)"));
}

// How proposals show: ?view= when given; else code roles' (DEV) as highlighted text, the prose
// roles' as markdown.
function proposalView(role) {
  const asked = here().params.get("view");
  if (asked === "text" || asked === "markdown") return asked;
  return role === "DEV" ? "text" : "markdown";
}

function proposalCard(p, winner, role) {
  return el("div", { class: `card proposal${p.agent_id === winner ? " winner" : ""}`, "data-agent": p.agent_id },
    el("div", { class: "row" }, el("strong", {}, p.agent_id), el("span", { class: "rank" }, `rank ${p.rank ?? "-"}`),
      el("span", { class: "score" }, `score ${fmtScore(p.score)}`), el("span", { class: "muted" }, `round ${p.round + 1} · ${p.tokens} tokens · ${p.latency_ms} ms · ${p.model}`)),
    proposalView(role) === "markdown" ? markdown(p.content, "content md") : code(p.content, "content"),
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
    const bar = svg("rect", { x: left + (s.start - t0) * scale, y, width: Math.max(2, s.latency_ms * scale), height: rowH - 4, fill: color, rx: 2, class: "call", "data-call": i });
    bar.append(svg("title", {}, `${label}: ${s.latency_ms} ms, ${s.tokens} tokens${s.error ? `, ${s.error}` : ""}${s.thinking_retried ? ", retried without thinking" : ""}`));
    root.append(bar);
  });
  root.append(svg("text", { x: left, y: spans.length * rowH + 20 }, `${((t1 - t0) / 1000).toFixed(2)} s from first call start to last call end`));
  return root;
}

const EDGE_COLOURS = { critique: "#0f766e", rating: "#7c3aed", row: "#64748b" };

function critiqueLegend() {
  return el("div", { class: "legend", id: "critique-legend" },
    el("span", {}, el("i", { class: "critique" }), "critique (before a revision)"),
    el("span", {}, el("i", { class: "rating" }), "final rating"),
    el("span", {}, "arrow: reviewer → reviewed · width: the score (0 thin … 1 thick) · hover an agent to see only its arrows"));
}

// Agents on a circle; each review an arrow from reviewer to reviewed, bent so that A→B and B→A
// stay apart, its width the score. At 16 agents the circle grows and labels sit outside it.
function critiqueSvg(agents, edges) {
  const names = [...new Set([...agents, ...edges.flatMap((e) => [e.from, e.to])])].filter(Boolean);
  if (!names.length) return el("p", { class: "muted" }, "no agents yet");
  const big = names.length > 8;
  const W = big ? 760 : 520, H = big ? 640 : 380, cx = W / 2, cy = H / 2, r = Math.min(W, H) / 2 - (big ? 80 : 50);
  const pos = {}, angle = {};
  names.forEach((n, i) => { const a = (2 * Math.PI * i) / names.length - Math.PI / 2; angle[n] = a; pos[n] = [cx + r * Math.cos(a), cy + r * Math.sin(a)]; });
  const root = svg("svg", { width: W, height: H, id: "critique-graph", viewBox: `0 0 ${W} ${H}` });
  root.append(svg("defs", {}, Object.entries(EDGE_COLOURS).map(([kind, colour]) => svg("marker", { id: `arrow-${kind}`, viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, markerUnits: "userSpaceOnUse", orient: "auto" },
    svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: colour })))));
  const R = 13;
  for (const e of edges) {
    if (!pos[e.from] || !pos[e.to] || e.from === e.to) continue;
    const [x1, y1] = pos[e.from], [x2, y2] = pos[e.to];
    const dx = x2 - x1, dy = y2 - y1, len = Math.hypot(dx, dy) || 1, bend = Math.min(40, len * 0.15);
    const mx = (x1 + x2) / 2 - (dy / len) * bend, my = (y1 + y2) / 2 + (dx / len) * bend; // to the right of the way
    const end = (x, y, tx, ty) => { const l = Math.hypot(tx - x, ty - y) || 1; return [x + ((tx - x) / l) * (R + 2), y + ((ty - y) / l) * (R + 2)]; };
    const [sx, sy] = end(x1, y1, mx, my), [ex, ey] = end(x2, y2, mx, my);
    const kind = EDGE_COLOURS[e.kind] ? e.kind : "row";
    const w = e.score === null ? 1 : 0.8 + 3.5 * e.score;
    const path = svg("path", { d: `M ${sx} ${sy} Q ${mx} ${my} ${ex} ${ey}`, fill: "none", stroke: EDGE_COLOURS[kind], "stroke-width": w, "stroke-opacity": big ? 0.45 : 0.6,
      "marker-end": `url(#arrow-${kind})`, class: "edge", "data-from": e.from, "data-to": e.to });
    path.append(svg("title", {}, `${e.from} → ${e.to} (${e.kind}${e.round !== null && e.round !== undefined ? ` round ${e.round + 1}` : ""}): ${fmtScore(e.score)}\n${e.text}`));
    root.append(path);
  }
  for (const n of names) {
    const [x, y] = pos[n], a = angle[n];
    const g = svg("g", { class: "agent", "data-agent": n });
    g.append(svg("circle", { cx: x, cy: y, r: R, stroke: "#2454c6", class: "node" }));
    const lx = x + Math.cos(a) * (R + 6), ly = y + Math.sin(a) * (R + 6) + 4;
    g.append(svg("text", { x: lx, y: ly, "text-anchor": Math.abs(Math.cos(a)) < 0.3 ? "middle" : Math.cos(a) > 0 ? "start" : "end",
      dy: Math.abs(Math.cos(a)) < 0.3 ? (Math.sin(a) > 0 ? 8 : -4) : 0 }, n));
    g.addEventListener("mouseenter", () => root.querySelectorAll(".edge").forEach((p) => { p.style.opacity = p.dataset.from === n || p.dataset.to === n ? 1 : 0.06; }));
    g.addEventListener("mouseleave", () => root.querySelectorAll(".edge").forEach((p) => { p.style.opacity = ""; }));
    root.append(g);
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

// --------------------------------------------------------------------------------- router

function route() {
  pageAbort.abort();
  pageAbort = new AbortController();
  notice("");
  const { path } = here();
  const pages = { "": listPage, d: () => deliberationPage(path[1]), submit: submitPage, plans: () => plansPage(path[1]),
    councils: councilsPage, agents: agentsPage, projections: projectionsPage, events: eventsPage, query: queryPage };
  (pages[path[0]] || listPage)();
}

document.getElementById("search-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const q = document.getElementById("search").value.trim();
  go(hashFor("", { q }));
  document.getElementById("search").blur();
});
document.getElementById("theme").addEventListener("click", nextTheme);
document.getElementById("help-button").addEventListener("click", () => toggleHelp());
setTheme(theme());
window.addEventListener("hashchange", route);
route();
