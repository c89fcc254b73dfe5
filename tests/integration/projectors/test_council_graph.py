"""Councils in the graph, over time: a Council node per role, one MEMBER_OF link per membership
(when it began and ended), and each deliberation linked to the council and members it started
with; ``verify`` checks all of it against the events and finds a membership edited by hand.

Real graphs (LadybugDB and Neo4j), the projector's own runner."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from aggregates import Council, CouncilSettings, Deliberation
from application.app import FleetApplication
from application.council_store import view_of
from dispatchers.councils import seat
from projectors import GraphProjection, ProjectorRunner
from projectors.control import Projections
from projectors.graph.port import DecisionGraph
from projectors.verify import verify
from tests.fixtures.graphs import behind_fleets_back
from tests.unit.projectors import scenarios

pytestmark = pytest.mark.timeout(60)


def _project(app: FleetApplication, graph: DecisionGraph) -> Projections:
    runner = ProjectorRunner(app, GraphProjection(graph))
    projections = Projections(app, [runner])
    runner.start()
    projections.wait(app.recorder.max_notification_id() or 0, timeout=30)
    return projections


def test_councils_and_memberships_over_time_and_verify(graph: DecisionGraph) -> None:
    app = scenarios.popo_app()
    c = Council.create("DEV", CouncilSettings(model="m"))
    for aid in ("agent-dev-001", "agent-dev-002"):
        c.register(aid)
    app.save(c)
    d = Deliberation.request(
        task_id="seated",
        task="write fib",
        role="DEV",
        num_agents=3,
        rounds=1,
        requested_at=datetime.now(UTC),
        timeout_seconds=60,
    )
    seating = seat(view_of(c), 3)
    assert seating is not None
    d.start(seating.agents, seats=seating.seats, council_version=seating.council_version)
    app.save(d)
    c.unregister("agent-dev-002")
    c.register("agent-dev-009", endpoint="http://e:1")
    c.reconfigure("agent-dev-001", model="big")
    app.save(c)
    qa = Council.create("QA")
    qa.register("agent-qa-001")
    qa.delete()
    app.save(qa)
    projections = _project(app, graph)
    try:
        rows = graph.query(
            "MATCH (a:Agent)-[m:MEMBER_OF]->(c:Council) "
            "RETURN c.role AS role, a.id AS agent, m.until <> '' AS left, m.model AS model "
            "ORDER BY role, agent",
            None,
            limit=100,
        )
        assert [(r["role"], r["agent"], r["left"], r["model"]) for r in rows] == [
            ("DEV", "agent-dev-001", False, "big"),
            ("DEV", "agent-dev-002", True, ""),
            ("DEV", "agent-dev-009", False, ""),
            ("QA", "agent-qa-001", True, ""),
        ]
        status = graph.query(
            "MATCH (c:Council) RETURN c.role AS role, c.status AS status ORDER BY role",
            None,
            limit=9,
        )
        assert [(r["role"], r["status"]) for r in status] == [("DEV", "active"), ("QA", "deleted")]
        sat = graph.query(
            "MATCH (a:Agent)-[s:SAT_IN]->(d:Deliberation {task_id: 'seated'}) "
            "MATCH (c:Council)-[v:CONVENED]->(d) "
            "RETURN a.id AS agent, s.seat AS seat, c.role AS role, v.version AS version "
            "ORDER BY seat",
            None,
            limit=9,
        )
        assert [(r["agent"], r["seat"], r["role"], r["version"]) for r in sat] == [
            ("agent-dev-001", "agent-dev-001", "DEV", 3),
            ("agent-dev-001", "agent-dev-001.2", "DEV", 3),
            ("agent-dev-002", "agent-dev-002", "DEV", 3),
        ]
        report = verify(app, graph=graph)
        assert report.ok, report.differences

        behind_fleets_back(
            graph,
            "MATCH (a:Agent {id: 'agent-dev-009'})-[m:MEMBER_OF]->(c:Council) "
            "SET m.until = '2020-01-01'",
        )
        tampered = verify(app, graph=graph)
        details = [x.detail for x in tampered.differences]
        assert len(details) == 1 and details[0].startswith("councils: MEMBER_OF[agent-dev-009")
        assert ".until" in details[0]
    finally:
        projections.close()
