"""An API replica (``--components api``) beside a projectors node, on the embedded graph and a
shared Valkey: it reads the projectors' graph (queries, listings, the open count, projection
status; a rebuild asked of it happens there) and its ``fleet verify`` compares the real stores:
a tampered cache entry is found and named. With no projectors node up it refuses, naming what it
cannot reach, instead of answering from an empty graph or calling a comparison of nothing clean.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
import pytest_asyncio
import valkey

from aggregates import deliberation_id
from fleet.bootstrap import FleetNode
from fleet.client import FleetClient
from fleet.config import Settings
from fleet.embedded._process import free_port
from fleet.embedded.valkey import ValkeyServer
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from tests.fixtures.nats import unique_stream_name
from tests.integration.fleet._cli import fleet

pytestmark = pytest.mark.timeout(120)

TASKS = [f"replica-{i}" for i in range(3)]
COUNT = "MATCH (d:Deliberation) RETURN count(*) AS n"


@dataclass
class Pair:
    projectors: FleetNode
    replica: FleetNode
    client: FleetClient
    address: str
    key_prefix: str


@pytest_asyncio.fixture(loop_scope="session")
async def pair(tmp_path: Path, nats_url: str, valkey_server: ValkeyServer) -> AsyncIterator[Pair]:
    prefix = f"replica-{uuid.uuid4().hex[:8]}"
    common = {
        "nats_url": nats_url,
        "stream": unique_stream_name("REPLICA"),
        "valkey_url": valkey_server.url,
        "key_prefix": prefix,
    }
    projectors = FleetNode(
        Settings(data_dir=tmp_path / "projectors", components=frozenset({"projectors"}), **common)
    )
    replica = FleetNode(
        Settings(
            data_dir=tmp_path / "api",
            components=frozenset({"api"}),
            grpc_port=free_port(),
            **common,
        )
    )
    async with projectors, replica, FleetClient(replica.endpoints.grpc) as client:
        assert replica.runners == [] and not (tmp_path / "api" / "graph").exists()
        for task in TASKS:
            await client.deliberate("Write a function that parses ISO dates", task_id=task)
        await projectors.wait_projected()
        yield Pair(projectors, replica, client, replica.endpoints.grpc, prefix)


async def test_the_replica_reads_the_projectors_graph(pair: Pair) -> None:
    _, rows, _ = await pair.client.query(COUNT)
    assert rows == [{"n": len(TASKS)}]
    listed = await pair.client.list()
    assert sorted(d.task_id for d in listed.deliberations) == TASKS
    status = await pair.client.stub.GetNodeStatus(pb.GetNodeStatusRequest())
    assert status.deliberations_in_flight == len(TASKS)  # PENDING: no dispatcher runs here
    assert {p.name: p.lag_events for p in status.projections} == {
        "graph": 0,
        "cache": 0,
        "outbox": 0,
        "agent-responses": 0,
    }
    out = await fleet("query", COUNT, "--json", "--address", pair.address)
    assert out.returncode == 0 and '"n": 3' in out.stdout, out.stderr
    with pytest.raises(grpc.aio.AioRpcError) as e:  # refusals come back as they were
        await pair.client.query("MATCH (d:Deliberation) DETACH DELETE d")
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await pair.client.query("MATCH (x:NoSuchLabel) RETURN x")
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    rebuilt = await fleet("projections", "rebuild", "graph", "--address", pair.address)
    assert rebuilt.returncode == 0 and "rebuilt" in rebuilt.stdout, rebuilt.stderr
    _, rows, _ = await pair.client.query(COUNT)
    assert rows == [{"n": len(TASKS)}]


async def test_verify_on_the_replica_finds_a_tampered_cache_entry(
    pair: Pair, valkey_server: ValkeyServer
) -> None:
    clean = await fleet("verify", "--address", pair.address)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "agree with the replay" in clean.stdout
    assert all(p in clean.stdout for p in ("graph", "cache", "outbox", "agent-responses"))

    key = f"{pair.key_prefix}:deliberation:{deliberation_id(TASKS[1])}"
    v = valkey.Valkey.from_url(valkey_server.url)
    try:
        assert v.hget(key, "status") == b"PENDING"
        v.hset(key, "status", "COMPLETED")
    finally:
        v.close()  # type: ignore[no-untyped-call]
    found = await fleet("verify", "--address", pair.address)
    assert found.returncode == 1, found.stdout + found.stderr
    assert "1 differences" in found.stderr
    assert TASKS[1] in found.stdout and "cache" in found.stdout and "status" in found.stdout
    assert "COMPLETED" in found.stdout and "PENDING" in found.stdout


async def test_without_a_projectors_node_the_replica_refuses_and_says_why(pair: Pair) -> None:
    await pair.projectors.close()
    for call in (
        pair.client.query(COUNT),
        pair.client.list(),
        pair.client.stub.GetNodeStatus(pb.GetNodeStatusRequest()),
        pair.client.stub.VerifyProjections(pb.VerifyProjectionsRequest()),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await call
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "no node serves the projections" in (e.value.details() or "")
    for args in (("verify",), ("list",), ("query", COUNT)):
        out = await fleet(*args, "--address", pair.address)
        assert out.returncode != 0, (args, out.stdout)
        assert "fleet up --components projectors" in out.stderr, (args, out.stderr)
    # Reads of one deliberation never needed the graph: they replay the events.
    assert (await pair.client.result(TASKS[0])).status == pb.DELIBERATION_STATUS_PENDING
