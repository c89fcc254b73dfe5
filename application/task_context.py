"""The context an agent needs for a task of a story: the story and its phases, the plan, the
decisions already taken for it by every role (winner, why, what was proposed), a timeline.

Two halves. ``render_context`` is pure: facts in, four blocks (system, context, tools, history)
and their text out, within a token budget. Tokens are approximated as characters / 4 (the usual
rule of thumb for English text with BPE tokenizers; no tokenizer is loaded for this): blocks are
filled in priority order (the task, the story and plan, the decisions, the tools, the timeline,
newest events first) and what does not fit is left out with a marker saying how much.
``gather_facts`` reads the facts from the store: the task's deliberation, its plan, the story's
phase changes, and the related deliberations (those the caller names: the story's, from the
graph, in GetTaskContext; the plan's siblings in a prompt), at most ``MAX_DECISIONS``.

``StoreContextSource`` (the ``application.ports.ContextSource`` port, on the store) is what the
dispatcher uses to give agents the same context in their prompts when a deliberation belongs to
a story: by default a small budget, no timeline; an orchestration whose client sent
``context_options`` gets those (``recorded_scope``) within GetTaskContext's budget. Built once
per deliberation and kept (bounded), so a round costs no extra reads.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from aggregates import Deliberation, DeliberationStatus, Plan, deliberation_id, plan_id_of
from aggregates.story import Story, story_id_of
from application.errors import NotFoundError
from application.ports import ContextStore

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_TOKEN_BUDGET",
    "ContextFacts",
    "ContextScope",
    "Decision",
    "StoreContextSource",
    "TaskContext",
    "approx_tokens",
    "gather_facts",
    "recorded_scope",
    "render_context",
]

CHARS_PER_TOKEN = 4
DEFAULT_TOKEN_BUDGET = 2000
PROMPT_TOKEN_BUDGET = 300
"""An agent's prompt context: small, since every prompt token costs every agent time."""
DEFAULT_MAX_EVENTS = 20
MAX_DECISIONS = 20
PROPOSAL_CHARS = 400
MAX_KEPT = 1000
"""Deliberations whose prompt context a dispatcher keeps (the oldest go first)."""
SECTIONS = frozenset({"story", "plan", "decisions", "tools", "timeline"})
_TOOLS = {
    "DEV": "Answers are checked: policy, compile (dry run in a sandbox), lint (ruff); peers rate.",
}
_DEFAULT_TOOLS = "Answers are checked against policy; peers rate them against the rubric."


def approx_tokens(text: str) -> int:
    """Approximate tokens: characters / 4, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Decision:
    task_id: str
    role: str
    status: str
    winner: str
    why: str
    proposal: str
    at: datetime | None


@dataclass(frozen=True)
class ContextFacts:
    role: str
    task_id: str = ""
    task: str = ""
    phase: str = ""
    story_id: str = ""
    story_phases: tuple[tuple[str, str, datetime], ...] = ()
    plan_id: str = ""
    plan_description: str = ""
    plan_tasks: tuple[str, ...] = ()
    decisions: tuple[Decision, ...] = ()
    events: tuple[tuple[datetime, str], ...] = ()


@dataclass(frozen=True)
class ContextScope:
    """ContextOptions, and the budget."""

    include_timeline: bool = True
    include_decisions: bool = True
    include_summaries: bool = True
    """The plan's description and task list (its summary); off: the plan id only."""
    max_events: int = 20
    token_budget: int = DEFAULT_TOKEN_BUDGET
    sections: frozenset[str] = field(default_factory=frozenset)
    """Scopes (story, plan, decisions, tools, timeline): only these, when given."""

    def wants(self, section: str) -> bool:
        return not self.sections or section in self.sections


def recorded_scope(options: Mapping[str, Any], token_budget: int) -> ContextScope:
    """The scope a client's ContextOptions recorded on a deliberation ask for
    (``Deliberation.context_options``: the seed's fields; ``max_events`` 0 means 20)."""
    return ContextScope(
        include_timeline=bool(options.get("include_timeline", False)),
        include_decisions=bool(options.get("include_decisions", False)),
        include_summaries=bool(options.get("include_summaries", False)),
        max_events=int(options.get("max_events") or DEFAULT_MAX_EVENTS),
        token_budget=token_budget,
        sections=frozenset(str(x) for x in options.get("scopes", ())),
    )


@dataclass(frozen=True)
class TaskContext:
    system: str
    context: str
    tools: str
    history: str
    text: str
    token_count: int
    version_hash: str


class _Budget:
    def __init__(self, tokens: int) -> None:
        self.left = max(tokens, 1) * CHARS_PER_TOKEN

    def take(self, lines: Sequence[str]) -> list[str]:
        """The lines that fit, in order; a marker for the rest."""
        out: list[str] = []
        for i, line in enumerate(lines):
            if len(line) + 1 > self.left:
                rest = len(lines) - i
                marker = f"[... {rest} more line(s) left out: token budget]"
                if len(marker) + 1 <= self.left:
                    out.append(marker)
                    self.left -= len(marker) + 1
                break
            out.append(line)
            self.left -= len(line) + 1
        return out


def _clip(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 5] + " [...]"


def render_context(facts: ContextFacts, scope: ContextScope) -> TaskContext:
    """The four blocks and their text, within ``scope.token_budget`` (see the module docstring)."""
    budget = _Budget(scope.token_budget)
    head = [f"Role: {facts.role}."]
    if facts.phase:
        head.append(f"Phase: {facts.phase}.")
    if facts.task_id or facts.task:
        head.append(f"Task {facts.task_id}: {_clip(facts.task, 600)}".strip())
    system = budget.take(head)

    context: list[str] = []
    if facts.story_id and scope.wants("story"):
        now = facts.story_phases[-1][1] if facts.story_phases else ""
        context.append(f"Story {facts.story_id}" + (f" (phase {now})" if now else "") + ".")
    if facts.plan_id and scope.wants("plan"):
        context.append(f"Plan {facts.plan_id}.")
        if scope.include_summaries:
            if facts.plan_description:
                context.append(_clip(facts.plan_description, 800))
            context += [f"- {_clip(t, 200)}" for t in facts.plan_tasks]
    context = budget.take(context)
    if scope.include_decisions and scope.wants("decisions") and facts.decisions:
        lines = ["Decisions taken:"]
        for d in facts.decisions:
            if d.winner:
                lines.append(f"- {d.role} ({d.task_id}): {d.winner} won. Why: {_clip(d.why, 300)}")
                lines.append(f"  Proposal: {_clip(d.proposal, PROPOSAL_CHARS)}")
            else:
                lines.append(f"- {d.role} ({d.task_id}): {d.status.lower()}, no decision yet")
        context += budget.take(lines)
    tools = budget.take([_TOOLS.get(facts.role, _DEFAULT_TOOLS)]) if scope.wants("tools") else []
    history: list[str] = []
    if scope.include_timeline and scope.wants("timeline") and scope.max_events > 0:
        events = sorted(facts.events, reverse=True)[: scope.max_events]  # newest first
        history = budget.take([f"{at.isoformat(timespec='seconds')} {what}" for at, what in events])
    blocks = ["\n".join(b) for b in (system, context, tools, history)]
    titled = zip(("", "Context:\n", "Tools:\n", "Timeline (newest first):\n"), blocks, strict=True)
    text = "\n\n".join(t + b for t, b in titled if b)
    return TaskContext(
        system=blocks[0],
        context=blocks[1],
        tools=blocks[2],
        history=blocks[3],
        text=text,
        token_count=approx_tokens(text),
        version_hash=hashlib.sha256(text.encode()).hexdigest(),
    )


def decision_of(d: Deliberation) -> Decision:
    """What a deliberation decided: the winner, why, and the winning proposal."""
    winner = d.winner or ""
    final = d.final_proposals()
    won = final.get(d.winner) if d.winner else None
    if d.architect_rationale:
        why = f"the architect chose it: {d.architect_rationale}"
    elif winner:
        score = (won.score if won else None) or 0.0
        why = f"highest score {score:.2f}" + (
            f" (architect fell back: {d.architect_fallback})" if d.architect_fallback else ""
        )
    else:
        why = d.reason
    proposal = won.content if won else ""
    return Decision(d.task_id, d.role.value, d.status.value, winner, why, proposal, d.finished_at)


def _events(d: Deliberation) -> list[tuple[datetime, str]]:
    out = [(d.requested_at, f"{d.role.value} deliberation {d.task_id} requested")]
    if d.finished_at is not None:
        ended = d.status.value.lower()
        said = f", winner {d.winner}" if d.status is DeliberationStatus.COMPLETED else ""
        out.append((d.finished_at, f"{d.role.value} deliberation {d.task_id} {ended}{said}"))
    return out


async def gather_facts(
    store: ContextStore,
    *,
    role: str,
    task_id: str = "",
    story_id: str = "",
    phase: str = "",
    related: Sequence[str] = (),
) -> ContextFacts:
    """The facts for a task (see the module docstring). Unknown ids are skipped, not errors:
    a task may be asked about before its deliberation exists."""
    task: Deliberation | None = None
    if task_id:
        try:
            task = await store.get(deliberation_id(task_id))
        except NotFoundError:
            task = None
    story_id = story_id or (task.story_id if task else "")
    plan: Plan | None = None
    if task is not None and task.plan_id:
        try:
            plan = await store.get_plan(plan_id_of(task.plan_id))
        except NotFoundError:
            plan = None
    phases: tuple[tuple[str, str, datetime], ...] = ()
    if story_id:
        try:
            story = await store.get_record(story_id_of(story_id), Story)
            phases = tuple((f.value, t.value, at) for f, t, at in story.transitions)
        except NotFoundError:
            phases = ()
    others = [t for t in dict.fromkeys([*related, *(plan.task_ids() if plan else [])])]
    decisions: list[Decision] = []
    events: list[tuple[datetime, str]] = [(at, f"story moved {f} -> {t}") for f, t, at in phases]
    for other in others[:MAX_DECISIONS]:
        if other == task_id:
            continue
        try:
            d = await store.get(deliberation_id(other))
        except NotFoundError:
            continue
        decisions.append(decision_of(d))
        events += _events(d)
    if task is not None:
        events += _events(task)
    return ContextFacts(
        role=role or (task.role.value if task else ""),
        task_id=task_id,
        task=task.task if task else "",
        phase=phase,
        story_id=story_id,
        story_phases=phases,
        plan_id=plan.plan_id if plan else (task.plan_id if task else ""),
        plan_description=plan.description if plan else "",
        plan_tasks=tuple(plan.tasks) if plan else (),
        decisions=tuple(decisions),
        events=tuple(events),
    )


class StoreContextSource:
    """A story deliberation's context for its agents' prompts (see the module docstring).
    Loop affinity: the dispatcher's."""

    def __init__(self, store: ContextStore, *, token_budget: int = PROMPT_TOKEN_BUDGET) -> None:
        self._store = store
        self._scope = ContextScope(include_timeline=False, token_budget=token_budget)
        self._kept: OrderedDict[UUID, asyncio.Future[str]] = OrderedDict()
        """Per deliberation, its context (being) built: the agents of one round ask together,
        and one build serves them all. A failed build is not kept (the next turn tries again)."""

    async def for_deliberation(self, d: Deliberation) -> str:
        """ "" for a deliberation of no story; else its context text (kept per deliberation)."""
        if not d.story_id:
            return ""
        kept = self._kept.get(d.id)
        if kept is None:
            kept = self._kept[d.id] = asyncio.ensure_future(self._build(d))
            kept.add_done_callback(functools.partial(self._forget_failed, d.id))
            while len(self._kept) > MAX_KEPT:
                self._kept.popitem(last=False)
        return await asyncio.shield(kept)

    def _forget_failed(self, d_id: UUID, built: asyncio.Future[str]) -> None:
        if built.cancelled() or built.exception() is not None:
            if self._kept.get(d_id) is built:
                del self._kept[d_id]

    async def _build(self, d: Deliberation) -> str:
        facts = await gather_facts(
            self._store, role=d.role.value, task_id=d.task_id, story_id=d.story_id
        )
        scope = self._scope
        if d.context_options:  # the client's choice, recorded with the orchestration
            scope = recorded_scope(d.context_options, DEFAULT_TOKEN_BUDGET)
        # The task itself is in the prompt already: the context is what surrounds it.
        rendered = render_context(
            ContextFacts(
                role=d.role.value,
                story_id=d.story_id,
                story_phases=facts.story_phases,
                plan_id=facts.plan_id,
                plan_description=facts.plan_description,
                plan_tasks=facts.plan_tasks,
                decisions=facts.decisions,
                events=facts.events,
            ),
            scope,
        )
        if not rendered.history:
            return rendered.context
        return f"{rendered.context}\n\nTimeline (newest first):\n{rendered.history}".strip()
