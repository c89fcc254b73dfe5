"""Reads: a deliberation's status and results, its history, and Cypher over all history.

Status is never stale after an event lands. ``result`` reads the cache entry and, at the same
time, the aggregate's last stored version from the event store (one direct get of the last
message on the aggregate's subject, ~1 ms; on a replicated stream it asks for an answer at least
as new as what this process has seen). The entry is returned only when its version is that one;
otherwise (projection lag, a miss, an empty or restarted Valkey, no cache at all) the aggregate is
replayed. So a reader that saw its write acknowledged never reads an older state, and losing the
cache loses nothing. History always comes from the event stream, the only source of truth.

Cypher runs read-only (refused before it reaches the engine otherwise), with a row limit and a
time limit (``QUERY_TIMEOUT_S``; the engine interrupts a query that runs past it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from uuid import UUID

from eventsourcing.persistence import AggregateRecorder

from aggregates import deliberation_id
from application.errors import (
    InvalidQueryError,
    QueryRefusedError,
    QueryTimeoutError,
    ReadOnlyQueryError,
    ServiceUnavailableError,
)
from application.ports import CypherParams, CypherRow, GraphReader, HistoryGraph, StatusBoard
from application.stores import ApplicationDeliberationStore
from application.timeline import History, fold_history
from application.views import DeliberationView, view_from_aggregate

log = logging.getLogger(__name__)

DEFAULT_ROW_LIMIT = 1000
MAX_ROW_LIMIT = 10_000
QUERY_TIMEOUT_S = 10.0

LatestVersion = Callable[[UUID], "int | None"]
"""The last stored version of one aggregate (None: no events), straight from the event store."""


def recorder_latest_version(recorder: AggregateRecorder) -> LatestVersion:
    """``LatestVersion`` over an eventsourcing recorder (one "last event of a subject" read)."""

    def latest(aggregate_id: UUID) -> int | None:
        rows = recorder.select_events(aggregate_id, desc=True, limit=1)
        return int(rows[0].originator_version) if rows else None

    return latest


class LocalGraphReader:
    """A graph in this process (LadybugDB opened here, or a Neo4j driver), read on a worker
    thread so that a query never blocks the loop."""

    def __init__(self, graph: HistoryGraph) -> None:
        self.graph = graph

    async def query(
        self,
        cypher: str,
        params: CypherParams | None = None,
        limit: int = 1000,
        *,
        timeout_s: float | None = None,
    ) -> list[CypherRow]:
        return await asyncio.to_thread(self.graph.query, cypher, params, limit, timeout_s=timeout_s)


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[CypherRow]
    truncated: bool


class DeliberationQueries:
    def __init__(
        self,
        store: ApplicationDeliberationStore,
        board: StatusBoard | None,
        graph: GraphReader | None,
        *,
        latest_version: LatestVersion | None = None,
        query_timeout_s: float = QUERY_TIMEOUT_S,
    ) -> None:
        self._store = store
        self._board = board
        self._graph = graph
        self._latest_version = latest_version
        self._query_timeout_s = query_timeout_s
        self.cache_hits = 0
        self.cache_stale = 0
        self.cache_misses = 0

    async def result(self, task_id: str) -> DeliberationView:
        """The view at the aggregate's last stored version: the cache entry when it is at that
        version, else a replay. Without ``latest_version`` any entry is trusted (tests only)."""
        d_id = deliberation_id(task_id)
        if self._board is not None:
            view, latest = await asyncio.gather(self._cached(d_id), self._latest(d_id))
            if view is not None and (self._latest_version is None or view.version == latest):
                self.cache_hits += 1
                return view
            if view is None:
                self.cache_misses += 1
            else:
                self.cache_stale += 1
                log.debug(
                    "cache for %s at v%s, store at v%s: replaying", d_id, view.version, latest
                )
        return view_from_aggregate(await self._store.get(d_id))

    async def _cached(self, d_id: UUID) -> DeliberationView | None:
        assert self._board is not None
        try:
            return await asyncio.to_thread(self._board.get, d_id)
        except Exception as e:  # the cache is an optimisation: a broken one must not fail reads
            log.warning("cache read failed for %s (%s); replaying", d_id, e)
            return None

    async def _latest(self, d_id: UUID) -> int | None:
        if self._latest_version is None:
            return None
        return await asyncio.to_thread(self._latest_version, d_id)

    async def history(self, task_id: str, to_version: int | None = None) -> History:
        d_id = deliberation_id(task_id)
        return fold_history(await self._store.history(d_id), to_version)

    async def cypher(
        self, cypher: str, params: CypherParams | None = None, limit: int = 0
    ) -> QueryResult:
        if self._graph is None:
            raise ServiceUnavailableError("no history graph is configured")
        if not cypher.strip():
            raise QueryRefusedError("cypher: the query is empty")
        limit = DEFAULT_ROW_LIMIT if limit <= 0 else min(limit, MAX_ROW_LIMIT)
        try:
            rows = await self._graph.query(
                cypher, dict(params or {}), limit=limit + 1, timeout_s=self._query_timeout_s
            )
        except QueryTimeoutError as e:
            raise TimeoutError(f"cypher: {e}") from e
        except (ReadOnlyQueryError, InvalidQueryError) as e:
            raise QueryRefusedError(f"cypher: {e}") from e
        truncated = len(rows) > limit
        rows = rows[:limit]
        columns = list(rows[0].keys()) if rows else []
        return QueryResult(columns=columns, rows=rows, truncated=truncated)
