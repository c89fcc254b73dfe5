"""Decisions in the graph: a plan from its approval on (before any deliberation of it ends), the
architect's choice with its rationale, the peer ratings; ``fleet verify`` finding a change to
any of them; a rebuild giving the same graph; and the queries of docs/graph-queries.md
answering."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from aggregates import AgentAnswer, CheckOutcome, Deliberation, PeerReview, Plan
from application.app import FleetApplication
from projectors import GraphProjection, ProjectorRunner
from projectors.control import Projections
from projectors.graph.port import DecisionGraph
from projectors.verify import VerifyReport, story_differences, verify
from tests.fixtures.graphs import behind_fleets_back
from tests.unit.projectors import scenarios

ROOT = Path(__file__).resolve().parents[3]
APPROVED_AT = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)

APPROVER = """
MATCH (s:Story)-[:HAS_PLAN]->(p:Plan {id: $plan})
RETURN p.approved_by AS approved_by, p.approved_at AS approved_at, p.roles AS roles,
    s.id AS story
"""


@dataclass
class Recorded:
    app: FleetApplication
    graph: DecisionGraph
    projections: Projections
    chosen: UUID
    fell_back: UUID

    def wait(self) -> None:
        self.projections.wait(self.app.recorder.max_notification_id() or 0, timeout=30)

    def verify(self) -> VerifyReport:
        report = verify(self.app, graph=self.graph)
        report.differences += story_differences(self.app, self.graph)
        return report


def _save(app: FleetApplication, *aggregates: Any) -> None:
    app.save(*aggregates)


def _approve(app: FleetApplication, plan_id: str) -> Plan:
    plan = Plan.approve(
        plan_id=plan_id, story_id="story-9", approved_by="alice@planning",
        approved_at=APPROVED_AT, roles=["DEV", "QA"], description="Log-in page",
        tasks=["form", "session"],
    )  # fmt: skip
    _save(app, plan)
    return plan


def _deliberation(app: FleetApplication, plan_id: str, role: str) -> Deliberation:
    d = Deliberation.request(
        task_id=f"plan:{plan_id}:{role}", task="Build the log-in page", role=role,
        num_agents=3, rounds=1, requested_at=datetime.now(UTC), timeout_seconds=60,
        plan_id=plan_id, story_id="story-9", requested_by="plans",
    )  # fmt: skip
    d.orchestrate(architect_k=3)
    _save(app, d)
    d.start()
    _save(app, d)
    return d


def _decide(app: FleetApplication, d: Deliberation, *, architect: bool) -> None:
    """Proposals, final ratings (one unscored), scores, then the architect's choice or the
    fallback, then the decision."""
    agents = d.agents
    for k, a in enumerate(agents):
        answer = AgentAnswer(
            content=f"{d.role.value} plan by {a}", model="m", tokens=9, latency_ms=5 + k
        )
        d.receive_proposal(agent_id=a, round=0, answer=answer)
        _save(app, d)
    for k, a in enumerate(agents):
        reviews = [
            PeerReview(reviewer=a, target=b, score=None if (k, j) == (2, 0) else 0.2 * (j + 1),
                       text=f"{a} thinks {b} is fine")
            for j, b in enumerate(agents) if b != a
        ]  # fmt: skip
        d.receive_ratings(agent_id=a, reviews=reviews, model="m")
        _save(app, d)
    for a, s in zip(agents, (0.5, 0.9, 0.7), strict=True):
        d.score(
            agent_id=a, score=s, checks=[CheckOutcome(check_type="lint", passed=True, score=1.0)]
        )
        _save(app, d)
    if architect:
        d.select_by_architect(
            winner=agents[2], rationale="simplest session handling", architect_id="architect-1",
            model="m", latency_ms=40,
        )  # fmt: skip
    else:
        d.fall_back_to_score(reason="the architect did not answer", architect_id="architect-1")
    _save(app, d)
    d.complete()
    _save(app, d)


@pytest.fixture
def recorded(graph: DecisionGraph) -> Iterator[Recorded]:
    app = scenarios.popo_app()
    runner = ProjectorRunner(app, GraphProjection(graph))
    projections = Projections(app, [runner])
    runner.start()
    _approve(app, "plan-7")
    dev = _deliberation(app, "plan-7", "DEV")
    qa = _deliberation(app, "plan-7", "QA")
    _decide(app, dev, architect=True)
    _decide(app, qa, architect=False)
    _approve(app, "plan-8")  # approved, nothing deliberated yet
    r = Recorded(app, graph, projections, dev.id, qa.id)
    r.wait()
    yield r
    projections.close()


def test_a_plans_approver_is_found_before_any_deliberation_finishes(graph: DecisionGraph) -> None:
    app = scenarios.popo_app()
    runner = ProjectorRunner(app, GraphProjection(graph))
    projections = Projections(app, [runner])
    runner.start()
    try:
        _approve(app, "plan-1")
        projections.wait(app.recorder.max_notification_id() or 0, timeout=30)
        want = [{"approved_by": "alice@planning", "approved_at": APPROVED_AT.isoformat(),
                 "roles": ["DEV", "QA"], "story": "story-9"}]  # fmt: skip
        assert graph.query(APPROVER, {"plan": "plan-1"}) == want  # no deliberation yet
        d = _deliberation(app, "plan-1", "DEV")  # started, far from finished
        projections.wait(app.recorder.max_notification_id() or 0, timeout=30)
        assert graph.query(APPROVER, {"plan": "plan-1"}) == want
        spawned = graph.query(
            "MATCH (p:Plan {id: $plan})-[:SPAWNED]->(d:Deliberation) RETURN d.id AS id, "
            "d.status AS status", {"plan": "plan-1"},
        )  # fmt: skip
        assert spawned == [{"id": str(d.id), "status": "IN_PROGRESS"}]
        assert verify(app, graph=graph).ok and story_differences(app, graph) == []
    finally:
        projections.close()


def test_the_architects_choice_and_the_ratings_are_on_the_graph(recorded: Recorded) -> None:
    g, d_id = recorded.graph, str(recorded.chosen)
    chosen = g.query(
        "MATCH (a:Agent)-[s:SELECTED]->(p:Proposal) WHERE s.deliberation_id = $d "
        "RETURN a.id AS architect, a.role AS role, p.agent_id AS winner, s.rationale AS why, "
        "s.candidates AS candidates", {"d": d_id},
    )  # fmt: skip
    assert chosen == [{"architect": "architect-1", "role": "ARCHITECT", "winner": "dev-agent-3",
                       "why": "simplest session handling",
                       "candidates": ["dev-agent-2", "dev-agent-3", "dev-agent-1"]}]  # fmt: skip
    ratings = g.query(
        "MATCH (a:Agent)-[r:RATED]->(p:Proposal) WHERE r.deliberation_id = $d "
        "RETURN a.id AS rater, p.agent_id AS rated, r.score AS score ORDER BY rater, rated",
        {"d": d_id},
    )
    assert [(r["rater"], r["rated"]) for r in ratings] == [
        (f"dev-agent-{i}", f"dev-agent-{j}") for i in (1, 2, 3) for j in (1, 2, 3) if i != j
    ]
    assert ratings[4]["score"] is None  # dev-agent-3 gave dev-agent-1 nothing usable
    assert ratings[0]["score"] == pytest.approx(0.4)
    fell_back = g.query(
        "MATCH (d:Deliberation {id: $d}) RETURN d.architect_fallback AS why",
        {"d": str(recorded.fell_back)},
    )
    assert fell_back == [{"why": "the architect did not answer"}]
    assert recorded.verify().ok


def _tamper(graph: DecisionGraph, cypher: str, params: dict[str, Any]) -> None:
    behind_fleets_back(graph, cypher, params)


def _dump(graph: DecisionGraph) -> list[Any]:
    queries = (
        "MATCH (p:Plan) RETURN p.id AS id, p.story_id AS s, p.approved_by AS by, "
        "p.approved_at AS at, p.roles AS roles, p.description AS d, p.tasks AS t ORDER BY id",
        "MATCH (a:Agent)-[s:SELECTED]->(p:Proposal) RETURN a.id AS agent, p.id AS proposal, "
        "s.rationale AS r, s.candidates AS c, s.model AS m, s.latency_ms AS l, s.at AS at "
        "ORDER BY proposal",
        "MATCH (a:Agent)-[r:RATED]->(p:Proposal) RETURN a.id AS agent, p.id AS proposal, "
        "r.score AS score, r.content AS c, r.source AS src, r.at AS at ORDER BY agent, proposal",
        "MATCH (d:Deliberation) RETURN d.id AS id, d.architect_fallback AS f ORDER BY id",
        "MATCH (s:Story)-[:HAS_PLAN]->(p:Plan) RETURN s.id AS story, p.id AS plan ORDER BY plan",
    )
    return [graph.query(q) for q in queries]


def test_verify_finds_each_change_to_a_decision_and_a_rebuild_repairs_it(
    recorded: Recorded,
) -> None:
    g = recorded.graph
    before = _dump(g)
    _tamper(g, "MATCH (p:Plan {id: 'plan-8'}) SET p.approved_by = 'mallory'", {})
    _tamper(g, "MATCH (:Agent)-[s:SELECTED]->(:Proposal) SET s.rationale = 'coin toss'", {})
    _tamper(
        g,
        "MATCH (a:Agent {id: 'qa-agent-1'})-[r:RATED]->(p:Proposal {id: $p}) DELETE r",
        {"p": f"{recorded.fell_back}:0:qa-agent-2"},
    )
    _tamper(g, "MATCH (d:Deliberation {id: $d}) SET d.architect_fallback = 'none'",
            {"d": str(recorded.fell_back)})  # fmt: skip
    _tamper(g, "MATCH (s:Story {id: 'story-9'})-[h:HAS_PLAN]->(p:Plan {id: 'plan-8'}) DELETE h", {})
    found = [d.detail for d in recorded.verify().differences]
    assert any("Plan[plan-8].approved_by" in f and "mallory" in f for f in found), found
    assert any("SELECTED[architect-1 -> 0:dev-agent-3].rationale" in f for f in found), found
    assert any("RATED[qa-agent-1 -> 0:qa-agent-2]" in f and "missing" in f for f in found), found
    assert any("architect_fallback" in f for f in found), found
    assert any("HAS_PLAN plan-8 missing" in f for f in found), found
    recorded.projections.rebuild("graph")
    recorded.wait()
    assert recorded.verify().ok
    assert _dump(g) == before  # a rebuild from sequence 1 gives the same graph


def _doc_queries() -> list[str]:
    text = (ROOT / "docs" / "graph-queries.md").read_text()
    return re.findall(r"```cypher\n(.*?)```", text, flags=re.S)


def test_the_documented_queries_run_and_answer(recorded: Recorded) -> None:
    queries = _doc_queries()
    assert len(queries) == 6
    values = {"plan": "plan-7", "deliberation": str(recorded.chosen)}
    answers = []
    for q in queries:
        params = {k: v for k, v in values.items() if f"${k}" in q}
        rows = recorded.graph.query(q, params)
        assert rows, f"no answer from:\n{q}"
        answers.append(rows)
    approver, produced, chooser, fallback, ratings, plans = answers
    assert approver[0]["approved_by"] == "alice@planning" and approver[0]["story"] == "story-9"
    assert [(r["role"], r["status"]) for r in produced] == [
        ("DEV", "COMPLETED"),
        ("QA", "COMPLETED"),
    ]
    assert produced[0]["content"] == "DEV plan by dev-agent-3"
    assert [(r["role"], r["architect"], r["winner"], r["rationale"]) for r in chooser] == [
        ("DEV", "architect-1", "dev-agent-3", "simplest session handling")
    ]
    assert [(r["role"], r["why"]) for r in fallback] == [("QA", "the architect did not answer")]
    assert len(ratings) == 6
    assert sorted((r["plan"], r["deliberations"]) for r in plans) == [("plan-7", 2), ("plan-8", 0)]


def test_a_plan_that_got_no_deliberation_or_skipped_a_role_says_why_on_the_graph(
    graph: DecisionGraph,
) -> None:
    """No invented work, and none hidden: what the plan dispatcher did not do is on the Plan
    node with its reason, verified against the log like the approval."""
    app = scenarios.popo_app()
    runner = ProjectorRunner(app, GraphProjection(graph))
    projections = Projections(app, [runner])
    runner.start()
    try:
        none = Plan.approve(
            plan_id="plan-none", story_id="story-9", roles=[], approved_at=APPROVED_AT
        )
        none.mark_requested([])
        some = _approve(app, "plan-some")
        some.mark_requested(["plan:plan-some:DEV"], skipped={"QA": "the QA role has no council"})
        _save(app, none, some)
        projections.wait(app.recorder.max_notification_id() or 0, timeout=30)
        rows = graph.query(
            "MATCH (p:Plan) WHERE p.id IN ['plan-none', 'plan-some'] RETURN p.id AS id, "
            "p.skipped_roles AS skipped, p.nothing_dispatched AS nothing ORDER BY id"
        )
        assert rows == [
            {"id": "plan-none", "skipped": None, "nothing": "the approval named no roles"},
            {"id": "plan-some", "skipped": ["QA: the QA role has no council"], "nothing": None},
        ]
        assert verify(app, graph=graph).ok
        _tamper(graph, "MATCH (p:Plan {id: 'plan-some'}) SET p.skipped_roles = []", {})
        report = verify(app, graph=graph)
        assert not report.ok and any("plan-some" in str(d) for d in report.differences)
    finally:
        projections.close()
