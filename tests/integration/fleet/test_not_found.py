""" "Not found" is one error class, answered once per edge; a ``KeyError`` is a bug, not a miss.

A store or query that raises ``NotFoundError`` (any of its kinds) is NOT_FOUND on the gRPC API
and 404 in the web console, with the message naming what was asked for. A plain ``KeyError``
(what a mistyped dict lookup raises) is an internal error on both: it must never pass for
"there is no such deliberation". The servicer and the console read from fakes here; the wire
and the HTTP server are real.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import grpc
import pytest
import pytest_asyncio

from application.errors import DeliberationNotFoundError
from fleet.client import FleetClient
from fleet.embedded._process import free_port
from fleet.grpc._services import ApiServices
from fleet.grpc.server import GrpcServer, OrchestratorServicer
from fleet.web.server import WebConsole

pytestmark = pytest.mark.timeout(60)


class _Reads:
    """Queries and store whose every read raises ``error``."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def result(self, task_id: str) -> Any:
        raise self.error

    async def history(self, task_id: str, to_version: int = 0) -> Any:
        raise self.error


MISSING = DeliberationNotFoundError("Deliberation for task T-404 not found")
TYPO = KeyError("num_agnets")  # what a misspelt key in a dict lookup raises


def _services(error: Exception) -> ApiServices:
    fake: Any = _Reads(error)
    return ApiServices(fake, fake, default_timeout_s=300)


@pytest_asyncio.fixture(loop_scope="session")
async def grpc_code() -> AsyncIterator[Any]:
    servers: list[GrpcServer] = []

    async def code(error: Exception) -> tuple[grpc.StatusCode, str]:
        server = GrpcServer(
            OrchestratorServicer(_services(error)), host="127.0.0.1", port=free_port()
        )
        await server.start()
        servers.append(server)
        async with FleetClient(server.address) as c:
            with pytest.raises(grpc.aio.AioRpcError) as e:
                await c.result("T-404")
        return e.value.code(), e.value.details() or ""

    yield code
    for s in servers:
        await s.close(grace=0)


@pytest_asyncio.fixture(loop_scope="session")
async def web_status() -> AsyncIterator[Any]:
    consoles: list[WebConsole] = []

    async def status(error: Exception) -> tuple[int, str]:
        console = WebConsole(_services(error))
        url = await console.start("127.0.0.1", 0)
        consoles.append(console)
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"{url}api/deliberations/T-404") as r,
        ):
            return r.status, await r.text()

    yield status
    for c in consoles:
        await c.close()


async def test_not_found_is_not_found_on_the_api_naming_the_task(grpc_code: Any) -> None:
    code, details = await grpc_code(MISSING)
    assert code == grpc.StatusCode.NOT_FOUND
    assert "T-404" in details


async def test_a_key_error_in_a_handler_is_internal_on_the_api(grpc_code: Any) -> None:
    code, details = await grpc_code(TYPO)
    assert code == grpc.StatusCode.INTERNAL
    assert "num_agnets" not in details  # the caller learns it failed, the log says why


async def test_not_found_is_404_in_the_console(web_status: Any) -> None:
    status, body = await web_status(MISSING)
    assert status == 404
    assert "T-404" in body


async def test_a_key_error_in_a_handler_is_a_server_error_in_the_console(web_status: Any) -> None:
    status, _ = await web_status(TYPO)
    assert status == 500
