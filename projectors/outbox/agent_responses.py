"""Per-agent results of backlog-review and task-extraction deliberations, as the seed's agent
results on ``agent.response.>`` (its ``AGENT_RESPONSES`` stream).

The seed's backlog-review processor waits for each agent's answer to a backlog-review task
(task id ``ceremony-<id>:story-<id>:role-<ROLE>``) on
``agent.response.completed.backlog-review.role`` and for the answer to a task-extraction task
(task id ending ``:task-extraction``) on ``agent.response.completed.task-extraction``, counting
answers against ``num_agents``; a failed agent on ``agent.response.failed``. Its Ray workers
published those as each agent finished.

Fleet publishes them when the deliberation ends (completed, timed out, failed or cancelled), one
message per council member, in council order: the agent's final proposal (its last revision)
on the completed subject, or, for a member with no proposal, a failure naming why (the agent's
own recorded error, else the deadline, the cancellation or the deliberation's failure). Only at
the end is an agent's answer final (with several rounds an agent revises) and is every member
accounted for, so the consumer gets exactly ``num_agents`` messages per task, each once.

Pure and deterministic like ``projectors.outbox.messages`` (same envelope, same key rule), so
the outbox machinery re-derives and recognises what it may already have published.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TypeGuard

from aggregates import Deliberation
from projectors.outbox.messages import History, IntegrationEvent, Payload, envelope

__all__ = [
    "AGENT_RESPONSE_SUBJECTS",
    "BACKLOG_REVIEW_ROLE",
    "FAILED",
    "TASK_EXTRACTION",
    "agent_responses",
    "handles_agent_response",
    "task_kind",
]

BACKLOG_REVIEW_ROLE = "agent.response.completed.backlog-review.role"
TASK_EXTRACTION = "agent.response.completed.task-extraction"
FAILED = "agent.response.failed"

AGENT_RESPONSE_SUBJECTS = (BACKLOG_REVIEW_ROLE, TASK_EXTRACTION, FAILED)
"""Every subject this publishes on (each has a schema in ``proto/schemas/``)."""

_TERMINAL = (
    Deliberation.Completed,
    Deliberation.TimedOut,
    Deliberation.Failed,
    Deliberation.Cancelled,
)
_End = Deliberation.Completed | Deliberation.TimedOut | Deliberation.Failed | Deliberation.Cancelled
"""A deliberation's terminal event (one of ``_TERMINAL``)."""


def task_kind(task_id: str) -> str | None:
    """The seed's ``task_type`` of a task id its processor waits on; None for any other.

    The seed's rule, verbatim: a task id ending ``:task-extraction`` is a task extraction; one
    that starts ``ceremony-`` and holds ``:role-`` is a backlog review's role deliberation.
    """
    if task_id.endswith(":task-extraction"):
        return "TASK_EXTRACTION"
    if task_id.startswith("ceremony-") and ":role-" in task_id:
        return "BACKLOG_REVIEW_ROLE"
    return None


def handles_agent_response(event: object) -> TypeGuard[_End]:
    """Whether ``event`` can lead to agent results (a deliberation's terminal event)."""
    return isinstance(event, _TERMINAL)


def agent_responses(event: object, position: int, history: History) -> list[IntegrationEvent]:
    """The agent results ``event`` (at stream ``position``) leads to, in council order."""
    if not handles_agent_response(event):
        return []
    e = event
    past = list(history(e.originator_id, e.originator_version))
    requested = past[0] if past and isinstance(past[0], Deliberation.Requested) else None
    if requested is None:
        return []
    kind = task_kind(requested.task_id)
    if kind is None:
        return []
    folded = _Agents(past)
    out = []
    for agent in folded.members(requested):
        final = folded.final.get(agent)
        if final is not None:
            out.append(_completed(requested, kind, e, position, agent, final, folded))
        else:
            out.append(_failed(requested, kind, e, position, agent, folded.failure(agent, e)))
    return out


class _Agents:
    """What each agent did in one deliberation, from its events."""

    def __init__(self, events: Sequence[object]) -> None:
        self.started: list[str] = []
        # The agent's last on-time proposal (a revision wins).
        self.final: dict[str, Deliberation.ProposalReceived] = {}
        self.worked_ms: dict[str, int] = {}
        self.errors: dict[str, str] = {}
        self.scores: dict[str, float] = {}
        for x in events:
            if isinstance(x, Deliberation.Started):
                self.started = list(x.agents)
            elif isinstance(x, Deliberation.ProposalReceived):  # revisions too
                self.final[x.agent_id] = x
                self.worked_ms[x.agent_id] = self.worked_ms.get(x.agent_id, 0) + x.latency_ms
            elif isinstance(x, Deliberation.AgentFailed):
                self.errors.setdefault(x.agent_id, x.error)
            elif isinstance(x, Deliberation.ProposalScored):
                self.scores[x.agent_id] = x.score

    def members(self, requested: Deliberation.Requested) -> list[str]:
        """The council in its order; without a recorded start, the aggregate's default ids
        (those it names in a timeout's ``missing``), then anyone else who answered."""
        agents = self.started or [
            f"{requested.role.lower()}-agent-{i + 1}" for i in range(requested.num_agents)
        ]
        extra = [a for a in [*self.final, *self.errors] if a not in agents]
        return list(dict.fromkeys([*agents, *extra]))

    def failure(self, agent: str, end: _End) -> tuple[str, str]:
        """(error, error_type) of a member without a proposal."""
        if agent in self.errors:
            return self.errors[agent], "agent_error"
        if isinstance(end, Deliberation.TimedOut):
            return "the deadline passed before this agent answered", "timeout"
        if isinstance(end, Deliberation.Cancelled):
            reason = f": {end.reason}" if end.reason else ""
            return f"the deliberation was cancelled before this agent answered{reason}", "cancelled"
        if isinstance(end, Deliberation.Failed):
            return f"the deliberation failed before this agent answered: {end.reason}", "failed"
        return "the deliberation ended without an answer from this agent", "no_answer"


def _constraints(r: Deliberation.Requested, kind: str) -> Payload:
    """The seed's ``constraints``: what the request carried, and the metadata its processor
    reads (story, ceremony, task type and id, council size)."""
    metadata = {str(k): str(v) for k, v in dict(r.metadata).items()}
    ids = _ids(r)
    metadata.update(
        {
            "story_id": ids["story_id"],
            "ceremony_id": ids["ceremony_id"],
            "task_type": kind,
            "task_id": r.task_id,
            "num_agents": str(r.num_agents),
        }
    )
    return {
        "story_id": ids["story_id"],
        "plan_id": r.plan_id,
        "timeout_seconds": r.timeout_seconds,
        "metadata": metadata,
    }


def _ids(r: Deliberation.Requested) -> dict[str, str]:
    """The story and ceremony: the request's metadata, else the task id's own
    ``ceremony-<id>:story-<id>:`` parts (the seed's id scheme)."""
    parts = dict(
        (p.split("-", 1)[0], p.split("-", 1)[1])
        for p in r.task_id.split(":")
        if p.startswith(("ceremony-", "story-"))
    )
    meta = dict(r.metadata)
    return {
        "story_id": str(r.story_id or meta.get("story_id") or parts.get("story", "")),
        "ceremony_id": str(meta.get("ceremony_id") or parts.get("ceremony", "")),
    }


def _common(r: Deliberation.Requested, kind: str, end: _End, agent: str) -> Payload:
    return {
        "task_id": r.task_id,
        "agent_id": agent,
        "role": r.role,
        "num_agents": r.num_agents,
        "deliberation_id": str(end.originator_id),
        "task_type": kind,
        "story_id": _ids(r)["story_id"],
        "ceremony_id": _ids(r)["ceremony_id"],
        "plan_id": r.plan_id,
    }


def _completed(
    r: Deliberation.Requested,
    kind: str,
    end: _End,
    position: int,
    agent: str,
    p: Deliberation.ProposalReceived,
    folded: _Agents,
) -> IntegrationEvent:
    subject = TASK_EXTRACTION if kind == "TASK_EXTRACTION" else BACKLOG_REVIEW_ROLE
    payload = _common(r, kind, end, agent) | {
        "status": "completed",
        "proposal": {
            "content": p.content,
            "author_id": agent,
            "author_role": r.role,
            "model": p.model,
            "temperature": p.temperature,
            "tokens": p.tokens,
        },
        "round": p.round,
        "score": folded.scores.get(agent),
        "operations": [],
        "artifacts": {},
        "audit_trail": [],
        "duration_ms": folded.worked_ms.get(agent, 0),
        "model": p.model,
        "constraints": _constraints(r, kind),
        "timestamp": p.timestamp.isoformat(),
    }
    if kind == "TASK_EXTRACTION":
        tasks, problem = _tasks(p.content)
        if tasks is not None:
            payload["tasks"] = tasks
        else:
            payload["tasks_error"] = problem
    return _agent_envelope(subject, end, position, agent, payload)


def _failed(
    r: Deliberation.Requested, kind: str, end: _End, position: int, agent: str, why: tuple[str, str]
) -> IntegrationEvent:
    error, error_type = why
    payload = _common(r, kind, end, agent) | {
        "status": "failed",
        "error": error,
        "error_type": error_type,
        "duration_ms": 0,
        "constraints": _constraints(r, kind),
        "timestamp": end.timestamp.isoformat(),
    }
    return _agent_envelope(FAILED, end, position, agent, payload)


def _tasks(content: str) -> tuple[list[object] | None, str]:
    """The tasks of a task-extraction answer (JSON: ``{"tasks": [...]}`` or a list, possibly in
    a fenced block), or None and why not: the seed's processor reads ``tasks`` parsed."""
    text = content.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    try:
        data = json.loads(text)
    except ValueError as e:
        return None, f"the answer is not JSON: {e}"
    tasks = data.get("tasks") if isinstance(data, dict) else data
    if not isinstance(tasks, list):
        return None, "the answer's JSON holds no list of tasks"
    return tasks, ""


def _agent_envelope(
    subject: str, end: _End, position: int, agent: str, payload: Payload
) -> IntegrationEvent:
    d_id = str(end.originator_id)
    return envelope(
        subject,
        end,
        position,
        entity_id=d_id,
        operation=agent,
        correlation_id=d_id,
        payload=payload,
    )
