"""The work-waiting gauges: deliberation notices on the dispatchers' work queue and agent calls per
role on the NATS backend, read from the queues' consumers on a real nats-server. With work
queued they are above 0 (before any dispatcher or worker made the consumer, too), they move from
waiting to claimed/running when work is taken, and they return to 0 when it is done."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable

import pytest
import pytest_asyncio
from nats.aio.client import Client as NATS

from agent_runtime.nats_backend._wire import QueueNames
from agent_runtime.nats_backend.runtime import NatsAgentRuntime
from dispatchers.jetstream.work_queue import JetStreamWorkQueue
from fleet.metrics import FleetMetrics, agent_queues, dispatcher_queue
from fleet_testing.loadgen import LoadGenServer
from tests.fixtures.nats import unique_stream_name
from tests.integration.agent_runtime.conftest import WorkerFactory
from tests.integration.agent_runtime.test_nats_runtime import turn
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(60)

NOTICES = "fleet_dispatcher_pending_notices"
CALLS = "fleet_agent_pending_calls"


@pytest_asyncio.fixture
async def metrics() -> AsyncIterator[FleetMetrics]:
    m = FleetMetrics()
    yield m
    await m.close()


def gauge(m: FleetMetrics, name: str, **labels: str) -> Callable[[], float | None]:
    return lambda: m.registry.get_sample_value(name, labels)


async def test_notices_waiting_then_claimed_then_none(
    nc: NATS, nats_url: str, metrics: FleetMetrics
) -> None:
    stream = f"{unique_stream_name('W')}_WORK"
    queue = JetStreamWorkQueue(nc, stream=stream, lease_s=5.0)
    await metrics.track_queues(nats_url, [dispatcher_queue(stream)], interval_s=0.05)
    waiting = gauge(metrics, NOTICES, state="waiting")
    claimed = gauge(metrics, NOTICES, state="claimed")
    assert (waiting(), claimed()) == (0, 0)

    ids = [uuid.uuid4(), uuid.uuid4()]
    for d_id in ids:
        await queue.offer(d_id)
    await eventually(lambda: waiting() == 2)  # no dispatcher has claimed anything yet

    claims = queue.claims()
    held = [await anext(claims), await anext(claims)]
    assert {c.deliberation_id for c in held} == set(ids)
    await eventually(lambda: (waiting(), claimed()) == (0, 2))
    for claim in held:
        await claim.done()
    await eventually(lambda: (waiting(), claimed()) == (0, 0))
    await claims.aclose()


async def test_agent_calls_waiting_then_running_then_none_per_role(
    nats_url: str, names: QueueNames, runtime: NatsAgentRuntime, start_worker: WorkerFactory,
    metrics: FleetMetrics,
) -> None:  # fmt: skip
    await metrics.track_queues(nats_url, agent_queues(names, ["DEV", "QA"]), interval_s=0.05)
    waiting = gauge(metrics, CALLS, role="DEV", state="waiting")
    running = gauge(metrics, CALLS, role="DEV", state="running")
    qa = gauge(metrics, CALLS, role="QA", state="waiting")

    calls = [
        asyncio.create_task(runtime.run_turn(turn(f"dev-agent-{i}", d_id="d-q", timeout_s=20.0)))
        for i in (1, 2)
    ]
    await eventually(lambda: waiting() == 2)  # no worker yet: the calls wait in the queue
    assert running() == 0 and qa() == 0

    async with LoadGenServer("instant", delay_s=1.5) as lg:
        await start_worker(lg.url, concurrency=1)  # one call at a time: one runs, one waits
        await eventually(lambda: (waiting(), running()) == (1, 1))
        await asyncio.gather(*calls)
    await eventually(lambda: (waiting(), running()) == (0, 0))
    assert qa() == 0
