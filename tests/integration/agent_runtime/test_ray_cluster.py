"""Councils on Ray beyond one warm local instance: an actor killed mid-deliberation is restarted
and its in-flight call retried, and a deliberation runs on a two-node cluster at RAY_ADDRESS.

The cluster test starts its own head and worker (``ray start``, loopback only, its own short temp
dir, no auth) and runs the driver in a subprocess with ``RAY_ADDRESS`` set, because this test
session already has its own ``ray.init`` (tests/fixtures/ray.py). It stops only what it started:
``ray stop`` is never run globally; the processes of the cluster's own temp dir are ended by id.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from agent_runtime.ray_backend.runtime import RayAgentRuntime
from aggregates import DeliberationStatus
from application.app import FleetApplication
from application.feed import ApplicationEventFeed
from application.stores import ApplicationDeliberationStore
from dispatchers.deliberations import DeliberationDispatcher, DispatcherOptions
from fleet.embedded._process import free_port
from fleet_testing.loadgen import LoadGenServer
from tests.support.deliberations import requested
from tests.support.waiting import eventually, eventually_sync, until_terminal

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.usefixtures("ray_session")
@pytest.mark.timeout(120)
async def test_an_actor_killed_mid_deliberation_is_restarted_and_the_call_retried() -> None:
    import ray

    async with LoadGenServer("instant", delay_s=1.5) as lg:
        runtime = await RayAgentRuntime.start(lg.url, "loadgen", ["DEV"], 1)
        app = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
        store = ApplicationDeliberationStore(app)
        try:
            [before] = await runtime.stats()
            options = DispatcherOptions(call_timeout_s=30, model="loadgen", peer_review=False)
            async with DeliberationDispatcher(
                store, ApplicationEventFeed(app), runtime, options=options
            ):
                d = requested("kill-actor")
                app.save(d)
                await eventually(lambda: lg.counters.in_flight >= 3, timeout=4.0)
                ray.kill(runtime.actor_for("DEV", "dev-agent-1"), no_restart=False)  # a crash
                done = await until_terminal(store, d.id, timeout=30.0)
            [after] = await runtime.stats()
        finally:
            await runtime.close()
    assert done.status is DeliberationStatus.COMPLETED, done.reason
    assert len(done.final_proposals()) == 3 and not done.failures
    assert after.pid != before.pid  # restarted
    assert lg.counters.calls >= 6  # the three killed calls were sent again


DRIVER = textwrap.dedent(
    """
    import asyncio, json, os, sys
    from datetime import UTC, datetime
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    from agent_runtime.ray_backend.runtime import RayAgentRuntime
    from aggregates import Deliberation
    from dispatchers.deliberations import DeliberationDispatcher, DispatcherOptions
    from application.app import FleetApplication
    from fleet_testing.loadgen import LoadGenServer
    from fleet.embedded.ray_local import connect_ray
    from application.stores import ApplicationDeliberationStore
    from application.feed import ApplicationEventFeed

    async def main():
        path = {"env_vars": {"PYTHONPATH": os.environ["PYTHONPATH"]}}
        connect_ray(os.environ["RAY_ADDRESS"], runtime_env=path)
        for _ in range(300):  # the worker joins a few seconds after the head
            nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
            if len(nodes) >= 2:
                break
            await asyncio.sleep(0.2)
        async with LoadGenServer("instant") as lg:
            runtime = await RayAgentRuntime.start(
                lg.url, "loadgen", ["DEV"], 2, actor_options={"num_cpus": 1})  # one per node
            app = FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
            store = ApplicationDeliberationStore(app)
            async with DeliberationDispatcher(store, ApplicationEventFeed(app), runtime,
                                              options=DispatcherOptions(model="loadgen")):
                d = Deliberation.request(task_id="cluster", task="Write fib(n)", role="DEV",
                    num_agents=3, rounds=2, requested_at=datetime.now(tz=UTC), timeout_seconds=60)
                app.save(d)
                while not (got := await store.get(d.id)).is_terminal:
                    await asyncio.sleep(0.05)
            stats = await runtime.stats()
            await runtime.close()
        print(json.dumps({"nodes": nodes, "actor_nodes": sorted({s.node_id for s in stats}),
                          "status": got.status.value, "winner": got.winner,
                          "served": sum(s.turns_served for s in stats)}))

    asyncio.run(main())
    """
)


@pytest.mark.timeout(240)
def test_a_deliberation_runs_on_a_two_node_ray_cluster(tmp_path: Path) -> None:
    import json

    ray_bin = str(Path(sys.executable).with_name("ray"))
    temp = Path(tempfile.mkdtemp(prefix="frc-", dir="/tmp"))  # short: unix socket paths
    port = free_port()
    # Not RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 here: it keeps a single-host instance on loopback
    # but makes `ray start` refuse a second node; --node-ip-address keeps this cluster on it.
    base = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    env = {
        **base,
        "RAY_AUTH_MODE": "disabled",
        "RAY_USAGE_STATS_ENABLED": "0",
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
    }
    started: list[subprocess.Popen[bytes]] = []
    try:
        loopback = ["--node-ip-address=127.0.0.1", "--num-cpus=1", "--block"]
        head = [ray_bin, "start", "--head", f"--port={port}", "--include-dashboard=false"]
        worker = [ray_bin, "start", f"--address=127.0.0.1:{port}"]
        started.append(_spawn([*head, f"--temp-dir={temp}", *loopback], env))
        _wait_for_port(port, 60)
        started.append(_spawn([*worker, *loopback], env))
        out = subprocess.run(
            [sys.executable, "-c", DRIVER],
            env={**env, "RAY_ADDRESS": f"127.0.0.1:{port}"},
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert out.returncode == 0, out.stderr[-3000:]
        result = json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        # Each `ray start --block` owns its node's process group. SIGKILL at once: the cluster
        # holds nothing to keep, and on SIGTERM a `ray start --block` does not end for seconds.
        for p in started:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
        for p in started:
            p.wait(10)
        shutil.rmtree(temp, ignore_errors=True)
    assert len(result["nodes"]) == 2
    assert result["status"] == "COMPLETED" and result["winner"]
    assert len(result["actor_nodes"]) == 2, result  # the pool spread over both nodes
    assert result["served"] >= 6


def _spawn(cmd: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    """A `ray start --block` in a session of its own: its node's processes share its group."""
    return subprocess.Popen(
        cmd, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def _wait_for_port(port: int, timeout: float) -> None:
    import socket

    def listening() -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    eventually_sync(
        listening, timeout=timeout, interval=0.2, what=f"ray head did not listen on {port}"
    )
