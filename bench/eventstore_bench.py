"""Event store figures, each beside the raw nats-py ceiling measured in the same run.

    .venv/bin/python bench/eventstore_bench.py [--seconds 1.5]

The write figures, the nearest their targets and the most exposed to a noisy machine, are measured
over ``4 × --seconds`` each, in six rounds of raw publishing, one writer and 16 writers in turn.

Starts its own private nats-server (file storage, loopback), so it never touches a server the
machine runs. Every figure goes through the real path (eventsourcing Application or recorder on
``eventstore.jetstream``); every ceiling is plain nats-py doing the least that could give the
same answer. Each measurement is bounded to about ``--seconds``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import nats
from eventsourcing.application import Application
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import StoredEvent

from fleet.embedded.nats import NatsServer


class Counter(Aggregate):
    def __init__(self) -> None:
        self.count = 0

    def increment(self) -> None:
        self.trigger_event(self.Incremented)

    class Incremented(Aggregate.Event):
        def apply(self, aggregate: Aggregate) -> None:
            assert isinstance(aggregate, Counter)
            aggregate.count += 1


def _rate(fn: Callable[[], None], seconds: float) -> float:
    """Calls of ``fn`` per second, over about ``seconds``."""
    n, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        fn()
        n += 1
    return n / elapsed


def _per_call(fn: Callable[[], None], seconds: float) -> float:
    """Median seconds per call of ``fn``, over about ``seconds``."""
    samples: list[float] = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    samples.sort()
    return samples[len(samples) // 2]


def interleaved(*rates: Callable[[float], float], seconds: float, slices: int = 6) -> list[float]:
    """Each of ``rates`` (a ``rate(seconds)``), measured in turn in ``slices`` rounds of
    ``seconds / slices`` each: a burst of load from elsewhere on the machine then lands on all
    alike instead of on whichever ran during it, and the ratios stop swinging with it."""
    sums = [0.0] * len(rates)
    for _ in range(slices):
        for i, rate in enumerate(rates):
            sums[i] += rate(seconds / slices)
    return [total / slices for total in sums]


# ---------------------------------------------------------------------- raw nats-py ceilings
class RawPublisher:
    """One-in-flight ``js.publish`` on a connection and event loop of its own, measured in
    slices (``rate``) so that it can alternate with the event store's."""

    def __init__(self, url: str, stream: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._stream = stream
        self._nc = self._loop.run_until_complete(nats.connect(url))
        self._js = self._nc.jetstream()
        self._loop.run_until_complete(self._js.add_stream(name=stream, subjects=[f"{stream}.>"]))
        self._n = 0

    def rate(self, seconds: float) -> float:
        return self._loop.run_until_complete(self._burst(seconds))

    async def _burst(self, seconds: float) -> float:
        payload = b"x" * 200
        n, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            await self._js.publish(f"{self._stream}.e.{self._n % 64}", payload)
            self._n += 1
            n += 1
        return n / elapsed

    def close(self) -> None:
        self._loop.run_until_complete(self._nc.close())
        self._loop.close()


async def raw_read_subject(url: str, stream: str, subject: str, seconds: float) -> float:
    """Median time to read every message of one subject with one batch direct get."""
    nc = await nats.connect(url)
    body = json.dumps({"seq": 1, "next_by_subj": subject, "batch": 1000}).encode()
    samples: list[float] = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t = time.perf_counter()
        inbox = nc.new_inbox()
        sub = await nc.subscribe(inbox)
        await nc.publish(f"$JS.API.DIRECT.GET.{stream}", body, reply=inbox)
        got = []
        while True:
            msg = await sub.next_msg(timeout=5)
            if (msg.headers or {}).get("Status"):
                break
            got.append(msg.data)
        await sub.unsubscribe()
        samples.append(time.perf_counter() - t)
    await nc.close()
    samples.sort()
    return samples[len(samples) // 2]


async def raw_replay_rate(url: str, subject: str, count: int) -> float:
    """Messages per second of an ordered consumer replaying ``count`` messages from seq 1."""
    nc = await nats.connect(url)
    js = nc.jetstream()
    done = asyncio.Event()
    seen = 0

    async def cb(msg: Any) -> None:
        nonlocal seen
        seen += 1
        if seen >= count:
            done.set()

    start = time.perf_counter()
    sub = await js.subscribe(subject, cb=cb, ordered_consumer=True)
    await asyncio.wait_for(done.wait(), 60)
    elapsed = time.perf_counter() - start
    await sub.unsubscribe()
    await nc.close()
    return count / elapsed


# ---------------------------------------------------------------------- the event store
def single_writer(app: Application[Any]) -> Callable[[float], float]:
    """``rate(seconds)``: single-event saves per second of one aggregate, one at a time."""
    c = Counter()
    app.save(c)

    def save() -> None:
        c.increment()
        app.save(c)

    return lambda seconds: _rate(save, seconds)


def concurrent_writers(app: Application[Any], writers: int) -> Callable[[float], float]:
    """``rate(seconds)``: saves per second of ``writers`` threads, each on its own aggregate."""
    counters = [Counter() for _ in range(writers)]
    app.save(*counters)
    return lambda seconds: _concurrent_rate(app, counters, seconds)


def _concurrent_rate(app: Application[Any], counters: list[Counter], seconds: float) -> float:
    writers = len(counters)
    counts = [0] * writers
    barrier = threading.Barrier(writers + 1)
    stop = threading.Event()

    def run(i: int) -> None:
        c = counters[i]
        barrier.wait()
        while not stop.is_set():
            c.increment()
            app.save(c)
            counts[i] += 1

    threads = [threading.Thread(target=run, args=(i,)) for i in range(writers)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - start)


def subscription_catch_up(app: Application[Any], count: int) -> float:
    start = time.perf_counter()
    with app.recorder.subscribe(gt=None) as sub:
        for i, _ in enumerate(sub, start=1):
            if i >= count:
                break
    return count / (time.perf_counter() - start)


def log_catch_up(app: Application[Any], count: int) -> float:
    start, seen, nxt = time.perf_counter(), 0, 1
    while seen < count:
        page = app.recorder.select_notifications(nxt, 1000)
        if not page:
            break
        seen += len(page)
        nxt = page[-1].id + 1
    return seen / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=1.5, help="length of each measurement")
    ap.add_argument("--catch-up", type=int, default=30_000, help="notifications to catch up")
    args = ap.parse_args()
    secs = args.seconds
    tmp = Path(tempfile.mkdtemp(prefix="fleet-bench-"))
    server = NatsServer(tmp / "nats")
    server.start()
    rows: list[tuple[str, str, str, str, str]] = []

    def row(name: str, ours: str, raw: str, ratio: float, target: str, ok: bool) -> None:
        rows.append((name, ours, raw, f"{ratio:.2f}", f"{target} {'PASS' if ok else 'MISS'}"))

    try:
        env = {
            "PERSISTENCE_MODULE": "eventstore.jetstream",
            "NATS_URL": server.url,
            "NATS_STREAM": "BENCH",
        }
        app = Application[Any](env=env)
        try:
            raw = RawPublisher(server.url, "RAWPUB")
            try:
                raw_pub, one, many = interleaved(
                    raw.rate, single_writer(app), concurrent_writers(app, 16), seconds=4 * secs
                )
            finally:
                raw.close()
            row(
                "single-event saves/s",
                f"{one:,.0f}",
                f"{raw_pub:,.0f} js.publish/s",
                one / raw_pub,
                ">= 0.50",
                one / raw_pub >= 0.5,
            )
            row(
                "16 writers, saves/s",
                f"{many:,.0f}",
                f"{one:,.0f} (1 writer)",
                many / one,
                ">= 1.50",
                many / one >= 1.5,
            )

            c = Counter()
            for _ in range(49):
                c.increment()
            app.save(c)  # 50 events, one atomic batch
            subject = f"BENCH.e.{c.id}"
            raw_read = asyncio.run(raw_read_subject(server.url, "BENCH", subject, secs))

            def load() -> None:
                assert app.repository.get(c.id).version == 50

            ours_read = _per_call(load, secs)
            row(
                "load 50-event aggregate",
                f"{ours_read * 1e3:.2f} ms",
                f"{raw_read * 1e3:.2f} ms raw read",
                ours_read / raw_read,
                "<= 3.00",
                ours_read / raw_read <= 3.0,
            )

            # Fill the log to --catch-up events (batches of 1000 through the recorder).
            have = app.recorder.max_notification_id() or 0
            while have < args.catch_up:
                oid = uuid.uuid4()
                n = min(1000, args.catch_up - have)
                app.recorder.insert_events(
                    [
                        StoredEvent(originator_id=oid, originator_version=v, topic="t", state=b"{}")
                        for v in range(1, n + 1)
                    ]
                )
                have += n
            raw_replay = asyncio.run(raw_replay_rate(server.url, "BENCH.e.>", have))
            sub_rate = subscription_catch_up(app, have)
            log_rate = log_catch_up(app, have)
            row(
                f"catch-up of {have:,}: subscribe()/s",
                f"{sub_rate:,.0f}",
                f"{raw_replay:,.0f} ordered consumer/s",
                sub_rate / raw_replay,
                ">= 0.50",
                sub_rate / raw_replay >= 0.5,
            )
            row(
                f"catch-up of {have:,}: select_notifications/s",
                f"{log_rate:,.0f}",
                f"{raw_replay:,.0f} ordered consumer/s",
                log_rate / raw_replay,
                ">= 0.50",
                log_rate / raw_replay >= 0.5,
            )
        finally:
            app.close()
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    header = ("figure", "event store", "raw nats-py (same run)", "ratio", "target")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]
    for r in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)))


if __name__ == "__main__":
    main()
