"""`fleet up` on a Ray cluster reached as a Ray client (``ray://``), as the Kubernetes manifests
arrange it: ``RAY_ADDRESS=ray://<head service>:10001``, the workers on Fleet's own image.

Each test starts a Ray head of its own (``ray start --head --block`` on loopback, its own short
temp dir, no token auth, one CPU: the actors reserve none) in a session of its own, and ends it by
killing that process group, never with ``ray stop`` (which would end every Ray on the machine).
The head runs from this interpreter's environment with this checkout on ``PYTHONPATH``: that is
the image with Fleet installed, so the actors' code is imported on the workers, and the driver
ships none (``fleet up`` passes no runtime_env). The model is the load generator.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio

from fleet.client import FleetClient
from fleet.embedded._process import free_port
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet_testing.loadgen import LoadGenServer
from fleet_testing.processes import REPO, FleetProcess
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(420)  # a busy two-core machine: Ray and `fleet up` start slowly

RAY = str(Path(sys.executable).with_name("ray"))
ROLES = 5
"""Fleet starts one actor pool per role (DEV, QA, ARCHITECT, DEVOPS, DATA)."""


@dataclass
class RayHead:
    """A Ray head with its client server on fixed loopback ports, startable again after a kill
    (a head pod restarting)."""

    gcs_port: int
    client_port: int
    env: dict[str, str]
    temp: Path
    """Its own short temp dir (unix socket paths must stay short)."""
    proc: subprocess.Popen[bytes] | None = None

    @property
    def client_address(self) -> str:
        return f"ray://127.0.0.1:{self.client_port}"

    @property
    def log(self) -> Path:
        return self.temp / "head.log"

    def start(self) -> None:
        """`ray start --head --block` in a session of its own: its node's processes share its
        process group, so they are ended together."""
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [
                    RAY,
                    "start",
                    "--head",
                    "--block",
                    "--node-ip-address=127.0.0.1",
                    f"--port={self.gcs_port}",
                    f"--ray-client-server-port={self.client_port}",
                    "--include-dashboard=false",
                    "--num-cpus=1",  # the agent actors reserve none; the machine is shared
                    "--object-store-memory=100000000",
                    f"--temp-dir={self.temp}",
                ],
                env=self.env,
                start_new_session=True,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    async def wait_up(self) -> None:
        def up() -> bool:
            assert self.proc is not None and self.proc.poll() is None, self.log.read_text()[-3000:]
            return _listening(self.client_port) and _listening(self.gcs_port)

        await eventually(up, timeout=90, interval=0.2, what="the Ray head never listened")

    def stop(self) -> None:
        """End `ray start --block` and every process of its node (its process group), by its
        id only, as a pod is deleted: SIGTERM, then SIGKILL after a grace period (3 s: the head
        holds nothing to keep, and on SIGTERM it has never ended within 15 s). Idempotent."""
        self._signal(((signal.SIGTERM, 3), (signal.SIGKILL, 10)))

    def kill(self) -> None:
        """`stop` at once with SIGKILL, for the end of a test. Idempotent."""
        self._signal(((signal.SIGKILL, 10),))

    def _signal(self, steps: tuple[tuple[signal.Signals, int], ...]) -> None:
        if self.proc is None:
            return
        for sig, wait in steps:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue


def _head_env() -> dict[str, str]:
    """This process's environment, minus the test session's single-host switch (it makes `ray
    start` refuse a cluster), with this checkout importable and token auth off (Ray 2.60)."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    env.pop("RAY_ADDRESS", None)
    path = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return {**env, "PYTHONPATH": path, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def ray_head() -> AsyncIterator[RayHead]:
    """A Ray head of this module's own (its start takes 10-15 s on two cores), ended by killing
    its process group however the tests end (never `ray stop`: it ends every Ray on the
    machine). The test that loses the head restarts it, and comes last in the file."""
    temp = Path(tempfile.mkdtemp(prefix="frc-", dir="/tmp"))  # short: unix socket paths
    head = RayHead(free_port(), free_port(), _head_env(), temp)
    try:
        head.start()
        await head.wait_up()
        yield head
    finally:
        head.kill()
        shutil.rmtree(temp, ignore_errors=True)


# The actors on the cluster, as a driver on it sees them (a process of its own: this test
# session has its own local Ray). ``ray._private.state``: the public state API needs the
# dashboard, which this head does not run.
ACTORS = textwrap.dedent(
    """
    import collections, json, sys
    import ray
    from ray._private import state
    ray.init(address=sys.argv[1], log_to_driver=False)
    seen = collections.Counter(
        a["State"] for a in state.actors().values() if a.get("ActorClassName") == "AgentActor")
    print(json.dumps(seen))
    """
)


def _agent_actors(head: RayHead) -> dict[str, int]:
    """How many of Fleet's agent actors the cluster holds, by state (ALIVE, DEAD, …)."""
    out = subprocess.run(
        [sys.executable, "-c", ACTORS, f"127.0.0.1:{head.gcs_port}"],
        env=head.env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    counts: dict[str, int] = json.loads(out.stdout.strip().splitlines()[-1])
    return counts


def _fleet_env(head: RayHead, llm_url: str, **extra: str) -> dict[str, str]:
    """`fleet up` against the load generator, its agents on ``head`` through the Ray client."""
    env = {
        "FLEET_RAY_ADDRESS": head.client_address,
        "RAY_AUTH_MODE": "disabled",
        "VLLM_URL": llm_url,
        "VLLM_MODEL": "loadgen",
        "FLEET_GRPC_PORT": str(free_port()),
        "FLEET_CACHE": "off",
        "FLEET_PLAN_CONSUMER": "off",
        "FLEET_METRICS_PORT": "0",
        **extra,
    }
    return {**env, "FLEET_AGENT_BACKEND": "ray", "FLEET_AGENT_RUNTIME": "ray"}


async def _ready(up: FleetProcess) -> str:
    """The gRPC address of ``up`` once it serves (its run.json)."""

    def ready() -> bool:
        assert up.running(), f"fleet up exited ({up.returncode}): {up.tail()}"
        return up.is_ready()

    await eventually(ready, timeout=180, interval=0.25, what=lambda: f"not up: {up.tail()}")
    info = up.run_info()
    assert info is not None
    return str(info["grpc"])


async def test_fleet_up_runs_deliberations_on_a_ray_cluster_through_the_ray_client(
    tmp_path: Path, ray_head: RayHead
) -> None:
    async with LoadGenServer("instant") as lg:
        env = _fleet_env(ray_head, lg.url)
        up = FleetProcess(tmp_path / "up", "api,dispatcher,projectors", env)  # status: projectors
        try:
            address = await _ready(up)
            async with FleetClient(address) as client:
                await client.deliberate("write fib(n)", task_id="over-ray-client", num_agents=3)
                done = await client.wait("over-ray-client", timeout=90)
                status = await client.stub.GetNodeStatus(pb.GetNodeStatusRequest())
            live = await asyncio.to_thread(_agent_actors, ray_head)
            up.stop(timeout=60)
            assert up.returncode == 0, up.tail()
            after = await asyncio.to_thread(_agent_actors, ray_head)
        finally:
            up.stop()
    assert done.status == pb.DELIBERATION_STATUS_COMPLETED, done.error_message
    authors = {r.proposal.author_id for r in done.results}
    assert len(authors) == 3 and all(r.proposal.content for r in done.results)
    assert done.winner_id in authors
    assert lg.counters.answered >= 3  # the agents' calls reached the model from the cluster
    # Where the agents run, as the node reports it: the client address, and that it is one.
    assert status.endpoints["ray"].startswith(ray_head.client_address), status.endpoints
    assert "Ray client" in status.endpoints["ray"]
    assert live.get("ALIVE") == ROLES, live  # one warm actor per role, on the cluster
    assert after.get("ALIVE", 0) == 0 and after.get("DEAD") == ROLES, after  # a clean stop


async def test_a_node_whose_ray_client_loses_the_cluster_stops_and_resumes_on_restart(
    tmp_path: Path, ray_head: RayHead
) -> None:
    """The head goes away under a running node with a deliberation in flight: the node exits
    non-zero (a supervisor restarts it) instead of living on with agents it cannot reach, and
    records no agent as failed for it; restarted on a new head, it finishes the deliberation."""
    async with LoadGenServer("instant", delay_s=1.0) as lg:
        # The client's reconnect grace (30 s by default), short: the head is not coming back.
        env = _fleet_env(ray_head, lg.url, RAY_CLIENT_RECONNECT_GRACE_PERIOD="5")
        up = FleetProcess(tmp_path / "up", "api,dispatcher", env)
        try:
            address = await _ready(up)
            async with FleetClient(address) as client:
                await client.deliberate("write fib(n)", task_id="across-a-head-restart")
                await eventually(lambda: lg.counters.in_flight > 0, timeout=60)
            await asyncio.to_thread(ray_head.stop)
            await eventually(
                lambda: not up.running(),
                timeout=90,
                interval=0.25,
                what=lambda: f"fleet up still running: {up.tail()}",
            )
            stopped = up.returncode
            first_run = up.output_since_spawn()

            ray_head.start()  # the head pod comes back; the supervisor restarts the node
            await ray_head.wait_up()
            up.spawn()
            address = await _ready(up)
            async with FleetClient(address) as client:
                done = await client.wait("across-a-head-restart", timeout=120)
                history = await client.history("across-a-head-restart")
        finally:
            up.stop()
    assert stopped not in (0, None), first_run[-3000:]
    assert "lost the connection to Ray" in first_run, first_run[-3000:]
    types = [e.type for e in history.events]
    assert "AgentFailed" not in types, types  # a lost cluster is no agent's failure
    assert done.status == pb.DELIBERATION_STATUS_COMPLETED, done.error_message
    assert len({r.proposal.author_id for r in done.results}) == 3
