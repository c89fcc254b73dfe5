"""Outbox catch-up, end to end from the real event store, beside its raw ceiling.

Run: ``.venv/bin/python bench/outbox_bench.py [--deliberations 1000]``

A private nats-server (JetStream, file storage) in a temporary directory, removed at the end.
Deliberations of 9 events each (requested, started, 3 proposals, 3 scores, completed: 3
integration events each) are saved through ``FleetApplication``; then:

1. ceiling: as many messages as the outbox will publish, of their average size, published one
   after another with ``js.publish`` on a stream of their own, each acknowledged before the
   next, no log, no history, no headers, no lease;
2. outbox catch-up: a ``ProjectorRunner`` over ``OutboxProjection(JetStreamOutboxStream)`` from
   sequence 1 to the head: reading the log, the history reads its messages need, publishing
   them in windows (each message expecting the one before it), the lease and the mark;
3. the ceiling again. On a machine shared with other work the load drifts over a run: the
   outbox is compared with the mean of the two ceilings measured around it, and each is shown.
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
from projectors.outbox import AppHistory, OutboxProjection, integration_events
from projectors.outbox.jetstream import JetStreamOutboxStream
from projectors.outbox.messages import handles
from projectors.runner import ProjectorRunner
from tests.integration.projectors.test_crash_and_cache_loss import _deliberations


async def _ceiling(url: str, n: int, size: int) -> float:
    """Messages/s publishing ``n`` messages of ``size`` bytes, each acked before the next."""
    nc = await nats.connect(url)
    js = nc.jetstream()
    await js.add_stream(name="CEILING", subjects=["ceiling.>"])
    body = b"x" * size
    t0 = time.perf_counter()
    for _ in range(n):
        await js.publish("ceiling.m", body)
    dt = time.perf_counter() - t0
    await js.delete_stream("CEILING")
    await nc.close()
    return n / dt


def _messages(app: FleetApplication) -> tuple[int, int]:
    """How many messages the outbox will publish for ``app``'s log, and their average size."""
    history = AppHistory(app)
    count = size = 0
    start = 1
    while page := app.recorder.select_notifications(start=start, limit=1000):
        for n in page:
            event = app.mapper.to_domain_event(n)
            if handles(event):
                messages = integration_events(event, n.id, history)
                count += len(messages)
                size += sum(len(m.body) for m in messages)
        start = page[-1].id + 1
    return count, size // max(count, 1)


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
            count, size = _messages(app)
            before = asyncio.run(_ceiling(server.url, count, size))
            bridge = LoopThread(name="bench-outbox")
            stream = JetStreamOutboxStream.open(server.url, bridge, source="BENCH")
            projection = OutboxProjection(stream, AppHistory(app))
            runner = ProjectorRunner(app, projection)
            t0 = time.perf_counter()
            runner.start()
            runner.wait(head, timeout=3600)
            dt = time.perf_counter() - t0
            runner.close()
            published = projection.published
            stream.close()
            bridge.close()
            app.close()
            after = asyncio.run(_ceiling(server.url, count, size))
        finally:
            server.stop()
    if published != count:
        sys.exit(f"the outbox published {published} messages, the log leads to {count}")
    ceiling = (before + after) / 2
    print(f"outbox catch-up: {head} events, {published} messages of {size} bytes in {dt:.2f} s "
          f"({head / dt:.0f} events/s, {published / dt:.0f} messages/s)")  # fmt: skip
    print(f"ceiling (acked publishes one after another, same count and size): "
          f"{before:.0f} messages/s before, {after:.0f} after")  # fmt: skip
    print(f"outbox at {published / dt / ceiling:.2f} of the ceiling (their mean)")


if __name__ == "__main__":
    main()
