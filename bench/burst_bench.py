"""Burst benchmark: submit latency while many callers submit at once, the in-flight bound's
refusals, and that nothing accepted is lost.

    .venv/bin/python bench/burst_bench.py [--callers 200] [--deliberations 1500] [--seconds 10]
        [--bound 0] [--small-bound 100] [--delay 1.0] [--idle 30] [--runtime local|ray]
        [--layout child|one|split]

Each run starts Fleet as ``fleet up`` runs it (``fleet_testing.processes.FleetProcess``), its
agents calling the LOAD GENERATOR (``fleet_testing.loadgen``, its own process; canned answers
after ``--delay`` ± 25%), so the node is busy with real agent work while the burst arrives:

* ``--layout child`` (the default, as ``fleet up`` runs): one ``fleet up`` with everything
  (event store, projections, dispatcher, agents and web console), its gRPC API in a
  ``fleet up --components api`` child of its own (``FLEET_API_PROCESS=child``,
  ``fleet.api_process``);
* ``--layout one``: as ``child``, with ``FLEET_API_PROCESS=inline``: the API in the node's
  process too, one process with everything;
* ``--layout split``: as ``deploy/`` runs it, the API in a process of its own
  (``--components api``, the fleet-api Deployment) beside one that runs the dispatcher, its
  agents and the projectors (``--components dispatcher,projectors``), on a nats-server and a
  Valkey the bench starts. The API's loop then only takes calls: its pace no longer depends on
  the dispatcher's work, only on the cores they share.

1. IDLE (the ceiling): ``--idle`` Deliberate calls one after another on the fresh node.
2. BURST: ``--callers`` concurrent gRPC callers (one channel each, as separate clients would
   have) submit ``--deliberations`` Deliberate calls, spread evenly over ``--seconds`` (an open
   schedule: call i is due at ``i × seconds / deliberations``; a caller whose previous call has
   not returned sends late, and its wait counts in the latency). Latency is the caller's: from
   sending the call to its answer.
3. NOTHING LOST: every accepted call's task id is read back (GetDeliberationResult, which
   replays from the event store when a projection lags) and must exist.

Run A uses ``--bound`` as ``FLEET_MAX_IN_FLIGHT`` (0: unbounded), so its latency is that of
accepted submits; run B (``--small-bound`` > 0) repeats the burst on a fresh node bounded that
low and counts the RESOURCE_EXHAUSTED refusals.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fleet.embedded._process import free_port
from fleet.embedded.nats import NatsServer
from fleet.embedded.valkey import ValkeyServer
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet.orchestrator.v1 import orchestrator_pb2_grpc as pb_grpc
from fleet_testing.processes import FleetProcess

ROOT = Path(__file__).resolve().parents[1]
"""The repository: the load generator (fleet_testing, in no wheel) runs from here."""


def pct(xs: Sequence[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))] if s else float("nan")


def start_loadgen(delay_s: float) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [sys.executable, "-m", "fleet_testing.loadgen", "--port", str(port), "--mode", "instant"]
    if delay_s:
        cmd += ["--delay", str(delay_s), "--spread", "0.25"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    for _ in range(200):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    return proc, f"http://127.0.0.1:{port}"


@dataclass
class Burst:
    latencies_ms: list[float] = field(default_factory=list)
    """Accepted calls only."""
    refused_ms: list[float] = field(default_factory=list)
    codes: Counter[str] = field(default_factory=Counter)
    accepted: list[str] = field(default_factory=list)
    by_second: dict[int, list[float]] = field(default_factory=dict)
    """Every answered call's latency (accepted or refused), by the second of the burst it was
    due in: where in the burst the slow ones are."""
    refusal_message: str = ""
    wall_s: float = 0.0


def request(task_id: str) -> pb.DeliberateRequest:
    return pb.DeliberateRequest(
        task_id=task_id,
        task_description=f"Write a function that scales its input ({task_id}).",
        role="DEV",
        num_agents=3,
    )


async def idle_latencies(address: str, n: int) -> list[float]:
    out: list[float] = []
    async with grpc.aio.insecure_channel(address) as ch:
        stub = pb_grpc.OrchestratorServiceStub(ch)  # type: ignore[no-untyped-call]
        for i in range(n):
            t0 = time.perf_counter()
            await stub.Deliberate(request(f"idle-{i}-{uuid.uuid4().hex[:8]}"), timeout=30)
            out.append((time.perf_counter() - t0) * 1000)
            await asyncio.sleep(0.05)
    return out


async def burst(address: str, callers: int, total: int, seconds: float, tag: str) -> Burst:
    b = Burst()
    gap = seconds / total
    channels = [grpc.aio.insecure_channel(address) for _ in range(callers)]
    stubs = [pb_grpc.OrchestratorServiceStub(ch) for ch in channels]  # type: ignore[no-untyped-call]
    for ch in channels:
        await ch.channel_ready()
    t_start = time.perf_counter() + 0.2

    async def caller(c: int) -> None:
        for i in range(c, total, callers):
            due = t_start + i * gap
            if (wait := due - time.perf_counter()) > 0:
                await asyncio.sleep(wait)
            task_id = f"{tag}-{i}"
            t0 = time.perf_counter()
            second = b.by_second.setdefault(int(i * gap), [])
            try:
                await stubs[c].Deliberate(request(task_id), timeout=60)
            except grpc.aio.AioRpcError as e:
                ms = (time.perf_counter() - t0) * 1000
                second.append(ms)
                b.codes[e.code().name] += 1
                if e.code() is grpc.StatusCode.RESOURCE_EXHAUSTED:
                    b.refused_ms.append(ms)
                    b.refusal_message = b.refusal_message or (e.details() or "")
                continue
            b.latencies_ms.append((time.perf_counter() - t0) * 1000)
            second.append(b.latencies_ms[-1])
            b.codes["OK"] += 1
            b.accepted.append(task_id)

    await asyncio.gather(*(caller(c) for c in range(callers)))
    b.wall_s = time.perf_counter() - t_start
    for ch in channels:
        await ch.close()
    return b


async def missing(address: str, task_ids: list[str]) -> list[str]:
    """The accepted task ids the node cannot find (NOT_FOUND): what was lost."""
    lost: list[str] = []
    sem = asyncio.Semaphore(20)
    async with grpc.aio.insecure_channel(address) as ch:
        stub = pb_grpc.OrchestratorServiceStub(ch)  # type: ignore[no-untyped-call]

        async def check(t: str) -> None:
            async with sem:
                try:
                    await stub.GetDeliberationResult(
                        pb.GetDeliberationResultRequest(task_id=t), timeout=60
                    )
                except grpc.aio.AioRpcError as e:
                    if e.code() is grpc.StatusCode.NOT_FOUND:
                        lost.append(t)
                    else:
                        raise

        await asyncio.gather(*(check(t) for t in task_ids))
    return lost


def line(name: str, xs: list[float]) -> str:
    top = max(xs, default=0.0)
    return (
        f"{name}: n={len(xs)} p50 {pct(xs, 50):.1f} ms, p99 {pct(xs, 99):.1f} ms, max {top:.1f} ms"
    )


def start_nodes(
    args: argparse.Namespace, data: Path, env: dict[str, str]
) -> tuple[list[FleetProcess], list[NatsServer | ValkeyServer]]:
    """The Fleet processes of ``--layout`` (the API's first) and the servers the bench started
    for them (none for ``one``: that node starts its own)."""
    if args.layout in ("one", "child"):
        api_process = {"FLEET_API_PROCESS": "child" if args.layout == "child" else "inline"}
        node = FleetProcess(data, "all", {**env, **api_process}, start=False)
        for k in [
            k for k in node.env if k not in env and k.endswith(("_URL", "_URI", "RAY_ADDRESS"))
        ]:
            del node.env[k]  # this node starts its own servers
        node.spawn()
        return [node], []
    nats, vk = NatsServer(data / "nats"), ValkeyServer(data / "valkey")
    nats.start()
    vk.start()
    shared = {**env, "NATS_URL": nats.url, "FLEET_VALKEY_URL": vk.url}
    backend = FleetProcess(data / "backend", "dispatcher,projectors", shared)
    backend.wait_ready(180)  # the projectors first: the API reads their graph through them
    api = FleetProcess(data / "api", "api", shared)
    return [api, backend], [nats, vk]


async def one_run(args: argparse.Namespace, bound: int, llm_url: str, label: str) -> None:
    data = Path(tempfile.mkdtemp(prefix="fleet-burst-"))
    env = {
        "FLEET_GRPC_PORT": str(free_port()),
        "FLEET_WEB_PORT": "0",
        "FLEET_VLLM_URL": llm_url,
        "FLEET_VLLM_MODEL": "loadgen",
        "FLEET_AGENT_RUNTIME": args.runtime,
        "FLEET_SANDBOX": "off",
        "FLEET_PLAN_CONSUMER": "off",
        "FLEET_DELIBERATION_TIMEOUT": "600",
        "FLEET_MAX_IN_FLIGHT": str(bound),
    }
    nodes, servers = await asyncio.to_thread(start_nodes, args, data, env)
    try:
        info = await asyncio.to_thread(nodes[0].wait_ready, 180)
        address = info["grpc"]
        print(
            f"\n== run {label}: FLEET_MAX_IN_FLIGHT={bound}, layout {args.layout} "
            f"({', '.join(n.name for n in nodes)}; API at {address}) ==",
            flush=True,
        )
        idle = await idle_latencies(address, args.idle)
        print(line("idle node, one submit at a time (the ceiling)", idle), flush=True)
        tag = f"burst-{uuid.uuid4().hex[:6]}"
        b = await burst(address, args.callers, args.deliberations, args.seconds, tag)
        print(
            f"burst: {args.callers} callers, {args.deliberations} submits due over "
            f"{args.seconds:.0f} s, sent and answered in {b.wall_s:.1f} s; "
            f"answers {dict(b.codes)}",
            flush=True,
        )
        print(line("  accepted submits", b.latencies_ms), flush=True)
        if b.refused_ms:
            print(line("  refused submits (RESOURCE_EXHAUSTED)", b.refused_ms), flush=True)
            print(f"  refusal says: {b.refusal_message!r}", flush=True)
        print(f"  p99 vs idle p99: {pct(b.latencies_ms, 99) / pct(idle, 99):.1f}x", flush=True)
        seconds = sorted(b.by_second.items())
        print(
            "  every answer's p99 by second of the burst (ms): "
            + ", ".join(f"{t}s {pct(xs, 99):.0f}" for t, xs in seconds),
            flush=True,
        )
        lost = await missing(address, b.accepted)
        print(
            f"  nothing accepted lost: {len(b.accepted) - len(lost)}/{len(b.accepted)} "
            f"accepted deliberations found in the event store"
            + (f"; LOST: {lost[:5]}" if lost else ""),
            flush=True,
        )
    finally:
        for n in nodes:
            n.stop(30)
        for s in servers:
            s.stop()
        shutil.rmtree(data, ignore_errors=True)


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--callers", type=int, default=200)
    p.add_argument("--deliberations", type=int, default=1500)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--bound", type=int, default=0, help="run A's FLEET_MAX_IN_FLIGHT (0: none)")
    p.add_argument("--small-bound", type=int, default=100, help="run B's bound; 0 skips run B")
    p.add_argument("--delay", type=float, default=1.0, help="the load generator's answer time")
    p.add_argument("--idle", type=int, default=30)
    p.add_argument("--runtime", choices=("local", "ray"), default="local")
    p.add_argument(
        "--layout",
        choices=("child", "one", "split"),
        default="child",
        help="one `fleet up` whose API runs in a child process (its default); one process with "
        "everything; or the API in its own process beside the rest (as deploy/ runs it)",
    )
    args = p.parse_args()
    lg, url = start_loadgen(args.delay)
    try:
        await one_run(args, args.bound, url, "A")
        if args.small_bound > 0:
            await one_run(args, args.small_bound, url, "B")
    finally:
        lg.send_signal(signal.SIGTERM)
        lg.wait(10)


if __name__ == "__main__":
    asyncio.run(main())
