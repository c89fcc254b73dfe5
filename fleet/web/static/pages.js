// The smaller pages: submit, plans, councils, projections, the event tail.
"use strict";

async function submitPage() {
  title("Submit");
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
  title(planId ? `Plan ${planId}` : "Plans");
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
  title("Councils");
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
  title("Projections");
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
  const sized = b.slots ? `, ${b.slots} run${b.slots === 1 ? "" : "s"} at once per process for ${b.cpus || "its cores"}` : "";
  if (b.available) return el("p", { id: "sandbox" }, `bubblewrap (FLEET_SANDBOX=${b.mode}): model code runs behind walls${sized}`);
  return el("p", { id: "sandbox", class: "error" }, `unavailable (FLEET_SANDBOX=${b.mode}): ${b.reason}. Model code does not run; DEV checks say "not run".`);
}

async function eventsPage() {
  title("Event stream");
  const body = el("tbody", { id: "tail" });
  render(el("h1", { text: "Event stream" }), el("p", { class: "muted" }, "Every event this node routes, newest first (the last 200)."),
    el("table", {}, el("thead", {}, el("tr", {}, ["at", "deliberation", "v", "event", "summary"].map((h) => el("th", {}, h)))), body));
  stream("/api/stream", (ev) => {
    body.prepend(el("tr", {}, el("td", {}, fmtTime(ev.at)), el("td", {}, ev.data.task_id ? taskLink(ev.data.task_id) : ev.deliberation_id.slice(0, 8)),
      el("td", {}, ev.version), el("td", {}, ev.type), el("td", {}, ev.summary)));
    while (body.children.length > 200) body.lastChild.remove();
  }, pageAbort.signal);
}


// The agents: every council's members and what each is doing now, as ListCouncils tells it
// (AgentInfo.status: idle, busy on N open deliberations, failing with its last error), and the
// latest failed agent calls from the history graph.
async function agentsPage() {
  title("Agents");
  let data;
  try { data = await api("/api/agents"); } catch (e) { return render(el("h1", { text: "Agents" }), el("p", { class: "error" }, e.message)); }
  const agents = (data.councils || []).flatMap((c) => (c.agents || []).map((a) => ({ ...a, council: c.council_id, model: a.capabilities?.model_profile || c.model || "" })));
  const word = (s) => String(s || "unknown").split(/[\s(]/)[0];
  const counts = {};
  for (const a of agents) counts[word(a.status)] = (counts[word(a.status)] || 0) + 1;
  const table = sortable(el("table", { id: "agents", "data-nav": "" }, el("thead", {}, el("tr", {}, ["agent", "role", "council", "model", "doing"].map((h) => el("th", {}, h)))),
    el("tbody", {}, agents.map((a) => el("tr", { "data-agent": a.agent_id, "data-status": word(a.status) },
      el("td", {}, a.agent_id), el("td", {}, a.role), el("td", {}, a.council), el("td", {}, a.model),
      el("td", {}, el("span", { class: `agent-status ${word(a.status)}` }, a.status || "unknown")))))), "sort");
  const failures = data.failures || [];
  const failTable = sortable(el("table", { id: "failures", "data-nav": "" }, el("thead", {}, el("tr", {}, ["at", "agent", "role", "deliberation", "error"].map((h) => el("th", {}, h)))),
    el("tbody", {}, failures.map((f) => el("tr", {}, el("td", {}, fmtTime(f.at)), el("td", {}, f.agent_id), el("td", {}, f.role), el("td", {}, taskLink(f.task_id)), el("td", {}, f.error))))), "failures");
  render(el("h1", {}, "Agents", exportBar([["CSV", () => ["agents.csv", tableCsv(table)]], ["JSON", () => ["agents.json", jsonBlob(data)]]])),
    el("div", { class: "counts", id: "agent-counts" }, Object.entries(counts).map(([k, n]) => el("span", { class: "chip" }, `${k} ${n}`))),
    agents.length ? table : el("p", { class: "muted" }, "no councils on this node"),
    el("h2", {}, "Recent failed calls", failures.length ? exportBar([["CSV", () => ["agent-failures.csv", tableCsv(failTable)]]]) : null),
    data.failures_error ? el("p", { class: "error" }, data.failures_error) : failures.length ? failTable : el("p", { class: "muted", id: "no-failures" }, "no failed agent calls in the history"));
}
