"""The manual's queries give the same answers on LadybugDB and on Neo4j.

The same log (councils and their changes, a plan and its story with phase changes, deliberations
that complete, time out, fail, get cancelled or are still running, two-round debates with
critiques, revisions, ratings and late answers) is projected by ``GraphProjection`` into both
engines; then every example query of README.md and docs/*.md (``tests.support.doc_queries``: new
docs files included) runs on both and the answers are compared: as multisets, and in order where
the query says ``ORDER BY`` (rows tied on the sort keys may come in either order), numbers
compared as numbers. Where the engines differ, docs/projections.md ("Engine differences") says
how, and ``DIFFERENCES`` below asserts exactly that difference, so it cannot grow unnoticed.

Real LadybugDB, the session's private Neo4j.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from neo4j import Driver

from aggregates import (
    AgentAnswer,
    AgentId,
    CheckOutcome,
    Council,
    CouncilSettings,
    Deliberation,
    PeerReview,
    Plan,
)
from aggregates.story import Phase, Story
from application.app import FleetApplication
from application.council_store import view_of
from dispatchers.councils import seat
from projectors import GraphProjection
from projectors.errors import InvalidQueryError
from projectors.graph.ladybug import LadybugGraph
from projectors.graph.neo4j import Neo4jGraph
from projectors.graph.port import DecisionGraph, Row
from tests.fixtures.neo4j import empty_database
from tests.support.deliberations import requested
from tests.support.doc_queries import DocQuery, doc_queries, parameters_of
from tests.unit.projectors import scenarios

ROOT = Path(__file__).resolve().parents[3]
QUERIES = doc_queries(ROOT)
LIMIT = 10_000

pytestmark = pytest.mark.timeout(120)


@dataclass(frozen=True)
class Fed:
    ladybug: LadybugGraph
    neo4j: Neo4jGraph
    params: dict[str, Any]


def _feed(app: FleetApplication) -> dict[str, Any]:
    """Saves the log both engines get; returns the parameters the docs' queries name."""
    now = datetime.now(UTC)
    dev = Council.create("DEV", CouncilSettings(model="m"))
    for aid in ("agent-dev-001", "agent-dev-002"):
        dev.register(aid)
    app.save(dev)
    plan = Plan.approve(
        plan_id="plan-7", story_id="story-7", approved_by="po", approved_at=now,
        roles=["DEV", "QA"],
    )  # fmt: skip
    story = Story.register("story-7")
    story.change_phase(Phase.DESIGN, Phase.BUILD, now)
    story.change_phase(Phase.BUILD, Phase.TEST, now + timedelta(seconds=1))
    app.save(plan, story)
    seated = requested("seated-7", plan_id="plan-7", story_id="story-7", requested_by="po")
    seated.orchestrate(architect_k=3)  # the architect chooses: SELECTED on the graph
    seating = seat(view_of(dev), 3)
    assert seating is not None
    seated.start(seating.agents, seats=seating.seats, council_version=seating.council_version)
    for k, a in enumerate(seated.agents):
        answer = AgentAnswer(content=f"def fib(n): ...  # {k}", model="m", tokens=3 + k,
                             latency_ms=10 * k)  # fmt: skip
        seated.receive_proposal(agent_id=AgentId(a), round=0, answer=answer)
    for a in seated.agents:  # final peer ratings: RATED
        reviews = [PeerReview(reviewer=a, target=b, score=0.5 if j else None, text=f"{a} on {b}")
                   for j, b in enumerate(seated.agents) if b != a]  # fmt: skip
        seated.receive_ratings(agent_id=AgentId(a), reviews=reviews, model="m")
    for k, a in enumerate(seated.agents):
        check = CheckOutcome(check_type="lint", passed=True, score=1.0)
        seated.score(agent_id=AgentId(a), score=0.2 * (k + 1), checks=[check])
    seated.select_by_architect(
        winner=seated.agents[1], rationale="clearest", architect_id="architect-7", model="m"
    )
    seated.complete()
    data = requested("data-7", role="DATA", plan_id="plan-7", story_id="story-7")
    data.orchestrate(architect_k=3)  # the architect fails: the fallback's reason
    data.start()
    for k, a in enumerate(data.agents):
        answer = AgentAnswer(content=f"SELECT {k}", model="m", tokens=2, latency_ms=5)
        data.receive_proposal(agent_id=AgentId(a), round=0, answer=answer)
        data.score(agent_id=AgentId(a), score=0.1 * (k + 1), checks=[])
    data.fall_back_to_score(reason="the architect did not answer", architect_id="architect-7")
    data.complete()
    app.save(data)
    qa = requested("qa-7", role="QA", plan_id="plan-7", story_id="story-7")
    qa.start()
    qa.fail("every agent failed")
    cancelled = requested("cancelled-7")
    cancelled.start()
    cancelled.cancel("asked to")
    app.save(seated, qa, cancelled)
    debated = scenarios.debated(app)
    scenarios.debated(app, rated=False)
    for build in (scenarios.completed, scenarios.completed, scenarios.timed_out,
                  scenarios.all_failed, scenarios.in_progress):  # fmt: skip
        build(app)
    dev.unregister("agent-dev-002")
    dev.register("agent-dev-009", endpoint="http://e:1")
    dev.reconfigure("agent-dev-001", model="big")
    qa_council = Council.create("QA")
    qa_council.register("agent-qa-001")
    qa_council.delete()
    app.save(dev, qa_council)
    d: Deliberation = app.repository.get(debated.deliberation_id)
    return {
        "task": str(d.task_id),
        "deliberation": str(seated.id),
        "plan": "plan-7",
        "story": "story-7",
    }


def _project(app: FleetApplication, graph: DecisionGraph) -> None:
    head = app.recorder.max_notification_id() or 0
    log = [
        (app.mapper.to_domain_event(n), n.id) for n in app.recorder.select_notifications(1, head)
    ]
    projection = GraphProjection(graph)
    for i in range(0, len(log), 40):  # several transactions, as a runner's batches
        projection.apply_batch(log[i : i + 40], base=log[i - 1][1] if i else 0)
    assert graph.position("graph") == head


@pytest.fixture(scope="module")
def fed(tmp_path_factory: pytest.TempPathFactory, neo4j_driver: Driver) -> Iterator[Fed]:
    """Both engines, fed the same log once for the module's queries."""
    app = scenarios.popo_app()
    params = _feed(app)
    ladybug = LadybugGraph(tmp_path_factory.mktemp("engines") / "graph" / "g.lbug")
    empty_database(neo4j_driver)
    neo4j = Neo4jGraph(neo4j_driver)
    neo4j.ensure_schema()
    try:
        _project(app, ladybug)
        _project(app, neo4j)
        yield Fed(ladybug, neo4j, params)
    finally:
        ladybug.close()
        neo4j.close()


# ---------------------------------------------------------------- comparing answers


def _value(v: Any) -> Any:
    """A value comparable across drivers: numbers as floats, lists as tuples, maps sorted."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int | float | Decimal):
        f = float(v)
        return round(f, 9) if math.isfinite(f) else f
    if isinstance(v, list | tuple):
        return tuple(_value(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _value(x)) for k, x in v.items()))
    return repr(v)


def _row(r: Row) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((k, _value(v)) for k, v in r.items()))


_ORDER = re.compile(r"\bORDER\s+BY\s+(.+?)(?:\bSKIP\b|\bLIMIT\b|$)", re.IGNORECASE | re.DOTALL)


def _sort_keys(cypher: str, columns: set[str]) -> list[str] | None:
    """The returned columns the query orders by, or None when it orders by something it does
    not return (then the whole rows must come in the same order)."""
    m = _ORDER.search(cypher)
    assert m is not None
    keys = []
    for part in m.group(1).split(","):
        key = re.sub(r"\s+(ASC|DESC|ASCENDING|DESCENDING)\s*$", "", part.strip(), flags=re.I)
        if key not in columns:
            return None
        keys.append(key)
    return keys


def assert_same_answer(q: DocQuery, ladybug: list[Row], neo4j: list[Row]) -> None:
    left, right = [_row(r) for r in ladybug], [_row(r) for r in neo4j]
    assert Counter(left) == Counter(right), f"{q}\n  ladybug {left}\n  neo4j   {right}"
    if not _ORDER.search(q.cypher) or not left:
        return
    keys = _sort_keys(q.cypher, set(ladybug[0]))
    if keys is None:
        assert left == right, f"{q}: rows in another order"
        return
    order = [[_value(r[k]) for k in keys] for r in ladybug]
    assert order == [[_value(r[k]) for k in keys] for r in neo4j], f"{q}: sorted otherwise"


# ---------------------------------------------------------------- documented differences

Answer = list[Row] | InvalidQueryError
Difference = Callable[[Answer, Answer], None]
"""Asserts the documented difference between (LadybugDB's answer, Neo4j's answer)."""


def _refused(answer: Answer, *words: str) -> None:
    assert isinstance(answer, InvalidQueryError), answer
    assert all(w in str(answer) for w in words), answer


def _rows(answer: Answer) -> list[Row]:
    assert not isinstance(answer, InvalidQueryError), answer
    assert answer, "an empty answer shows no difference"
    return answer


def _type_of(ladybug: Answer, neo4j: Answer) -> None:
    _refused(ladybug, "TYPE does not exist")
    assert {r["rel"] for r in _rows(neo4j)} >= {"HAD_EVENT", "HAS_PROPOSAL", "WON_BY"}


def _label_of(ladybug: Answer, neo4j: Answer) -> None:
    _refused(neo4j, "label")
    assert {r["rel"] for r in _rows(ladybug)} >= {"HAD_EVENT", "HAS_PROPOSAL", "WON_BY"}


def _whole_node(ladybug: Answer, neo4j: Answer) -> None:
    (lb,), (n4,) = _rows(ladybug), _rows(neo4j)
    assert lb["d"]["_LABEL"] == "Deliberation" and "_ID" in lb["d"]
    assert None in lb["d"].values()  # declared, never set (this deliberation did not time out)
    set_there = {k: v for k, v in lb["d"].items() if not k.startswith("_") and v is not None}
    assert n4["d"] == set_there


def _list_index(ladybug: Answer, neo4j: Answer) -> None:
    (lb,), (n4,) = _rows(ladybug), _rows(neo4j)
    assert lb["ranking"] == n4["ranking"] and len(n4["ranking"]) == 3
    assert lb["pick"] == lb["ranking"][0]  # from 1
    assert n4["pick"] == n4["ranking"][1]  # from 0


def _substring(ladybug: Answer, neo4j: Answer) -> None:
    (lb,), (n4,) = _rows(ladybug), _rows(neo4j)
    assert (lb["part"], n4["part"]) == ("COM", "OMP")  # of COMPLETED


def _alias_shadows(ladybug: Answer, neo4j: Answer) -> None:
    _refused(ladybug, "Order by REL is not supported")
    ratings = [r["r"] for r in _rows(neo4j)]
    assert ratings == sorted(ratings, key=lambda v: (v is None, v))


DIFFERENCES: dict[str, Difference] = {
    "MATCH (d:Deliberation {task_id: $task})-[r]->() RETURN type(r) AS rel, count(*) AS n "
    "ORDER BY rel": _type_of,
    "MATCH (d:Deliberation {task_id: $task})-[r]->() RETURN label(r) AS rel, count(*) AS n "
    "ORDER BY rel": _label_of,
    "MATCH (d:Deliberation {task_id: $task}) RETURN d": _whole_node,
    "MATCH (d:Deliberation {task_id: $task}) RETURN d.ranking[1] AS pick, d.ranking AS ranking": (
        _list_index
    ),
    "MATCH (d:Deliberation {task_id: $task}) RETURN substring(d.status, 1, 3) AS part": _substring,
    "MATCH (:Proposal)-[r:CRITIQUED]->(:Proposal) RETURN r.rating AS r ORDER BY r": _alias_shadows,
}
"""Statement (whitespace collapsed) → the difference docs/projections.md documents for it."""

EMPTY_HERE = {
    "MATCH (a:Agent)-[m:MEMBER_OF]->(c:Council {role: 'DEV'}) WHERE m.since <= '2026-11-25T12:00' "
    "AND (m.until = '' OR m.until > '2026-11-25T12:00') RETURN a.id, m.model": (
        "a membership begins when its event is recorded, after the date the example asks about"
    ),
}
"""Examples whose answer is empty on this log, and why; every other one must return rows (an
empty answer on both engines would show nothing)."""


def _key(cypher: str) -> str:
    return " ".join(cypher.split())


def test_the_manual_has_queries_and_each_documented_difference_is_still_in_it() -> None:
    assert len(QUERIES) >= 10, [str(q) for q in QUERIES]
    shown = {_key(q.cypher) for q in QUERIES}
    assert set(DIFFERENCES) <= shown, set(DIFFERENCES) - shown
    assert set(EMPTY_HERE) <= shown, set(EMPTY_HERE) - shown
    documented = (ROOT / "docs" / "projections.md").read_text()
    section = documented.split("## Engine differences", 1)[1]
    assert all(k.split(" RETURN")[0] in " ".join(section.split()) for k in DIFFERENCES)


def _answer(graph: DecisionGraph, cypher: str, params: dict[str, Any]) -> Answer:
    try:
        return graph.query(cypher, params, LIMIT)
    except InvalidQueryError as e:  # a documented difference may be a refusal
        return e


@pytest.mark.parametrize("q", QUERIES, ids=[q.source for q in QUERIES])
def test_a_manual_query_answers_the_same_on_both_engines(q: DocQuery, fed: Fed) -> None:
    missing = parameters_of(q.cypher) - set(fed.params)
    assert not missing, f"{q}: give the test data a value for ${', $'.join(sorted(missing))}"
    params = {k: v for k, v in fed.params.items() if k in parameters_of(q.cypher)}
    ladybug = _answer(fed.ladybug, q.cypher, params)
    neo4j = _answer(fed.neo4j, q.cypher, params)
    difference = DIFFERENCES.get(_key(q.cypher))
    if difference is not None:
        difference(ladybug, neo4j)
        return
    if _key(q.cypher) in EMPTY_HERE:
        assert ladybug == neo4j == [], (ladybug, neo4j)
        return
    assert_same_answer(q, _rows(ladybug), _rows(neo4j))
