"""A node whose agents cannot start the sandbox says so: one warning line at start, with the
probe's reason, and the sandbox's state in GetNodeStatus and ``fleet projections status``; the
seed's GetStatus calls it a problem, on that node and on an API replica beside it.

The refusal is the kernel's, as in a pod that has no user namespaces provisioned: ``fleet up``
runs as an unprivileged uid inside a user namespace whose ``user.max_user_namespaces`` allows
none below it (``unshare``; the limit is that namespace's own, the machine's is untouched), so
the real bwrap fails the way it fails in such a pod. The same node outside it has its sandbox.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import grpc
import pytest

from agent_runtime.checks.sandbox import DEFAULT_SLOTS
from agent_runtime.cpus import cpu_budget
from fleet.embedded._process import free_port
from fleet.embedded.nats import NatsServer
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet.orchestrator.v1 import orchestrator_pb2_grpc as pb_grpc
from tests.e2e._processes import FleetProcess
from tests.fixtures.nats import unique_stream_name
from tests.integration.fleet._cli import fleet as _fleet

pytestmark = pytest.mark.timeout(120)

NO_NESTED_USERNS = [
    "unshare", "--user", "--map-root-user", "sh", "-c",
    # A namespace may have one child; the child (uid 1000, unprivileged) then may have none.
    'echo 1 > /proc/sys/user/max_user_namespaces && '
    'exec unshare --user --map-user=1000 --map-group=1000 "$@"',
    "sh",
]  # fmt: skip
"""Runs a command as uid 1000 where creating a user namespace fails (ENOSPC), as in a pod."""


def _refusal_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        [*NO_NESTED_USERNS, "sh", "-c", "id -u && ! unshare --user true 2>/dev/null"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    return probe.returncode == 0 and probe.stdout.strip() == "1000"


def _node(
    tmp_path: Path, nats: NatsServer, *, refused: bool
) -> tuple[FleetProcess, str, dict[str, str]]:
    """The node, its API's address, and its settings (for a replica beside it)."""
    grpc_port = free_port()
    env = {
        "NATS_URL": nats.url,
        "FLEET_STREAM": unique_stream_name("SANDBOX"),
        "FLEET_CACHE": "off",
        "FLEET_PLAN_CONSUMER": "off",
        "FLEET_AGENT_RUNTIME": "local",
        "FLEET_SANDBOX": "auto",
        # No deliberation runs here: the model endpoint is named, never called.
        "FLEET_VLLM_URL": f"http://127.0.0.1:{free_port()}",
        "FLEET_VLLM_MODEL": "none",
        "FLEET_GRPC_PORT": str(grpc_port),
    }
    up = FleetProcess(tmp_path / "node", "api,dispatcher,projectors", env, start=False)
    if refused:
        up.argv = [*NO_NESTED_USERNS, *up.argv]
    up.spawn()
    up.wait_ready(90)
    return up, f"127.0.0.1:{grpc_port}", env


async def _node_status(address: str) -> pb.GetNodeStatusResponse:
    async with grpc.aio.insecure_channel(address) as ch:
        stub = pb_grpc.OrchestratorServiceStub(ch)
        resp: pb.GetNodeStatusResponse = await stub.GetNodeStatus(
            pb.GetNodeStatusRequest(), timeout=30
        )
        return resp


async def _status_problems(address: str) -> list[str]:
    """GetStatus's problems (the seed's status RPC, with the parts the node could not use)."""
    async with grpc.aio.insecure_channel(address) as ch:
        stub = pb_grpc.OrchestratorServiceStub(ch)
        resp: pb.GetStatusResponse = await stub.GetStatus(pb.GetStatusRequest(), timeout=30)
        return list(resp.problems)


async def test_a_node_whose_sandbox_cannot_start_warns_once_and_shows_why(
    tmp_path: Path, private_nats_server: NatsServer
) -> None:
    if not _refusal_works():
        pytest.skip("this machine cannot run a process in a user namespace without children")
    up, address, env = _node(tmp_path, private_nats_server, refused=True)
    replica: FleetProcess | None = None
    try:
        warnings = [line for line in up.tail(100_000).splitlines() if "sandbox unavailable" in line]
        assert len(warnings) == 1, up.tail()
        assert "FLEET_SANDBOX=auto" in warnings[0] and "not run" in warnings[0], warnings
        status = await _node_status(address)
        assert status.HasField("sandbox")
        assert status.sandbox.mode == "auto" and not status.sandbox.available
        # The probe's reason is bwrap's own words about the namespace it could not create.
        assert "bwrap" in status.sandbox.reason and "namespace" in status.sandbox.reason
        assert status.sandbox.reason in warnings[0]
        assert (status.sandbox.slots, status.sandbox.cpus) == (0, "")  # nothing runs there
        shown = await _fleet("projections", "status", "--address", address)
        assert shown.returncode == 0, shown.stderr
        assert "sandbox unavailable" in shown.stdout and "FLEET_SANDBOX=auto" in shown.stdout
        # The seed's GetStatus does not call such a node healthy: the sandbox is one of its
        # problems (its model endpoint, named and never started here, is another).
        problems = await _status_problems(address)
        assert any(p.startswith("sandbox (auto) cannot start") for p in problems), problems

        # An API replica beside it (as deploy/ runs the API) runs no checks, and asks the
        # process that runs the agents: its GetStatus says the same.
        replica_port = free_port()
        replica = FleetProcess(
            tmp_path / "replica", "api", {**env, "FLEET_GRPC_PORT": str(replica_port)}
        )
        replica.wait_ready(90)
        seen = await _status_problems(f"127.0.0.1:{replica_port}")
        assert any(p.startswith("sandbox (auto) cannot start") for p in seen), seen
    finally:
        if replica is not None:
            replica.stop()
        up.stop()


async def test_the_same_node_with_namespaces_has_its_sandbox(
    tmp_path: Path, private_nats_server: NatsServer
) -> None:
    up, address, _ = _node(tmp_path, private_nats_server, refused=False)
    try:
        status = await _node_status(address)
        assert status.HasField("sandbox"), up.tail()
        assert (status.sandbox.mode, status.sandbox.available, status.sandbox.reason) == (
            "auto",
            True,
            "",
        ), up.tail()
        assert "sandbox unavailable" not in up.tail(100_000)
        assert not any("sandbox" in p for p in await _status_problems(address))
        # How many candidates run at once there, and the cores that was sized by: this machine's,
        # as the node's process reads them (a container's CPU limit would show here).
        assert (status.sandbox.slots, status.sandbox.cpus) == (
            DEFAULT_SLOTS,
            cpu_budget().describe(),
        )
        shown = await _fleet("projections", "status", "--address", address)
        assert shown.returncode == 0, shown.stderr
        assert (
            f"{DEFAULT_SLOTS} runs at once per process for {cpu_budget().describe()}"
            in shown.stdout
        ), shown.stdout
    finally:
        up.stop()


async def test_a_node_without_agents_does_not_claim_to_know(
    tmp_path: Path, private_nats_server: NatsServer
) -> None:
    grpc_port = free_port()
    env = {
        "NATS_URL": private_nats_server.url,
        "FLEET_STREAM": unique_stream_name("SANDBOX"),
        "FLEET_CACHE": "off",
        "FLEET_GRPC_PORT": str(grpc_port),
    }
    up = FleetProcess(tmp_path / "api", "api,projectors", env)
    try:
        up.wait_ready(90)
        status = await _node_status(f"127.0.0.1:{grpc_port}")
        assert not status.HasField("sandbox")
    finally:
        up.stop()
