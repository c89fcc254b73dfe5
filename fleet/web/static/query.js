// The Cypher page: the query lives in the URL (a link runs it), the last queries in this
// browser's localStorage, the graph's vocabulary (labels, relationship types, properties) to
// browse, and the result as a sortable table and as a graph.
"use strict";

const HISTORY_KEY = "fleet-cypher-history";
const HISTORY_MAX = 30;
const DEFAULT_QUERY = "MATCH (d:Deliberation)-[w:WON_BY]->(a) RETURN d.task_id AS task, a.id AS agent LIMIT 50";

function cypherHistory() {
  try { const h = JSON.parse(localStorage.getItem(HISTORY_KEY) || "[]"); return Array.isArray(h) ? h.filter((x) => typeof x === "string") : []; }
  catch { return []; }
}

function rememberQuery(q) {
  localStorage.setItem(HISTORY_KEY, JSON.stringify([q, ...cypherHistory().filter((x) => x !== q)].slice(0, HISTORY_MAX)));
}

async function queryPage() {
  const { params } = here();
  const q = params.get("q") || "";
  const limitValue = params.get("limit") || "200";
  title("Cypher");
  const text = el("textarea", { name: "cypher", id: "cypher" }, q || DEFAULT_QUERY);
  const limit = el("input", { name: "limit", type: "number", value: limitValue });
  const out = el("div", { id: "query-result" });
  const vocab = el("div", { class: "vocab", id: "vocabulary" }, el("p", { class: "muted" }, "…"));
  const history = cypherHistory();
  render(el("h1", { text: "Cypher (read-only)" }),
    el("p", { class: "muted" }, "Read-only, with the row and time limits of QueryHistory. A result holding nodes and relationships is drawn as a graph; otherwise the graph joins each row's first two columns."),
    el("div", { class: "split" },
      el("div", {}, el("h2", {}, "The graph's vocabulary"), vocab,
        el("h2", {}, "History ", history.length ? el("button", { type: "button", class: "small", onclick: () => { localStorage.removeItem(HISTORY_KEY); route(); } }, "clear") : null),
        history.length ? el("ol", { class: "history", id: "cypher-history" }, history.map((h) => el("li", {},
          el("button", { type: "button", class: "link", title: "run it", onclick: () => go(hashFor("query", { q: h, limit: limit.value })) }, h))))
          : el("p", { class: "muted" }, "queries you run are kept here, in this browser")),
      el("div", {},
        el("form", { class: "box", onsubmit: (ev) => { ev.preventDefault(); go(hashFor("query", { q: text.value, limit: limit.value })); } },
          text, el("label", {}, "row limit", limit), el("button", { type: "submit" }, "Run")), out)));
  loadVocabulary(vocab, text);
  if (!q) return;
  title("Cypher", q.length > 40 ? `${q.slice(0, 39)}…` : q);
  out.replaceChildren(el("p", { class: "muted" }, "running…"));
  let r;
  try { r = await api("/api/query", { method: "POST", body: { cypher: q, limit: Number(limitValue) } }); }
  catch (e) { return out.replaceChildren(el("p", { class: "error" }, e.message)); }
  rememberQuery(q);
  const rows = (r.rows_json || []).map((j) => JSON.parse(j));
  const cols = r.columns || [];
  const cell = (v) => (v !== null && typeof v === "object" ? JSON.stringify(v) : String(v));
  const table = sortable(el("table", { id: "result-table" }, el("thead", {}, el("tr", {}, cols.map((c) => el("th", {}, c)))),
    el("tbody", {}, rows.map((row) => el("tr", {}, cols.map((c) => el("td", {}, cell(row[c]))))))), "sort");
  const data = resultGraphData(rows, cols);
  let graph = null, legend = null;
  if (data.links.length || data.nodes.length) ({ svg: graph, legend } = forceGraphSvg(data, "result-graph"));
  else if (cols.length >= 2) graph = resultGraph(rows, cols);
  out.replaceChildren(
    el("p", {}, `${rows.length} row(s)${r.truncated ? " (truncated)" : ""}`,
      exportBar([["CSV", () => ["cypher-result.csv", tableCsv(table)]], ["JSON", () => ["cypher-result.json", jsonBlob({ query: q, columns: cols, rows })]],
        ...(graph ? [["SVG", () => ["cypher-graph.svg", svgBlob(graph)]], ["PNG", () => ["cypher-graph.png", pngBlob(graph)]]] : [])])),
    table, legend, graph);
}

// Labels, relationship types and their properties as the projection declares them (one
// vocabulary for LadybugDB and Neo4j); a click writes a starting query.
async function loadVocabulary(box, text) {
  let v;
  try { v = await api("/api/graph/vocabulary"); } catch (e) { return box.replaceChildren(el("p", { class: "error" }, e.message)); }
  const put = (q) => { text.value = q; text.focus(); };
  box.replaceChildren(
    el("div", {}, el("strong", {}, "labels"), el("div", { id: "labels" }, v.labels.map((l) => el("button", { type: "button", class: "small", title: l.properties.join(", "),
      onclick: () => put(`MATCH (n:${l.name}) RETURN n LIMIT 25`) }, l.name)))),
    el("div", {}, el("strong", {}, "relationship types"), el("div", { id: "rel-types" }, v.relationships.map((t) => el("button", { type: "button", class: "small",
      title: `(:${t.from})-[:${t.name}]->(:${t.to})${t.properties.length ? ` {${t.properties.join(", ")}}` : ""}`,
      onclick: () => put(`MATCH (a:${t.from})-[r:${t.name}]->(b:${t.to}) RETURN a, r, b LIMIT 25`) }, t.name)))));
}

function resultGraph(rows, cols) {
  const edges = rows.map((r) => ({ from: String(JSON.stringify(r[cols[0]])), to: String(JSON.stringify(r[cols[1]])), kind: "row", score: null, text: "" }));
  const g = critiqueSvg([], edges.slice(0, 300));
  g.setAttribute("id", "result-graph");
  return g;
}
