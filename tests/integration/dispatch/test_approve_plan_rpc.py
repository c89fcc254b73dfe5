"""ApprovePlan over gRPC on a whole node: the plan's deliberations run to the end, the call is
idempotent, and a bad role is INVALID_ARGUMENT naming the field."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from fleet.bootstrap import FleetNode
from fleet.client import FleetClient
from fleet.config import Settings
from fleet.embedded._process import free_port
from fleet.embedded.loadgen import LoadGenServer
from fleet.orchestrator.v1 import orchestrator_pb2 as pb

pytestmark = pytest.mark.timeout(120)


async def test_approve_plan_starts_one_deliberation_per_role(
    tmp_path: Path, nats_url: str, nats_stream: str
) -> None:
    async with LoadGenServer("instant") as lg:
        settings = Settings(
            data_dir=tmp_path,
            nats_url=nats_url,
            stream=nats_stream,
            cache_enabled=False,
            grpc_port=free_port(),
            vllm_url=lg.url,
            vllm_model="loadgen",
            agent_runtime="local",
            plan_consumer=False,
        )
        async with FleetNode(settings) as node, FleetClient(node.endpoints.grpc) as c:
            req = pb.ApprovePlanRequest(
                plan_id="PL-RPC",
                story_id="US-5",
                approved_by="po",
                roles=["DEV", "qa"],
                description="Export invoices as CSV",
                tasks=["CSV writer", "download endpoint"],
            )
            first = await c.stub.ApprovePlan(req)
            again = await c.stub.ApprovePlan(req)
            assert first.created and not again.created
            assert list(first.task_ids) == ["plan:PL-RPC:DEV", "plan:PL-RPC:QA"]
            finals = [await c.wait(t, timeout=60) for t in first.task_ids]
            with pytest.raises(grpc.aio.AioRpcError) as bad:
                await c.stub.ApprovePlan(
                    pb.ApprovePlanRequest(plan_id="x", story_id="y", roles=["CHEF"])
                )
    assert all(f.status == pb.DELIBERATION_STATUS_COMPLETED for f in finals)
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "role" in (bad.value.details() or "")
    # the task text carried the plan's content to the agents
    prompts = " ".join(str(m.get("content")) for b in lg.requests for m in b["messages"])
    assert "Export invoices as CSV" in prompts and "download endpoint" in prompts
