"""A worker acknowledges a call only after its answer is stored (issue 7's delivery rule), and a
store that fails for a while is retried in place (issue 17: recovery in seconds).

The results stream is made to refuse every new message (full, discard new), as a stream without
quorum, out of space, or a nats-server restarting would. The worker runs the call, cannot store
the answer, and so does not ack: it keeps the delivery, heart-beating, and retries the store.
The call is not delivered again (no repeated model call, no delivery of ``max_deliver`` spent)
however many ack waits the refusal lasts. Once the stream takes messages again, the answer is
stored, the call is acked (the queue is empty) and the caller gets it.
"""

from __future__ import annotations

import asyncio

import pytest
from nats.aio.client import Client as NATS
from nats.js.api import DiscardPolicy, PubAck

from agent_runtime.nats_backend._wire import QueueNames, ResultMessage
from agent_runtime.nats_backend.runtime import NatsAgentRuntime
from agent_runtime.nats_backend.worker import AgentWorker
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


class _CountingWorker(AgentWorker):
    """Counts its attempts to store an answer."""

    store_attempts = 0

    async def _publish_result(self, result: ResultMessage) -> PubAck:
        self.store_attempts += 1
        return await super()._publish_result(result)


async def test_an_answer_that_cannot_be_stored_is_kept_and_retried_not_acked_nor_redelivered(
    nc: NATS, names: QueueNames, start_worker: WorkerFactory
) -> None:
    await block_results(nc, names)
    runtime = NatsAgentRuntime(nc, names, grace_s=2.0)
    await runtime.start()  # keeps the existing (blocked) results stream as it is
    js = nc.jetstream()
    try:
        async with LoadGenServer("instant") as lg:
            worker = await start_worker(lg.url, cls=_CountingWorker, ack_wait_s=1.0)
            call = asyncio.create_task(runtime.run_turn(turn("dev-agent-1", timeout_s=30.0)))
            # Eight attempts take ~3.5 s of back-off: more than three ack waits.
            await eventually(lambda: worker.store_attempts >= 8, timeout=15)
            consumer = await js.consumer_info(names.work_stream, worker.durable)
            assert consumer.delivered.consumer_seq == 1, "the unstored call was delivered again"
            assert consumer.num_ack_pending == 1, "acked before its answer was stored"
            assert lg.counters.answered == 1, "the model was asked twice"
            assert not call.done() and worker.stats.answered == 0

            await unblock_results(nc, names)
            result = await asyncio.wait_for(call, 15)
            assert result.agent_id == "dev-agent-1" and "```python" in result.content
            await queue_drained(nc, names)  # acked once stored: the work queue forgot it
            assert worker.stats.answered == 1 and lg.counters.answered == 1
            consumer = await js.consumer_info(names.work_stream, worker.durable)
            assert consumer.delivered.consumer_seq == 1
    finally:
        await runtime.close()
