"""Fixtures for the NATS agent backend: a NATS connection, queue names of the test's own, and
builders for the runtime and workers against the load generator."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import nats
import pytest
import pytest_asyncio
from nats.aio.client import Client as NATS

from agent_runtime.member.caller import CouncilMember, EndpointConfig
from agent_runtime.member.openai_client import RetryPolicy
from agent_runtime.nats_backend._wire import QueueNames
from agent_runtime.nats_backend.runtime import NatsAgentRuntime
from agent_runtime.nats_backend.worker import AgentWorker
from tests.fixtures.nats import unique_stream_name

FAST_RETRY = RetryPolicy(max_attempts=1)


@pytest.fixture
def names() -> QueueNames:
    return QueueNames(unique_stream_name("NB"))


@pytest_asyncio.fixture
async def nc(nats_url: str) -> AsyncIterator[NATS]:
    conn = await nats.connect(nats_url)
    yield conn
    await conn.drain()


def endpoint(url: str) -> EndpointConfig:
    return EndpointConfig(url, "loadgen", retry=FAST_RETRY, structured_output="none")


WorkerFactory = Callable[..., Awaitable[AgentWorker]]


@pytest_asyncio.fixture
async def runtime(nc: NATS, names: QueueNames) -> AsyncIterator[NatsAgentRuntime]:
    rt = NatsAgentRuntime(nc, names, grace_s=2.0, assess_timeout_s=10.0)
    await rt.start()
    yield rt
    await rt.close()


@pytest_asyncio.fixture
async def start_worker(nc: NATS, names: QueueNames) -> AsyncIterator[WorkerFactory]:
    async with contextlib.AsyncExitStack() as stack:

        async def start(url: str, role: str = "DEV", cls: Any = AgentWorker, **kw: Any) -> Any:
            kw.setdefault("ack_wait_s", 2.0)
            kw.setdefault("retry_delay_s", 0.05)
            worker = cls(nc, names, role, CouncilMember(role, endpoint(url)), **kw)
            return await stack.enter_async_context(worker)

        yield start
