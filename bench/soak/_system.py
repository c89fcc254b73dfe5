"""The system under test: private servers and Fleet's processes, each one a member that can be
SIGKILLed and started again on the same ports and data directory.

Layout (every part on 127.0.0.1, on ports chosen free at start and kept across restarts):

* the load generator (``fleet_testing.loadgen``) as the model endpoint: a test double that
  answers after a model-like delay; never killed, it stands for a service outside Fleet;
* a private nats-server, or three routed ones (``--cluster``, every stream R3);
* a private valkey-server/redis-server (the cache, empty after a restart);
* ``fleet up --components api``: the API the load goes through, and where the final checks read
  the graph and run ``fleet verify`` as an operator would (an API replica asks the projectors'
  node over NATS for what only that node holds: the embedded graph);
* ``fleet up --components projectors``: the projections (graph and cache);
* ``fleet up --components dispatcher`` ×N with ``FLEET_AGENT_BACKEND=nats`` and no in-process
  workers, and ``fleet worker --role all`` ×N: every agent call crosses the NATS work queue.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from fleet.embedded._process import ServerProcess, free_port
from fleet.embedded.nats import NatsServer
from fleet.embedded.valkey import ValkeyServer
from fleet_testing.nats_cluster import NatsCluster
from fleet_testing.processes import REPO, FleetProcess, WorkerProcess

STREAM = "FLEET_EVENTS"


class Restartable(Protocol):
    """What the soak needs of a process: ``ServerProcess`` and ``ChildProcess`` both are one."""

    log_path: Path

    @property
    def returncode(self) -> int | None: ...
    def spawn(self) -> None: ...
    def is_ready(self) -> bool: ...
    def running(self) -> bool: ...
    def kill(self) -> None: ...
    def stop(self) -> None: ...


@dataclass(eq=False)
class Member:
    """One process of the system, as the chaos sees it."""

    kind: str
    """What it is: nats, valkey, api, projectors, dispatcher, worker (the table's rows)."""
    name: str
    proc: Restartable
    down_s: float = 0.0
    """How long it stays down after a kill before it is started again."""
    busy: bool = False
    """Being restarted: neither killed again nor restarted by the supervisor meanwhile."""


@dataclass(frozen=True)
class SystemConfig:
    root: Path
    cluster: bool = False
    dispatchers: int = 2
    workers: int = 2
    worker_concurrency: int = 8
    model_delay_s: float = 0.5
    model_spread: float = 0.5
    node_down_s: float = 10.0
    """Cluster: how long a killed nats node stays down (a quorum of two carries on)."""
    env: dict[str, str] = field(default_factory=dict)
    """``FLEET_*`` settings for every Fleet process (timeouts, windows), on top of the wiring."""


class System:
    """Starts, exposes and stops everything; owned by one event loop (spawns on its thread).

    Processes are spawned on the loop's thread: each asks to be signalled when its parent
    thread dies (so a SIGKILLed soak leaves nothing behind), and a worker thread of a pool may
    come and go.
    """

    def __init__(self, config: SystemConfig) -> None:
        self.config = config
        root = config.root
        port = free_port()
        self.loadgen = ServerProcess(
            "loadgen",
            [
                sys.executable, "-m", "fleet_testing.loadgen", "--port", str(port),
                "--mode", "instant", "--delay", str(config.model_delay_s),
                "--spread", str(config.model_spread),
            ],
            port=port,
            log_path=root / "loadgen.log",
            env={"PYTHONPATH": _import_path()},
        )  # fmt: skip
        self.cluster: NatsCluster | None = None
        nats: list[Member] = []
        if config.cluster:
            self.cluster = NatsCluster(root / "nats", cluster_name="fleet-soak")
            nats = [
                Member("nats", f"nats-{n.name}", n, down_s=config.node_down_s)
                for n in self.cluster.nodes
            ]
            self.nats_urls = [n.url for n in self.cluster.nodes]
        else:
            server = NatsServer(root / "nats", server_name="fleet-soak")
            nats = [Member("nats", "nats-server", server)]
            self.nats_urls = [server.url]
        self.valkey = ValkeyServer(root / "valkey")
        env = {
            "FLEET_STREAM": STREAM,
            "FLEET_STREAM_REPLICAS": "3" if config.cluster else "1",
            "FLEET_VALKEY_URL": self.valkey.url,
            "FLEET_VLLM_URL": f"http://127.0.0.1:{port}",
            "FLEET_VLLM_MODEL": "loadgen",
            "FLEET_AGENT_BACKEND": "nats",
            "FLEET_LOCAL_WORKERS": "0",
            "FLEET_WORKER_CONCURRENCY": str(config.worker_concurrency),
            "FLEET_PLAN_CONSUMER": "off",
            "FLEET_METRICS_PORT": "0",
            "FLEET_DEBUG": "1",  # a part that fails logs its traceback: what the soak found
            **config.env,
        }
        # On a cluster NATS_URL names every node (a comma-separated list), each process's own
        # node first in turn: it starts, and reconnects, while any one of them is up.
        n = len(self.nats_urls)
        turns = iter(range(2 + config.dispatchers + config.workers))

        def wired(**more: str) -> dict[str, str]:
            i = next(turns) % n
            rotated = self.nats_urls[i:] + self.nats_urls[:i]
            return {**env, "NATS_URL": ",".join(rotated), **more}

        self.api = FleetProcess(
            root / "api", "api", wired(FLEET_GRPC_PORT=str(free_port())), start=False
        )
        self.projectors = FleetProcess(root / "projectors", "projectors", wired(), start=False)
        self.members: list[Member] = [
            *nats,
            Member("valkey", "valkey", self.valkey),
            Member("api", "api", self.api),
            Member("projectors", "projectors", self.projectors),
        ]
        for i in range(1, config.dispatchers + 1):
            d = FleetProcess(root / f"dispatcher-{i}", "dispatcher", wired(), start=False)
            self.members.append(Member("dispatcher", f"dispatcher-{i}", d))
        for i in range(1, config.workers + 1):
            w_env = wired(FLEET_DATA_DIR=str(root / f"worker-{i}"))
            w = WorkerProcess(
                root / f"worker-{i}" / "worker.log", w_env, "--role", "all", start=False
            )
            self.members.append(Member("worker", f"worker-{i}", w))

    @property
    def nats_url(self) -> str:
        """Where the soak itself reads the stream (every node is up when it does)."""
        return self.nats_urls[0]

    @property
    def api_address(self) -> str:
        return f"127.0.0.1:{self.api.env['FLEET_GRPC_PORT']}"

    def member(self, name: str) -> Member:
        return next(m for m in self.members if m.name == name)

    async def start(self, timeout: float) -> None:
        """Servers first (Fleet's processes need them to start), then every Fleet process at
        once; return when all are ready."""
        self.loadgen.spawn()
        servers = [m for m in self.members if m.kind in ("nats", "valkey")]
        for m in servers:
            m.proc.spawn()
        await wait_ready([self.loadgen, *(m.proc for m in servers)], timeout)
        if self.cluster is not None:
            await self.cluster.wait_ready(timeout)
        fleet = [m for m in self.members if m.kind not in ("nats", "valkey")]
        # At once, as a deployment starts them: one that exits while starting (the first
        # stream set-up on a cluster can time out) is started again, as a supervisor would.
        starts = await asyncio.gather(*(start_until_ready(m.proc, timeout) for m in fleet))
        late = [str(m.proc.log_path) for m, n in zip(fleet, starts, strict=True) if n is None]
        if late:
            raise RuntimeError(f"not ready after {timeout:.0f} s; see {', '.join(late)}")

    async def stop(self) -> None:
        """Fleet's processes first (SIGTERM, all at once: each drains), then the servers.
        Idempotent; safe after a failed or interrupted start."""
        fleet = [m.proc for m in self.members if m.kind not in ("nats", "valkey")]
        await asyncio.gather(*(asyncio.to_thread(p.stop) for p in fleet))
        servers = [m.proc for m in self.members if m.kind in ("nats", "valkey")]
        await asyncio.gather(*(asyncio.to_thread(p.stop) for p in servers))
        await asyncio.to_thread(self.loadgen.stop)


def _import_path() -> str:
    """This copy of Fleet first, as the Fleet processes have it (``fleet_testing.processes``)."""
    return os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)


async def wait_ready(procs: Sequence[Restartable], timeout: float) -> None:
    """Wait until every process is ready; raise naming those that are not (or have exited)."""
    deadline = time.monotonic() + timeout
    waiting = list(procs)
    while waiting:
        ready = await asyncio.gather(*(asyncio.to_thread(p.is_ready) for p in waiting))
        waiting = [p for p, ok in zip(waiting, ready, strict=True) if not ok]
        dead = [p for p in waiting if not p.running()]
        if dead or (waiting and time.monotonic() > deadline):
            names = ", ".join(str(p.log_path) for p in dead or waiting)
            why = "exited" if dead else f"not ready after {timeout:.0f} s"
            raise RuntimeError(f"{why}; see {names}")
        if waiting:
            await asyncio.sleep(0.2)


async def start_until_ready(proc: Restartable, timeout: float) -> int | None:
    """Start ``proc``, and again whenever it exits while starting, until it is ready; return
    how many starts that took (None: not ready within ``timeout``)."""
    deadline = time.monotonic() + timeout
    starts = 0
    while time.monotonic() < deadline:
        proc.spawn()
        starts += 1
        if await ready_within(proc, deadline - time.monotonic()):
            return starts
        await asyncio.sleep(0.5)
    return None


async def ready_within(proc: Restartable, timeout: float) -> bool:
    """True once ``proc`` is ready, False if it exits or ``timeout`` passes first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await asyncio.to_thread(proc.is_ready):
            return True
        if not proc.running():
            return False
        await asyncio.sleep(0.1)
    return False
