"""ApprovePlan over gRPC on a whole node: the task ids it answers with can be read at once, the
plan's deliberations run to the end, the call is idempotent, and a bad role is INVALID_ARGUMENT
naming the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc
import pytest

from fleet.bootstrap import FleetNode
from fleet.client import FleetClient
from fleet.config import Settings
from fleet.embedded._process import free_port
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet_testing.loadgen import LoadGenServer

pytestmark = pytest.mark.timeout(120)


def _settings(tmp_path: Path, nats_url: str, nats_stream: str, **more: Any) -> Settings:
    return Settings(
        data_dir=tmp_path,
        nats_url=nats_url,
        stream=nats_stream,
        cache_enabled=False,
        grpc_port=free_port(),
        **more,
    )


async def test_approve_plan_starts_one_deliberation_per_role(
    tmp_path: Path, nats_url: str, nats_stream: str
) -> None:
    async with LoadGenServer("instant") as lg:
        settings = _settings(
            tmp_path,
            nats_url,
            nats_stream,
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
            # the answer comes once the deliberations exist: their task ids can be read at once
            known = [await c.result(t) for t in first.task_ids]
            assert all(r.status != pb.DELIBERATION_STATUS_UNKNOWN for r in known)
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


async def test_an_api_node_alone_answers_with_deliberations_that_exist(
    tmp_path: Path, nats_url: str, nats_stream: str
) -> None:
    """No dispatcher runs here (``--components api,projectors``), so nothing but ApprovePlan
    itself can have requested the deliberations: a caller that reads a task id straight after
    the answer finds it PENDING, never NOT_FOUND."""
    settings = _settings(
        tmp_path, nats_url, nats_stream, components=frozenset({"api", "projectors"})
    )
    async with FleetNode(settings) as node, FleetClient(node.endpoints.grpc) as c:
        resp = await c.stub.ApprovePlan(
            pb.ApprovePlanRequest(plan_id="PL-API", story_id="US-6", roles=["DATA"])
        )
        r = await c.result(resp.task_ids[0])
    assert list(resp.task_ids) == ["plan:PL-API:DATA"]
    assert r.status == pb.DELIBERATION_STATUS_PENDING
