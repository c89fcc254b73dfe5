"""Both projections over real stores, driven by the runner from a POPO FleetApplication."""

from __future__ import annotations

from pathlib import Path

import pytest
import valkey

from aggregates import Deliberation
from fleet.embedded.valkey import ValkeyServer
from projectors import (
    CacheProjection,
    GraphProjection,
    Projection,
    ProjectionStoppedError,
    ProjectorRunner,
    ReadOnlyQueryError,
    view_from_aggregate,
)
from projectors.cache.valkey import ValkeyDeliberationBoard
from projectors.errors import InvalidQueryError
from projectors.graph.ladybug import LadybugGraph
from projectors.graph.neo4j import Neo4jGraph
from projectors.graph.port import DecisionGraph
from tests.unit.projectors import scenarios

pytestmark = pytest.mark.timeout(60)


def test_graph_answers_cypher_after_a_completed_run(graph: DecisionGraph) -> None:
    app = scenarios.popo_app()
    run = scenarios.completed(app)
    with ProjectorRunner(app, GraphProjection(graph)) as runner:
        runner.wait(run.position)
    d: Deliberation = app.repository.get(run.deliberation_id)
    params = {"id": str(run.deliberation_id)}
    rows = graph.query(
        "MATCH (d:Deliberation {id: $id})-[:HAS_PROPOSAL]->(p:Proposal) WHERE p.late = false "
        "RETURN p.id AS id, p.agent_id AS agent, p.score AS score ORDER BY p.agent_id",
        params,
    )
    assert [r["agent"] for r in rows] == sorted(d.agents)
    assert rows[0]["id"] == f"{run.deliberation_id}:0:{rows[0]['agent']}"
    assert all(r["score"] is not None for r in rows)
    won = graph.query(
        "MATCH (d:Deliberation {id: $id})-[:WON_BY]->(p:Proposal)<-[:PROPOSED]-(a:Agent) "
        "RETURN a.id AS agent, d.status AS status",
        params,
    )
    assert won == [{"agent": d.winner, "status": "COMPLETED"}]
    plan = graph.query(
        "MATCH (p:Plan)-[:SPAWNED]->(d:Deliberation {id: $id}) RETURN p.id AS plan", params
    )
    assert plan == [{"plan": d.plan_id}]
    timeline = graph.query(
        "MATCH (d:Deliberation {id: $id})-[:HAD_EVENT]->(e:Event) RETURN e.type AS type "
        "ORDER BY e.seq",
        params,
    )
    assert len(timeline) == d.version
    assert timeline[0]["type"] == "Requested" and timeline[-1]["type"] == "LateProposalReceived"
    late = graph.query("MATCH (p:Proposal) WHERE p.late = true RETURN count(p) AS n")
    assert late == [{"n": 1}]
    assert len(graph.query("MATCH (e:Event) RETURN e.seq AS seq", limit=2)) == 2


def test_graph_records_timeout_and_failure(graph: DecisionGraph) -> None:
    app = scenarios.popo_app()
    timeout, failed = scenarios.timed_out(app), scenarios.all_failed(app)
    with ProjectorRunner(app, GraphProjection(graph)) as runner:
        runner.wait(failed.position)
    rows = graph.query(
        "MATCH (d:Deliberation) OPTIONAL MATCH (d)-[:HAS_PROPOSAL]->(p:Proposal) "
        "RETURN d.id AS id, d.status AS status, d.missing AS missing, d.reason AS reason, "
        "count(p) AS proposals ORDER BY d.status"
    )
    by_id = {r["id"]: r for r in rows}
    assert by_id[str(timeout.deliberation_id)]["status"] == "TIMEOUT"
    assert by_id[str(timeout.deliberation_id)]["missing"] == ["dev-agent-2"]
    assert by_id[str(timeout.deliberation_id)]["proposals"] == 2
    assert by_id[str(failed.deliberation_id)]["status"] == "FAILED"
    assert "every agent failed" in by_id[str(failed.deliberation_id)]["reason"]


def test_graph_refuses_writing_queries(graph: DecisionGraph) -> None:
    with pytest.raises(ReadOnlyQueryError):
        graph.query("MATCH (d:Deliberation) DETACH DELETE d")
    with pytest.raises(ReadOnlyQueryError):
        graph.query("/* harmless */ CREATE (:Agent {id: 'x'})")
    assert graph.query("MATCH (a:Agent) WHERE a.id = 'CREATE' RETURN a.id AS id") == []


def test_a_write_past_the_keyword_guard_is_refused_by_the_engine(
    graph: DecisionGraph, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Behind the guard, each engine's own read-only transaction (Neo4j: a READ access-mode
    session; LadybugDB: ``BEGIN TRANSACTION READ ONLY``) refuses a write that slipped past it."""
    module = (
        "projectors.graph.neo4j" if isinstance(graph, Neo4jGraph) else "projectors.graph.ladybug"
    )
    monkeypatch.setattr(f"{module}.require_read_only", lambda cypher: None)
    with pytest.raises(InvalidQueryError):
        graph.query("CREATE (a:Agent {id: 'slipped'}) RETURN a.id AS id")
    with pytest.raises(InvalidQueryError):
        graph.query("MERGE (a:Agent {id: 'slipped'}) RETURN a.id AS id")
    assert graph.query("MATCH (a:Agent) RETURN count(a) AS n") == [{"n": 0}]


def test_cache_equals_replayed_aggregate(board: ValkeyDeliberationBoard) -> None:
    app = scenarios.popo_app()
    runs = [scenarios.completed(app), scenarios.timed_out(app), scenarios.all_failed(app)]
    with ProjectorRunner(app, CacheProjection(board)) as runner:
        runner.wait(runs[-1].position)
    for run in runs:
        cached = board.get(run.deliberation_id)
        assert cached is not None
        assert cached == view_from_aggregate(app.repository.get(run.deliberation_id))
        assert cached.is_terminal and cached.position is not None
    assert board.position() == runs[-1].position


def test_terminal_entries_expire_and_open_ones_do_not(
    board: ValkeyDeliberationBoard, valkey_client: valkey.Valkey
) -> None:
    app = scenarios.popo_app()
    run = scenarios.completed(app, late=False)
    projection = CacheProjection(board)
    events = list(app.repository.event_store.get(run.deliberation_id))
    position = 0
    for event in events[:3]:
        position += 1
        projection.apply(event, position)
    assert valkey_client.ttl(board.key(run.deliberation_id)) == -1  # open: no TTL
    for event in events[3:]:
        position += 1
        projection.apply(event, position)
    assert 0 < int(valkey_client.ttl(board.key(run.deliberation_id))) <= 600  # type: ignore[arg-type]


def test_reapplying_an_applied_position_changes_nothing(
    graph: DecisionGraph, board: ValkeyDeliberationBoard
) -> None:
    app = scenarios.popo_app()
    run = scenarios.completed(app)
    graph_projection, cache_projection = GraphProjection(graph), CacheProjection(board)
    for projection in (graph_projection, cache_projection):
        with ProjectorRunner(app, projection) as runner:
            runner.wait(run.position)
    before_graph = graph.query("MATCH (n) RETURN count(n) AS n")
    before_view = board.get(run.deliberation_id)
    for n in app.recorder.select_notifications(start=1, limit=100):
        event = app.mapper.to_domain_event(n)
        assert not graph_projection.apply(event, n.id)
        assert not cache_projection.apply(event, n.id)
    assert graph.query("MATCH (n) RETURN count(n) AS n") == before_graph
    assert board.get(run.deliberation_id) == before_view
    assert graph_projection.position() == cache_projection.position() == run.position


def test_restarted_runners_resume_from_their_stored_position(
    graph: DecisionGraph, board: ValkeyDeliberationBoard
) -> None:
    app = scenarios.popo_app()
    first = scenarios.completed(app)
    projections: list[Projection] = [GraphProjection(graph), CacheProjection(board)]
    for projection in projections:
        with ProjectorRunner(app, projection) as runner:
            runner.wait(first.position)
    second = scenarios.timed_out(app)
    for projection in projections:
        runner = ProjectorRunner(app, projection)
        runner.start()
        assert runner.position() == first.position  # read from the store, not from 0
        runner.wait(second.position)
        runner.close()
        runner.close()  # idempotent
    events = graph.query("MATCH (e:Event) RETURN count(e) AS n")
    total = sum(app.repository.get(r.deliberation_id).version for r in (first, second))
    assert events == [{"n": total}]
    proposals = graph.query("MATCH (p:Proposal) RETURN count(p) AS n")
    assert proposals == [{"n": 3 + 1 + 2}]  # 3 on time + 1 late, then 2
    for run in (first, second):
        assert board.get(run.deliberation_id) == view_from_aggregate(
            app.repository.get(run.deliberation_id)
        )


def test_graph_survives_reopening_the_database(tmp_path: Path) -> None:
    """LadybugDB's own: the graph is a directory a process opens. (A Neo4j server that stops
    and starts again is ``tests/integration/fleet/test_neo4j_server.py``'s.)"""
    app = scenarios.popo_app()
    run = scenarios.all_failed(app)
    path = tmp_path / "g" / "fleet.lbug"
    graph = LadybugGraph(path)
    with ProjectorRunner(app, GraphProjection(graph)) as runner:
        runner.wait(run.position)
    graph.close()
    reopened = LadybugGraph(path)
    try:
        assert GraphProjection(reopened).position() == run.position
        assert reopened.query("MATCH (d:Deliberation) RETURN d.status AS s") == [{"s": "FAILED"}]
    finally:
        reopened.close()


def test_a_failing_store_stops_the_runner_and_a_rebuild_recovers(
    own_valkey_server: ValkeyServer, valkey_prefix: str
) -> None:
    app = scenarios.popo_app()
    first = scenarios.completed(app)
    client = valkey.Valkey.from_url(own_valkey_server.url, socket_timeout=2)
    board = ValkeyDeliberationBoard(client, key_prefix=valkey_prefix)
    runner = ProjectorRunner(app, CacheProjection(board))
    runner.start()
    runner.wait(first.position)
    own_valkey_server.kill()
    second = scenarios.all_failed(app)
    with pytest.raises(ProjectionStoppedError) as stopped:
        runner.wait(second.position)
    assert isinstance(stopped.value.__cause__, valkey.ConnectionError)
    assert runner.error is not None and not runner.running()
    runner.close()
    with pytest.raises(valkey.ConnectionError):  # a store that is down fails start() loudly
        ProjectorRunner(app, CacheProjection(board)).start()
    own_valkey_server.start()  # empty: the cache lost everything, the log did not
    with ProjectorRunner(app, CacheProjection(board)) as rebuilt:
        rebuilt.wait(second.position)
    for run in (first, second):
        view = board.get(run.deliberation_id)
        assert view == view_from_aggregate(app.repository.get(run.deliberation_id))
    assert board.position() == second.position
    client.close()  # type: ignore[no-untyped-call]
