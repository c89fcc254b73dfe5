"""Agent backends side by side: the same load through Ray actors and through the NATS work queue.

    .venv/bin/python bench/backends_bench.py [--seconds 4] [--in-flight 32] [--workers 2]

The endpoint is the LOAD GENERATOR (``fleet_testing.loadgen``, instant mode, its own process):
canned answers at once, so what is measured is each backend's own cost, never model quality.
For each backend, ``--in-flight`` callers issue agent turns (distinct keys) back to back for
``--seconds`` after a warm-up, through the ``AgentRuntime`` Protocol the dispatcher uses:

* ``direct``: ``LocalAgentRuntime``, the client in this process (the floor: no backend at all);
* ``ray``:    ``RayAgentRuntime``, ``--workers`` warm actors of the role on a local Ray;
* ``nats``:   ``NatsAgentRuntime`` on a private nats-server, ``--workers`` ``fleet worker``
  processes of the role (each ``--in-flight`` wide).

Reported: agent calls/s, and orchestration overhead per call = the caller's wall time for the
call minus the endpoint time the client measured (``TurnResult.latency_ms``), p50 and p95.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent_runtime.api import AgentTurn, Sampling
from agent_runtime.member.caller import EndpointConfig, LocalAgentRuntime
from agent_runtime.nats_backend.runtime import QueueNames
from fleet.embedded._process import free_port

FLEET = str(Path(sys.executable).with_name("fleet"))
ROOT = Path(__file__).resolve().parents[1]


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))] if xs else float("nan")


def wait_http(url: str) -> None:
    for _ in range(200):
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{url} did not answer")


def start_loadgen() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [sys.executable, "-m", "fleet_testing.loadgen", "--port", str(port), "--mode", "instant"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    wait_http(f"http://127.0.0.1:{port}/v1/models")
    return proc, f"http://127.0.0.1:{port}"


def turn(run: str, i: int) -> AgentTurn:
    return AgentTurn(
        deliberation_id=f"bench-{run}-{i // 3}",
        agent_id=f"dev-agent-{i % 3 + 1}",
        role="DEV",
        round=0,
        task="Write a Python function that returns the n-th Fibonacci number",
        sampling=Sampling(model="loadgen", seed=i, max_tokens=128),
        timeout_s=30.0,
    )


async def drive(runtime: Any, seconds: float, in_flight: int) -> dict[str, float]:
    """Warm up, then ``in_flight`` callers for ``seconds``: calls/s and overhead per call."""
    run = uuid.uuid4().hex[:8]
    await asyncio.gather(*(runtime.run_turn(turn(f"warm{run}", i)) for i in range(in_flight * 2)))
    counter = iter(range(10**9))
    overheads: list[float] = []
    stop_at = time.perf_counter() + seconds

    async def caller() -> None:
        while time.perf_counter() < stop_at:
            t0 = time.perf_counter()
            result = await runtime.run_turn(turn(run, next(counter)))
            wall_ms = (time.perf_counter() - t0) * 1000
            overheads.append(wall_ms - result.latency_ms)

    t0 = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(in_flight)))
    elapsed = time.perf_counter() - t0
    return {
        "calls": len(overheads),
        "calls_s": len(overheads) / elapsed,
        "p50": pct(overheads, 50),
        "p95": pct(overheads, 95),
        "mean": statistics.fmean(overheads) if overheads else float("nan"),
    }


async def bench_direct(url: str, args: argparse.Namespace) -> dict[str, float]:
    rt = LocalAgentRuntime(EndpointConfig(url, "loadgen", max_in_flight=args.in_flight), ("DEV",))
    try:
        return await drive(rt, args.seconds, args.in_flight)
    finally:
        await rt.close()


async def bench_ray(url: str, args: argparse.Namespace) -> dict[str, float]:
    from agent_runtime.ray_backend.runtime import RayAgentRuntime
    from fleet.embedded.ray_local import connect_ray, disconnect_ray

    info = await asyncio.to_thread(connect_ray, None)
    try:
        rt = await RayAgentRuntime.start(
            url, "loadgen", ["DEV"], args.workers, max_in_flight=args.in_flight
        )
        try:
            return await drive(rt, args.seconds, args.in_flight)
        finally:
            await rt.close()
    finally:
        if info["started"]:
            await asyncio.to_thread(disconnect_ray)


async def bench_nats(url: str, args: argparse.Namespace) -> dict[str, float]:
    from agent_runtime.nats_backend.runtime import NatsAgentRuntime
    from fleet.embedded.nats import NatsServer

    tmp = Path(tempfile.mkdtemp(prefix="fleet-bench-nats-"))
    server = NatsServer(tmp / "nats")
    await asyncio.to_thread(server.start)
    names = QueueNames("BENCH_EVENTS")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    workers: list[subprocess.Popen[bytes]] = []
    try:
        rt = await NatsAgentRuntime.connect(server.url, names)
        try:
            for _ in range(args.workers):
                cmd = [FLEET, "worker", "--role", "DEV", "--concurrency", str(args.in_flight)]
                cmd += ["--nats-url", server.url, "--llm-url", url, "--stream", names.namespace]
                workers.append(
                    subprocess.Popen(  # noqa: ASYNC220 - a fork, once, before the clock starts
                        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                    )
                )
            return await drive(rt, args.seconds, args.in_flight)
        finally:
            await rt.close()
    finally:
        for w in workers:
            w.send_signal(signal.SIGTERM)
        for w in workers:
            try:
                w.wait(20)
            except subprocess.TimeoutExpired:
                w.kill()
        await asyncio.to_thread(server.stop)
        shutil.rmtree(tmp, ignore_errors=True)


async def run(args: argparse.Namespace) -> None:
    loadgen, url = start_loadgen()
    results: dict[str, dict[str, float]] = {}
    try:
        for name, fn in (("direct", bench_direct), ("ray", bench_ray), ("nats", bench_nats)):
            if name in args.backends:
                t0 = time.perf_counter()
                results[name] = await fn(url, args)
                results[name]["wall"] = time.perf_counter() - t0
    finally:
        loadgen.send_signal(signal.SIGTERM)
        loadgen.wait(10)
    print(
        f"\nagent backends: {args.in_flight} callers, {args.workers} Ray actors / NATS workers "
        f"(role DEV), {args.seconds:.0f} s each, load generator instant (canned text)"
    )
    header = f"{'':34}" + "".join(f"{n:>12}" for n in results)
    print(header)
    rows = [
        ("agent calls measured", "calls", "{:>12.0f}"),
        ("agent calls/s", "calls_s", "{:>12.0f}"),
        ("overhead per call p50 (ms)", "p50", "{:>12.2f}"),
        ("overhead per call p95 (ms)", "p95", "{:>12.2f}"),
        ("overhead per call mean (ms)", "mean", "{:>12.2f}"),
        ("backend start + run (s)", "wall", "{:>12.1f}"),
    ]
    for label, key, fmt in rows:
        print(f"{label:34}" + "".join(fmt.format(r[key]) for r in results.values()))
    if "ray" in results and "nats" in results:
        ratio = results["nats"]["calls_s"] / results["ray"]["calls_s"]
        print(f"nats / ray throughput: {ratio:.2f}x")
    print(
        "overhead = caller's wall time per call minus the endpoint time the client measured "
        "(queueing in the backend, transport, (de)serialisation, scheduling)"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=float, default=4.0)
    p.add_argument("--in-flight", type=int, default=32)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--backends", default="direct,ray,nats")
    args = p.parse_args()
    args.backends = set(args.backends.split(","))
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
