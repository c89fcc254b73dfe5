"""The Story in the graph (on LadybugDB and on Neo4j): a story links its plans, its deliberations
and its phase changes, the same whether events come one by one or batched."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from projectors.graph.port import DecisionGraph
from projectors.graph.projection import GraphProjection
from projectors.verify import story_differences
from tests.fixtures.graphs import behind_fleets_back, engine_of
from tests.support.outbox import one_of_each
from tests.unit.projectors import scenarios

# A relationship's type is ``type(r)`` in Neo4j and ``label(r)`` in LadybugDB: one of the few
# differences a user's Cypher meets (docs/projections.md lists them).
STORY_LINKS = """
MATCH (s:Story {{id: $story}})-[r]->(x)
RETURN {rel_type}(r) AS rel, x.id AS id ORDER BY rel, id
"""
REL_TYPE = {"ladybug": "label", "neo4j": "type"}
PHASES = """
MATCH (s:Story {id: $story})-[:CHANGED_PHASE]->(c:PhaseChange)
RETURN s.phase AS now, c.from_phase AS from_phase, c.to_phase AS to_phase ORDER BY c.seq
"""


def _one_by_one(p: GraphProjection, log: list[tuple[object, int]]) -> None:
    for e, pos in log:
        p.apply(e, pos)


def _batched(p: GraphProjection, log: list[tuple[object, int]]) -> None:
    p.apply_batch(log, base=0)


@pytest.mark.parametrize("project", [_one_by_one, _batched], ids=["one-by-one", "batched"])
def test_a_story_links_its_plans_deliberations_and_phase_changes(
    graph: DecisionGraph, project: Callable[[GraphProjection, list[tuple[object, int]]], None]
) -> None:
    aggregates = one_of_each("g")
    events = [e for a in aggregates for e in a.collect_events()]
    story_links = STORY_LINKS.format(rel_type=REL_TYPE[engine_of(graph)])
    project(GraphProjection(graph), [(e, p) for p, e in enumerate(events, start=1)])
    done = next(a for a in aggregates if getattr(a, "task_id", "") == "done-g")
    failed = next(a for a in aggregates if getattr(a, "task_id", "") == "failed-g")
    links = graph.query(story_links, {"story": "s-g"})
    assert sorted((r["rel"], r["id"]) for r in links if r["rel"] != "CHANGED_PHASE") == sorted(
        [
            ("HAS_DELIBERATION", str(done.id)),
            ("HAS_DELIBERATION", str(failed.id)),
            ("HAS_PLAN", "p-g"),
        ]
    )
    assert graph.query(PHASES, {"story": "s-g"}) == [
        {"now": "TEST", "from_phase": "DESIGN", "to_phase": "BUILD"},
        {"now": "TEST", "from_phase": "BUILD", "to_phase": "TEST"},
    ]


def test_verify_finds_the_stories_in_the_graph_as_the_log_says_and_a_changed_one(
    graph: DecisionGraph,
) -> None:
    app = scenarios.popo_app()
    app.save(*one_of_each("v"))
    projection = GraphProjection(graph)
    head = app.recorder.max_notification_id() or 0
    notifications = app.recorder.select_notifications(1, head)
    log = [(app.mapper.to_domain_event(n), n.id) for n in notifications]
    projection.apply_batch(log, base=0)
    assert story_differences(app, graph) == []
    behind_fleets_back(graph, "MATCH (c:PhaseChange {to_phase: 'TEST'}) SET c.to_phase = 'DOCS'")
    behind_fleets_back(graph, "MATCH (s:Story) SET s.phase = 'DESIGN'")
    details = sorted(d.detail for d in story_differences(app, graph))
    assert len(details) == 3, details
    assert "story s-v: graph phase 'DESIGN', replay 'TEST'" in details
    assert any("follows from no event" in d and "DOCS" in d for d in details)
