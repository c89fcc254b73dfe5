"""`fleet up` with ``FLEET_API_PROCESS=child``: the node serves its gRPC API from a
``fleet up --components api`` process of its own (``fleet.api_process``), on the servers the
node embedded, and the two live and die together.

A real `fleet up` (every server embedded in its data dir, agents on the load generator):

* the API's port is served by the child, not the node; a deliberation submitted there completes,
  and its listing (the graph, read through the node's projections) and result are answered;
* the node stopped (SIGTERM) stops the child first and exits 0;
* the node SIGKILLed: the kernel kills the child too, and the port is free at once; the next
  start serves the same port from a new child with the work still there;
* the child SIGKILLed: the node starts another on the same port and runs on; a child that keeps
  exiting (more than ``RESTARTS`` times in a minute) fails the node (exit 1, naming the API's
  process) for its supervisor, instead of being started forever.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import urllib.request
from pathlib import Path

import grpc
import pytest

from fleet.api_process import RESTARTS
from fleet.client import FleetClient, status_name
from fleet.embedded._process import free_port
from fleet.endpoints import read_run_file
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet_testing.loadgen import LoadGenServer
from tests.e2e._processes import FleetProcess
from tests.support.processes import children, gone
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(300)

# Settings naming an external server: unset, so the node embeds every part, as on a laptop.
EXTERNAL = ("_URL", "_URI", "RAY_ADDRESS", "FLEET_METRICS_PORT", "FLEET_STREAM")


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


def _listening(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    with socket.socket() as s:
        return s.connect_ex((host, int(port))) == 0


async def _started(node: FleetProcess) -> tuple[str, int]:
    """Spawn ``node``; once ready, its API's address and the pid of the process serving it."""
    node.spawn()
    info = await asyncio.to_thread(node.wait_ready, 180)
    child = read_run_file(node.data_dir / "api")
    assert child is not None, node.tail()
    assert child["components"] == "api" and child["grpc"] == info["grpc"]
    pid = int(child["pid"])
    assert node.pid is not None and pid != node.pid
    assert pid in children(node.pid), "the API's process is not the node's child"
    assert child["llm_url"] == info["llm_url"], "the API must probe the model the agents call"
    return str(info["grpc"]), pid


async def test_the_api_runs_in_a_child_that_lives_and_dies_with_its_node(tmp_path: Path) -> None:
    async with LoadGenServer("instant") as model:
        env = {
            "FLEET_API_PROCESS": "child",
            "FLEET_GRPC_PORT": str(free_port()),
            "FLEET_WEB_PORT": "0",
            "VLLM_URL": model.url,
            "VLLM_MODEL": "loadgen",
            "FLEET_AGENT_RUNTIME": "local",
            "FLEET_SANDBOX": "off",
            "FLEET_METRICS_PORT": str(free_port()),
        }
        node = FleetProcess(tmp_path / "node", "all", env, start=False)
        for name in [k for k in node.env if k not in env and any(x in k for x in EXTERNAL)]:
            del node.env[name]
        try:
            address, api_pid = await _started(node)
            async with FleetClient(address) as c:
                await c.deliberate("write fib", task_id="child-1")
                done = await c.wait("child-1", timeout=60)
                assert status_name(done.status) == "COMPLETED", node.tail()

                async def listed() -> bool:
                    return "child-1" in [d.task_id for d in (await c.list()).deliberations]

                await eventually(listed, timeout=30, what="the listing (the node's graph)")

                # GetNodeStatus describes the node, not the child that answers it.
                status = await c.stub.GetNodeStatus(pb.GetNodeStatusRequest())
                assert status.endpoints["pid"] == str(node.pid), status
                assert "dispatcher" in status.endpoints["components"].split(","), status
                assert status.endpoints["grpc"] == address
                assert status.sandbox.mode == "off", "where the node's agents run their checks"
                # The node's /metrics has the child's per-call figures beside its own.
                info = node.run_info()
                assert info is not None
                text = await asyncio.to_thread(_get, str(info["metrics"]))
                assert 'fleet_store_write_seconds_count{op="create",process="api"} 1.0' in text
                assert 'fleet_watch_streams{process="api"}' in text, text

            # A clean stop (SIGTERM) stops the API's process first, and exits 0.
            node.stop()
            assert node.returncode == 0, node.tail()
            assert gone(api_pid) and not _listening(address)
            # Before the servers it uses: a child stopped after them logs their loss.
            assert "Traceback" not in node.tail(100_000), node.last_traceback()

            address_again, api_pid = await _started(node)
            assert address_again == address
            # The node SIGKILLed: no clean-up runs in it, and its API's process goes with it.
            node.kill()
            await eventually(lambda: gone(api_pid), timeout=10, what="the API's process ends")
            # Its leader is a zombie before its last thread has closed the socket: moments.
            await eventually(lambda: not _listening(address), timeout=5, what="the port is free")

            address_again, api_pid = await _started(node)
            assert address_again == address
            async with FleetClient(address) as c:
                kept = await c.result("child-1")
                assert status_name(kept.status) == "COMPLETED"

            # The API's process SIGKILLed: the node starts another on the same port, and runs on.
            os.kill(api_pid, signal.SIGKILL)

            def replaced() -> bool:
                child = read_run_file(node.data_dir / "api")
                return child is not None and child["pid"] != api_pid and _listening(address)

            await eventually(replaced, timeout=30, what="a new API process serves")
            assert node.running(), node.tail()
            async with FleetClient(address) as c:
                # UNAVAILABLE ("starting") for a moment at most: the node holds the port while
                # the new child starts, and lets go of it once the child serves.
                kept = await eventually(
                    lambda: c.result("child-1"), timeout=5, ignoring=(grpc.aio.AioRpcError,)
                )
                assert status_name(kept.status) == "COMPLETED"

            # One that keeps exiting (killed here as soon as it serves, once more than the
            # node restarts in a minute): the node stops, non-zero, and says why, rather than
            # start it forever.
            killed = {api_pid}
            for _ in range(RESTARTS + 1):  # one more than needed: the kill above may count

                def next_child() -> int:
                    """The new API process's pid once it serves; -1 once the node stopped."""
                    if not node.running():
                        return -1
                    child = read_run_file(node.data_dir / "api")
                    pid = int(child["pid"]) if child is not None else 0
                    return 0 if pid in killed else pid

                pid = await eventually(next_child, timeout=60, what="the next API process serves")
                if pid == -1:
                    break
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            await eventually(lambda: not node.running(), timeout=30, what="the node stops")
            assert node.returncode == 1, node.tail()
            said = node.output_since_spawn()
            assert "gRPC API process stopped" in said and "not started again" in said, said[-2000:]
        finally:
            node.stop()
