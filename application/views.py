"""What readers see of one deliberation: a frozen, typed view, equal to the replay of its events.

The same ``DeliberationView`` comes out of three places, and they must agree: the cache projection
folds events into it (``projectors.cache.fold``), ``view_from_aggregate`` builds it from a replayed
aggregate (the readers' fallback on a cache miss, and verification), and the Valkey board decodes
it from a hash (``projectors.cache.codec``). Tests hold the three equal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

from aggregates import CheckOutcome, Deliberation, DeliberationStatus

__all__ = ["DeliberationView", "FailureView", "ResultView", "view_from_aggregate"]


@dataclass(frozen=True)
class ResultView:
    """One agent's final proposal (its latest round), with its score and rank once known."""

    agent_id: str
    round: int
    content: str
    model: str
    tokens: int
    latency_ms: int
    score: float | None = None
    """None until the proposal is scored."""
    rank: int | None = None
    """1 for the winner; None until the deliberation completes."""
    checks: tuple[CheckOutcome, ...] = ()
    received_at: datetime | None = None
    """When this (final) proposal was received: its event's time, not the deliberation's."""
    revisions: tuple[str, ...] = ()
    """The agent's earlier versions of it (its proposals of earlier rounds), oldest first."""


@dataclass(frozen=True)
class FailureView:
    """An agent that could not answer a round, and why."""

    agent_id: str
    round: int
    error: str


@dataclass(frozen=True)
class DeliberationView:
    """A deliberation's status and results at aggregate ``version``.

    ``position`` is where the cache projection stood when it wrote the entry; it is not part of
    the deliberation, so it takes no part in equality (a view built from a replay has none).
    """

    deliberation_id: UUID
    task_id: str
    task: str
    role: str
    status: DeliberationStatus
    num_agents: int
    rounds: int
    plan_id: str
    story_id: str
    requested_by: str
    deadline: datetime
    created_at: datetime
    updated_at: datetime
    version: int
    agents: tuple[str, ...] = ()
    results: tuple[ResultView, ...] = ()
    """Each agent's final proposal, ordered by agent id (``ranking`` gives the winner's order)."""
    failures: tuple[FailureView, ...] = ()
    """Ordered by (round, agent id)."""
    winner: str | None = None
    ranking: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    """Agents with no proposal when the deliberation timed out."""
    late: tuple[str, ...] = ()
    """Agents whose proposal came after the deliberation closed (kept, changes nothing)."""
    reason: str = ""
    """Why it failed or was cancelled."""
    finished_at: datetime | None = None
    position: int | None = field(default=None, compare=False)

    @property
    def is_terminal(self) -> bool:
        return self.status.is_terminal

    @property
    def duration_ms(self) -> int | None:
        """Milliseconds from request to the terminal event; None while it runs."""
        if self.finished_at is None:
            return None
        return int((self.finished_at - self.created_at).total_seconds() * 1000)

    def result(self, agent_id: str) -> ResultView | None:
        return next((r for r in self.results if r.agent_id == agent_id), None)


def view_from_aggregate(aggregate: Deliberation) -> DeliberationView:
    """Build the view from a replayed aggregate: the fallback on a cache miss, and the yardstick.

    Pure. The cache entry written at the same aggregate version must equal this.
    """
    ranks = {agent: i + 1 for i, agent in enumerate(aggregate.ranking)}
    final = aggregate.final_proposals()
    earlier: dict[str, list[str]] = {}
    for (agent, _), p in sorted(aggregate.proposals.items(), key=lambda kv: kv[0][1]):
        if p is not final[agent]:
            earlier.setdefault(str(agent), []).append(p.content)
    results = tuple(
        ResultView(
            agent_id=str(p.agent_id),
            round=p.round,
            content=p.content,
            model=p.model,
            tokens=p.tokens,
            latency_ms=p.latency_ms,
            score=p.score,
            rank=ranks.get(p.agent_id),
            checks=tuple(p.checks),
            received_at=p.received_at,
            revisions=tuple(earlier.get(str(p.agent_id), ())),
        )
        for _, p in sorted(final.items())
    )
    failures = tuple(
        FailureView(agent_id=str(f.agent_id), round=f.round, error=f.error)
        for f in sorted(aggregate.failures.values(), key=lambda f: (f.round, f.agent_id))
    )
    return DeliberationView(
        deliberation_id=aggregate.id,
        task_id=aggregate.task_id,
        task=aggregate.task,
        role=aggregate.role.value,
        status=aggregate.status,
        num_agents=aggregate.num_agents,
        rounds=aggregate.rounds,
        plan_id=aggregate.plan_id,
        story_id=aggregate.story_id,
        requested_by=aggregate.requested_by,
        deadline=aggregate.deadline,
        created_at=aggregate.created_on,
        updated_at=aggregate.modified_on,
        version=aggregate.version,
        agents=tuple(str(a) for a in aggregate.agents),
        results=results,
        failures=failures,
        winner=str(aggregate.winner) if aggregate.winner is not None else None,
        ranking=tuple(str(a) for a in aggregate.ranking),
        missing=tuple(str(a) for a in aggregate.missing),
        late=tuple(str(a) for a in aggregate.late),
        reason=aggregate.reason,
        finished_at=aggregate.finished_at,
    )
