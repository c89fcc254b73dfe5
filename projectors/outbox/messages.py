"""What the outbox publishes: Fleet's events turned into the seed system's integration events.

Pure and deterministic: the same event, with the same history of its aggregate, always gives the
same messages, bytes included. That is what lets a restarted (or rebuilt) outbox re-derive what
it may already have published and recognise it, rather than publish something slightly
different a second time.

Envelope (the seed's late ``EventEnvelope``, which the Context service requires: it drops a
body without one): ``event_type`` (the subject), ``payload`` (the fields the seed's consumers
read: story_id, task_id, decisions, …; also repeated at the top level for consumers of the
seed's flat bodies, but for ``timestamp`` and ``metadata``, which are the envelope's there),
``idempotency_key`` (sha256 of ``event_type:entity_id[:operation]``, no time in it),
``correlation_id`` (the deliberation's id; the plan's or the story's for their events),
``causation_id`` (the Fleet event's stream sequence, as a string), ``timestamp`` (ISO 8601 of
the Fleet event), ``producer`` (``fleet-orchestrator``) and ``metadata`` (strings: Fleet's
aggregate id and version).
``docs/integration-events.md`` and the JSON Schemas in ``proto/schemas/`` describe each one.

Over 400 lines on purpose: one vocabulary. Every subject's body is built here, beside the one
envelope they share, so a change to a field is made (and its schema checked) in one place.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypedDict, TypeGuard, cast
from uuid import UUID

from aggregates import Deliberation, Plan
from aggregates.story import Story
from aggregates.values import CheckOutcome, all_checks_passed
from application.events import FleetEvent

__all__ = [
    "DISPATCH_TRIGGERS",
    "PRODUCER",
    "SUBJECTS",
    "Derive",
    "IntegrationEvent",
    "envelope",
    "handles",
    "integration_events",
]

PRODUCER = "fleet-orchestrator"

PLAN_APPROVED = "orchestration.plan.approved"
PLAN_SKIPPED = "orchestration.plan.skipped"
PHASE_CHANGED = "orchestration.phase.changed"
TASK_DISPATCHED = "orchestration.task.dispatched"
DELIBERATION_COMPLETED = "orchestration.deliberation.completed"
TASK_COMPLETED = "orchestration.task.completed"
TASK_FAILED = "orchestration.task.failed"
TASK_TIMED_OUT = "orchestration.task.timed_out"
TASK_CANCELLED = "orchestration.task.cancelled"

SUBJECTS = (
    PLAN_APPROVED,
    PLAN_SKIPPED,
    PHASE_CHANGED,
    TASK_DISPATCHED,
    DELIBERATION_COMPLETED,
    TASK_COMPLETED,
    TASK_FAILED,
    TASK_TIMED_OUT,
    TASK_CANCELLED,
)
"""Every subject the outbox publishes on (each has a schema in ``proto/schemas/``)."""

ARCHITECT_PREFIX = "Architect"
"""Deliberation events whose class name starts so record the architect's choice
(``ArchitectSelected``, or a fallback flavour of it): read by name and by field, so the outbox
works whether or not this Fleet records one, and whatever fields a version adds."""

History = Callable[[UUID, int], Sequence[object]]
"""The events of one aggregate up to a version, oldest first (the application's event store)."""

Derive = Callable[[object, int, History], list["IntegrationEvent"]]
"""What an outbox publishes for one event at a position: ``integration_events`` here, or the
agent results of ``projectors.outbox.agent_responses``."""

_FAILURES: dict[type, tuple[str, str | None]] = {
    Deliberation.Failed: ("failed", None),
    Deliberation.TimedOut: ("timeout", TASK_TIMED_OUT),
    Deliberation.Cancelled: ("cancelled", TASK_CANCELLED),
}
"""Terminal failures: the seed's ``error_type`` on ``.failed``, and the subject of their own."""

DISPATCH_TRIGGERS = (Deliberation.Started, Deliberation.ProposalReceived, Deliberation.AgentFailed)
"""The events that dispatch a deliberation: the first of them (Started, as a rule) does."""


Payload = dict[str, object]
"""An integration event's payload: a JSON object (its shape is the subject's schema in
``proto/schemas/``)."""

_Deliberation = (
    Deliberation.Started
    | Deliberation.ProposalReceived
    | Deliberation.AgentFailed
    | Deliberation.Completed
    | Deliberation.Failed
    | Deliberation.TimedOut
    | Deliberation.Cancelled
)
_Failure = Deliberation.Failed | Deliberation.TimedOut | Deliberation.Cancelled
_Handled = (
    Plan.Approved | Plan.RoleSkipped | Plan.NothingDispatched | Story.PhaseChanged | _Deliberation
)


@dataclass(frozen=True)
class IntegrationEvent:
    """One message for ``subject``; ``body`` is its JSON (sorted keys, so it is reproducible)."""

    subject: str
    idempotency_key: str
    body: bytes


def handles(event: object) -> TypeGuard[_Handled]:
    """Whether ``event`` can lead to an integration event (the rest are skipped unread)."""
    return isinstance(
        event,
        Plan.Approved
        | Plan.RoleSkipped
        | Plan.NothingDispatched
        | Story.PhaseChanged
        | Deliberation.Started
        | Deliberation.ProposalReceived
        | Deliberation.AgentFailed
        | Deliberation.Completed
        | Deliberation.Failed
        | Deliberation.TimedOut
        | Deliberation.Cancelled,
    )


def integration_events(event: object, position: int, history: History) -> list[IntegrationEvent]:
    """The integration events Fleet's ``event`` (at stream ``position``) leads to, in order.

    ``history`` is read for Deliberation events (their payloads need the request, the
    proposals and the scores before them) and a plan's skips (the plan's ids are in its
    approval).
    """
    if not handles(event):
        return []
    e = event
    if isinstance(e, Plan.Approved):
        return [_plan_approved(e, position)]
    if isinstance(e, Plan.RoleSkipped | Plan.NothingDispatched):
        return [_plan_skipped(e, position, history)]
    if isinstance(e, Story.PhaseChanged):
        return [_phase_changed(e, position)]
    past = list(history(e.originator_id, e.originator_version))
    d = _Folded(past)
    if isinstance(e, DISPATCH_TRIGGERS):
        # Dispatched once: at Started, or at the first answer where another dispatcher's race
        # left no Started (the aggregate then implies the start).
        earlier = [x for x in past[:-1] if isinstance(x, DISPATCH_TRIGGERS)]
        return [] if earlier else [_dispatched(d, e, position)]
    if isinstance(e, Deliberation.Completed):
        return [_deliberation_completed(d, e, position), _task_completed(d, e, position)]
    error_type, own_subject = _FAILURES[type(e)]
    out = [_task_failed(d, e, position, TASK_FAILED, error_type)]
    if own_subject is not None:
        out.append(_task_failed(d, e, position, own_subject, error_type))
    return out


# ---------------------------------------------------------------------------- the envelope


def idempotency_key(event_type: str, entity_id: str, operation: str = "") -> str:
    """The seed's key: sha256 of ``event_type:entity_id[:operation]`` (no time in it)."""
    raw = f"{event_type}:{entity_id}" + (f":{operation}" if operation else "")
    return hashlib.sha256(raw.encode()).hexdigest()


def envelope(
    subject: str,
    event: FleetEvent,
    position: int,
    *,
    entity_id: str,
    operation: str,
    correlation_id: str,
    payload: Payload,
) -> IntegrationEvent:
    """The seed's envelope around ``payload`` (see the module's docstring)."""
    key = idempotency_key(subject, entity_id, operation)
    # The payload's fields are also at the top level, for the seed's consumers written before
    # its envelope (they read story_id, task_id, decisions there); the envelope's own fields
    # win where names meet (timestamp: ISO at the top, float seconds in the payload).
    body = {
        **{k: v for k, v in payload.items() if k not in _ENVELOPE_FIELDS},
        "event_type": subject,
        "payload": payload,
        "idempotency_key": key,
        "correlation_id": correlation_id,
        "causation_id": str(position),
        "timestamp": _iso(event.timestamp),
        "producer": PRODUCER,
        "metadata": {
            "fleet_aggregate_id": str(event.originator_id),
            "fleet_aggregate_version": str(event.originator_version),
            "fleet_event": type(event).__qualname__,
        },
    }
    data = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return IntegrationEvent(subject, key, data.encode())


_ENVELOPE_FIELDS = frozenset(
    {"event_type", "payload", "idempotency_key", "correlation_id", "causation_id", "timestamp",
     "producer", "metadata"}
)  # fmt: skip


def _iso(t: datetime) -> str:
    return t.isoformat()


# ---------------------------------------------------------------------------- plans, stories


def _plan_approved(e: Plan.Approved, position: int) -> IntegrationEvent:
    payload: Payload = {
        "plan_id": e.plan_id,
        "story_id": e.story_id,
        "approved_by": e.approved_by,
        "roles": list(e.roles),
        "description": e.description,
        "tasks": list(e.tasks),
        "metadata": dict(e.metadata),
        "timestamp": e.approved_at.timestamp(),
    }
    return envelope(
        PLAN_APPROVED,
        e,
        position,
        entity_id=e.plan_id,
        operation="",
        correlation_id=e.plan_id,
        payload=payload,
    )


def _plan_skipped(
    e: Plan.RoleSkipped | Plan.NothingDispatched, position: int, history: History
) -> IntegrationEvent:
    """A role of the plan got no deliberation (``role`` set), or the whole plan got none
    (``role`` empty), and why: the seed skipped such work with a warning; this says so."""
    # A plan's version 1 is the event that created it: its approval.
    approved = cast(Plan.Approved, next(iter(history(e.originator_id, 1))))
    role = getattr(e, "role", "")
    payload: Payload = {
        "plan_id": approved.plan_id,
        "story_id": approved.story_id,
        "role": role,
        "reason": e.reason,
        "timestamp": e.timestamp.timestamp(),
    }
    return envelope(
        PLAN_SKIPPED,
        e,
        position,
        entity_id=approved.plan_id,
        operation=role or "plan",
        correlation_id=approved.plan_id,
        payload=payload,
    )


def _phase_changed(e: Story.PhaseChanged, position: int) -> IntegrationEvent:
    payload: Payload = {
        "story_id": e.story_id,
        "from_phase": e.from_phase,
        "to_phase": e.to_phase,
        "timestamp": e.at.timestamp(),
    }
    return envelope(
        PHASE_CHANGED,
        e,
        position,
        entity_id=e.story_id,
        # The n-th change of the story: the same two phases may follow each other again later.
        operation=f"{e.from_phase}->{e.to_phase}:v{e.originator_version}",
        correlation_id=e.story_id,
        payload=payload,
    )


# ---------------------------------------------------------------------------- deliberations


class _Folded:
    """What a deliberation's outbox messages need from its events up to the one published."""

    def __init__(self, events: Sequence[object]) -> None:
        self._requested: Deliberation.Requested | None = None
        self.agents: list[str] = []
        self.contents: dict[str, str] = {}
        self.scores: dict[str, float] = {}
        self.checks: dict[str, list[dict[str, object]]] = {}
        self.architect: object | None = None
        """The architect's last event (read by name and field: see ``ARCHITECT_PREFIX``)."""
        for x in events:
            self._apply(x)

    @property
    def requested(self) -> Deliberation.Requested:
        """The deliberation's first event (every deliberation has one)."""
        if self._requested is None:
            raise AttributeError("the deliberation's events hold no Requested")
        return self._requested

    def _apply(self, x: object) -> None:
        if isinstance(x, Deliberation.Requested):
            self._requested = x
        elif isinstance(x, Deliberation.Started):
            self.agents = list(x.agents)
        elif isinstance(x, Deliberation.ProposalReceived):
            self.contents[x.agent_id] = x.content  # a revision replaces the agent's earlier one
        elif isinstance(x, Deliberation.ProposalScored):
            self.scores[x.agent_id] = x.score
            self.checks[x.agent_id] = list(x.checks)
        elif type(x).__name__.startswith(ARCHITECT_PREFIX):
            self.architect = x  # the last one counts (a fallback after a failed call, say)

    def common(self, e: FleetEvent) -> Payload:
        r = self.requested
        return {
            "task_id": r.task_id,
            "story_id": r.story_id,
            "plan_id": r.plan_id,
            "role": r.role,
            "deliberation_id": str(e.originator_id),
        }

    def duration_ms(self, e: FleetEvent) -> int:
        seconds: float = (e.timestamp - self.requested.timestamp).total_seconds()
        return max(0, round(seconds * 1000))

    def checks_passed(self, agent_id: str) -> bool:
        """Every applicable check ran and passed (``all_checks_passed``): a check that did not
        run (no sandbox, not applicable) is never counted as passed."""
        return all_checks_passed([CheckOutcome.from_dict(c) for c in self.checks.get(agent_id, [])])


def _dispatched(d: _Folded, e: FleetEvent, position: int) -> IntegrationEvent:
    r = d.requested
    payload = d.common(e) | {
        "agent_id": f"council:{r.role}",
        "agents": list(d.agents) or [],
        "num_agents": r.num_agents,
        "rounds": r.rounds,
        "timestamp": e.timestamp.timestamp(),
    }
    return _deliberation_envelope(TASK_DISPATCHED, d, e, position, payload)


def _deliberation_completed(
    d: _Folded, e: Deliberation.Completed, position: int
) -> IntegrationEvent:
    r = d.requested
    winner = e.winner
    architect = _architect(d.architect)
    rationale = architect["rationale"] if architect else ""
    if not rationale:
        score = d.scores.get(winner)
        shown = f"{score:.3f}" if score is not None else "unscored"
        rationale = f"Highest-ranked proposal of the {r.role} council (score {shown})."
    decision = {
        "id": f"{r.task_id}:decision",
        "type": f"{r.role}_DECISION",
        "rationale": rationale,
        "affected_subtask": r.task_id,
        "content": d.contents.get(winner, ""),
        "agent_id": winner,
        "score": d.scores.get(winner),
        "checks_passed": d.checks_passed(winner),
    }
    payload = d.common(e) | {
        "decisions": [decision],
        "winner": winner,
        "ranking": list(e.ranking),
        "scores": dict(d.scores),
        "architect": architect,
        "duration_ms": d.duration_ms(e),
        "timestamp": e.timestamp.timestamp(),
    }
    return _deliberation_envelope(DELIBERATION_COMPLETED, d, e, position, payload)


class _Architect(TypedDict):
    """The architect's choice in ``orchestration.deliberation.completed``."""

    winner: str
    rationale: str
    candidates: list[str]
    architect_id: str
    fallback: bool
    fallback_reason: str


def _architect(x: object | None) -> _Architect | None:
    """The architect's choice, read tolerantly (field names as recorded; absent ones empty)."""
    if x is None:
        return None
    reason = getattr(x, "fallback_reason", None) or getattr(x, "reason", None) or ""
    name = type(x).__name__
    fallback = bool(getattr(x, "fallback", False) or reason or "Fallback" in name)
    return {
        "winner": str(getattr(x, "winner", "")),
        "rationale": str(getattr(x, "rationale", "")),
        "candidates": [str(c) for c in getattr(x, "candidates", []) or []],
        "architect_id": str(getattr(x, "architect_id", "")),
        "fallback": fallback,
        "fallback_reason": str(reason),
    }


def _task_completed(d: _Folded, e: Deliberation.Completed, position: int) -> IntegrationEvent:
    payload = d.common(e) | {
        "agent_id": e.winner,
        "duration_ms": d.duration_ms(e),
        "checks_passed": d.checks_passed(e.winner),
        "timestamp": e.timestamp.timestamp(),
    }
    return _deliberation_envelope(TASK_COMPLETED, d, e, position, payload)


def _task_failed(
    d: _Folded, e: _Failure, position: int, subject: str, error_type: str
) -> IntegrationEvent:
    if isinstance(e, Deliberation.TimedOut):
        missing = ", ".join(e.missing) or "none"
        error = f"deadline passed with {len(e.received)} answer(s); missing: {missing}"
    else:
        error = e.reason
    payload = d.common(e) | {
        "agent_id": "",
        "duration_ms": d.duration_ms(e),
        "checks_passed": False,
        "error": error,
        "error_type": error_type,
        "timestamp": e.timestamp.timestamp(),
    }
    return _deliberation_envelope(subject, d, e, position, payload)


def _deliberation_envelope(
    subject: str, d: _Folded, e: FleetEvent, position: int, payload: Payload
) -> IntegrationEvent:
    d_id = str(e.originator_id)
    return envelope(
        subject,
        e,
        position,
        entity_id=d_id,
        operation="",
        correlation_id=d_id,
        payload=payload,
    )
