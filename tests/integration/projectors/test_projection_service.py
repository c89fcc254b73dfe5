"""The projections' request/reply over a real nats-server: replies larger than the server's
payload limit arrive whole, errors come back as the classes they were, and a request nobody
serves fails at once, saying so."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import nats
import pytest
import pytest_asyncio
from nats.aio.client import Client as NATS

from application.errors import ServiceUnavailableError
from projectors.control import Projections
from projectors.errors import (
    InvalidQueryError,
    NothingToVerifyError,
    QueryTimeoutError,
    ReadOnlyQueryError,
)
from projectors.service import ProjectionRequester, ProjectionService, RemoteGraph
from tests.fixtures.nats import unique_stream_name
from tests.unit.projectors import scenarios

pytestmark = pytest.mark.timeout(60)


class ScriptedGraph:
    """A graph that answers by the query's text: big rows, or the error a real one raises."""

    def query(
        self,
        cypher: str,
        params: Mapping[str, Any] | None = None,
        limit: int = 1000,
        *,
        timeout_s: float | None = None,
    ) -> list[dict[str, Any]]:
        errors = {"write": ReadOnlyQueryError, "slow": QueryTimeoutError, "bad": InvalidQueryError}
        if cypher in errors:
            raise errors[cypher](f"{cypher}: refused")
        if cypher == "broken":
            raise RuntimeError("engine fault")
        size = int((params or {})["size"])
        return [{"i": i, "text": f"{i:08d}" * (size // 8)} for i in range(limit)]


@pytest_asyncio.fixture(loop_scope="session")
async def nc(nats_url: str) -> AsyncIterator[NATS]:
    conn = await nats.connect(nats_url)
    yield conn
    await conn.drain()


async def test_big_replies_errors_and_no_server(nc: NATS) -> None:
    stream = unique_stream_name("SERVE")
    remote = RemoteGraph(ProjectionRequester(nc, stream))
    with pytest.raises(ServiceUnavailableError, match="no node serves the projections"):
        await remote.query("MATCH (n) RETURN n")

    service = ProjectionService(nc, stream, ScriptedGraph(), Projections(scenarios.popo_app(), []))
    await service.start()
    try:
        rows = await remote.query("rows", {"size": 64 * 1024}, limit=48)  # ~3 MiB, 1 MiB limit
        assert [r["i"] for r in rows] == list(range(48))
        assert all(r["text"] == f"{r['i']:08d}" * 8192 for r in rows)
        for cypher, cls in [
            ("write", ReadOnlyQueryError),
            ("slow", QueryTimeoutError),
            ("bad", InvalidQueryError),
        ]:
            with pytest.raises(cls, match=f"^{cypher}: refused$") as e:
                await remote.query(cypher)
            assert type(e.value) is cls
        with pytest.raises(RuntimeError, match="query failed on the projectors node"):
            await remote.query("broken")
        with pytest.raises(NothingToVerifyError, match="neither a graph nor a cache"):
            await ProjectionRequester(nc, stream).request("verify", {}, timeout=10)
    finally:
        await service.close()
    with pytest.raises(ServiceUnavailableError, match="no node serves the projections"):
        await remote.query("rows", {"size": 8})
