"""Recovery benchmark: how long a SIGKILLed process's work waits before another process has it.

    .venv/bin/python bench/recovery_bench.py [--kills 10] [--only worker,dispatcher,projectors]
        [--ack-wait S] [--lease S]

Everything runs on 127.0.0.1: a private nats-server and valkey/redis-server, the load generator
(canned answers: it stands in for a model and claims nothing about quality) and Fleet's own
processes, started as an operator would (``fleet worker``, ``fleet up --components dispatcher``,
``fleet up --components projectors``). Each figure is the time from the SIGKILL to the moment the
work is seen picked up again, from outside Fleet:

* worker: a call (queued by ``NatsAgentRuntime`` in this process) hangs at the endpoint on the
  victim worker while a second worker is serving; the victim is SIGKILLed and the figure is
  kill → the same call reaching the endpoint again, from the second worker. The call then
  completes; the second worker is the next round's victim.
* dispatcher: a deliberation's three calls hang at the endpoint under the victim dispatcher
  (agents in its process, so they die with it) while a second dispatcher runs; figure = kill →
  the second dispatcher's first call reaching the endpoint. The deliberation then completes.
* projectors: the projectors process (graph and Valkey cache) is SIGKILLed and started again at
  once, as a supervisor would, and an event is saved; figure = kill → both projections have
  applied it (read from the new process's ``/metrics``). Beside it, kill → the new process
  ready: its start-up, a floor no lease can beat.

Each kill lands at a random phase of the beat cycle (a uniform wait over one beat period first).
The raw ceiling is a bare JetStream work queue with the same ack wait and no Fleet: one pull
consumer takes a message and sends ``in_progress`` every third of the ack wait, stops at a random
phase (its "death"), and the figure is stop → the message delivered to a second pull consumer.
Fleet's worker and dispatcher figures are printed beside it as ratios; the run stops by itself
after ``--kills`` rounds of each.

(Over 400 lines on purpose: one script, so that the raw ceiling, the three faults and how each is
timed stay side by side and can be read in one go.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import nats
from nats.js.api import AckPolicy, ConsumerConfig, RetentionPolicy, StreamConfig

from agent_runtime.api import AgentTurn, Sampling
from agent_runtime.cpus import cpu_budget
from agent_runtime.nats_backend._wire import QueueNames
from agent_runtime.nats_backend.runtime import NatsAgentRuntime
from aggregates import Deliberation, deliberation_id
from application.app import FleetApplication
from application.stores import ApplicationDeliberationStore
from fleet.embedded._process import free_port
from fleet.embedded.nats import NatsServer
from fleet.embedded.valkey import ValkeyServer
from fleet_testing.loadgen import LoadGenServer

FLEET = str(Path(sys.executable).with_name("fleet"))
REPO = Path(__file__).resolve().parents[1]
TASK = "Write a Python function that returns the n-th Fibonacci number"


def pct(xs: Sequence[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


async def until(check: Callable[[], bool | Awaitable[bool]], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        await asyncio.sleep(0.02)
    raise TimeoutError(f"condition not met in {timeout} s")


class Child:
    """A Fleet process (``fleet …``) with its own log, SIGKILLed or stopped by its pid only."""

    def __init__(self, log: Path, args: list[str], env: dict[str, str]) -> None:
        self.log_path = log
        self._log = open(log, "ab")  # closed in stop()
        full = {**os.environ, **env}
        full["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), full.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen(
            [FLEET, *args], env=full, stdout=self._log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip

    def said(self, text: str) -> bool:
        self._log.flush()
        return text in " ".join(self.log_path.read_text(errors="replace").split())

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.alive():
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()


def fleet_up(data_dir: Path, components: str, env: dict[str, str]) -> Child:
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "run.json").unlink(missing_ok=True)
    args = ["up", "--components", components, "--data-dir", str(data_dir)]
    return Child(data_dir / "fleet.log", args, {**env, "FLEET_DATA_DIR": str(data_dir)})


async def ready(child: Child, data_dir: Path, timeout: float = 90.0) -> None:
    def up() -> bool:
        if not child.alive():
            raise RuntimeError(f"{data_dir.name} exited: {child.log_path.read_text()[-2000:]}")
        return (data_dir / "run.json").exists()

    await until(up, timeout)


def calls_of(lg: LoadGenServer, user: str) -> int:
    return sum(1 for body in lg.requests if body.get("user") == user)


# ------------------------------------------------------------------ the raw ceiling


async def raw_redelivery(url: str, ack_wait: float, n: int) -> list[float]:
    """A bare work queue: beat, stop at a random phase, time the redelivery to another puller."""
    nc = await nats.connect(url)
    js = nc.jetstream()
    name = f"RAW_{uuid.uuid4().hex[:8].upper()}"
    subject = f"raw.{name.lower()}"
    await js.add_stream(
        StreamConfig(name=name, subjects=[subject], retention=RetentionPolicy.WORK_QUEUE)
    )
    await js.add_consumer(
        name,
        ConsumerConfig(
            durable_name="raw", ack_policy=AckPolicy.EXPLICIT, ack_wait=ack_wait, max_deliver=-1
        ),
    )
    owner = await js.pull_subscribe_bind("raw", name)
    other = await js.pull_subscribe_bind("raw", name)
    period = ack_wait / 3
    out = []
    try:
        for _ in range(n):
            await js.publish(subject, b"work")
            msg = (await owner.fetch(1, timeout=5))[0]
            for _ in range(2):  # alive for a while: beats keep it
                await asyncio.sleep(period)
                await msg.in_progress()
            await asyncio.sleep(random.uniform(0, period))
            stopped = time.monotonic()  # the owner "dies": no more beats
            while True:
                try:
                    got = (await other.fetch(1, timeout=1.0))[0]
                    break
                except TimeoutError:
                    continue
            out.append(time.monotonic() - stopped)
            await got.ack()
    finally:
        await js.delete_stream(name)
        await nc.close()
    return out


# ------------------------------------------------------------------ Fleet


async def worker_kills(
    url: str, lg: LoadGenServer, tmp: Path, n: int, ack_wait: float
) -> list[float]:
    stream = f"RB_{uuid.uuid4().hex[:8].upper()}"
    env = {
        "NATS_URL": url, "FLEET_STREAM": stream, "FLEET_VLLM_URL": lg.url,
        "FLEET_VLLM_MODEL": "loadgen", "FLEET_WORKER_ACK_WAIT": str(ack_wait),
    }  # fmt: skip
    runtime = await NatsAgentRuntime.connect(url, QueueNames(stream))
    seq = iter(range(10_000))

    async def worker() -> Child:
        child = Child(tmp / f"worker-{next(seq)}.log", ["worker", "--role", "DEV"], env)
        await until(lambda: child.said("worker serving"), 90)
        return child

    out = []
    victim = await worker()
    try:
        for i in range(n):
            agent = f"dev-agent-{i}"
            lg.modes_by_user[agent] = "hang"
            turn = AgentTurn(
                deliberation_id=f"bench-{i}", agent_id=agent, role="DEV", round=0, task=TASK,
                sampling=Sampling(model="loadgen"), timeout_s=120.0,
            )  # fmt: skip
            call = asyncio.create_task(runtime.run_turn(turn))
            await until(lambda a=agent: calls_of(lg, a) == 1)  # type: ignore[misc]
            rescuer = await worker()
            await asyncio.sleep(random.uniform(0, ack_wait / 3))
            del lg.modes_by_user[agent]  # the rescuer's attempt is answered
            victim.kill()
            killed = time.monotonic()
            await until(lambda a=agent: calls_of(lg, a) == 2)  # type: ignore[misc]
            out.append(time.monotonic() - killed)
            await asyncio.wait_for(call, 60)
            victim.stop()
            victim = rescuer
    finally:
        victim.stop()
        await runtime.close()
    return out


async def dispatcher_kills(
    url: str, lg: LoadGenServer, tmp: Path, n: int, lease: float
) -> list[float]:
    stream = f"RB_{uuid.uuid4().hex[:8].upper()}"
    env = {
        "NATS_URL": url, "FLEET_STREAM": stream, "FLEET_VLLM_URL": lg.url,
        "FLEET_VLLM_MODEL": "loadgen", "FLEET_AGENT_RUNTIME": "local", "FLEET_CACHE": "off",
        "FLEET_PLAN_CONSUMER": "off", "FLEET_PEER_REVIEW": "off", "FLEET_WORK_LEASE": str(lease),
    }  # fmt: skip
    app_env = {"PERSISTENCE_MODULE": "eventstore.jetstream", "NATS_URL": url, "NATS_STREAM": stream}
    app = await asyncio.to_thread(FleetApplication, app_env)
    store = ApplicationDeliberationStore(app)
    seq = iter(range(10_000))
    agents = ("agent-dev-001", "agent-dev-002", "agent-dev-003")  # the seed's DEV council

    async def dispatcher() -> Child:
        data = tmp / f"dispatcher-{next(seq)}"
        child = fleet_up(data, "dispatcher", env)
        await ready(child, data)
        return child

    out = []
    victim = await dispatcher()
    try:
        for i in range(n):
            base = lg.counters.calls
            lg.modes_by_user.update(dict.fromkeys(agents, "hang"))
            task_id = f"recovery-{uuid.uuid4().hex[:8]}-{i}"
            await store.create(
                Deliberation.request(
                    task_id=task_id, task=TASK, role="DEV", num_agents=3, rounds=1,
                    requested_at=datetime.now(tz=UTC), timeout_seconds=120,
                )
            )  # fmt: skip
            await until(lambda b=base: lg.counters.calls >= b + 3)  # type: ignore[misc]
            rescuer = await dispatcher()
            await asyncio.sleep(random.uniform(0, lease / 3))
            lg.modes_by_user.clear()
            victim.kill()
            killed = time.monotonic()
            await until(lambda b=base: lg.counters.calls >= b + 4)  # type: ignore[misc]
            out.append(time.monotonic() - killed)
            d_id = deliberation_id(task_id)

            async def done(d_id: uuid.UUID = d_id) -> bool:
                return (await store.get(d_id)).is_terminal

            await until(done)
            status = (await store.get(d_id)).status.value
            if status != "COMPLETED":
                raise RuntimeError(f"deliberation {d_id} ended {status}")
            victim.stop()
            victim = rescuer
    finally:
        victim.stop()
        app.close()
    return out


def scrape(port: int) -> dict[str, float]:
    """``fleet_stream_head`` and ``fleet_projection_lag_events{projection}`` from /metrics."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
            text = resp.read().decode()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        if line.startswith("fleet_stream_head "):
            out["head"] = float(line.split()[-1])
        elif line.startswith("fleet_projection_lag_events{"):
            name = line.split('projection="', 1)[1].split('"', 1)[0]
            out[name] = float(line.split()[-1])
    return out


async def projector_kills(
    url: str, valkey: str, tmp: Path, n: int, lease: float
) -> tuple[list[float], list[float]]:
    stream = f"RB_{uuid.uuid4().hex[:8].upper()}"
    env = {
        "NATS_URL": url, "FLEET_STREAM": stream, "FLEET_VALKEY_URL": valkey,
        "FLEET_KEY_PREFIX": stream.lower(), "FLEET_PROJECTION_LEASE": str(lease),
    }  # fmt: skip
    app_env = {"PERSISTENCE_MODULE": "eventstore.jetstream", "NATS_URL": url, "NATS_STREAM": stream}
    app = await asyncio.to_thread(FleetApplication, app_env)
    store = ApplicationDeliberationStore(app)
    data = tmp / "projectors"  # one data dir: the graph survives the restarts

    async def projectors() -> tuple[Child, int]:
        port = free_port()
        child = fleet_up(data, "projectors", {**env, "FLEET_METRICS_PORT": str(port)})
        await ready(child, data)
        return child, port

    async def applied(port: int, head: int) -> bool:
        m = await asyncio.to_thread(scrape, port)
        return m.get("head", 0) >= head and m.get("graph") == 0 and m.get("cache") == 0

    async def save() -> int:
        task_id = f"projected-{uuid.uuid4().hex[:8]}"
        await store.create(
            Deliberation.request(
                task_id=task_id, task=TASK, role="DEV", num_agents=3, rounds=1,
                requested_at=datetime.now(tz=UTC), timeout_seconds=120,
            )
        )  # fmt: skip
        head: int | None = await asyncio.to_thread(app.recorder.max_notification_id)
        return head or 0

    picked, starts = [], []
    proc, port = await projectors()
    try:
        head = await save()
        await until(lambda: applied(port, head))
        for _ in range(n):
            await asyncio.sleep(random.uniform(0, lease / 3))
            proc.kill()
            killed = time.monotonic()
            proc.stop()
            proc, port = await projectors()
            starts.append(time.monotonic() - killed)
            head = await save()
            await until(lambda p=port, h=head: applied(p, h))  # type: ignore[misc]
            picked.append(time.monotonic() - killed)
    finally:
        proc.stop()
        app.close()
    return picked, starts


def line(
    what: str, xs: Sequence[float], raw: Sequence[float] | None = None, label: str = ""
) -> str:
    text = f"  {what:<36} p50 {pct(xs, 50):5.2f} s  p99 {pct(xs, 99):5.2f} s  max {max(xs):5.2f} s"
    if raw:
        ratios = f"{pct(xs, 50) / pct(raw, 50):.2f} / {pct(xs, 99) / pct(raw, 99):.2f}"
        text += f"  = {ratios} × {label} (p50 / p99)"
    return text


async def measure(args: argparse.Namespace, tmp: Path) -> dict[str, list[float]]:
    only = set(args.only.split(","))
    results: dict[str, list[float]] = {}
    n = args.kills
    with NatsServer(tmp / "nats") as server:
        for w in sorted({args.ack_wait, args.lease}):
            results[f"raw {w:g}"] = await raw_redelivery(server.url, w, n)
        async with LoadGenServer("instant") as lg:
            if "worker" in only:
                results["worker"] = await worker_kills(server.url, lg, tmp, n, args.ack_wait)
            if "dispatcher" in only:
                results["dispatcher"] = await dispatcher_kills(server.url, lg, tmp, n, args.lease)
        if "projectors" in only:
            with ValkeyServer(tmp / "valkey") as valkey:
                picked, starts = await projector_kills(server.url, valkey.url, tmp, n, args.lease)
            results["projectors"], results["start-up"] = picked, starts
    return results


async def run(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="fleet-recovery-bench-"))
    try:
        r = await measure(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"recovery after SIGKILL, {args.kills} kills each (worker ack wait {args.ack_wait:g} s, "
        f"dispatcher and projection leases {args.lease:g} s, beats every third of them; "
        f"{cpu_budget().describe()}, 127.0.0.1)"
    )
    for w in sorted({args.ack_wait, args.lease}):
        print(line(f"raw JetStream redelivery, {w:g} s wait", r[f"raw {w:g}"]))
    if "worker" in r:
        raw = r[f"raw {args.ack_wait:g}"]
        print(line("worker killed: call on another", r["worker"], raw, "raw"))
    if "dispatcher" in r:
        raw = r[f"raw {args.lease:g}"]
        print(line("dispatcher killed: calls made again", r["dispatcher"], raw, "raw"))
    if "projectors" in r:
        starts = r["start-up"]
        print(line("projectors restarted: event applied", r["projectors"], starts, "start-up"))
        print(line("  start-up (kill to ready)", starts))
        after = [p - s for p, s in zip(r["projectors"], starts, strict=True)]
        print(line("  ready to applied", after))
    print(json.dumps({k: [round(x, 3) for x in v] for k, v in r.items()}))


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--kills", type=int, default=10, help="kills of each kind")
    p.add_argument("--only", default="worker,dispatcher,projectors", help="comma-separated")
    p.add_argument("--ack-wait", type=float, default=3.0, help="FLEET_WORKER_ACK_WAIT")
    p.add_argument(
        "--lease", type=float, default=3.0, help="FLEET_WORK_LEASE and FLEET_PROJECTION_LEASE"
    )
    asyncio.run(run(p.parse_args()))


if __name__ == "__main__":
    main()
