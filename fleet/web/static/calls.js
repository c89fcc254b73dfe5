// One agent call, opened from the calls-per-round chart: the prompt it sent (as recorded in its
// event), the raw answer, and what it cost: tokens, latency, attempts. All as text.
"use strict";

function showCall(d, i) {
  const box = document.getElementById("call-box");
  const c = d.calls[i];
  document.querySelectorAll("#timeline rect.call").forEach((r) => r.classList.toggle("selected", Number(r.dataset.call) === i));
  if (!box) return;
  if (!c) { box.replaceChildren(el("p", { class: "muted" }, `no call ${i} at version ${d.version}`)); return; }
  const retries = c.attempts === null || c.attempts === undefined ? "not recorded" : `${Math.max(0, c.attempts - 1)} (${c.attempts} attempt${c.attempts === 1 ? "" : "s"})`;
  const step = (k) => el("button", { type: "button", class: "small", disabled: !d.calls[i + k], onclick: () => { remember({ call: i + k }); showCall(d, i + k); } }, k < 0 ? "← previous call" : "next call →");
  const facts = [
    ["agent", c.agent_id], ["call", `${c.kind}${c.round >= 0 ? `, round ${c.round + 1}` : ""}`], ["event", `version ${c.version}, ${fmtTime(c.end)}`],
    ["model", c.model || "-"], ["tokens", `${c.tokens} completion${c.prompt_tokens ? ` + ${c.prompt_tokens} prompt` : ""}`],
    ["latency", `${c.latency_ms} ms`], ["retries", retries],
    c.thinking_retried ? ["thinking", "the model spent its budget thinking; asked again with thinking off"] : null,
    c.temperature !== null && c.temperature !== undefined ? ["sampling", `temperature ${c.temperature}${c.seed !== null && c.seed !== undefined ? `, seed ${c.seed}` : ""}`] : null,
    c.persona ? ["persona", c.persona] : null,
    c.error ? ["error", c.error] : null,
  ].filter(Boolean);
  box.replaceChildren(el("div", { class: "card", id: "call", "data-call": i },
    el("div", { class: "row" }, el("strong", {}, `Call ${i + 1} of ${d.calls.length}`), step(-1), step(1),
      el("button", { type: "button", class: "small", onclick: () => { remember({ call: "" }); box.replaceChildren(); document.querySelectorAll("#timeline rect.call.selected").forEach((r) => r.classList.remove("selected")); } }, "close")),
    el("dl", { class: "kv" }, facts.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])),
    el("h3", {}, "Prompt"), el("div", { id: "call-prompt" }, el("p", { class: "muted" }, "…")),
    el("h3", {}, "Answer"), el("div", { id: "call-answer" }, answerBlock(c, null))));
  box.scrollIntoView({ block: "nearest" });
  const promptBox = box.querySelector("#call-prompt"), answerBox = box.querySelector("#call-answer");
  if (!["proposal", "revision", "late"].includes(c.kind)) {
    promptBox.replaceChildren(el("p", { class: "muted" }, c.kind === "timeout" || c.kind === "failure"
      ? "not recorded: a failed call leaves only its error" : "not recorded: Fleet keeps the prompts of proposal and revision calls only"));
    return;
  }
  // The prompt and the whole answer come with the call, not with the page (they are most of its bytes).
  api(`/api/deliberations/${encodeURIComponent(d.task_id)}/calls/${c.version}`).then((x) => {
    promptBox.replaceChildren(promptBlock(x));
    answerBox.replaceChildren(answerBlock(c, x.answer));
  }).catch((e) => promptBox.replaceChildren(el("p", { class: "error" }, e.message)));
}

function promptBlock(x) {
  if (!x.prompt) return el("p", { class: "muted" }, x.prompt_note || "not recorded");
  return el("div", {}, x.prompt.map((m) => el("div", { class: "message", "data-role": m.role },
    el("div", { class: "muted" }, m.role === "assistant" ? "assistant (the answer's start, which the model continued)" : m.role),
    el("pre", { class: "plain" }, m.content))));
}

function answerBlock(c, answer) {
  if (c.reviews && c.reviews.length) {
    return el("table", {}, el("thead", {}, el("tr", {}, ["reviewed", "score", "text"].map((h) => el("th", {}, h)))),
      el("tbody", {}, c.reviews.map((r) => el("tr", {}, el("td", {}, r.target), el("td", {}, fmtScore(r.score)), el("td", {}, el("pre", { class: "plain" }, r.text || ""))))));
  }
  if (answer) return el("pre", { class: "plain" }, answer);
  if (c.error) return el("p", { class: "muted" }, "no answer: the call failed");
  return el("p", { class: "muted" }, answer === null ? "…" : "no answer recorded");
}
