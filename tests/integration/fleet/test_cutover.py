"""Cutting over from the seed orchestrator replays nothing old.

The seed system's ``PLANNING_EVENTS`` (``planning.>``) still retains the approvals the old
orchestrator handled. A Fleet node started on it for the first time must dispatch none of them,
log how many it skipped, and dispatch the next approval at once; restarted, it resumes where its
durable stands (an approval published while it was down is dispatched); and an operator who
asks for history (``FLEET_PLANNING_START=all``) gets it.

A whole node (API, dispatcher with the plan consumer, agents in process on the load generator) on
a nats-server of the test's own, so the stream holds only this test's approvals.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import uuid
from pathlib import Path

import nats
import pytest
from nats.js.api import StreamConfig
from nats.js.client import JetStreamContext

from dispatchers.jetstream.plan_approvals import PLAN_SUBJECT, PlanApprovalConsumer
from dispatchers.planning_start import PlanningStart
from fleet.bootstrap import FleetNode
from fleet.client import FleetClient
from fleet.embedded.nats import NatsServer
from fleet_testing.loadgen import LoadGenServer
from tests.e2e._node import loadgen_node_settings
from tests.integration.fleet.test_plan_ids import finished

pytestmark = pytest.mark.timeout(90)

SEED_STREAM = "PLANNING_EVENTS"


def approval(plan_id: str) -> bytes:
    return json.dumps(
        {"plan_id": plan_id, "story_id": "US-7", "roles": ["DEV"], "approved_by": "po"}
    ).encode()


async def seed_stream(js: JetStreamContext, old_plans: list[str]) -> None:
    """The seed system's planning stream, retaining approvals its orchestrator handled."""
    await js.add_stream(StreamConfig(name=SEED_STREAM, subjects=["planning.>"]))
    for plan_id in old_plans:
        await js.publish(PLAN_SUBJECT, approval(plan_id))


async def dispatched(client: FleetClient, plan_id: str) -> bool:
    listed = await client.list(plan_id=plan_id)
    return bool(listed.deliberations)


async def plan_consumer(node: FleetNode) -> PlanApprovalConsumer:
    """The node's plan consumer, once its durable is bound."""
    consumer = node.servers["plan approvals"]
    assert isinstance(consumer, PlanApprovalConsumer)
    await asyncio.wait_for(consumer.consuming.wait(), 15)
    return consumer


async def test_a_first_start_dispatches_nothing_retained_then_the_next_approval_at_once(
    tmp_path: Path, private_nats_server: NatsServer, caplog: pytest.LogCaptureFixture
) -> None:
    url = private_nats_server.url
    nc = await nats.connect(url)
    js = nc.jetstream()
    tag = uuid.uuid4().hex[:6]
    old = [f"PL-old-{tag}-{i}" for i in range(3)]
    await seed_stream(js, old)
    caplog.set_level(logging.INFO, logger="dispatchers")
    async with LoadGenServer("instant") as lg:
        settings = loadgen_node_settings(tmp_path, url, lg.url)
        async with FleetNode(settings) as node, FleetClient(node.endpoints.grpc) as client:
            consumer = await plan_consumer(node)
            assert consumer.skipped == 3
            assert "3 retained message(s) skipped" in caplog.text
            new = f"PL-new-{tag}"
            await js.publish(PLAN_SUBJECT, approval(new))
            result = await finished(client, f"plan:{new}:DEV")
            assert result.task_id == f"plan:{new}:DEV"
            # The consumer reads in stream order: the old approvals came before the new one,
            # so had they been taken they would be recorded by now.
            for plan_id in old:
                assert not await dispatched(client, plan_id), plan_id
            assert consumer.accepted == 1
        # Restarted: the durable resumes where it stands, so what came while it was down counts.
        later = f"PL-later-{tag}"
        await js.publish(PLAN_SUBJECT, approval(later))
        async with FleetNode(settings) as node, FleetClient(node.endpoints.grpc) as client:
            consumer = await plan_consumer(node)
            assert consumer.skipped is None
            await finished(client, f"plan:{later}:DEV")
            for plan_id in old:
                assert not await dispatched(client, plan_id), plan_id
    await nc.close()


async def test_an_operator_who_asks_for_history_gets_it(
    tmp_path: Path, private_nats_server: NatsServer
) -> None:
    url = private_nats_server.url
    nc = await nats.connect(url)
    js = nc.jetstream()
    old = [f"PL-hist-{uuid.uuid4().hex[:6]}-{i}" for i in range(2)]
    await seed_stream(js, old)
    async with LoadGenServer("instant") as lg:
        settings = dataclasses.replace(
            loadgen_node_settings(tmp_path, url, lg.url),
            planning_start=PlanningStart.parse("all"),
        )
        async with FleetNode(settings) as node, FleetClient(node.endpoints.grpc) as client:
            consumer = await plan_consumer(node)
            assert consumer.skipped == 0
            for plan_id in old:
                await finished(client, f"plan:{plan_id}:DEV")
    await nc.close()
