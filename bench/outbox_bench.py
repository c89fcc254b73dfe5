"""Outbox catch-up, end to end from the real event store, beside its raw ceiling.

Run: ``.venv/bin/python bench/outbox_bench.py [--deliberations 1000]``

A private nats-server (JetStream, file storage) in a temporary directory, removed at the end.
Deliberations of 9 events each (requested, started, 3 proposals, 3 scores, completed: 3
integration events each) are saved through ``FleetApplication``; then:

1. outbox catch-up: a ``ProjectorRunner`` over ``OutboxProjection(JetStreamOutboxStream)`` from
   sequence 1 to the head: reading the log, the history reads its messages need, publishing each
   with its expected last sequence, the lease and the mark.
2. ceiling: the same number of messages of the same size published one after another with
   ``js.publish`` on a stream of their own, each acknowledged before the next (what the outbox's
   ordering needs), no log, no history, no headers, no lease.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import nats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from application.app import FleetApplication
from eventstore._loop_thread import LoopThread
from fleet.embedded.nats import NatsServer
from projectors.outbox import AppHistory, OutboxProjection
from projectors.outbox.jetstream import JetStreamOutboxStream
from projectors.runner import ProjectorRunner
from tests.integration.projectors.test_crash_and_cache_loss import _deliberations


async def _ceiling(url: str, n: int) -> float:
    """Seconds to publish ``n`` messages of the outbox's average size, each acked in turn."""
    nc = await nats.connect(url)
    js = nc.jetstream()
    sample = [await js.get_msg("ORCHESTRATOR_EVENTS", seq) for seq in range(1, min(n, 30) + 1)]
    body = b"x" * (sum(len(m.data or b"") for m in sample) // len(sample))
    await js.add_stream(name="CEILING", subjects=["ceiling.>"])
    t0 = time.perf_counter()
    for _ in range(n):
        await js.publish("ceiling.m", body)
    dt = time.perf_counter() - t0
    await nc.close()
    return dt


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deliberations", type=int, default=1000)
    n = parser.parse_args().deliberations
    with tempfile.TemporaryDirectory() as tmp:
        server = NatsServer(Path(tmp) / "nats")
        server.start()
        try:
            env = {"PERSISTENCE_MODULE": "eventstore.jetstream", "NATS_URL": server.url}
            app = FleetApplication({**env, "NATS_STREAM": "BENCH"})
            for i in range(0, n, 100):
                app.save(*_deliberations(min(100, n - i)))
            head = app.recorder.max_notification_id() or 0
            bridge = LoopThread(name="bench-outbox")
            stream = JetStreamOutboxStream.open(server.url, bridge, source="BENCH")
            projection = OutboxProjection(stream, AppHistory(app))
            runner = ProjectorRunner(app, projection)
            t0 = time.perf_counter()
            runner.start()
            runner.wait(head, timeout=3600)
            dt = time.perf_counter() - t0
            runner.stop()
            published = projection.published
            stream.close()
            bridge.close()
            app.close()
            ceiling = asyncio.run(_ceiling(server.url, published))
        finally:
            server.stop()
    print(f"outbox catch-up: {head} events, {published} messages in {dt:.2f} s "
          f"({head / dt:.0f} events/s, {published / dt:.0f} messages/s)")  # fmt: skip
    print(f"ceiling (acked publishes, same count and size): {published / ceiling:.0f} messages/s; "
          f"outbox at {ceiling / dt:.0%} of it")  # fmt: skip


if __name__ == "__main__":
    main()
