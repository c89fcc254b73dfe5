"""The outbox in a whole node, through the commands operators use: ``fleet projections status``
lists it at the stream head, ``fleet verify`` checks its messages and finds them all once, and
``fleet projections rebuild outbox`` publishes nothing again. On the node's own embedded
nats-server (the outbox's stream holds ``orchestration.>``, which a shared server gives to one
stream only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fleet.bootstrap import FleetNode
from fleet.client import FleetClient
from fleet.config import Settings
from fleet.embedded._process import free_port
from fleet_testing.loadgen import LoadGenServer
from tests.integration.fleet._cli import fleet
from tests.support.outbox import read_all
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(120)


async def test_status_verify_and_rebuild_cover_the_outbox(tmp_path: Path) -> None:
    async with LoadGenServer("instant") as lg:
        settings = Settings(
            data_dir=tmp_path / "node",
            grpc_port=free_port(),
            vllm_url=lg.url,
            vllm_model="loadgen",
            agent_runtime="local",
            cache_enabled=False,
        )
        async with FleetNode(settings) as node, FleetClient(node.endpoints.grpc) as client:
            addr = ("--address", client.address)
            await client.deliberate("Write fib(n)", task_id="outbox-1", num_agents=2, rounds=1)
            done = await client.wait("outbox-1", timeout=60)
            assert done.winner_id
            head = node.projections.head() if node.projections else 0

            async def outbox_at_head() -> bool:
                out = await fleet("projections", "status", "--json", *addr)
                rows = {p["name"]: p for p in json.loads(out.stdout)["projections"]}
                return rows.get("outbox", {}).get("position") == head

            await eventually(outbox_at_head, timeout=30, what="the outbox at the stream head")
            out = await fleet("verify", "--json", *addr)
            assert out.returncode == 0, out.stdout + out.stderr
            report = json.loads(out.stdout)
            assert report["differences"] == [] and "outbox" in report["positions"]
            out = await fleet("projections", "rebuild", "outbox", *addr)
            assert out.returncode == 0, out.stderr
            await eventually(outbox_at_head, timeout=30, what="the rebuilt outbox at the head")
            got = await read_all(node.endpoints.nats_url, at_least=3)
    assert [r.subject for r in got] == [
        "orchestration.task.dispatched",
        "orchestration.deliberation.completed",
        "orchestration.task.completed",
    ]
