"""``verify`` finds each kind of difference between the projections and the replay, exactly that
one, and none again once the projection is rebuilt; and none on stores that move while it reads.

Real graphs (LadybugDB and Neo4j, each graph test on both) and a real redis/valkey-server; the
projections are written by their runners, then tampered with behind the projector's back (the
graph through the engine's own client, the cache through a Valkey client), the way a bug or a
hand-made edit would. The cache's own cases run on the embedded graph only: the graph engine
changes nothing they compare.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import valkey

from aggregates import Deliberation
from projectors import CacheProjection, GraphProjection, ProjectorRunner
from projectors.cache.valkey import ValkeyDeliberationBoard
from projectors.control import Projections
from projectors.errors import NothingToVerifyError
from projectors.graph.ladybug import LadybugGraph
from projectors.graph.port import DecisionGraph
from projectors.verify import VerifyReport, verify
from tests.fixtures.graphs import behind_fleets_back
from tests.unit.projectors import scenarios

pytestmark = pytest.mark.timeout(120)

SCENARIOS = ("debated", "completed", "timed_out", "all_failed", "in_progress")
_PAIRS_PER_READ = 10
"""Deliberations written per read while the stores are read (twice this many)."""


class Stores:
    """A POPO application with one deliberation of each scenario, projected into both stores."""

    def __init__(self, graph: DecisionGraph, board: ValkeyDeliberationBoard) -> None:
        self.app = scenarios.popo_app()
        self.ids = {name: getattr(scenarios, name)(self.app).deliberation_id for name in SCENARIOS}
        self.graph, self.board = graph, board
        runners = [
            ProjectorRunner(self.app, GraphProjection(graph)),
            ProjectorRunner(self.app, CacheProjection(board)),
        ]
        self.projections = Projections(self.app, runners)
        for r in runners:
            r.start()
        self.wait()

    @property
    def head(self) -> int:
        return self.app.recorder.max_notification_id() or 0

    def wait(self, timeout: float = 30) -> None:
        self.projections.wait(self.head, timeout=timeout)

    def get(self, name: str) -> Deliberation:
        d: Deliberation = self.app.repository.get(self.ids[name])
        return d

    def seq(self, name: str, version: int) -> int:
        """The stream position of a deliberation's event ``version``."""
        return next(
            n.id
            for n in self.app.recorder.select_notifications(1, 10_000)
            if n.originator_id == self.ids[name] and n.originator_version == version
        )

    def tamper_graph(self, *statements: tuple[str, dict[str, Any]]) -> None:
        for cypher, params in statements:
            behind_fleets_back(self.graph, cypher, params)

    def rebuild(self, name: str) -> None:
        self.projections.rebuild(name)
        self.wait()


@pytest.fixture
def stores(graph: DecisionGraph, board: ValkeyDeliberationBoard) -> Iterator[Stores]:
    s = Stores(graph, board)
    yield s
    s.projections.close()


@pytest.fixture
def cache_stores(ladybug_graph: LadybugGraph, board: ValkeyDeliberationBoard) -> Iterator[Stores]:
    """``stores`` for the cache's own cases, on one graph engine."""
    s = Stores(ladybug_graph, board)
    yield s
    s.projections.close()


def _found(report: VerifyReport) -> list[tuple[str, str, str]]:
    return [(d.projection, d.deliberation_id, d.detail) for d in report.differences]


def test_each_kind_of_graph_difference_is_reported_until_a_rebuild(stores: Stores) -> None:
    deb, late_version = stores.get("debated"), stores.get("debated").version
    d_id, (a1, a2, a3) = str(deb.id), deb.agents
    timeout, running = stores.get("timed_out"), stores.get("in_progress")

    def pid(tail: str) -> str:
        return f"{d_id}:{tail}"

    def proposal(cypher: str, tail: str) -> tuple[str, dict[str, Any]]:
        return f"MATCH (p:Proposal {{id: $id}}) {cypher}", {"id": pid(tail)}

    critique = "MATCH (c:Proposal {id: $c})-[k:CRITIQUED]->(t:Proposal {id: $t}) "
    pair = {"c": pid(f"0:{a1}"), "t": pid(f"0:{a2}")}
    event = ("MATCH (e:Event {id: $id}) ", {"id": f"{d_id}:3"})
    checks = [c.as_dict() for c in deb.proposals[(a3, 0)].checks]
    cases: list[tuple[list[tuple[str, dict[str, Any]]], str, str]] = [
        ([proposal("SET p.content = 'tampered'", f"1:{a1}")], d_id,
         f"Proposal[1:{a1}].content: graph 'tampered', "
         f"replay {deb.proposals[(a1, 1)].content!r}"),
        ([proposal("SET p.model = 'other'", f"0:{a2}")], d_id,
         f"Proposal[0:{a2}].model: graph 'other', replay 'gemma-3-270m'"),
        ([proposal("SET p.tokens = 1", f"1:{a2}")], d_id,
         f"Proposal[1:{a2}].tokens: graph 1, replay 61"),
        ([proposal("SET p.latency_ms = 5", f"0:{a1}")], d_id,
         f"Proposal[0:{a1}].latency_ms: graph 5, replay 100"),
        ([proposal("SET p.score = 0.05", f"0:{a3}")], d_id,
         f"Proposal[0:{a3}].score: graph 0.05, replay 0.6"),
        ([proposal("SET p.checks = '[]'", f"0:{a3}")], d_id,
         f"Proposal[0:{a3}].checks: graph [], replay {checks!r}"),
        ([proposal("SET p.late = false", f"1:{a3}:late:{late_version}")], d_id,
         f"Proposal[1:{a3}:late:{late_version}].late: graph False, replay True"),
        ([("MATCH (:Deliberation)-[r:HAS_PROPOSAL]->(p:Proposal {id: $id}) DELETE r",
           {"id": pid(f"0:{a1}")})], d_id,
         f"Proposal[0:{a1}].<-HAS_PROPOSAL: graph [], replay [{d_id!r}]"),
        ([("MATCH (:Agent)-[r:PROPOSED]->(p:Proposal {id: $id}) DELETE r",
           {"id": pid(f"0:{a2}")})], d_id,
         f"Proposal[0:{a2}].<-PROPOSED: graph [], replay [{a2!r}]"),
        ([(critique + "SET k.rating = 0.99", pair)], d_id,
         f"CRITIQUED[0:{a1} -> 0:{a2}].rating: graph 0.99, replay 0.25"),
        ([(critique + "SET k.content = 'fine'", pair)], d_id,
         f"CRITIQUED[0:{a1} -> 0:{a2}].content: graph 'fine', replay '{a1} on {a2}'"),
        ([(critique + "SET k.critic = $t", pair)], d_id,
         f"CRITIQUED[0:{a1} -> 0:{a2}].critic: graph {pair['t']!r}, replay {a1!r}"),
        ([(critique + "DELETE k", pair)], d_id,
         f"CRITIQUED[0:{a1} -> 0:{a2}]: missing from the graph"),
        ([(event[0] + "DETACH DELETE e", event[1])], d_id, "Event[3]: missing from the graph"),
        ([(event[0] + "SET e.seq = 0", event[1])], d_id,
         f"Event[3].seq: graph 0, replay {stores.seq('debated', 3)}"),
        ([(event[0] + "SET e.type = 'ProposalScored'", event[1])], d_id,
         "Event[3].type: graph 'ProposalScored', replay 'ProposalReceived'"),
        ([("MATCH (d:Deliberation {id: $id})-[r:HAD_EVENT]->(e:Event {id: $e}) DELETE r",
           {"id": d_id, "e": f"{d_id}:3"})], d_id,
         f"Event[3].<-HAD_EVENT: graph [], replay [{d_id!r}]"),
        ([("MATCH (a:Agent {id: $id}) SET a.model = 'gpt-x'", {"id": a1})], str(running.id),
         f"Agent[{a1}].model: graph 'gpt-x', replay 'gemma-3-270m'"),
        ([("CREATE (:Agent {id: 'intruder', role: 'QA', model: 'm'})", {})], "",
         "Agent[intruder]: in the graph, not in the replay"),
        ([("MATCH (:Plan)-[r:SPAWNED]->(d:Deliberation {id: $id}) DELETE r", {"id": d_id})],
         d_id, f"Deliberation.<-SPAWNED: graph [], replay [{deb.plan_id!r}]"),
        ([("MATCH (x:Plan {id: $id}) SET x.story_id = 'story-2'", {"id": deb.plan_id})], d_id,
         f"Plan[{deb.plan_id}].story_id: graph 'story-2', replay 'story-1'"),
        ([("MATCH (d:Deliberation {id: $id}) SET d.missing = ['dev-agent-3']",
           {"id": str(timeout.id)})], str(timeout.id),
         "Deliberation.missing: graph ['dev-agent-3'], replay ['dev-agent-2']"),
        ([("MATCH (d:Deliberation {id: $id})-[w:WON_BY]->(:Proposal) DELETE w", {"id": d_id}),
          ("MATCH (d:Deliberation {id: $id}) MATCH (p:Proposal {id: $p}) "
           "CREATE (d)-[:WON_BY]->(p)", {"id": d_id, "p": pid(f"0:{a3}")})], d_id,
         f"Deliberation.WON_BY->: graph ['0:{a3}'], replay ['1:{a2}']"),
        ([("MATCH (d:Deliberation {id: $id}) SET d.role = 'QA'", {"id": str(running.id)})],
         str(running.id), "Deliberation.role: graph 'QA', replay 'DEV'"),
    ]  # fmt: skip
    assert verify(stores.app, graph=stores.graph).ok
    for statements, deliberation, detail in cases:
        stores.tamper_graph(*statements)
        report = verify(stores.app, graph=stores.graph)
        assert _found(report) == [("graph", deliberation, detail)], statements
        stores.rebuild("graph")
        report = verify(stores.app, graph=stores.graph)
        assert report.ok, (statements, report.differences)
    assert report.deliberations == len(SCENARIOS)


def _tamper_cache(stores: Stores, name: str, **changes: str | None) -> None:
    """Set (or, for None, delete) fields of a deliberation's cache hash."""
    client: valkey.Valkey = stores.board._valkey
    key = stores.board.key(stores.ids[name])
    for field, value in changes.items():
        if value is None:
            client.hdel(key, field)
        else:
            client.hset(key, field, value)


def _results_with(stores: Stores, name: str, agent: str, **values: Any) -> str:
    view = stores.board.get(stores.ids[name])
    assert view is not None
    raw = stores.board._valkey.hget(stores.board.key(view.deliberation_id), "results")
    results = json.loads(raw)  # type: ignore[arg-type]
    for r in results:
        if r["agent_id"] == agent:
            r.update(values)
    return json.dumps(results)


def test_each_kind_of_cache_difference_is_reported_until_a_rebuild(cache_stores: Stores) -> None:
    stores = cache_stores
    done, running = stores.get("completed"), stores.get("in_progress")
    a1, a2 = done.agents[:2]
    content = done.proposals[(a1, 0)].content
    cases: list[tuple[str, dict[str, str | None], str]] = [
        ("completed", {"status": "FAILED"}, "status: cache 'FAILED', replay 'COMPLETED'"),
        ("completed", {"results": _results_with(stores, "completed", a1, content="tampered")},
         f"results[{a1}].content: cache 'tampered', replay {content!r}"),
        ("completed", {"results": _results_with(stores, "completed", a2, score=0.01)},
         f"results[{a2}].score: cache 0.01, replay 0.9"),
        ("completed", {"winner": a1}, f"winner: cache {a1!r}, replay {a2!r}"),
        ("completed", {"winner": None}, f"winner: cache None, replay {a2!r}"),
        ("timed_out", {"missing": "[]"}, "missing: cache (), replay ('dev-agent-2',)"),
    ]  # fmt: skip
    assert verify(stores.app, board=stores.board).ok
    for name, changes, detail in cases:
        _tamper_cache(stores, name, **changes)
        report = verify(stores.app, board=stores.board)
        assert _found(report) == [("cache", str(stores.ids[name]), detail)], changes
        stores.rebuild("cache")
        assert verify(stores.app, board=stores.board).ok, changes

    # A missing entry: a running deliberation's never expires, so its absence is a difference.
    stores.board._valkey.delete(stores.board.key(running.id))
    report = verify(stores.app, board=stores.board)
    expected = f"no cache entry (replay at version {running.version}: IN_PROGRESS)"
    assert _found(report) == [("cache", str(running.id), expected)]
    stores.rebuild("cache")
    assert verify(stores.app, board=stores.board).ok


def test_a_missing_finished_entry_is_a_difference_until_it_may_have_expired(
    cache_stores: Stores,
) -> None:
    stores = cache_stores
    done = stores.ids["completed"]
    stores.board._valkey.delete(stores.board.key(done))
    report = verify(stores.app, board=stores.board, cache_expiry_s=600)
    [(projection, d_id, detail)] = _found(report)
    assert (projection, d_id) == ("cache", str(done))
    assert re.fullmatch(r"no cache entry \(COMPLETED \d+ s ago; finished entries live 600 s\)",
                        detail), detail  # fmt: skip
    report = verify(stores.app, board=stores.board, cache_expiry_s=0)  # entries never expire
    [difference] = report.differences
    assert difference.detail.endswith("; entries never expire)")
    for expiry in (1.0, None):  # it may have expired (or how long entries live is unknown)
        report = verify(stores.app, board=stores.board, cache_expiry_s=expiry)
        assert report.ok and report.cache_misses == 1


def test_a_node_that_runs_no_projector_verifies_the_stores_it_reads(stores: Stores) -> None:
    """An API replica on Neo4j and a shared Valkey runs no runner: it still compares those
    stores, and a node that reads neither refuses instead of reporting a clean nothing."""
    replica = Projections(stores.app, [], graph=stores.graph, board=stores.board)
    clean = replica.verify()
    assert clean.ok and set(clean.positions) == {"graph", "cache"}
    running = stores.get("in_progress")
    stores.board._valkey.hset(stores.board.key(running.id), "status", "COMPLETED")
    found = replica.verify()
    assert [(d.projection, d.deliberation_id) for d in found.differences] == [
        ("cache", str(running.id))
    ]
    assert "status" in found.differences[0].detail
    with pytest.raises(NothingToVerifyError, match="neither a graph nor a cache"):
        Projections(stores.app, []).verify()


def test_stores_moving_while_they_are_read_show_no_difference(stores: Stores) -> None:
    # Each read sees its own position: a deliberation that moves between the reads must be read
    # again, or its node, proposals and timeline come from different versions.
    stop = threading.Event()
    # The writer runs while the reads do, a bounded number of pairs per read: an unpaced writer
    # outruns the reads (each reads the whole log), and the test grows without bound.
    allowed = threading.Semaphore(0)

    def write() -> None:
        while not stop.is_set():
            if allowed.acquire(timeout=0.1):
                scenarios.debated(stores.app)
                scenarios.timed_out(stores.app)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    moved = reads = 0
    try:
        # At least 8 reads, and on until 3 of them saw the graph move (a slower engine, or a
        # loaded machine, moves less often per read).
        while reads < 8 or (moved < 3 and reads < 20):
            allowed.release(_PAIRS_PER_READ)
            report = verify(stores.app, graph=stores.graph, board=stores.board)
            assert report.ok, report.differences[:5]
            moved += stores.graph.position("graph") > report.positions["graph"]
            reads += 1
    finally:
        stop.set()
        writer.join(10)
    assert moved >= 3  # the graph did move during the reads
    stores.wait(timeout=120)  # the writer may have run ahead of the projection
    report = verify(stores.app, graph=stores.graph, board=stores.board)
    assert report.ok and report.deliberations > len(SCENARIOS) + 8


def test_critiques_without_ratings_project_and_verify(
    graph: DecisionGraph, board: ValkeyDeliberationBoard
) -> None:
    # A batch of critiques that all lack a rating once stopped the graph projection: LadybugDB
    # typed the all-null column STRING against the schema's DOUBLE.
    app = scenarios.popo_app()
    d_id = scenarios.debated(app, rated=False).deliberation_id
    runners = [
        ProjectorRunner(app, GraphProjection(graph)),
        ProjectorRunner(app, CacheProjection(board)),
    ]
    projections = Projections(app, runners)
    for r in runners:
        r.start()
    try:
        projections.wait(app.recorder.max_notification_id() or 0, timeout=30)
        rows = graph.query(
            "MATCH (d:Deliberation {id: $id})-[:HAS_PROPOSAL]->(:Proposal)-[c:CRITIQUED]->"
            "(:Proposal) RETURN count(c) AS n, count(c.rating) AS rated",
            {"id": str(d_id)},
        )
        assert [(r["n"], r["rated"]) for r in rows] == [(6, 0)]
        assert verify(app, graph=graph, board=board).ok
    finally:
        projections.close()
