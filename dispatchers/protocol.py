"""The deliberation protocol's pure parts: the changes a driver records (Started, the scores,
the decision) and what the steps read of a deliberation's proposals.

The steps themselves (proposals, critiques and revisions, ratings, scores, the decision) are
the driver's (``driver.DeliberationDriver``), one per deliberation, supervised by the dispatcher
(``deliberations``); its agent calls are built in ``calls``, the architect's step is
``architect``. See ``deliberations``' module docstring for the order of the steps and the
latency work behind it.
"""

from __future__ import annotations

from collections.abc import Callable

from agent_runtime.api import Assessment, AssessmentInput
from aggregates import AgentId, Deliberation
from dispatchers.councils import Seating

__all__ = [
    "StaleCopyError",
    "complete",
    "decision",
    "latest_proposals",
    "score_changes",
    "start_change",
    "start_seated",
]


class StaleCopyError(Exception):
    """A score computed from the driver's copy does not match the stored deliberation."""


def score_changes(
    assessments: list[Assessment], *, basis: AssessmentInput | None
) -> list[Callable[[Deliberation], None]]:
    """A change recording each assessment's score. With ``basis`` (what was assessed), each
    first checks that the stored deliberation holds exactly those proposals and ratings."""

    def score(a: Assessment) -> Callable[[Deliberation], None]:
        agent = AgentId(a.agent_id)

        def change(d: Deliberation) -> None:
            if basis is not None:
                _require_assessed(d, basis)
            if d.final_proposals()[agent].score is None:  # a restart may find it scored
                d.score(agent_id=agent, score=a.score, checks=list(a.checks))

        return change

    return [score(a) for a in assessments]


def _require_assessed(d: Deliberation, basis: AssessmentInput) -> None:
    final = d.final_proposals()
    for c in basis.candidates:
        agent = AgentId(c.agent_id)
        p = final.get(agent)
        if p is None or p.content != c.content or tuple(d.ratings_of(agent)) != c.peer_reviews:
            raise StaleCopyError(f"deliberation {d.id}: {agent} was scored from an older state")


def complete(d: Deliberation) -> None:
    d.complete()


def decision(d: Deliberation) -> list[Callable[[Deliberation], None]]:
    """The decision that follows the scores at once: none in an orchestration with an architect
    (its step, ``architect.ArchitectStep``, comes between)."""
    return [] if d.architect_k > 0 else [complete]


def start_change(d: Deliberation) -> Deliberation:
    d.start()  # idempotent: a no-op once started, or closed
    return d


def start_seated(d: Deliberation, *, seating: Seating) -> Deliberation:
    """Start with the council's members (``councils.seat``), recorded in Started."""
    d.start(seating.agents, seats=seating.seats, council_version=seating.council_version)
    return d


def latest_proposals(d: Deliberation, *, before_round: int) -> dict[AgentId, str]:
    """Each agent's latest proposal from the rounds before ``before_round``."""
    latest: dict[AgentId, str] = {}
    for (agent, r), p in sorted(d.proposals.items(), key=lambda kv: kv[0][1]):
        if r < before_round:
            latest[agent] = p.content
    return latest
