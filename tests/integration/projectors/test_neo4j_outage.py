"""A Neo4j that goes away loses nothing and applies nothing twice.

The graph projection's runner follows a real JetStream log into a private Neo4j of the test's
own, which is SIGKILLed while catch-up batches are being applied (a transaction open, its commit
never acknowledged), stays down while more deliberations land, and comes back on the same port
and data after a start that takes longer than the driver's own retry window. The runner, retrying
on the errors the node retries on (``fleet.bootstrap._graph_down``), recovers by itself; at the
end ``verify`` finds the graph equal to a replay, every event's timeline node is there once, and
the stored position is the stream's head. The same holds for a kill among live batches, each
one auto-commit query. A Neo4j that is down before the projector starts is waited for in the
same way, without holding up the runner's start.

Each test restarts Neo4j (10-60 s on a loaded 2-core machine), hence the timeouts; the three share
one server, each on a database as new.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from uuid import uuid4

import pytest
from neo4j import Driver, GraphDatabase

from aggregates import AgentAnswer, AgentId, CheckOutcome, Deliberation
from application.app import FleetApplication
from fleet.bootstrap import _graph_down
from fleet.embedded.neo4j import Neo4jServer
from projectors import GraphProjection, ProjectorRunner
from projectors.graph.neo4j import Neo4jGraph
from projectors.verify import verify
from tests.unit.projectors import scenarios

pytestmark = pytest.mark.timeout(600)

EVENTS_PER_DELIBERATION = 9
START_S = 240.0
"""How long a Neo4j start may take here (a JVM and two databases on a loaded machine)."""
CAUGHT_UP_S = 60.0
"""How long a runner may take to catch up once Neo4j answers again (it pauses 5 s at most)."""


def _deliberations(n: int) -> list[Deliberation]:
    """``n`` completed deliberations (9 events each), built in memory, saved in one batch."""
    out = []
    for _ in range(n):
        d = Deliberation.request(
            task_id=f"outage-{uuid4().hex[:10]}", task="add two numbers", role="DEV",
            num_agents=3, rounds=1, requested_at=datetime.now(UTC), timeout_seconds=600,
            rubric="", plan_id="plan-outage", story_id="", requested_by="tests",
        )  # fmt: skip
        d.start()
        for k, a in enumerate(d.agents):
            answer = AgentAnswer(content=f"v{k}", model="m", tokens=k, latency_ms=k)
            d.receive_proposal(agent_id=AgentId(a), round=0, answer=answer)
        for k, a in enumerate(d.agents):
            check = CheckOutcome(check_type="lint", passed=True, score=0.5, message="ok")
            d.score(agent_id=AgentId(a), score=0.1 * k, checks=[check])
        d.complete()
        out.append(d)
    return out


@pytest.fixture
def driver(killable_neo4j_server: Neo4jServer) -> Iterator[Driver]:
    d = GraphDatabase.driver(killable_neo4j_server.uri, auth=killable_neo4j_server.auth)
    try:
        yield d
    finally:
        d.close()


def _count(graph: Neo4jGraph, cypher: str) -> int:
    rows = graph.query(cypher)
    return int(rows[0]["n"])


def _assert_exactly_once(app: FleetApplication, graph: Neo4jGraph, head: int) -> None:
    report = verify(app, graph=graph)
    assert report.ok, report.differences[:5]
    assert graph.position("graph") == head
    assert _count(graph, "MATCH (e:Event) RETURN count(e) AS n") == head
    assert (
        _count(graph, "MATCH (:Deliberation)-[h:HAD_EVENT]->(:Event) RETURN count(h) AS n") == head
    )
    seqs = graph.query("MATCH (e:Event) RETURN e.seq AS seq, count(*) AS n ORDER BY n DESC LIMIT 1")
    assert seqs[0]["n"] == 1, f"event {seqs[0]['seq']} on the timeline {seqs[0]['n']} times"
    doubled = graph.query(
        "MATCH (d:Deliberation)-[r:HAS_PROPOSAL]->(p:Proposal) "
        "WITH d, p, count(r) AS links WHERE links > 1 RETURN d.id AS d, p.id AS p"
    )
    assert doubled == []


def test_a_neo4j_killed_mid_batch_and_restarted_ends_equal_to_the_replay(
    nats_env: dict[str, str], killable_neo4j_server: Neo4jServer, driver: Driver
) -> None:
    app = FleetApplication(nats_env)
    for _ in range(5):  # 400 deliberations, 3,600 events: several catch-up batches
        app.save(*_deliberations(80))
    backlog = app.recorder.max_notification_id() or 0
    graph = Neo4jGraph(driver)
    committed = threading.Event()

    def on_batch(first: int, last: int, applied: int) -> None:
        if last < backlog - 1000:
            committed.set()

    runner = ProjectorRunner(
        app, GraphProjection(graph), retry_on=_graph_down(), lease_ms=3000, on_batch=on_batch
    )
    runner.start()
    try:
        assert committed.wait(START_S), "no batch committed"
        # A moment into the next batch (the runner always has one under way during catch-up).
        threading.Event().wait(random.Random(7).uniform(0.05, 0.4))
        killable_neo4j_server.kill()
        at_kill = runner.position()
        assert 0 < at_kill < backlog, (at_kill, backlog)  # killed mid catch-up
        # While it is down: deliberations keep landing, of every shape the graph draws.
        for build in (scenarios.debated, scenarios.completed, scenarios.timed_out,
                      scenarios.all_failed, scenarios.in_progress):  # fmt: skip
            build(app)
        app.save(*_deliberations(20))
        head = app.recorder.max_notification_id() or 0
        assert runner.running() and runner.error is None, runner.error  # retrying, not dead
        assert runner.position() < head
        killable_neo4j_server.start(timeout=START_S)  # same port and data, after a crash recovery
        runner.wait(head, timeout=START_S)
        assert runner.error is None
        _assert_exactly_once(app, graph, head)
        assert _count(graph, "MATCH (p:Proposal) RETURN count(p) AS n") == _expected_proposals(app)
    finally:
        runner.close()
        app.close()


def test_a_neo4j_killed_under_live_batches_ends_equal_to_the_replay(
    nats_env: dict[str, str], killable_neo4j_server: Neo4jServer, driver: Driver
) -> None:
    """Live batches (at most 3 events here: one layer each) are each one auto-commit query,
    which the driver does not retry: a kill between its sending and its answer is the runner's
    to recover from, with nothing lost or applied twice."""
    app = FleetApplication(nats_env)
    app.save(*_deliberations(10))
    graph = Neo4jGraph(driver)
    committed = threading.Event()
    runner = ProjectorRunner(
        app,
        GraphProjection(graph),
        retry_on=_graph_down(),
        lease_ms=3000,
        batch_size=3,
        on_batch=lambda first, last, applied: committed.set(),
    )
    runner.start()
    stop = threading.Event()
    landed, more = [0], threading.Condition()

    def land() -> None:  # deliberations keep landing, a few events at a time
        while not stop.is_set():
            scenarios.completed(app)
            with more:
                landed[0] += 1
                more.notify_all()

    lander = threading.Thread(target=land, daemon=True)
    try:
        runner.wait(app.recorder.max_notification_id() or 0, timeout=START_S)
        lander.start()
        committed.clear()
        assert committed.wait(30), "no live batch committed"
        killable_neo4j_server.kill()  # a live batch under way, or about to be
        with more:  # and more land while it is down
            target = landed[0] + 5
            assert more.wait_for(lambda: landed[0] >= target, timeout=30)
        stop.set()
        lander.join(30)
        assert runner.running() and runner.error is None, runner.error
        killable_neo4j_server.start(timeout=START_S)
        head = app.recorder.max_notification_id() or 0
        runner.wait(head, timeout=CAUGHT_UP_S)
        assert runner.error is None
        _assert_exactly_once(app, graph, head)
    finally:
        stop.set()
        runner.close()
        app.close()


def _expected_proposals(app: FleetApplication) -> int:
    """Proposals the log records (on time and late), each one Proposal node."""
    head = app.recorder.max_notification_id() or 0
    kinds = (Deliberation.ProposalReceived, Deliberation.LateProposalReceived)  # revisions too
    n, start = 0, 1
    while start <= head:
        page = app.recorder.select_notifications(start, 1000, stop=head)
        n += sum(isinstance(app.mapper.to_domain_event(x), kinds) for x in page)
        start = page[-1].id + 1
    return n


def test_a_projector_started_while_neo4j_is_down_waits_and_catches_up(
    nats_env: dict[str, str], killable_neo4j_server: Neo4jServer, driver: Driver
) -> None:
    app = FleetApplication(nats_env)
    killable_neo4j_server.stop()  # down before the projector starts, its schema not yet set up
    app.save(*_deliberations(30))
    scenarios.debated(app)
    graph = Neo4jGraph(driver)
    runner = ProjectorRunner(app, GraphProjection(graph), retry_on=_graph_down(), lease_ms=3000)
    t0 = time.monotonic()
    runner.start()  # does not raise: it waits for the store
    started_s = time.monotonic() - t0
    try:
        # The driver gives up after RETRY_S (3 s), not its default 30 s (then a minute here):
        # the runner, and the node starting it, are not held up by one transaction's retries.
        assert started_s < 15, f"start took {started_s:.1f} s with Neo4j down"
        head = app.recorder.max_notification_id() or 0
        with pytest.raises(TimeoutError):
            runner.wait(head, timeout=2)
        assert runner.running() and runner.error is None, runner.error
        killable_neo4j_server.start(timeout=START_S)
        back = time.monotonic()
        runner.wait(head, timeout=CAUGHT_UP_S)  # the runner's pause is 5 s at most
        print(f"start {started_s:.1f} s; caught up {time.monotonic() - back:.1f} s after Neo4j")
        _assert_exactly_once(app, graph, head)
        with driver.session() as session:  # the schema was set up once the server was back
            names = {r["name"] for r in session.run("SHOW CONSTRAINTS YIELD name RETURN name")}
        assert {"fleet_deliberation_id", "fleet_event_id", "fleet_proposal_id"} <= names
    finally:
        runner.close()
        app.close()
