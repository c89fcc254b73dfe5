"""The console's submit, cancel, result and query over HTTP, on an in-memory store: the JSON and
the statuses a page or a script sees (the browser tests drive the same routes on a real node)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio
from aiohttp.test_utils import TestClient, TestServer

from application.app import FleetApplication
from application.queries import DeliberationQueries
from application.stores import ApplicationDeliberationStore
from fleet.grpc._services import ApiServices
from fleet.web import WebConsole


@pytest_asyncio.fixture
async def http() -> AsyncIterator[TestClient[Any, Any]]:
    store = ApplicationDeliberationStore(
        FleetApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    )
    console = WebConsole(ApiServices(store, DeliberationQueries(store, None, None), 60))
    async with TestClient(TestServer(console.app())) as client:
        yield client


async def call(http: TestClient[Any, Any], method: str, path: str, **kw: Any) -> Any:
    async with http.request(method, path, **kw) as r:
        return r.status, await r.json()


async def test_a_submit_answers_what_deliberate_answers(http: TestClient[Any, Any]) -> None:
    body = {"task": "Write fib(n)", "role": "DEV", "task_id": "web-1", "num_agents": 2}
    status, answer = await call(http, "POST", "/api/deliberations", json=body)
    assert status == 200, answer
    assert (answer["task_id"], answer["status"]) == ("web-1", "DELIBERATION_STATUS_PENDING")
    assert answer["metadata"]["orchestrator_version"].startswith("fleet ")
    status, result = await call(http, "GET", "/api/deliberations/web-1/result")
    assert status == 200 and result["status"] == "DELIBERATION_STATUS_PENDING", result


async def test_a_bad_submit_is_a_400_naming_the_field(http: TestClient[Any, Any]) -> None:
    for body, field in (
        ({"task": "t", "role": "DEV", "num_agents": 99}, "num_agents"),
        ({"task": "t", "role": "WIZARD"}, "role"),
        ({"task": "t", "role": "DEV", "task_id": "a b"}, "task_id"),
        ({"task": "t", "role": "DEV", "acceptance_tests": "def test(:"}, "constraints.metadata"),
    ):
        status, answer = await call(http, "POST", "/api/deliberations", json=body)
        assert status == 400 and answer["error"].startswith(field), (body, answer)


async def test_cancel_then_cancel_again_then_unknown(http: TestClient[Any, Any]) -> None:
    body = {"task": "Write fib(n)", "role": "DEV", "task_id": "web-2"}
    assert (await call(http, "POST", "/api/deliberations", json=body))[0] == 200
    path = "/api/deliberations/web-2/cancel"
    status, answer = await call(http, "POST", path, json={"reason": "enough"})
    assert (status, answer["status"]) == (200, "DELIBERATION_STATUS_CANCELLED"), answer
    status, answer = await call(http, "POST", path, json={})
    assert status == 409, answer
    status, answer = await call(http, "POST", "/api/deliberations/web-none/cancel", json={})
    assert status == 404, answer
    status, answer = await call(http, "GET", "/api/deliberations/web-none/result")
    assert status == 404, answer
    status, answer = await call(http, "GET", "/api/deliberations/a%20b/result")
    assert status == 400 and answer["error"].startswith("task_id"), answer


async def test_a_query_without_a_graph_is_a_503(http: TestClient[Any, Any]) -> None:
    status, answer = await call(http, "POST", "/api/query", json={"cypher": "MATCH (n) RETURN n"})
    assert status == 503 and answer == {"error": "no history graph is configured"}
