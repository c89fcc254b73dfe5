"""Both agent backends follow councils live, with no restart: an agent registered through the
API answers in the next deliberation (Ray actors, NATS workers), an unregistered one does not."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fleet.bootstrap import FleetNode
from fleet.client import FleetClient
from fleet.config import Settings
from fleet.embedded._process import free_port
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet_testing.loadgen import LoadGenServer

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(params=["ray", "nats"])
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "ray":
        request.getfixturevalue("ray_session")  # the session's one Ray instance, shared
    return str(request.param)


async def test_a_registered_agent_takes_the_next_deliberation_without_a_restart(
    backend: str, tmp_path: Path, nats_url: str, nats_stream: str
) -> None:
    async with LoadGenServer("instant") as lg:
        settings = Settings(
            data_dir=tmp_path,
            nats_url=nats_url,
            stream=nats_stream,
            cache_enabled=False,
            grpc_port=free_port(),
            plan_consumer=False,
            vllm_url=lg.url,
            vllm_model="loadgen",
            agent_backend=backend,
        )
        async with FleetNode(settings) as node, FleetClient(node.endpoints.grpc) as c:
            await c.stub.RegisterAgent(pb.RegisterAgentRequest(agent_id="qa-live", role="QA"))
            await c.stub.UnregisterAgent(
                pb.UnregisterAgentRequest(agent_id="agent-qa-001", role="QA")
            )
            t0 = time.monotonic()
            await c.deliberate("test the parser", role="QA", num_agents=3, task_id="live")
            final = await c.wait("live", timeout=60)
            took = time.monotonic() - t0
    assert final.status == pb.DELIBERATION_STATUS_COMPLETED, final.error_message
    assert sorted(r.proposal.author_id for r in final.results) == [
        "agent-qa-002",
        "agent-qa-003",
        "qa-live",
    ]
    callers = {b.get("user") for b in lg.requests}
    assert "qa-live" in callers and "agent-qa-001" not in callers
    assert took < 30, f"{backend}: the registered agent's deliberation took {took:.1f} s"
