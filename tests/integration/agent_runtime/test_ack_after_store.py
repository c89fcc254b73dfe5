"""A worker acknowledges a call only after its answer is stored (issue 7's delivery rule).

The results stream is made to refuse every new message (full, discard new), as a stream without
quorum or out of space would. The worker runs the call, cannot store the answer, and so does not
ack: the call stays on the work queue and is delivered again after the ack wait. Once the stream
takes messages again, the next delivery's answer is stored, the call is acked (the queue is
empty) and the caller gets its answer.
"""

from __future__ import annotations

import asyncio

import pytest
from nats.aio.client import Client as NATS
from nats.js.api import DiscardPolicy

from agent_runtime._nats_wire import QueueNames
from agent_runtime.nats_runtime import NatsAgentRuntime
from fleet_testing.loadgen import LoadGenServer
from tests.integration.agent_runtime.conftest import WorkerFactory
from tests.integration.agent_runtime.test_nats_runtime import queue_drained, turn
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(60)


async def block_results(nc: NATS, names: QueueNames) -> None:
    """Create the results stream already full: one message, at most one, new ones refused."""
    js = nc.jetstream()
    config = names.results_stream_config(3600.0)
    await js.add_stream(config.evolve(max_msgs=1, discard=DiscardPolicy.NEW))
    await js.publish(f"{names.results_prefix}.turn.filler", b"{}")


async def unblock_results(nc: NATS, names: QueueNames) -> None:
    js = nc.jetstream()
    info = await js.stream_info(names.results_stream)
    await js.update_stream(info.config.evolve(max_msgs=-1))


async def test_an_answer_that_cannot_be_stored_is_not_acked_and_is_redelivered(
    nc: NATS, names: QueueNames, start_worker: WorkerFactory
) -> None:
    await block_results(nc, names)
    runtime = NatsAgentRuntime(nc, names, grace_s=2.0)
    await runtime.start()  # keeps the existing (blocked) results stream as it is
    js = nc.jetstream()
    try:
        async with LoadGenServer("instant") as lg:
            worker = await start_worker(lg.url, ack_wait_s=1.0, max_deliver=20)
            call = asyncio.create_task(runtime.run_turn(turn("dev-agent-1", timeout_s=30.0)))
            await eventually(lambda: lg.counters.answered >= 2, timeout=15)  # ran twice
            consumer = await js.consumer_info(names.work_stream, worker.durable)
            assert consumer.num_redelivered >= 1, "the unstored call was not delivered again"
            assert (await js.stream_info(names.work_stream)).state.messages == 1, "acked"
            assert not call.done() and worker.stats.answered == 0

            await unblock_results(nc, names)
            result = await asyncio.wait_for(call, 15)
            assert result.agent_id == "dev-agent-1" and "```python" in result.content
            await queue_drained(nc, names)  # acked once stored: the work queue forgot it
            assert worker.stats.answered == 1
    finally:
        await runtime.close()
