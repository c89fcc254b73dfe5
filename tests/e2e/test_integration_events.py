"""Done means: with Fleet running, a plain nats-py consumer of ``orchestration.>`` sees, for a
plan approved for two roles, the plan approval, the dispatches and two
``orchestration.deliberation.completed`` events, once each, also when the projector process was
SIGKILLed in between; every body valid for its published schema.

Real processes on a nats-server of the test's own (``orchestration.>`` is read whole): the
projectors (``fleet up --components projectors``, SIGKILLed twice) and a dispatcher with its
agents in process; the load generator stands in for the model. The planning service is played
by publishing its JSON on ``planning.>``, in a ``PLANNING_EVENTS`` stream made first, as that
system makes it.
"""

from __future__ import annotations

import asyncio
import collections
import json
from pathlib import Path

import nats
import pytest
from nats.js.api import StreamConfig

from fleet.embedded.nats import NatsServer
from fleet_testing.loadgen import LoadGenServer
from tests.e2e._processes import BACKENDS, FleetProcess
from tests.support.outbox import read_all
from tests.support.schema_consumer import check, validators
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(240)


async def test_a_plan_for_two_roles_reaches_a_plain_consumer_once_through_projector_kills(
    tmp_path: Path, private_nats_server: NatsServer
) -> None:
    url = private_nats_server.url
    nc = await nats.connect(url)
    js = nc.jetstream()
    await js.add_stream(StreamConfig(name="PLANNING_EVENTS", subjects=["planning.>"]))

    async def on_stream(subject: str) -> int:
        try:
            info = await js.stream_info("ORCHESTRATOR_EVENTS", subjects_filter=subject)
        except nats.js.errors.NotFoundError:
            return 0
        return sum((info.state.subjects or {}).values())

    async with LoadGenServer("instant", delay_s=0.5) as lg:
        env = {
            "NATS_URL": url,
            "FLEET_STREAM": "FLEET_DONE",
            "FLEET_VLLM_URL": lg.url,
            "FLEET_VLLM_MODEL": "loadgen",
            "FLEET_CACHE": "off",
            "FLEET_PLAN_AGENTS": "2",
            **BACKENDS["in-process"],
        }
        projector = FleetProcess(tmp_path / "projectors", "projectors", env)
        dispatcher = FleetProcess(tmp_path / "dispatcher", "dispatcher", env)
        try:
            await asyncio.to_thread(projector.wait_ready, 90)
            await asyncio.to_thread(dispatcher.wait_ready, 90)
            # Its consumers start at the stream's tail: publish once they are there.
            for durable in ("fleet-plans", "fleet-stories"):
                await eventually(
                    lambda d=durable: js.consumer_info("PLANNING_EVENTS", d),  # type: ignore[misc]
                    timeout=30,
                    ignoring=(nats.js.errors.NotFoundError,),
                )
            story = {"story_id": "story-7", "from_phase": "DESIGN", "to_phase": "BUILD"}
            await js.publish("planning.story.transitioned", json.dumps(story).encode())
            plan = {"plan_id": "plan-7", "story_id": "story-7", "approved_by": "po",
                    "roles": ["DEV", "QA"], "ceremony_id": "c-1"}  # fmt: skip
            await js.publish("planning.plan.approved", json.dumps(plan).encode())

            # SIGKILL the projectors between the approval and the decisions, and once more
            # while the councils work.
            await eventually(lambda: on_stream("orchestration.plan.approved"), timeout=60)
            projector.kill()
            assert await on_stream("orchestration.deliberation.completed") == 0  # in between
            projector.spawn()
            await eventually(lambda: on_stream("orchestration.task.dispatched"), timeout=60)
            projector.kill()
            projector.spawn()

            async def both_decided() -> bool:
                return await on_stream("orchestration.deliberation.completed") >= 2

            await eventually(both_decided, timeout=120, what="two deliberations completed")
            await eventually(
                lambda: on_stream("orchestration.task.completed"), timeout=30, interval=0.1
            )
        finally:
            projector.stop()
            dispatcher.stop()
            await nc.close()

    got = await read_all(url, at_least=8)
    counts = collections.Counter(r.subject for r in got)
    assert counts == {
        "orchestration.phase.changed": 1,
        "orchestration.plan.approved": 1,
        "orchestration.task.dispatched": 2,
        "orchestration.deliberation.completed": 2,
        "orchestration.task.completed": 2,
    }, (counts, projector.tail())
    known = validators()
    for r in got:
        check(r.subject, r.body, known)
    decided = [r.body["payload"] for r in got if r.subject.endswith("deliberation.completed")]
    assert sorted(p["task_id"] for p in decided) == ["plan:plan-7:DEV", "plan:plan-7:QA"]
    assert {p["story_id"] for p in decided} == {"story-7"}
    assert all(p["decisions"][0]["affected_subtask"] == p["task_id"] for p in decided)
