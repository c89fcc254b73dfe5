// A force-directed drawing of a Cypher result's nodes and relationships, hand-written (about
// sixty lines) rather than vendored: a result is at most a few hundred nodes (the query's row
// limit), where a plain O(n²) simulation of a fixed number of steps settles in milliseconds, and
// nothing of d3's wider API would be used. The layout is deterministic (nodes start on a circle),
// so the same result draws the same picture.
"use strict";

const LABEL_COLOURS = ["#2454c6", "#0f766e", "#7c3aed", "#b45309", "#be123c", "#15803d", "#0369a1", "#a16207", "#6d28d9", "#475569"];

// Node and relationship values in a result, as either engine returns them: LadybugDB gives a node
// as {_id, _label, …properties} and a relationship as {_src, _dst, _label, …}; Neo4j's driver
// gives a node as its properties and a relationship as [start properties, TYPE, end properties].
function resultGraphData(rows, cols) {
  const nodes = new Map(), links = [];
  const get = (v, k) => v[k] ?? v[k.toUpperCase()]; // LadybugDB spells them _ID, _LABEL, _SRC, _DST
  const obj = (v) => v && typeof v === "object" && !Array.isArray(v);
  const nodeKey = (v) => JSON.stringify(get(v, "_id") ?? v.id ?? v);
  const addNode = (v) => {
    const key = nodeKey(v);
    if (!nodes.has(key)) nodes.set(key, { key, label: get(v, "_label") || "", name: String(v.id ?? v.name ?? v.task_id ?? get(v, "_label") ?? "?"), props: v });
    return key;
  };
  const isRel = (v) => obj(v) && get(v, "_src") && get(v, "_dst");
  const isNode = (v) => obj(v) && get(v, "_label") && get(v, "_id") && !get(v, "_src");
  const isNeoRel = (v) => Array.isArray(v) && v.length === 3 && typeof v[1] === "string" && obj(v[0]) && obj(v[2]);
  for (const row of rows) {
    for (const c of cols) {
      const v = row[c];
      if (isNode(v)) addNode(v);
      else if (isRel(v)) links.push({ from: JSON.stringify(get(v, "_src")), to: JSON.stringify(get(v, "_dst")), type: get(v, "_label") || "" });
      else if (isNeoRel(v)) links.push({ from: addNode(v[0]), to: addNode(v[2]), type: v[1] });
    }
  }
  // A LadybugDB relationship names its ends by internal id; ends not returned as nodes are drawn unnamed.
  for (const l of links) for (const k of [l.from, l.to]) if (!nodes.has(k)) nodes.set(k, { key: k, label: "", name: "…", props: {} });
  return { nodes: [...nodes.values()], links };
}

function layout(nodes, links, W, H) {
  const n = nodes.length, index = new Map(nodes.map((d, i) => [d.key, i]));
  const p = nodes.map((_, i) => { const a = (2 * Math.PI * i) / Math.max(1, n); return { x: W / 2 + (W / 3) * Math.cos(a), y: H / 2 + (H / 3) * Math.sin(a), vx: 0, vy: 0 }; });
  const k = Math.sqrt((W * H) / Math.max(1, n)) * 0.6;
  for (let step = 0; step < 300; step++) {
    const cool = 1 - step / 300;
    for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) {
      const dx = p[i].x - p[j].x || 0.01, dy = p[i].y - p[j].y || 0.01, d2 = dx * dx + dy * dy, f = (k * k) / d2;
      p[i].vx += dx * f * 0.05; p[i].vy += dy * f * 0.05; p[j].vx -= dx * f * 0.05; p[j].vy -= dy * f * 0.05;
    }
    for (const l of links) {
      const a = p[index.get(l.from)], b = p[index.get(l.to)];
      if (!a || !b || a === b) continue;
      const dx = b.x - a.x, dy = b.y - a.y, d = Math.hypot(dx, dy) || 0.01, f = (d - k) / d * 0.1;
      a.vx += dx * f; a.vy += dy * f; b.vx -= dx * f; b.vy -= dy * f;
    }
    for (const q of p) {
      q.vx += (W / 2 - q.x) * 0.01; q.vy += (H / 2 - q.y) * 0.01; // gravity keeps parts together
      const v = Math.hypot(q.vx, q.vy), max = 20 * cool + 0.5;
      if (v > max) { q.vx *= max / v; q.vy *= max / v; }
      q.x = Math.max(20, Math.min(W - 20, q.x + q.vx)); q.y = Math.max(20, Math.min(H - 20, q.y + q.vy));
      q.vx *= 0.5; q.vy *= 0.5;
    }
  }
  return p;
}

function forceGraphSvg({ nodes, links }, id) {
  const W = 900, H = Math.min(700, 300 + nodes.length * 4);
  const p = layout(nodes, links, W, H), index = new Map(nodes.map((d, i) => [d.key, i]));
  const labels = [...new Set(nodes.map((d) => d.label))];
  const colour = (label) => LABEL_COLOURS[labels.indexOf(label) % LABEL_COLOURS.length];
  const root = svg("svg", { width: W, height: H, id, viewBox: `0 0 ${W} ${H}` });
  root.append(svg("defs", {}, svg("marker", { id: `${id}-arrow`, viewBox: "0 0 10 10", refX: 19, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto" },
    svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#64748b" }))));
  for (const l of links) {
    const a = p[index.get(l.from)], b = p[index.get(l.to)];
    const line = svg("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y, stroke: "#64748b", "stroke-opacity": 0.7, "marker-end": `url(#${id}-arrow)`, class: "edge", "data-type": l.type });
    line.append(svg("title", {}, l.type));
    root.append(line);
    if (links.length <= 60) root.append(svg("text", { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 - 3, "text-anchor": "middle", class: "rel-type" }, l.type));
  }
  nodes.forEach((d, i) => {
    const g = svg("g", { class: "node-group" });
    const c = svg("circle", { cx: p[i].x, cy: p[i].y, r: 9, fill: colour(d.label), class: "gnode", "data-label": d.label });
    c.append(svg("title", {}, `${d.label}\n${JSON.stringify(d.props, null, 1).slice(0, 600)}`));
    g.append(c, svg("text", { x: p[i].x + 12, y: p[i].y + 4 }, d.name.length > 24 ? `${d.name.slice(0, 23)}…` : d.name));
    root.append(g);
  });
  const legend = el("div", { class: "legend" }, labels.map((lb) => el("span", {}, el("i", { class: `label-${labels.indexOf(lb) % LABEL_COLOURS.length}` }), lb || "unlabelled")),
    el("span", {}, `${nodes.length} node(s), ${links.length} relationship(s)`));
  return { svg: root, legend };
}
