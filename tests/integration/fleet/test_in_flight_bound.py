"""The bound on work in flight (``FLEET_MAX_IN_FLIGHT``) on a whole node: real JetStream, the
agents' real client against the load generator, which holds every call (``hang``) until the
test lets the work finish.

Past the bound, Deliberate, Orchestrate and DeliberateForBacklogReview answer
RESOURCE_EXHAUSTED naming the bound and record nothing; once a deliberation ends, a new one is
accepted. Under a concurrent burst exactly ``bound`` are accepted (the count holds while the
statistics fold lags the writes), and every accepted one is in the event store.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest

from fleet.bootstrap import FleetNode
from fleet.client import FleetClient
from fleet.config import Settings
from fleet.embedded._process import free_port
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet_testing.loadgen import LoadGenServer
from tests.support.deliberations import FIB_TASK
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(120)

EXHAUSTED = grpc.StatusCode.RESOURCE_EXHAUSTED


def node_settings(tmp_path: Path, nats_url: str, stream: str, llm: str, bound: int) -> Settings:
    return Settings(
        data_dir=tmp_path,
        nats_url=nats_url,
        stream=stream,
        cache_enabled=False,
        grpc_port=free_port(),
        web_port=0,
        vllm_url=llm,
        vllm_model="loadgen",
        agent_runtime="local",
        sandbox="off",
        plan_consumer=False,
        max_in_flight=bound,
    )


async def code_of(call: object) -> grpc.StatusCode:
    """The status a call ends with (OK when it returns)."""
    try:
        await call  # type: ignore[misc]
    except grpc.aio.AioRpcError as e:
        return e.code()
    return grpc.StatusCode.OK


async def test_past_the_bound_submissions_are_refused_naming_it_and_record_nothing(
    tmp_path: Path, nats_url: str, nats_stream: str
) -> None:
    async with LoadGenServer("hang") as lg:
        settings = node_settings(tmp_path, nats_url, nats_stream, lg.url, bound=3)
        async with FleetNode(settings) as node, FleetClient(node.endpoints.grpc) as c:
            for i in range(3):
                accepted = await c.deliberate(FIB_TASK, task_id=f"open-{i}")
                assert accepted.task_id == f"open-{i}"

            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await c.deliberate(FIB_TASK, task_id="one-too-many")
            assert refused.value.code() is EXHAUSTED
            said = refused.value.details() or ""
            assert "bound of this node is 3" in said and "FLEET_MAX_IN_FLIGHT" in said, said
            with pytest.raises(grpc.aio.AioRpcError) as unknown:
                await c.result("one-too-many")
            assert unknown.value.code() is grpc.StatusCode.NOT_FOUND  # nothing was recorded

            orchestrate = pb.OrchestrateRequest(
                task_id="orch-too-many", task_description=FIB_TASK, role="DEV"
            )
            assert await code_of(c.stub.Orchestrate(orchestrate, timeout=30)) is EXHAUSTED
            review = pb.DeliberateRequest(
                task_id="ceremony-1:story-2:role-DEV", task_description=FIB_TASK, role="DEV"
            )
            assert await code_of(c.stub.DeliberateForBacklogReview(review, timeout=30)) is EXHAUSTED
            # Asking again for an open deliberation is no new work: answered, not refused.
            again = await c.deliberate(FIB_TASK, task_id="open-0")
            assert again.task_id == "open-0"

            # The held calls are answered: the open deliberations end and room opens up.
            lg.mode = "instant"
            lg.release_held()
            await c.wait("open-0", timeout=60)

            async def accepted_after() -> bool:
                code = await code_of(c.deliberate(FIB_TASK, task_id="after-one-ended"))
                assert code in (grpc.StatusCode.OK, EXHAUSTED), code
                return code is grpc.StatusCode.OK  # EXHAUSTED: the fold has not read the end yet

            await eventually(accepted_after, timeout=30, what="a submission after one ended")
            assert (await c.result("after-one-ended")).task_id == "after-one-ended"


async def test_a_concurrent_burst_accepts_exactly_the_bound_and_loses_nothing(
    tmp_path: Path, nats_url: str, nats_stream: str
) -> None:
    bound, callers, each = 120, 50, 4
    async with LoadGenServer("hang") as lg:  # nothing ends: the bound is what decides
        settings = node_settings(tmp_path, nats_url, nats_stream, lg.url, bound=bound)
        async with FleetNode(settings) as node:
            clients = [FleetClient(node.endpoints.grpc) for _ in range(callers)]
            accepted: list[str] = []
            refused: list[str] = []

            async def caller(k: int) -> None:
                for j in range(each):
                    task = f"burst-{k}-{j}"
                    code = await code_of(clients[k].deliberate(FIB_TASK, task_id=task))
                    assert code in (grpc.StatusCode.OK, EXHAUSTED), (task, code)
                    (accepted if code is grpc.StatusCode.OK else refused).append(task)

            try:
                await asyncio.gather(*(caller(k) for k in range(callers)))
                assert len(accepted) == bound and len(refused) == callers * each - bound
                c = clients[0]
                for task in accepted:  # every accepted one is stored
                    assert (await c.result(task)).task_id == task
                for task in refused[:10]:  # and a refused one is not
                    assert await code_of(c.result(task)) is grpc.StatusCode.NOT_FOUND
            finally:
                await asyncio.gather(*(c.close() for c in clients))
