"""Deliberations driven through a POPO FleetApplication, shared by unit and integration tests.

Each scenario saves after every command (as the real dispatcher does), so events land at distinct
positions, and returns the deliberation id and the last position it wrote.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

from aggregates import AgentId, CheckOutcome, Deliberation
from fleet.application import FleetApplication

POPO = {"PERSISTENCE_MODULE": "eventsourcing.popo"}


def popo_app() -> FleetApplication:
    return FleetApplication(env=POPO)


@dataclass(frozen=True)
class Run:
    deliberation_id: UUID
    position: int


def _save(app: FleetApplication, d: Deliberation) -> int:
    recordings = app.save(d)
    return max(r.notification.id for r in recordings)


def _request(
    app: FleetApplication, *, plan_id: str = "", ago: timedelta | None = None
) -> Deliberation:
    d = Deliberation.request(
        task_id=f"task-{uuid4().hex[:8]}",
        task="Write a function that adds two numbers",
        role="DEV",
        num_agents=3,
        rounds=1,
        requested_at=datetime.now(UTC) - (ago or timedelta()),
        timeout_seconds=60,
        rubric="correct and short",
        plan_id=plan_id,
        story_id="story-1" if plan_id else "",
        requested_by="tests",
    )
    _save(app, d)
    return d


def _propose(app: FleetApplication, d: Deliberation, agent: str, n: int) -> None:
    d.receive_proposal(
        agent_id=AgentId(agent),
        round=0,
        content=f"def add(a, b):\n    return a + b  # {agent} v{n}",
        model="gemma-3-270m",
        tokens=40 + n,
        latency_ms=100 * n,
    )
    _save(app, d)


def _score(app: FleetApplication, d: Deliberation, agent: str, score: float) -> None:
    check = CheckOutcome(check_type="lint", passed=score > 0.5, score=score, message="ok")
    d.score(agent_id=AgentId(agent), score=score, checks=[check])
    _save(app, d)


def completed(app: FleetApplication, *, late: bool = True) -> Run:
    """request → start → 3 proposals → 3 scores → complete (→ a late proposal)."""
    d = _request(app, plan_id=f"plan-{uuid4().hex[:6]}")
    d.start()
    _save(app, d)
    agents = d.agents
    for i, a in enumerate(agents):
        _propose(app, d, a, i + 1)
    for a, s in zip(agents, (0.6, 0.9, 0.3), strict=True):
        _score(app, d, a, s)
    d.complete()
    position = _save(app, d)
    if late:
        d.receive_proposal(
            agent_id=agents[0], round=0, content="late", model="m", tokens=1, latency_ms=1
        )
        position = _save(app, d)
    return Run(d.id, position)


def timed_out(app: FleetApplication) -> Run:
    """request → start → 2 of 3 proposals, one scored → time out past the deadline."""
    d = _request(app, ago=timedelta(hours=1))
    d.start()
    _save(app, d)
    _propose(app, d, d.agents[0], 1)
    _propose(app, d, d.agents[2], 2)
    _score(app, d, d.agents[0], 0.7)
    d.time_out(datetime.now(UTC))
    return Run(d.id, _save(app, d))


def all_failed(app: FleetApplication) -> Run:
    """request → start → every agent fails → complete() records FAILED."""
    d = _request(app)
    d.start()
    _save(app, d)
    for a in d.agents:
        d.fail_agent(agent_id=a, round=0, error=f"{a}: HTTP 503")
        _save(app, d)
    d.complete()
    return Run(d.id, _save(app, d))
