"""Deliberations driven through a POPO FleetApplication, shared by unit and integration tests.

Each scenario saves after every command (as the real dispatcher does), so events land at distinct
positions, and returns the deliberation id and the last position it wrote.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

from aggregates import AgentAnswer, AgentId, CheckOutcome, Deliberation, PeerReview
from application.app import FleetApplication

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
    app: FleetApplication, *, plan_id: str = "", ago: timedelta | None = None, rounds: int = 1
) -> Deliberation:
    d = Deliberation.request(
        task_id=f"task-{uuid4().hex[:8]}",
        task="Write a function that adds two numbers",
        role="DEV",
        num_agents=3,
        rounds=rounds,
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
        answer=AgentAnswer(
            content=f"def add(a, b):\n    return a + b  # {agent} v{n}",
            model="gemma-3-270m",
            tokens=40 + n,
            latency_ms=100 * n,
        ),
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
            agent_id=agents[0],
            round=0,
            answer=AgentAnswer(content="late", model="m", tokens=1, latency_ms=1),
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


def in_progress(app: FleetApplication) -> Run:
    """request → start → one proposal: a deliberation still running."""
    d = _request(app)
    d.start()
    _save(app, d)
    _propose(app, d, d.agents[0], 1)
    return Run(d.id, app.recorder.max_notification_id() or 0)


def debated(app: FleetApplication, *, rated: bool = True) -> Run:
    """A plan's two-round deliberation: proposals, critiques, two revisions (the third agent
    keeps its round-0 proposal), peer ratings, scores, complete, then a late revision. With
    ``rated=False`` no critique carries a rating (a model that gave none)."""
    d = _request(app, plan_id=f"plan-{uuid4().hex[:6]}", rounds=2)
    d.start()
    _save(app, d)
    agents = d.agents
    for i, a in enumerate(agents):
        _propose(app, d, a, i + 1)
    for k, a in enumerate(agents):
        reviews = [
            PeerReview(
                reviewer=a, target=b, score=0.25 * (k + 1) if rated else None, text=f"{a} on {b}"
            )
            for b in agents
            if b != a
        ]
        d.receive_critique(agent_id=a, round=1, reviews=reviews, model="gemma-3-270m")
        _save(app, d)
    for i, a in enumerate(agents[:2]):
        d.revise_proposal(
            agent_id=a,
            round=1,
            addressed=list(agents),
            answer=AgentAnswer(
                content=f"def add(a, b):\n    return b + a  # {a} r1",
                model="gemma-3-270m-r",
                tokens=60 + i,
                latency_ms=300 + i,
            ),
        )
        _save(app, d)
    d.receive_ratings(agent_id=agents[0], reviews=[], error="rating call timed out")
    _save(app, d)
    for a, s in zip(agents, (0.4, 0.8, 0.6), strict=True):
        _score(app, d, a, s)
    d.complete()
    _save(app, d)
    d.revise_proposal(
        agent_id=agents[2],
        round=1,
        answer=AgentAnswer(content="too late", model="m", tokens=1, latency_ms=1),
    )
    return Run(d.id, _save(app, d))
