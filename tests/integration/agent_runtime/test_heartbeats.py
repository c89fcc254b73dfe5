"""Short ack waits do not redeliver live work: heart-beats keep a long call with its worker.

The ack wait bounds how long a dead worker's call waits (seconds), so it is far shorter than a
model call may take; the worker's ``in_progress`` beats, a third of the ack wait apart, are what
keep a live call where it is. A call lasting several ack waits, with a second idle worker ready
to take anything redelivered, runs once, is delivered once and is answered once.
"""

from __future__ import annotations

import pytest
from nats.aio.client import Client as NATS

from agent_runtime.nats_backend._wire import QueueNames
from agent_runtime.nats_backend.runtime import NatsAgentRuntime
from fleet_testing.loadgen import LoadGenServer
from tests.integration.agent_runtime.conftest import WorkerFactory
from tests.integration.agent_runtime.test_nats_runtime import queue_drained, turn

pytestmark = pytest.mark.timeout(60)


async def test_a_call_lasting_several_ack_waits_is_delivered_and_answered_once(
    nc: NATS, names: QueueNames, runtime: NatsAgentRuntime, start_worker: WorkerFactory
) -> None:
    async with LoadGenServer("instant", delay_s=4.0) as lg:  # four ack waits of 1 s
        workers = [await start_worker(lg.url, ack_wait_s=1.0) for _ in range(2)]
        result = await runtime.run_turn(turn("dev-agent-1", timeout_s=30.0))
        assert result.agent_id == "dev-agent-1"
        await queue_drained(nc, names)
    consumer = await nc.jetstream().consumer_info(names.work_stream, workers[0].durable)
    assert consumer.delivered.consumer_seq == 1, "the live call was redelivered"
    assert lg.counters.calls == 1, "the model was asked twice"
    assert sum(w.stats.answered for w in workers) == 1
    assert sum(w.stats.retried for w in workers) == 0
