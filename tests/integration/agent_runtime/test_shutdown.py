"""Closing what owns a NATS connection is prompt and clean after idle polls: no five-second
drain timeout and no "exception was never retrieved" in the log (what `fleet up`, the demo and a
dispatcher print when they stop)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time

import pytest

from agent_runtime.nats_backend._wire import QueueNames
from agent_runtime.nats_backend.runtime import NatsAgentRuntime
from dispatchers.jetstream.work_queue import JetStreamWorkQueue
from tests.fixtures.nats import unique_stream_name

pytestmark = pytest.mark.timeout(60)


async def test_runtime_and_work_queue_close_at_once_after_idle_polls(
    nats_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    stream = unique_stream_name("SD")
    runtime = await NatsAgentRuntime.connect(nats_url, QueueNames(stream), fetch_timeout_s=0.05)
    queue = await JetStreamWorkQueue.connect(nats_url, stream=f"{stream}_WORK")

    async def take_claims() -> None:
        async for _ in queue.claims():
            pass

    claimer = asyncio.create_task(take_claims())
    await asyncio.sleep(2.5)  # both poll an empty consumer, again and again
    claimer.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await claimer

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        t0 = time.monotonic()
        await runtime.close()
        await queue.close()
        took = time.monotonic() - t0
        gc.collect()
        await asyncio.sleep(0.1)
    assert took < 2.0, f"close took {took:.1f} s"
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]
