"""Fencing (two runners of one projection never both write), catch-up batches equal to one-by-one
application, fresh reads after an event lands, and the README's five queries on a real graph."""

from __future__ import annotations

import time
from typing import Any

import pytest

from aggregates import AgentAnswer
from application.queries import DeliberationQueries, recorder_latest_version
from application.stores import ApplicationDeliberationStore
from projectors import CacheProjection, GraphProjection, ProjectorRunner, view_from_aggregate
from projectors.cache.valkey import ValkeyDeliberationBoard
from projectors.errors import ProjectionFencedError
from projectors.fence import Fence
from projectors.graph.port import DecisionGraph
from projectors.verify import verify
from tests.fixtures.graphs import engine_of
from tests.support.deliberations import requested
from tests.support.waiting import eventually_sync
from tests.unit.projectors import scenarios

pytestmark = pytest.mark.timeout(90)

FIVE_QUERIES = {
    "wins per agent and role": (
        "MATCH (d:Deliberation)-[:WON_BY]->(p:Proposal)<-[:PROPOSED]-(a:Agent) "
        "RETURN d.role AS role, a.id AS agent, count(*) AS wins ORDER BY wins DESC, agent"
    ),
    "timed out, and who was missing": (
        "MATCH (d:Deliberation {status: 'TIMEOUT'}) RETURN d.task_id AS task, d.missing AS missing"
    ),
    "one deliberation's timeline": (
        "MATCH (d:Deliberation {task_id: $task})-[:HAD_EVENT]->(e:Event) "
        "RETURN e.seq AS seq, e.type AS type, e.at AS at ORDER BY e.seq"
    ),
    "latency and score per model": (
        "MATCH (p:Proposal) WHERE p.late = false RETURN p.model AS model, "
        "avg(p.latency_ms) AS avg_ms, avg(p.score) AS avg_score, count(*) AS n ORDER BY model"
    ),
    "deliberations per plan and status": (
        "MATCH (pl:Plan)-[:SPAWNED]->(d:Deliberation) "
        "RETURN pl.id AS plan, d.status AS status, count(*) AS n ORDER BY plan, status"
    ),
}


def _all_events(app: Any) -> list[tuple[object, int]]:
    return [
        (app.mapper.to_domain_event(n), n.id) for n in app.recorder.select_notifications(1, 10_000)
    ]


# A node's label and a relationship's type: ``label(x)`` in LadybugDB, ``labels(n)[0]`` and
# ``type(r)`` in Neo4j (docs/projections.md lists such differences).
_LABEL = {"ladybug": ("label(n)", "label(r)"), "neo4j": ("labels(n)[0]", "type(r)")}


def _graph_dump(graph: DecisionGraph) -> dict[str, Any]:
    node_label, rel_type = _LABEL[engine_of(graph)]
    return {
        "nodes": graph.query(
            f"MATCH (n) WHERE {node_label} <> 'Projection' "
            f"RETURN {node_label} AS l, n.id AS id ORDER BY l, id",
            limit=100_000,
        ),
        "deliberations": graph.query(
            "MATCH (d:Deliberation) RETURN d.id, d.status, d.version, d.winner, d.updated_at, "
            "d.finished_at ORDER BY d.id"
        ),
        "proposals": graph.query(
            "MATCH (p:Proposal) RETURN p.id, p.score, p.late, p.checks ORDER BY p.id"
        ),
        "agents": graph.query("MATCH (a:Agent) RETURN a.id, a.role, a.model ORDER BY a.id"),
        "links": graph.query(
            f"MATCH (a)-[r]->(b) RETURN {rel_type} AS t, a.id AS src, b.id AS dst "
            "ORDER BY t, src, dst",
            limit=100_000,
        ),
    }


def _mixed(app: Any) -> None:
    # Interleaved so that batches hold several deliberations at different steps.
    for _ in range(3):
        scenarios.completed(app)
        scenarios.timed_out(app)
        scenarios.all_failed(app)


@pytest.mark.parametrize("size", [37, 1000])
def test_a_catch_up_batch_gives_the_graph_one_by_one_application_gives(
    graph: DecisionGraph, size: int
) -> None:
    """Odd batch boundaries (37 events), and all of it in one batch; either way the late
    proposals, which follow their deliberation's scores, take a second layer on Neo4j."""
    app = scenarios.popo_app()
    _mixed(app)
    _mixed(app)
    events = _all_events(app)
    projection = GraphProjection(graph)
    for e, p in events:
        projection.apply(e, p)
    one_by_one = _graph_dump(graph)
    projection.reset()
    for i in range(0, len(events), size):
        projection.apply_batch(events[i : i + size], base=projection.position())
    assert _graph_dump(graph) == one_by_one
    assert projection.position() == events[-1][1]
    report = verify(app, graph=graph)
    assert report.ok, report.differences


def test_two_runners_of_one_projection_never_both_apply(
    graph: DecisionGraph, board: ValkeyDeliberationBoard
) -> None:
    app = scenarios.popo_app()
    _mixed(app)
    # A lease far longer than the test's steps (nothing expires: the handover is the release),
    # short enough that the standby's poll (a sixth of it) notices the release within 2 s.
    lease_ms = 12_000
    for projection in (GraphProjection(graph), CacheProjection(board)):
        first = ProjectorRunner(app, projection, owner="first", lease_ms=lease_ms, batch_size=7)
        second = ProjectorRunner(app, projection, owner="second", lease_ms=lease_ms, batch_size=7)
        head = app.recorder.max_notification_id() or 0
        first.start()
        first.wait(1)  # "first" holds the claim before "second" asks for it
        second.start()
        first.wait(head)
        # Its claim refused (on Neo4j it may first be retried after a deadlock between the two
        # claims' locks: ~1 s), it stands by, having applied nothing.
        eventually_sync(lambda s=second: s.state == "standby", what="second never stood by")
        assert second.applied == 0  # fenced out from the start
        more = scenarios.completed(app)
        first.wait(more.position)
        first.close()  # a clean stop releases the lease: the standby takes over
        later = scenarios.timed_out(app)
        second.wait(later.position, timeout=20)
        assert second.state == "active"
        ours = sum(1 for e, _ in _all_events(app) if type(e).__module__.startswith("aggregates"))
        assert first.applied + second.applied == ours  # every event applied exactly once
        second.close()
        # The old owner comes back with its stale fence: refused, writes nothing.
        scenarios.all_failed(app)
        position = projection.position()
        pending = [(e, p) for e, p in _all_events(app) if p > position]
        stale = Fence(owner="first", epoch=1, lease_ms=60_000)
        with pytest.raises(ProjectionFencedError):
            projection.apply_batch(pending, base=position, fence=stale)
        assert projection.position() == position
        assert projection.claim("first", 60_000) is not None  # released: it may claim anew
    report = verify(app, graph=graph, board=board)
    assert report.ok, report.differences


async def test_reads_are_never_older_than_the_last_stored_event(
    board: ValkeyDeliberationBoard,
) -> None:
    app = scenarios.popo_app()
    run = scenarios.completed(app, late=False)
    queries = DeliberationQueries(
        ApplicationDeliberationStore(app),
        board,
        None,
        latest_version=recorder_latest_version(app.recorder),
    )
    task_id = app.repository.get(run.deliberation_id).task_id
    projection = CacheProjection(board)
    events = _all_events(app)
    for e, p in events[:4]:  # the cache stops behind: requested, started, 2 proposals
        projection.apply(e, p)
    view = await queries.result(task_id)
    assert view == view_from_aggregate(app.repository.get(run.deliberation_id))
    assert view.position is None and queries.cache_stale == 1  # a replay, not the stale entry
    for e, p in events[4:]:
        projection.apply(e, p)
    view = await queries.result(task_id)
    assert view.position == events[-1][1] and queries.cache_hits == 1  # caught up: the cache
    board.reset()
    assert (await queries.result(task_id)).status.value == "COMPLETED"  # a miss: replayed
    assert queries.cache_misses == 1


def test_the_five_readme_queries_on_a_real_graph(graph: DecisionGraph) -> None:
    app = scenarios.popo_app()
    done = scenarios.completed(app)
    timeout = scenarios.timed_out(app)
    scenarios.all_failed(app)
    with ProjectorRunner(app, GraphProjection(graph)) as runner:
        runner.wait(app.recorder.max_notification_id() or 0)
    d = app.repository.get(done.deliberation_id)
    answers = {
        name: graph.query(cypher, {"task": d.task_id}) for name, cypher in FIVE_QUERIES.items()
    }
    assert answers["wins per agent and role"] == [{"role": "DEV", "agent": d.winner, "wins": 1}]
    t = app.repository.get(timeout.deliberation_id)
    assert answers["timed out, and who was missing"] == [
        {"task": t.task_id, "missing": list(t.missing)}
    ]
    timeline = answers["one deliberation's timeline"]
    assert [r["type"] for r in timeline][:2] == ["Requested", "Started"]
    assert len(timeline) == d.version and timeline[-1]["type"] == "LateProposalReceived"
    (model,) = answers["latency and score per model"]
    assert model["model"] == "gemma-3-270m" and model["n"] == 3 + 2 + 0
    plans = answers["deliberations per plan and status"]
    assert plans == [{"plan": d.plan_id, "status": "COMPLETED", "n": 1}]


def test_a_slow_query_is_stopped_at_its_time_limit(graph: DecisionGraph) -> None:
    from projectors.errors import QueryTimeoutError

    t0 = time.monotonic()
    with pytest.raises(QueryTimeoutError):
        graph.query(
            "UNWIND range(1, 20000) AS x UNWIND range(1, 20000) AS y WITH x, y "
            "WHERE (x * y) % 7 = 3 RETURN count(*) AS n",
            timeout_s=0.2,
        )
    assert time.monotonic() - t0 < 5
    assert graph.query("RETURN 1 AS one") == [{"one": 1}]  # the connection still answers


def test_critiques_link_the_reviewers_proposal_to_the_reviewed_one(graph: DecisionGraph) -> None:

    from aggregates import AgentId, PeerReview

    app = scenarios.popo_app()
    d = requested("critique-1", task="t", num_agents=2, rounds=2, requested_by="tests")
    d.start()
    a, b = d.agents
    for agent in (a, b):
        d.receive_proposal(
            agent_id=AgentId(agent),
            round=0,
            answer=AgentAnswer(content=f"{agent} v0", model="m", tokens=1, latency_ms=1),
        )
    d.receive_critique(
        agent_id=AgentId(a), round=1,
        reviews=[PeerReview(reviewer=a, target=b, score=0.25, text="misses the edge case")],
    )  # fmt: skip
    app.save(d)
    with ProjectorRunner(app, GraphProjection(graph)) as runner:
        runner.wait(app.recorder.max_notification_id() or 0)
    rows = graph.query(
        "MATCH (c:Proposal)-[k:CRITIQUED]->(t:Proposal) "
        "RETURN c.agent_id AS critic, t.agent_id AS target, k.round AS round, "
        "k.rating AS rating, k.content AS text"
    )
    assert rows == [
        {"critic": a, "target": b, "round": 1, "rating": 0.25, "text": "misses the edge case"}
    ]
    types = graph.query("MATCH (e:Event) RETURN e.type AS t ORDER BY e.seq")
    assert [r["t"] for r in types][-1] == "CritiqueReceived"


def test_scores_and_the_win_go_to_each_agents_latest_on_time_proposal(
    graph: DecisionGraph,
) -> None:
    # The score statements find the final proposal by key lookups over every round; a revision
    # (round 1) must take the score from round 0, an agent that did not revise keeps round 0.

    from aggregates import AgentId, CheckOutcome

    app = scenarios.popo_app()
    d = requested("rounds-1", task="t", num_agents=2, rounds=2, requested_by="tests")
    d.start()
    a, b = (AgentId(x) for x in d.agents)
    for agent in (a, b):
        d.receive_proposal(
            agent_id=agent,
            round=0,
            answer=AgentAnswer(content=f"{agent} v0", model="m", tokens=1, latency_ms=1),
        )
    d.revise_proposal(
        agent_id=a,
        round=1,
        answer=AgentAnswer(content=f"{a} v1", model="m", tokens=1, latency_ms=1),
    )
    check = CheckOutcome(check_type="lint", passed=True, score=1.0)
    d.score(agent_id=a, score=0.9, checks=[check])
    d.score(agent_id=b, score=0.4, checks=[check])
    d.complete()
    d.receive_proposal(
        agent_id=b, round=1, answer=AgentAnswer(content="late", model="m", tokens=1, latency_ms=1)
    )
    app.save(d)
    events = _all_events(app)
    projection = GraphProjection(graph)
    dumps = []
    for apply in ("one by one", "batched"):
        if apply == "one by one":
            for e, p in events:
                projection.apply(e, p)
        else:
            projection.reset()
            projection.apply_batch(events, base=0)
        scores = graph.query(
            "MATCH (p:Proposal) RETURN p.agent_id AS agent, p.round AS round, "
            "p.late AS late, p.score AS score ORDER BY agent, round, late"
        )
        assert scores == [
            {"agent": a, "round": 0, "late": False, "score": None},
            {"agent": a, "round": 1, "late": False, "score": 0.9},
            {"agent": b, "round": 0, "late": False, "score": 0.4},
            {"agent": b, "round": 1, "late": True, "score": None},
        ], apply
        won = graph.query(
            "MATCH (:Deliberation)-[:WON_BY]->(p:Proposal) RETURN p.agent_id AS a, p.round AS r"
        )
        assert won == [{"a": a, "r": 1}], apply
        dumps.append(_graph_dump(graph))
    assert dumps[0] == dumps[1]
