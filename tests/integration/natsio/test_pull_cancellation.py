"""A pull loop stops when it is cancelled, even when the cancellation lands as a fetch answers.

On Python 3.11 nats-py's ``fetch`` (``asyncio.wait_for`` inside) lost such a cancellation: the
loop polled on and whoever stopped it (the dispatcher's work claims, the plan consumer, the agent
results listener) waited forever. A busy consumer on a real nats-server makes that landing
common: here every fetch finds a message (each one handled puts another back), and the loop is
started and stopped 200 times at random moments; before the fix about one stop in three hung.
"""

from __future__ import annotations

import asyncio
import random

import nats
import pytest
from nats.js.api import ConsumerConfig, StreamConfig
from nats.js.client import JetStreamContext

from natsio import pull_batches
from tests.fixtures.nats import unique_stream_name

pytestmark = pytest.mark.timeout(60)

CYCLES = 200


async def test_a_busy_pull_loop_stops_every_time_it_is_cancelled(nats_url: str) -> None:
    nc = await nats.connect(nats_url)
    try:
        await _start_and_stop_a_busy_loop(nc.jetstream())
    finally:
        await nc.close()  # not drain: a pull subscription's drain waits out its timeout


async def _start_and_stop_a_busy_loop(js: JetStreamContext) -> None:
    stream = unique_stream_name("PULL")
    subject = f"{stream.lower()}.work"
    await js.add_stream(StreamConfig(name=stream, subjects=[subject]))
    # Plenty waiting: a cancelled fetch can take a message with it (delivered to a gone inbox,
    # redelivered only after the ack wait), and the next loop must still find one at once.
    for _ in range(1000):
        await js.publish(subject, b"x")
    sub = await js.pull_subscribe(subject, durable="busy", stream=stream, config=ConsumerConfig())
    busy = asyncio.Event()

    async def consume() -> None:
        async for msgs in pull_batches(sub, batch=1, timeout_s=0.5, what="busy"):
            for msg in msgs:
                await msg.ack()
                await js.publish(subject, b"x")  # always more waiting
                busy.set()

    rng = random.Random(7)
    for cycle in range(CYCLES):
        busy.clear()
        task = asyncio.create_task(consume())
        # Busy first (a message handled: fetches are answering), then a random moment: on a slow
        # machine a fixed pause alone can cancel a loop that has not fetched yet.
        try:
            await asyncio.wait_for(busy.wait(), timeout=5.0)
        except TimeoutError:
            raise AssertionError(f"start {cycle + 1}: no message handled in 5 s") from None
        await asyncio.sleep(rng.uniform(0.0, 0.01))
        task.cancel()
        done, _ = await asyncio.wait([task], timeout=2.0)
        assert task in done, f"stop {cycle + 1}: still polling 2 s after its cancellation"
        assert task.cancelled(), task.exception()
