"""A nats-server restart while a worker holds an answer costs seconds, not the call.

The model answers while nats-server is down (SIGKILLed). The worker cannot store the answer, so it
keeps the delivery and the answer, and retries. Once the server is back on the same port and
data, the answer is stored and the caller has it within seconds. Before, the ack wait (30 s) ran
out first and the call ran again. Beats and acks sent while JetStream is still recovering its
streams after the restart can be lost, so the call may come back to this worker while it still
runs it, or after it answered it. The worker joins such a delivery to the running call, or acks
it as answered, so the model is asked once.
"""

from __future__ import annotations

import asyncio
import time

import nats
import pytest

from agent_runtime.member.caller import CouncilMember
from agent_runtime.nats_backend._wire import QueueNames
from agent_runtime.nats_backend.runtime import NatsAgentRuntime
from fleet.embedded.nats import NatsServer
from fleet_testing.loadgen import LoadGenServer
from tests.fixtures.nats import unique_stream_name
from tests.integration.agent_runtime.conftest import endpoint
from tests.integration.agent_runtime.test_ack_after_store import _CountingWorker
from tests.integration.agent_runtime.test_nats_runtime import turn
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(60)


async def test_an_answer_held_through_a_server_restart_is_stored_once_it_is_back(
    private_nats_server: NatsServer,
) -> None:
    server = private_nats_server
    names = QueueNames(unique_stream_name("NR"))
    fast = {"reconnect_time_wait": 0.2, "max_reconnect_attempts": -1}
    worker_nc = await nats.connect(server.url, **fast)  # type: ignore[arg-type]
    caller_nc = await nats.connect(server.url, **fast)  # type: ignore[arg-type]
    runtime = NatsAgentRuntime(caller_nc, names, grace_s=2.0)
    await runtime.start()
    async with LoadGenServer("instant", delay_s=1.0) as lg:
        worker = _CountingWorker(
            worker_nc, names, "DEV", CouncilMember("DEV", endpoint(lg.url)), ack_wait_s=5.0
        )
        async with worker:
            call = asyncio.create_task(runtime.run_turn(turn("dev-agent-1", timeout_s=40.0)))
            await eventually(lambda: lg.counters.calls == 1)
            server.kill()  # the model is still answering
            await eventually(lambda: lg.counters.answered == 1 and worker.store_attempts >= 2)
            await asyncio.to_thread(server.start)
            back = time.monotonic()
            result = await asyncio.wait_for(call, 15)
            took = time.monotonic() - back
            assert result.agent_id == "dev-agent-1"
        await runtime.close()
    await worker_nc.close()
    await caller_nc.close()
    assert took < 5.0, f"the held answer reached its caller {took:.1f} s after the restart"
    assert lg.counters.calls == 1, "the model was asked again"
    assert worker.stats.answered == 1
