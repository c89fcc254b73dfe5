"""Fold one Deliberation event into a ``DeliberationView``: the cache projection's pure core.

``evolve(view, event)`` returns the next view, or None when the view cannot be brought forward
from what it has (no entry, because it expired or was lost, or an entry at a version other than
the event's predecessor). None means "drop the entry": a missing entry is always correct, since
readers fall back to a replay, while a guessed one could be wrong. Equality with
``view_from_aggregate`` after every event is what the tests check.

Views are copied with ``_with``, not ``dataclasses.replace``: ``replace`` re-runs the frozen
``__init__`` (one ``object.__setattr__`` per field, 25 of them), which was the largest cost of a
cache catch-up (~25 µs per event, more than the Valkey write). The views have no
``__post_init__`` and no derived state, so copying the instance dict is the same value.
"""

from __future__ import annotations

from dataclasses import fields
from datetime import datetime
from functools import singledispatch
from typing import TypedDict, TypeVar

from aggregates import CheckOutcome, Deliberation, DeliberationStatus
from application.views import DeliberationView, FailureView, ResultView
from projectors.events import is_deliberation_event

__all__ = ["evolve", "handles"]

_V = TypeVar("_V", DeliberationView, ResultView)


_FIELDS = {cls: frozenset(f.name for f in fields(cls)) for cls in (DeliberationView, ResultView)}


def _with(view: _V, **changes: object) -> _V:
    """``dataclasses.replace`` for the frozen views, without re-running ``__init__``."""
    if not changes.keys() <= _FIELDS[type(view)]:
        msg = f"{type(view).__name__} has no field {sorted(changes.keys() - _FIELDS[type(view)])}"
        raise TypeError(msg)
    new = object.__new__(type(view))
    state = new.__dict__
    state.update(view.__dict__)
    state.update(changes)
    return new


def handles(event: object) -> bool:
    """True for Deliberation's events, known to the fold or not yet."""
    return is_deliberation_event(event)


def evolve(view: DeliberationView | None, event: object) -> DeliberationView | None:
    """The view after ``event``; None when the entry must be dropped (see the module docstring)."""
    if isinstance(event, Deliberation.Requested):
        return _requested(event)
    if view is None:
        return None
    version = getattr(event, "originator_version", None)
    if version != view.version + 1 or getattr(event, "originator_id", None) != view.deliberation_id:
        return None
    changes = _step(event, view)
    return _with(view, **changes, version=version, updated_at=event.timestamp)  # type: ignore[attr-defined]


def _requested(e: Deliberation.Requested) -> DeliberationView:
    return DeliberationView(
        deliberation_id=e.originator_id,
        task_id=e.task_id,
        task=e.task,
        role=e.role,
        status=DeliberationStatus.PENDING,
        num_agents=e.num_agents,
        rounds=e.rounds,
        plan_id=e.plan_id,
        story_id=e.story_id,
        requested_by=e.requested_by,
        deadline=e.deadline,
        created_at=e.timestamp,
        updated_at=e.timestamp,
        version=e.originator_version,
    )


def _default_agents(view: DeliberationView) -> tuple[str, ...]:
    # Mirrors Deliberation.default_agents (a proposal before Started implies the default council).
    return tuple(f"{view.role.lower()}-agent-{i + 1}" for i in range(view.num_agents))


class _Changes(TypedDict, total=False):
    """The fields of a ``DeliberationView`` that one event changes (``_step``'s answer)."""

    agents: tuple[str, ...]
    status: DeliberationStatus
    results: tuple[ResultView, ...]
    failures: tuple[FailureView, ...]
    winner: str | None
    ranking: tuple[str, ...]
    missing: tuple[str, ...]
    late: tuple[str, ...]
    reason: str
    finished_at: datetime | None


@singledispatch
def _step(event: object, view: DeliberationView) -> _Changes:
    """The fields ``event`` changes (``evolve`` adds ``version`` and ``updated_at``)."""
    # Unknown event of this aggregate: it changes nothing we show, but its version still counts.
    return {}


@_step.register
def _(e: Deliberation.Started, view: DeliberationView) -> _Changes:
    return dict(agents=tuple(e.agents), status=DeliberationStatus.IN_PROGRESS)


@_step.register
def _(e: Deliberation.ProposalReceived, view: DeliberationView) -> _Changes:
    current = view.result(e.agent_id)
    agents = view.agents or _default_agents(view)
    if current is not None and current.round > e.round:  # an older round: not the final one
        return dict(agents=agents, status=DeliberationStatus.IN_PROGRESS)
    result = ResultView(
        agent_id=e.agent_id,
        round=e.round,
        content=e.content,
        model=e.model,
        tokens=e.tokens,
        latency_ms=e.latency_ms,
        received_at=e.timestamp,
        revisions=() if current is None else (*current.revisions, current.content),
    )
    others = [r for r in view.results if r.agent_id != e.agent_id]
    results = tuple(sorted([*others, result], key=lambda r: r.agent_id))
    return dict(agents=agents, status=DeliberationStatus.IN_PROGRESS, results=results)


@_step.register
def _(e: Deliberation.LateProposalReceived, view: DeliberationView) -> _Changes:
    return dict(late=(*view.late, e.agent_id))


@_step.register
def _(e: Deliberation.AgentFailed, view: DeliberationView) -> _Changes:
    failure = FailureView(agent_id=e.agent_id, round=e.round, error=e.error)
    failures = tuple(sorted([*view.failures, failure], key=lambda f: (f.round, f.agent_id)))
    return dict(
        agents=view.agents or _default_agents(view),
        status=DeliberationStatus.IN_PROGRESS,
        failures=failures,
    )


@_step.register
def _(e: Deliberation.ProposalScored, view: DeliberationView) -> _Changes:
    checks = tuple(CheckOutcome.from_dict(c) for c in e.checks)
    results = tuple(
        _with(r, score=e.score, checks=checks) if r.agent_id == e.agent_id else r
        for r in view.results
    )
    return dict(results=results)


@_step.register
def _(e: Deliberation.Completed, view: DeliberationView) -> _Changes:
    ranks = {agent: i + 1 for i, agent in enumerate(e.ranking)}
    results = tuple(_with(r, rank=ranks.get(r.agent_id)) for r in view.results)
    return dict(
        status=DeliberationStatus.COMPLETED,
        winner=e.winner,
        ranking=tuple(e.ranking),
        results=results,
        finished_at=e.timestamp,
    )


@_step.register
def _(e: Deliberation.TimedOut, view: DeliberationView) -> _Changes:
    return dict(
        status=DeliberationStatus.TIMEOUT,
        missing=tuple(e.missing),
        finished_at=e.timestamp,
    )


@_step.register
def _(e: Deliberation.Failed, view: DeliberationView) -> _Changes:
    return dict(status=DeliberationStatus.FAILED, reason=e.reason, finished_at=e.timestamp)


@_step.register
def _(e: Deliberation.Cancelled, view: DeliberationView) -> _Changes:
    return dict(status=DeliberationStatus.CANCELLED, reason=e.reason, finished_at=e.timestamp)
