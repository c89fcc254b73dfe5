"""Dispatch benchmark: orchestration overhead and agent-call throughput through the whole path.

    .venv/bin/python bench/dispatch_bench.py [--deliberations 300] [--in-flight 50]
        [--runtime ray|local] [--no-peer-review] [--no-group-commit] [--delay 0.5]

Path measured: a deliberation is requested (Requested saved to JetStream) → the dispatcher sees
it on the feed, claims it from the work queue, records Started → 3 agents are called in parallel
on warm Ray actors → ProposalReceived ×3 → 3 peer ratings → PeerRatingsReceived ×3 → scores and
Completed in one atomic save → the Valkey cache projection shows it COMPLETED.

The endpoint is the LOAD GENERATOR (``fleet.embedded.loadgen``, instant mode, in its own
process): it answers at once with canned text, so what is measured is Fleet's own cost, never
model quality. Overhead per deliberation = end to end (request saved → Completed on the feed)
minus its agent calls' critical path (slowest proposal call + slowest rating call, as recorded in
the events). The raw event-store save rate is measured in the same run for comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eventsourcing.domain import Aggregate, event

from aggregates import Deliberation
from fleet.bootstrap import FleetNode
from fleet.config import Settings
from fleet.embedded._process import free_port
from fleet.ledger import ApplicationEventFeed


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def start_loadgen(delay_s: float) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [sys.executable, "-m", "fleet.embedded.loadgen", "--port", str(port), "--mode", "instant"]
    if delay_s:
        cmd += ["--delay", str(delay_s)]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    import urllib.request

    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    return proc, f"http://127.0.0.1:{port}"


class BenchProbe(Aggregate):
    """A one-event aggregate nobody dispatches: the raw save rate without dispatch work."""

    class Created(Aggregate.Created):
        payload: str

    @event(Created)
    def __init__(self, payload: str) -> None:
        self.payload = payload


def save_rate(app: object, n: int) -> float:
    """Raw event-store saves/s: one new single-event aggregate per save, sequential."""
    t0 = time.perf_counter()
    for _ in range(n):
        app.save(BenchProbe(payload="x" * 200))  # type: ignore[attr-defined]
    return n / (time.perf_counter() - t0)


async def run(args: argparse.Namespace) -> None:
    from concurrent.futures import ThreadPoolExecutor

    # Event-store calls run in worker threads (asyncio.to_thread); the default pool has only
    # cpu+4 threads, which caps concurrent saves well below what JetStream takes.
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(args.threads))
    tmp = Path(tempfile.mkdtemp(prefix="fleet-bench-"))
    lg_proc, lg_url = start_loadgen(args.delay)
    settings = Settings(
        data_dir=tmp,
        grpc_port=free_port(),
        vllm_url=lg_url,
        vllm_model="loadgen",
        components=frozenset(args.components.split(",")),
        agent_runtime=args.runtime,
        peer_review=not args.no_peer_review,
        llm_max_in_flight=64,
        agent_call_timeout=30.0,
        plan_consumer=False,
    )
    try:
        async with FleetNode(settings) as node:
            assert node.app is not None and node.store is not None
            app, store = node.app, node.store
            store.group_commit = not args.no_group_commit
            raw = await asyncio.to_thread(save_rate, app, args.raw_saves)
            head = await asyncio.to_thread(app.recorder.max_notification_id) or 0
            started: dict[uuid.UUID, float] = {}
            ended: dict[uuid.UUID, float] = {}
            done = asyncio.Event()

            async def watch() -> None:
                async for item in ApplicationEventFeed(app).follow(after=head):
                    e = item.event
                    if isinstance(e, Deliberation.Completed | Deliberation.Failed):
                        if e.originator_id in started and e.originator_id not in ended:
                            ended[e.originator_id] = time.perf_counter()
                            slots.release()
                            if len(ended) == args.deliberations:
                                done.set()

            slots = asyncio.Semaphore(args.in_flight)
            watcher = asyncio.create_task(watch())

            async def submit(i: int) -> None:
                await slots.acquire()
                d = Deliberation.request(
                    task_id=f"bench-{uuid.uuid4().hex[:8]}-{i}",
                    task="Write a Python function that returns the n-th Fibonacci number",
                    role="DEV",
                    num_agents=3,
                    rounds=1,
                    requested_at=datetime.now(tz=UTC),
                    timeout_seconds=120,
                )
                started[d.id] = time.perf_counter()
                await store.create(d)

            # warm-up: a few deliberations so pools, sessions and caches are hot
            t0 = time.perf_counter()
            groups0 = store.groups_committed
            for i in range(args.deliberations):
                await submit(i)
            await asyncio.wait_for(done.wait(), 600)
            wall = time.perf_counter() - t0
            groups = store.groups_committed - groups0
            await node.wait_projected(120)
            wall_cache = time.perf_counter() - t0
            watcher.cancel()

            overhead, e2e, calls = [], [], 0
            for d_id, t_start in started.items():
                d = await store.get(d_id)
                props = [p.latency_ms for p in d.proposals.values()]
                rates = [
                    e.latency_ms
                    for e in await store.history(d_id)
                    if isinstance(e, Deliberation.PeerRatingsReceived)
                ]
                calls += len(props) + len(rates)
                total = (ended[d_id] - t_start) * 1000
                e2e.append(total)
                overhead.append(total - max(props, default=0) - max(rates, default=0))
    finally:
        lg_proc.terminate()
        lg_proc.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)

    n = len(e2e)
    print(
        f"dispatch bench: {n} deliberations (3 agents, 1 round, peer review "
        f"{'off' if args.no_peer_review else 'on'}), {args.in_flight} in flight, "
        f"runtime={args.runtime}, load generator instant"
        f"{f' +{args.delay * 1000:.0f} ms' if args.delay else ''}, {os.cpu_count()} cores, "
        f"group commit {'off' if args.no_group_commit else 'on'}"
    )
    print(f"  raw event-store save rate (same run, sequential): {raw:8.0f} saves/s")
    e2e_line = f"p50 {pct(e2e, 50):7.1f} ms   p99 {pct(e2e, 99):7.1f} ms"
    oh_line = f"p50 {pct(overhead, 50):7.1f} ms   p99 {pct(overhead, 99):7.1f} ms"
    print(f"  end to end per deliberation      {e2e_line}")
    print(f"  orchestration overhead           {oh_line}   mean {statistics.mean(overhead):.1f} ms")
    print(
        f"  agent calls                      {calls} in {wall:.2f} s = {calls / wall:7.0f} calls/s"
    )
    if groups:
        print(
            f"  dispatcher group saves           {groups} ({groups / n:.1f} per deliberation; "
            f"the creates and any plain saves are not counted)"
        )
    print(
        f"  deliberations                    {n / wall:7.1f} /s (to Completed); "
        f"{n / wall_cache:.1f} /s including the cache projection caught up"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--deliberations", type=int, default=300)
    p.add_argument("--in-flight", type=int, default=50)
    p.add_argument("--runtime", choices=("ray", "local"), default="ray")
    p.add_argument("--no-peer-review", action="store_true")
    p.add_argument("--no-group-commit", action="store_true", help="one save per update")
    p.add_argument(
        "--delay", type=float, default=0.0, help="seconds the load generator waits per answer"
    )
    p.add_argument("--raw-saves", type=int, default=300)
    p.add_argument("--threads", type=int, default=32, help="worker threads for store calls")
    p.add_argument(
        "--components",
        default="dispatcher,agents",
        help="what runs in the benchmark's process (add 'projectors' to project in it too)",
    )
    asyncio.run(run(p.parse_args()))


if __name__ == "__main__":
    main()
