"""The statistics fold over real events (the in-memory application): counts, times, windows,
percentiles, busy agents and success rates are what the events say."""

from __future__ import annotations

from datetime import timedelta

from aggregates import AgentAnswer, AgentId
from application.councils import CouncilAgentView, CouncilView
from application.stats import (
    DeliberationStats,
    agent_metrics,
    council_health,
    percentile,
    performance,
    since,
)
from tests.support.deliberations import requested

DEV = CouncilView(
    "council-dev", "DEV", tuple(CouncilAgentView(f"dev-agent-{i}", "DEV") for i in (1, 2))
)


def test_counts_times_windows_and_health_follow_the_events() -> None:
    stats = DeliberationStats()
    done = requested("s-1", num_agents=2)
    done.orchestrate(architect_k=0)
    done.start()
    done.receive_proposal(
        agent_id=AgentId("dev-agent-1"), round=0, answer=AgentAnswer("p", "m", 1, 40)
    )
    done.fail_agent(agent_id=AgentId("dev-agent-2"), round=0, error="down")
    done.score(agent_id=AgentId("dev-agent-1"), score=0.5, checks=[])
    done.complete()
    running = requested("s-2", num_agents=2)
    running.start()
    for e in [*done.collect_events(), *running.collect_events()]:
        stats.apply(e)

    assert (stats.total, stats.orchestrations, dict(stats.role_counts)) == (2, 1, {"DEV": 2})
    (ended,) = stats.finished
    assert ended.orchestrated and stats.avg_ms == ended.duration_ms
    p = performance(stats, None)
    assert p.avg_orchestration_ms == p.avg_deliberation_ms == p.p99_ms == ended.duration_ms
    later = since(ended.at + timedelta(hours=1), 1000)
    assert performance(stats, later).avg_deliberation_ms == 0.0  # outside the window
    a = agent_metrics(stats, [DEV], None)
    assert (a.total, a.active, a.avg_response_ms) == (2, 1, 40.0)
    h = council_health(stats, [DEV], None)["council-dev"]
    assert (h.status, h.busy, h.available, h.success_rate) == ("busy", 2, 0, 0.5)


def test_percentiles_are_nearest_rank() -> None:
    xs = [float(x) for x in range(1, 101)]
    assert (percentile(xs, 50), percentile(xs, 95), percentile(xs, 99)) == (50.0, 95.0, 99.0)
    assert percentile([], 50) == 0.0
