"""The projection RPCs and commands on a real gRPC server: read-only Cypher refusals through
QueryHistory and ``fleet query``, GetNodeStatus and ``fleet projections status``, ``fleet verify``,
``fleet projections rebuild``. A light node (no Ray, no model): the API over real stores, the
graph on each engine (LadybugDB and Neo4j)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import pytest_asyncio
import valkey

from application.queries import DeliberationQueries, LocalGraphReader, recorder_latest_version
from application.stores import ApplicationDeliberationStore
from fleet.client import FleetClient
from fleet.embedded._process import free_port
from fleet.embedded.valkey import ValkeyServer
from fleet.grpc._services import ApiServices
from fleet.grpc.server import GrpcServer, OrchestratorServicer
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from projectors import CacheProjection, GraphProjection, ProjectorRunner
from projectors.cache.valkey import ValkeyDeliberationBoard
from projectors.control import Projections
from projectors.graph.port import DecisionGraph
from projectors.service import LocalProjections
from tests.fixtures.graphs import behind_fleets_back, engine_of
from tests.unit.projectors import scenarios

pytestmark = pytest.mark.timeout(120)
ROOT = Path(__file__).resolve().parents[3]

WRITES = [
    "CREATE (:Agent {id: 'intruder'})",
    "MERGE (a:Agent {id: 'intruder'})",
    "MATCH (d:Deliberation) SET d.status = 'COMPLETED'",
    "MATCH (d:Deliberation) DELETE d",
    "MATCH (d:Deliberation) DETACH DELETE d",
    "MATCH (a:Agent) REMOVE a.model",
    "CALL db.createLabel('X')",
    "CALL apoc.create.node(['Agent'], {id: 'intruder'})",
    "CREATE INDEX i FOR (n:Agent) ON (n.role)",
    "CREATE CONSTRAINT c FOR (n:Agent) REQUIRE n.role IS UNIQUE",
    "DROP TABLE Agent",
    "DROP INDEX i",
    "CREATE NODE TABLE X(id STRING, PRIMARY KEY (id))",
    "ALTER TABLE Agent ADD intruder STRING",
    "COPY Agent FROM '/tmp/agents.csv'",
    "LOAD FROM '/etc/passwd' RETURN *",
    "LOAD CSV FROM 'file:///etc/passwd' AS line RETURN line",
    "// just reading\nMATCH (a:Agent) DETACH DELETE a",
    "/* read */ MATCH (a:Agent) /* only */ SET a.role = 'x'",
    "MATCH (d:Deliberation) CALL { WITH d DETACH DELETE d } RETURN 1",
    "MATCH (a:Agent) RETURN a.id; CREATE (:Agent {id: 'intruder'})",
    "MATCH (a:Agent) ＳＥＴ a.role = 'x'",
    "MATCH (a:Agent) SE\u200bT a.role = 'x'",
    "match (a:Agent) dEtAcH dElEtE a",
]


@pytest_asyncio.fixture(loop_scope="session")
async def node(
    graph: DecisionGraph, valkey_server: ValkeyServer, valkey_prefix: str
) -> AsyncIterator[dict[str, Any]]:
    app = scenarios.popo_app()
    for _ in range(3):
        scenarios.completed(app)
        scenarios.timed_out(app)
    client = valkey.Valkey.from_url(valkey_server.url)
    board = ValkeyDeliberationBoard(client, key_prefix=valkey_prefix)
    runners = [
        ProjectorRunner(app, GraphProjection(graph)),
        ProjectorRunner(app, CacheProjection(board)),
    ]
    projections = Projections(app, runners)
    for r in runners:
        r.start()
    projections.wait(app.recorder.max_notification_id() or 0, timeout=30)
    store = ApplicationDeliberationStore(app)
    queries = DeliberationQueries(
        store, board, LocalGraphReader(graph), latest_version=recorder_latest_version(app.recorder)
    )
    services = ApiServices(
        store, queries, default_timeout_s=60, projections=LocalProjections(projections)
    )
    server = GrpcServer(OrchestratorServicer(services), host="127.0.0.1", port=free_port())
    async with server, FleetClient(f"127.0.0.1:{server.port}") as api:
        yield {
            "app": app, "graph": graph, "board": board, "projections": projections, "api": api,
            "address": f"127.0.0.1:{server.port}",
        }  # fmt: skip
    projections.close()
    client.close()  # type: ignore[no-untyped-call]


def _fleet(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "fleet.cli", *args], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip


def _snapshot(graph: DecisionGraph) -> list[dict[str, Any]]:
    label = "labels(n)[0]" if engine_of(graph) == "neo4j" else "label(n)"
    return graph.query(
        f"MATCH (n) RETURN {label} AS l, count(*) AS n, max(n.id) AS top ORDER BY l"
    ) + graph.query("MATCH (a:Agent) RETURN a.id, a.role, a.model ORDER BY a.id")


async def test_write_attempts_are_refused_and_the_graph_is_unchanged(
    node: dict[str, Any],
) -> None:
    graph, api = node["graph"], node["api"]
    before = _snapshot(graph)
    for cypher in WRITES:
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await api.query(cypher)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, cypher
        assert "not allowed in a read-only query" in (e.value.details() or ""), cypher
    for cypher in WRITES[:6] + WRITES[-4:]:
        out = await asyncio.to_thread(_fleet, "query", cypher, "--address", node["address"])
        assert out.returncode == 2, (cypher, out.stdout, out.stderr)
        assert "read-only" in out.stderr
    assert _snapshot(graph) == before
    _, rows, _ = await api.query(
        "MATCH (d:Deliberation {status: $s}) RETURN count(*) AS n", {"s": "TIMEOUT"}
    )
    assert rows == [{"n": 3}]
    out = await asyncio.to_thread(
        _fleet, "query", "MATCH (d:Deliberation) WHERE d.status = $s RETURN count(*) AS n",
        "--param", "s=COMPLETED", "--json", "--address", node["address"],
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["rows"] == [{"n": 3}]


async def test_status_verify_and_rebuild(node: dict[str, Any]) -> None:
    app, api = node["app"], node["api"]
    head = app.recorder.max_notification_id()
    status = await api.stub.GetNodeStatus(pb.GetNodeStatusRequest())
    assert status.stream_head == head
    assert {p.name: (p.position, p.lag_events) for p in status.projections} == {
        "graph": (head, 0),
        "cache": (head, 0),
    }
    out = await asyncio.to_thread(
        _fleet, "projections", "status", "--json", "--address", node["address"]
    )
    assert out.returncode == 0, out.stderr
    assert {p["name"] for p in json.loads(out.stdout)["projections"]} == {"graph", "cache"}
    out = await asyncio.to_thread(_fleet, "verify", "--json", "--address", node["address"])
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads(out.stdout)["differences"] == []
    for name in ("graph", "cache"):
        out = await asyncio.to_thread(
            _fleet, "projections", "rebuild", name, "--address", node["address"]
        )
        assert out.returncode == 0, out.stderr
        assert "rebuilt" in out.stdout
    verified = await api.stub.VerifyProjections(pb.VerifyProjectionsRequest())
    assert list(verified.differences) == [] and verified.deliberations == 6
    # A corrupted graph is found, and `fleet verify` exits 1.
    behind_fleets_back(
        node["graph"], "MATCH (d:Deliberation {status: 'TIMEOUT'}) SET d.status = 'X'"
    )
    out = await asyncio.to_thread(_fleet, "verify", "--address", node["address"])
    assert out.returncode == 1 and "3 differences" in out.stderr
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await api.stub.RebuildProjection(pb.RebuildProjectionRequest(name="nope"))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def _verify_json(address: str) -> tuple[int, list[tuple[str, str, str]]]:
    out = _fleet("verify", "--json", "--address", address)
    assert out.returncode in (0, 1), out.stderr
    found = json.loads(out.stdout)["differences"]
    return out.returncode, [(d["projection"], d["task_id"], d["detail"]) for d in found]


async def test_verify_reports_graph_and_cache_differences_until_rebuilt(
    node: dict[str, Any],
) -> None:
    app, graph, board, address = node["app"], node["graph"], node["board"], node["address"]
    running = app.repository.get(scenarios.in_progress(app).deliberation_id)
    done = app.repository.get(scenarios.completed(app, late=False).deliberation_id)
    node["projections"].wait(app.recorder.max_notification_id(), timeout=30)
    agent = done.agents[0]
    # Behind the projector's back, as a bug (or an operator's database client) would.
    behind_fleets_back(
        graph, "MATCH (e:Event {id: $id}) SET e.type = 'Cancelled'", {"id": f"{running.id}:2"}
    )
    behind_fleets_back(
        graph,
        "MATCH (p:Proposal {id: $id}) SET p.content = 'tampered'",
        {"id": f"{done.id}:0:{agent}"},
    )
    client: valkey.Valkey = board._valkey
    results = json.loads(client.hget(board.key(done.id), "results"))  # type: ignore[arg-type]
    results[0]["score"] = 0.01
    client.hset(board.key(done.id), "results", json.dumps(results))
    client.delete(board.key(running.id))

    code, found = await asyncio.to_thread(_verify_json, address)
    content = done.proposals[(agent, 0)].content
    assert code == 1
    assert sorted(found) == sorted([
        ("graph", running.task_id, "Event[2].type: graph 'Cancelled', replay 'Started'"),
        ("graph", done.task_id,
         f"Proposal[0:{agent}].content: graph 'tampered', replay {content!r}"),
        ("cache", done.task_id, f"results[{agent}].score: cache 0.01, replay 0.6"),
        ("cache", running.task_id,
         f"no cache entry (replay at version {running.version}: IN_PROGRESS)"),
    ])  # fmt: skip
    out = await asyncio.to_thread(_fleet, "verify", "--address", address)
    assert out.returncode == 1 and "4 differences" in out.stderr
    assert "Event[2].type" in out.stdout and running.task_id in out.stdout
    for name in ("graph", "cache"):
        out = await asyncio.to_thread(_fleet, "projections", "rebuild", name, "--address", address)
        assert out.returncode == 0, out.stderr
    assert await asyncio.to_thread(_verify_json, address) == (0, [])


def _lags(address: str) -> dict[str, tuple[int, float | None]]:
    out = _fleet("projections", "status", "--json", "--address", address)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["projections"]
    return {p["name"]: (p["lag_events"], p["lag_seconds"]) for p in rows}


# The cache's lag: the graph engine plays no part, so the embedded one alone.
@pytest.mark.parametrize("graph", ["ladybug"], indirect=True)
async def test_status_shows_the_lag_in_seconds_of_a_stopped_projection(
    node: dict[str, Any],
) -> None:
    app, projections, address = node["app"], node["projections"], node["address"]
    assert await asyncio.to_thread(_lags, address) == {"graph": (0, 0.0), "cache": (0, 0.0)}
    projections.runner("cache").close()
    await asyncio.sleep(1.5)
    scenarios.completed(app)  # recorded 1.5 s after the last event the cache handled
    head = app.recorder.max_notification_id()
    projections.runner("graph").wait(head, timeout=30)
    lags = await asyncio.to_thread(_lags, address)
    assert lags["graph"] == (0, 0.0)
    behind, seconds = lags["cache"]
    assert behind > 0 and seconds is not None and 1.5 <= seconds < 30, lags
    out = await asyncio.to_thread(_fleet, "projections", "status", "--address", address)
    assert out.returncode == 0 and f"{seconds:.2f}" in out.stdout
    out = await asyncio.to_thread(_fleet, "projections", "rebuild", "cache", "--address", address)
    assert out.returncode == 0, out.stderr
    assert await asyncio.to_thread(_lags, address) == {"graph": (0, 0.0), "cache": (0, 0.0)}
