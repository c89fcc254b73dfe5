"""An endpoint that never answers: the deliberation ends TIMEOUT on its recorded deadline (not
FAILED), keeps the answers that arrived before it, and names the agents that were missing.

Real nats-server, Valkey, LadybugDB, and Ray actors or NATS workers; the LLM endpoint is the
load generator, told to hang for two of the three agents (it cannot claim correctness, only
behave as a stuck server does).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from aggregates import deliberation_id
from fleet.bootstrap import FleetNode
from fleet.client import FleetClient
from fleet.config import Settings
from fleet.embedded._process import free_port
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet_testing.loadgen import LoadGenServer

pytestmark = pytest.mark.timeout(180)


@pytest.mark.parametrize("backend", ["ray", "nats"])
async def test_a_hanging_endpoint_times_out_with_partial_results(
    tmp_path: Path, ray_session: None, backend: str
) -> None:
    async with LoadGenServer("hang", modes_by_user={"agent-dev-001": "instant"}) as endpoint:
        settings = Settings(
            data_dir=tmp_path,
            grpc_port=free_port(),
            vllm_url=endpoint.url,
            vllm_model="loadgen",
            agent_call_timeout=60.0,  # longer than the deadline: the deadline must win
            agent_backend=backend,  # Ray actors, or fleet up's own NATS workers
        )
        async with FleetNode(settings) as node, FleetClient(node.endpoints.grpc) as client:
            t0 = time.monotonic()
            await client.deliberate(
                "Write a Python function that returns the n-th Fibonacci number",
                task_id="stuck-endpoint",
                timeout_seconds=3,
            )
            final = await client.wait("stuck-endpoint", timeout=30)
            elapsed = time.monotonic() - t0
            await node.wait_projected()
            assert node.store is not None
            d = await node.store.get(deliberation_id("stuck-endpoint"))

    assert final.status == pb.DELIBERATION_STATUS_TIMEOUT, final.error_message
    assert 3.0 <= elapsed < 8.0, f"timed out after {elapsed:.1f} s, deadline was 3 s"
    assert [r.proposal.author_id for r in final.results] == ["agent-dev-001"]
    assert final.results[0].proposal.content.strip()
    assert "agent-dev-002" in final.error_message and "agent-dev-003" in final.error_message
    assert d.missing == ["agent-dev-002", "agent-dev-003"]
    assert d.status.value == "TIMEOUT"
