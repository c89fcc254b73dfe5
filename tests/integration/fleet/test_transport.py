"""Transport: TLS, mTLS, the bearer token, graceful shutdown of health, traces and log context.

The servicer here reads from fakes: these tests are about the wire, not about deliberations. The
certificates are made at test time (``_pki``); ``test_node_startup`` runs the same through a
node's settings.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
import pytest_asyncio
from grpc_health.v1 import health_pb2, health_pb2_grpc

from application.errors import DeliberationNotFoundError
from fleet import logs
from fleet.client import ClientSecurity, FleetClient
from fleet.config import Settings
from fleet.embedded._process import free_port
from fleet.grpc._auth import BearerTokenInterceptor, server_credentials
from fleet.grpc._services import ApiServices
from fleet.grpc.server import SERVICE_NAME, GrpcServer, OrchestratorServicer
from tests.integration.fleet._pki import Pki

pytestmark = pytest.mark.timeout(60)
TOKEN = "s3cret-token-value"


class _NoDeliberations:
    """Queries and store that know no deliberation (every read is NOT_FOUND)."""

    async def result(self, task_id: str) -> Any:
        raise DeliberationNotFoundError(f"Deliberation for task {task_id} not found")

    async def get(self, d_id: Any) -> Any:
        raise DeliberationNotFoundError(f"Deliberation {d_id} not found")


def _servicer() -> OrchestratorServicer:
    fake: Any = _NoDeliberations()
    return OrchestratorServicer(ApiServices(fake, fake, default_timeout_s=300))


@pytest_asyncio.fixture(loop_scope="session")
async def make_server() -> AsyncIterator[Any]:
    servers: list[GrpcServer] = []

    async def make(**kw: Any) -> GrpcServer:
        server = GrpcServer(_servicer(), host="127.0.0.1", port=free_port(), **kw)
        await server.start()
        servers.append(server)
        return server

    yield make
    for s in servers:
        await s.close(grace=0)


async def _reaches_servicer(client: FleetClient) -> grpc.StatusCode:
    """The code of a call that only the servicer answers (NOT_FOUND means it got through)."""
    try:
        await client.result("anything")
    except grpc.aio.AioRpcError as e:
        return e.code()
    return grpc.StatusCode.OK


async def test_tls_serves_tls_clients_and_refuses_plaintext(make_server: Any, pki: Pki) -> None:
    server = await make_server(credentials=server_credentials(pki.server_cert, pki.server_key))
    async with FleetClient(server.address, security=ClientSecurity(ca_file=pki.ca)) as c:
        assert await _reaches_servicer(c) == grpc.StatusCode.NOT_FOUND
    async with FleetClient(server.address, timeout=3) as plain:
        assert await _reaches_servicer(plain) == grpc.StatusCode.UNAVAILABLE
    untrusted = ClientSecurity(ca_file=pki.other_ca)
    async with FleetClient(server.address, timeout=3, security=untrusted) as c:
        assert await _reaches_servicer(c) == grpc.StatusCode.UNAVAILABLE


async def test_mtls_refuses_a_client_without_a_certificate(make_server: Any, pki: Pki) -> None:
    creds = server_credentials(pki.server_cert, pki.server_key, pki.ca)
    server = await make_server(credentials=creds)
    no_cert = ClientSecurity(ca_file=pki.ca)
    async with FleetClient(server.address, timeout=3, security=no_cert) as c:
        assert await _reaches_servicer(c) == grpc.StatusCode.UNAVAILABLE
    with_cert = ClientSecurity(ca_file=pki.ca, cert_file=pki.client_cert, key_file=pki.client_key)
    async with FleetClient(server.address, security=with_cert) as c:
        assert await _reaches_servicer(c) == grpc.StatusCode.NOT_FOUND


async def test_the_token_is_required_on_every_call_but_health(make_server: Any, pki: Pki) -> None:
    server = await make_server(
        credentials=server_credentials(pki.server_cert, pki.server_key),
        interceptors=[BearerTokenInterceptor(TOKEN)],
    )
    for token, code in [
        ("", grpc.StatusCode.UNAUTHENTICATED),
        ("wrong", grpc.StatusCode.UNAUTHENTICATED),
        (TOKEN, grpc.StatusCode.NOT_FOUND),
    ]:
        sec = ClientSecurity(ca_file=pki.ca, token=token)
        async with FleetClient(server.address, security=sec) as c:
            assert await _reaches_servicer(c) == code, token
            if code == grpc.StatusCode.UNAUTHENTICATED:
                with pytest.raises(grpc.aio.AioRpcError) as e:  # a server stream is refused too
                    [u async for u in c.stream("anything")]
                assert e.value.code() == code
                health = health_pb2_grpc.HealthStub(c.channel)
                r = await health.Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME))
                assert r.status == health_pb2.HealthCheckResponse.SERVING


def test_secrets_stay_out_of_settings_repr() -> None:
    s = Settings.from_env({"FLEET_API_TOKEN": TOKEN, "NEO4J_PASSWORD": "pw-value"})
    assert s.api_token == TOKEN
    assert TOKEN not in repr(s) and "pw-value" not in repr(s)
    assert TOKEN not in repr(ClientSecurity(token=TOKEN))


async def test_health_turns_not_serving_at_the_start_of_a_graceful_shutdown(
    make_server: Any,
) -> None:
    server: GrpcServer = await make_server()
    async with grpc.aio.insecure_channel(server.address) as ch:
        health = health_pb2_grpc.HealthStub(ch)
        watch = health.Watch(health_pb2.HealthCheckRequest(service=SERVICE_NAME))
        first = await watch.read()
        assert first.status == health_pb2.HealthCheckResponse.SERVING
        stopping = asyncio.create_task(server.close(grace=2.0))
        second = await asyncio.wait_for(watch.read(), 5)
        assert second.status == health_pb2.HealthCheckResponse.NOT_SERVING
        await stopping


# ------------------------------------------------------------------ traces and log context


async def test_rpcs_are_traced_with_the_deliberation_id(make_server: Any, spans: Any) -> None:
    server = await make_server()
    async with FleetClient(server.address) as c:
        await _reaches_servicer(c)
    names = {s.name: dict(s.attributes or {}) for s in spans.get_finished_spans()}
    attrs = names["rpc GetDeliberationResult"]
    assert attrs["fleet.task_id"] == "anything" and attrs["fleet.deliberation_id"]


async def test_log_lines_carry_the_deliberation_id() -> None:
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep()
    handler.addFilter(logs.DeliberationFilter())
    log = logging.getLogger("fleet.test.logs")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        with logs.bind("d-bound"):
            log.info("from the servicer")
            await asyncio.to_thread(log.info, "from a worker thread")

        async def driver() -> None:  # the dispatcher's naming of its per-deliberation task
            log.info("from the dispatcher")

        await asyncio.create_task(driver(), name="deliberation:d-task")
        log.info("about nothing")
    finally:
        log.removeHandler(handler)
    ids = [getattr(r, "deliberation_id", None) for r in records]
    assert ids == ["d-bound", "d-bound", "d-task", "-"]
    line = logs.JsonFormatter().format(records[0])
    assert '"deliberation_id": "d-bound"' in line
