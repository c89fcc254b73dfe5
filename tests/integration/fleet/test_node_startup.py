"""The API as a node starts it: health while `fleet up` starts, a port already taken, and
security and message limits configured through Settings (the environment names an operator sets).

The nodes here run only the ``api`` component (event store, graph, no dispatcher, no agents), on a
private nats-server: these tests are about the node's front door, not about deliberations.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import pytest_asyncio
from grpc_health.v1 import health_pb2, health_pb2_grpc

from fleet.bootstrap import FleetNode
from fleet.client import ClientSecurity, FleetClient
from fleet.config import Settings
from fleet.embedded._process import free_port
from fleet.embedded.nats import NatsServer
from fleet.grpc.server import MAX_MESSAGE_BYTES, SERVICE_NAME
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from tests.e2e._processes import FleetProcess
from tests.fixtures.nats import unique_stream_name
from tests.integration.fleet._cli import fleet as _fleet
from tests.integration.fleet._pki import Pki
from tests.support.waiting import eventually

pytestmark = pytest.mark.timeout(60)
TOKEN = "node-token-value"
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def _api_only(data_dir: Path, nats_url: str, **kw: Any) -> dict[str, Any]:
    """Overrides for a node that runs the API alone on its own stream."""
    return {
        "data_dir": data_dir,
        "nats_url": nats_url,
        "stream": unique_stream_name("API"),
        "cache_enabled": False,
        "components": frozenset({"api"}),
        "grpc_port": free_port(),
        **kw,
    }


LAYOUTS = {
    # The API in the node's process, the node running nothing else.
    "inline": ("api", {"FLEET_API_PROCESS": "inline"}),
    # The API in a child of a node that runs more (the projections here): the node holds the
    # port until its child serves it.
    "child": ("api,projectors", {"FLEET_API_PROCESS": "child"}),
}


@pytest.mark.parametrize("layout", LAYOUTS)
async def test_fleet_up_says_not_serving_and_refuses_work_until_it_is_up(
    tmp_path: Path, private_nats_server: NatsServer, layout: str
) -> None:
    """``fleet up`` as an operator runs it, caught half-started, deterministically: its event
    store is held (the nats-server SIGSTOPped, so the first connect waits for its greeting)."""
    port = free_port()
    components, extra = LAYOUTS[layout]
    env = {"NATS_URL": private_nats_server.url, "FLEET_CACHE": "off", "FLEET_GRPC_PORT": str(port)}
    address = f"127.0.0.1:{port}"
    pid = private_nats_server.pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    up = FleetProcess(tmp_path / "up", components, {**env, **extra})
    try:
        async with grpc.aio.insecure_channel(address) as ch, FleetClient(address) as c:
            health = health_pb2_grpc.HealthStub(ch)
            watch = health.Watch(
                health_pb2.HealthCheckRequest(service=SERVICE_NAME), wait_for_ready=True
            )
            first = await asyncio.wait_for(watch.read(), 20)
            assert first.status == NOT_SERVING, up.tail()
            overall = await health.Check(health_pb2.HealthCheckRequest(service=""))
            assert overall.status == NOT_SERVING
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await c.deliberate("write fib", task_id="too-early")
            assert e.value.code() == grpc.StatusCode.UNAVAILABLE
            assert "starting" in (e.value.details() or "")
            assert up.proc.poll() is None and not (up.data_dir / "run.json").exists()

            os.kill(pid, signal.SIGCONT)
            if layout == "inline":
                second = await asyncio.wait_for(watch.read(), 30)
                assert second.status == SERVING, up.tail()
            else:  # the node's hold ends its watch; the child answers from then on
                await _serving(health, up)
                info = await asyncio.to_thread(up.wait_ready, 30)
                assert info["pid"] == up.proc.pid and info["grpc"] == address
            accepted = await c.deliberate("write fib", task_id="in-time")
            assert accepted.status == pb.DELIBERATION_STATUS_PENDING
    finally:
        os.kill(pid, signal.SIGCONT)
        up.stop()


async def _serving(health: health_pb2_grpc.HealthStub, up: FleetProcess) -> None:
    async def check() -> bool:
        try:
            got = await health.Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME))
        except grpc.aio.AioRpcError as e:
            # Only a moment's refusal is allowed: the hold and the child overlap on the port.
            assert e.code() == grpc.StatusCode.UNAVAILABLE, (e, up.tail())
            return False
        return got.status == SERVING

    await eventually(check, timeout=60, interval=0.05, what=lambda: up.tail())


@pytest.mark.parametrize("layout", LAYOUTS)
async def test_fleet_up_on_a_taken_port_is_one_line_and_exit_1(tmp_path: Path, layout: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        components, extra = LAYOUTS[layout]
        up = ("up", "--components", components, "--grpc-port", str(port))
        up += ("--data-dir", str(tmp_path))
        out = await _fleet(*up, env=extra)
        assert out.returncode == 1, out.stderr
        assert out.stderr.count("\n") == 1, out.stderr
        assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in out.stderr
        assert "Traceback" not in out.stderr
        assert not (tmp_path / "nats").exists(), "failed before starting anything else"
        debug = await _fleet(*up, env={**extra, "FLEET_DEBUG": "1"})
    assert debug.returncode == 1
    assert "Traceback" in debug.stderr and debug.stderr.rstrip().endswith("Address already in use")


# ------------------------------------------------------------------ security through Settings


@pytest_asyncio.fixture(loop_scope="session")
async def secured(tmp_path: Path, pki: Pki, nats_url: str) -> AsyncIterator[str]:
    """A node whose TLS, client CA and token come from the environment names, as deployed."""
    env = {
        "FLEET_TLS_CERT": str(pki.server_cert),
        "FLEET_TLS_KEY": str(pki.server_key),
        "FLEET_TLS_CLIENT_CA": str(pki.ca),
        "FLEET_API_TOKEN": TOKEN,
    }
    settings = Settings.from_env(env, **_api_only(tmp_path, nats_url))
    async with FleetNode(settings) as node:
        yield node.endpoints.grpc


def _security(pki: Pki, *, cert: bool = True, token: str = TOKEN) -> ClientSecurity:
    if not cert:
        return ClientSecurity(ca_file=pki.ca, token=token)
    return ClientSecurity(
        ca_file=pki.ca, cert_file=pki.client_cert, key_file=pki.client_key, token=token
    )


async def _code(address: str, security: ClientSecurity | None) -> grpc.StatusCode:
    """The code of a read only the servicer answers (NOT_FOUND: the call got through)."""
    async with FleetClient(address, timeout=5, security=security) as c:
        try:
            await c.result("never-requested")
        except grpc.aio.AioRpcError as e:
            return e.code()
    return grpc.StatusCode.OK


async def test_tls_client_ca_and_token_from_the_environment_guard_the_node(
    secured: str, pki: Pki
) -> None:
    assert await _code(secured, _security(pki)) == grpc.StatusCode.NOT_FOUND
    assert await _code(secured, _security(pki, token="")) == grpc.StatusCode.UNAUTHENTICATED
    assert await _code(secured, _security(pki, cert=False)) == grpc.StatusCode.UNAVAILABLE
    assert await _code(secured, None) == grpc.StatusCode.UNAVAILABLE  # plaintext
    async with FleetClient(secured, security=_security(pki, token="")) as c:
        probe = health_pb2_grpc.HealthStub(c.channel)  # probes send no token
        r = await probe.Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME))
        assert r.status == SERVING
    cli_env = {
        "FLEET_TLS_CA": str(pki.ca),
        "FLEET_TLS_CLIENT_CERT": str(pki.client_cert),
        "FLEET_TLS_CLIENT_KEY": str(pki.client_key),
        "FLEET_API_TOKEN": TOKEN,
    }
    out = await _fleet("result", "never-requested", "--address", secured, env=cli_env)
    assert out.returncode == 1 and "NOT_FOUND" in out.stderr, out.stderr
    # An API-only node answers a query with where its projections are: the call got through.
    out = await _fleet("query", "RETURN 1 AS n", "--address", secured, env=cli_env)
    assert out.returncode == 1 and "no node serves the projections" in out.stderr, out.stderr


async def test_message_limits_on_the_node(secured: str, pki: Pki) -> None:
    """Over the 4 MiB transport limit: RESOURCE_EXHAUSTED before any code of ours runs. Under it
    but over the task's 64 KiB: INVALID_ARGUMENT naming the field."""
    async with FleetClient(secured, security=_security(pki)) as c:
        with pytest.raises(grpc.aio.AioRpcError) as big:
            await c.deliberate("x" * (MAX_MESSAGE_BYTES + 1))
        assert big.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        with pytest.raises(grpc.aio.AioRpcError) as long:
            await c.deliberate("x" * (64 * 1024 + 1))
        assert long.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert (long.value.details() or "").startswith("task_description")
        ok = await c.deliberate("x" * (64 * 1024), task_id="at-the-limit")
        assert ok.status == pb.DELIBERATION_STATUS_PENDING
