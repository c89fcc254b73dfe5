"""Two API processes and two dispatcher processes on one nats-server and one Valkey: clients
spread over both APIs see the same results, and no deliberation is dispatched twice (the work
queue hands each to one dispatcher; the load generator counts every agent call it gets). The
second API runs no projector and has its own data dir: its Cypher queries and listings read the
first one's embedded graph, not an empty one of its own.
"""

from __future__ import annotations

import asyncio
import collections
from pathlib import Path

import pytest

from aggregates import Deliberation, deliberation_id
from application.app import FleetApplication
from application.stores import ApplicationDeliberationStore
from fleet.client import FleetClient
from fleet.embedded._process import free_port
from fleet.embedded.valkey import ValkeyServer
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet_testing.loadgen import LoadGenServer
from tests.e2e._processes import BACKENDS, FleetProcess
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(240)

N = 8


async def _graphed(api: FleetClient, n: int, timeout: float = 30.0) -> None:
    """Wait until ``api``'s Cypher sees ``n`` completed deliberations (the graph is a projection:
    it may trail a result read from the cache or a replay by a few milliseconds)."""
    cypher = "MATCH (d:Deliberation {status: 'COMPLETED'}) RETURN count(*) AS n"
    rows: list[dict[str, object]] = []

    async def counted() -> bool:
        nonlocal rows
        _, rows, _ = await api.query(cypher)
        return rows == [{"n": n}]

    what = lambda: f"the graph through this API holds {rows}, not {n} completed"  # noqa: E731
    await eventually(counted, timeout=timeout, interval=0.1, what=what)


@pytest.mark.parametrize("backend", sorted(BACKENDS))
async def test_two_apis_and_two_dispatchers_share_the_work(
    tmp_path: Path,
    nats_url: str,
    nats_env: dict[str, str],
    valkey_server: ValkeyServer,
    backend: str,
    backend_env: dict[str, str],
) -> None:
    async with LoadGenServer("instant", delay_s=0.2) as lg:
        base = {
            "NATS_URL": nats_url,
            "FLEET_STREAM": nats_env["NATS_STREAM"],
            "FLEET_VALKEY_URL": valkey_server.url,
            "FLEET_KEY_PREFIX": f"share-{nats_env['NATS_STREAM'].lower()}",
            "FLEET_VLLM_URL": lg.url,
            "FLEET_VLLM_MODEL": "loadgen",
            "FLEET_PLAN_CONSUMER": "off",
            **backend_env,
        }
        procs = [
            FleetProcess(
                tmp_path / "api1", "api,projectors", {**base, "FLEET_GRPC_PORT": str(free_port())}
            ),
            FleetProcess(tmp_path / "api2", "api", {**base, "FLEET_GRPC_PORT": str(free_port())}),
            FleetProcess(tmp_path / "disp1", "dispatcher", base),
            FleetProcess(tmp_path / "disp2", "dispatcher", base),
        ]
        try:
            runs = [await asyncio.to_thread(p.wait_ready, 90) for p in procs]
            apis = [runs[0]["grpc"], runs[1]["grpc"]]
            async with FleetClient(apis[0]) as c1, FleetClient(apis[1]) as c2:
                clients = [c1, c2]
                tasks = [f"share-{i}" for i in range(N)]
                await asyncio.gather(
                    *(
                        clients[i % 2].deliberate(
                            "Write a Python function that returns the n-th Fibonacci number",
                            task_id=t,
                            num_agents=3,
                            rounds=1,
                            timeout_seconds=60,
                        )
                        for i, t in enumerate(tasks)
                    )
                )
                # wait through the *other* API than the one that accepted the task
                finals = await asyncio.gather(
                    *(clients[(i + 1) % 2].wait(t, timeout=90) for i, t in enumerate(tasks))
                )
                again = await asyncio.gather(
                    *(clients[i % 2].result(t) for i, t in enumerate(tasks))
                )
                await _graphed(c2, N)
                listed = await c2.list(status="COMPLETED", page_size=N + 1)
                status = await c2.stub.GetNodeStatus(pb.GetNodeStatusRequest())
        finally:
            for p in procs:
                p.stop()
        logs = [p.tail() for p in procs[2:]]
    assert sorted(d.task_id for d in listed.deliberations) == sorted(tasks)
    assert {p.name for p in status.projections} == {"graph", "cache", "outbox", "agent-responses"}
    for f, g in zip(finals, again, strict=True):
        assert f.status == pb.DELIBERATION_STATUS_COMPLETED, f.error_message
        assert (f.winner_id, [r.proposal.content for r in f.results]) == (
            g.winner_id,
            [r.proposal.content for r in g.results],
        )
    # each deliberation: 3 proposals + 3 peer ratings, called once each
    assert lg.counters.calls == N * 6, (lg.counters.calls, logs)
    per_agent = collections.Counter(str(b.get("user")) for b in lg.requests)
    assert set(per_agent.values()) == {N * 2}
    app = await asyncio.to_thread(FleetApplication, nats_env)
    try:
        store = ApplicationDeliberationStore(app)
        for t in tasks:
            evs = list(await store.history(deliberation_id(t)))
            assert sum(isinstance(e, Deliberation.Started) for e in evs) == 1
            assert sum(isinstance(e, Deliberation.ProposalReceived) for e in evs) == 3
    finally:
        app.close()
