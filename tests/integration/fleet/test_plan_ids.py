"""A plan id its deliberations' task ids could not carry (``plan:<id>:<ROLE>``: a space, say) is
refused by the Plan aggregate itself, so every way in refuses it: ``planning.plan.approved``
parks the approval on the dead-letter subject with the reason (and records the next plan), and
the ApprovePlan RPC answers INVALID_ARGUMENT naming plan_id.

A whole node (API, dispatcher with the plan consumer, agents in process on the load generator) on
a nats-server of the test's own, so the ``PLANNING`` stream holds only this test's approvals.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import grpc
import nats
import pytest
from nats.js.client import JetStreamContext
from nats.js.errors import NotFoundError

from aggregates import plan_id_of
from application.errors import PlanNotFoundError
from dispatchers.jetstream.plan_approvals import (
    DEAD_LETTER_STREAM,
    DEAD_LETTER_SUBJECT,
    PLAN_STREAM,
    PLAN_SUBJECT,
)
from fleet.bootstrap import FleetNode
from fleet.client import FleetClient
from fleet.embedded.nats import NatsServer
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet_testing.loadgen import LoadGenServer
from tests.e2e._node import loadgen_node_settings
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(60)

BAD = "sprint 7 plan"


def approval(plan_id: str) -> bytes:
    return json.dumps({"plan_id": plan_id, "story_id": "US-9", "roles": ["DEV"]}).encode()


async def consuming(js: JetStreamContext, timeout_s: float = 15.0) -> None:
    """Wait until the node's plan consumer exists (a message published now is delivered)."""
    await eventually(
        lambda: js.consumer_info(PLAN_STREAM, "fleet-plans"),
        timeout=timeout_s,
        interval=0.05,
        what="the plan consumer never started",
        ignoring=(NotFoundError,),
    )


async def finished(client: FleetClient, task_id: str) -> pb.GetDeliberationResultResponse:
    """The deliberation's final result, once the plan dispatcher has requested it."""
    deadline = time.monotonic() + 15.0
    while True:
        try:
            return await client.wait(task_id, timeout=30)
        except grpc.aio.AioRpcError as e:
            if e.code() != grpc.StatusCode.NOT_FOUND or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)


async def test_a_plan_id_no_task_id_could_carry_is_refused_by_the_consumer_and_the_rpc(
    tmp_path: Path, private_nats_server: NatsServer
) -> None:
    url = private_nats_server.url
    nc = await nats.connect(url)
    js = nc.jetstream()
    async with LoadGenServer("instant") as lg:
        settings = loadgen_node_settings(tmp_path, url, lg.url)
        async with FleetNode(settings) as node, FleetClient(node.endpoints.grpc) as client:
            await consuming(js)
            await js.publish(PLAN_SUBJECT, approval(BAD))
            await js.publish(PLAN_SUBJECT, approval("PL-OK"))  # the consumer is not blocked
            good = await finished(client, "plan:PL-OK:DEV")
            with pytest.raises(grpc.aio.AioRpcError) as rpc:
                await client.stub.ApprovePlan(pb.ApprovePlanRequest(plan_id=BAD, story_id="US-9"))
            assert node.store is not None
            with pytest.raises(PlanNotFoundError):
                await node.store.get_plan(plan_id_of(BAD))
    try:
        sub = await js.pull_subscribe(DEAD_LETTER_SUBJECT, stream=DEAD_LETTER_STREAM)
        parked = await sub.fetch(10, timeout=2)
    finally:
        await nc.close()

    assert good.status == pb.DELIBERATION_STATUS_COMPLETED, good.error_message
    assert [m.data for m in parked] == [approval(BAD)]
    reason = (parked[0].headers or {})["Fleet-Dead-Letter-Reason"]
    assert reason.startswith(f"bad message: plan_id: '{BAD}' is not a plan id"), reason
    assert rpc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "plan_id" in (rpc.value.details() or "")
