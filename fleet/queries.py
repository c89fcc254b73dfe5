"""Reads: a deliberation's status and results, its history, and Cypher over all history.

Status comes from the cache when it has the entry at the aggregate's current version, and from a
replay of the events otherwise (a miss, an empty or restarted Valkey, no cache at all): losing the
cache loses nothing. History always comes from the event stream, the only source of truth.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from uuid import UUID

from aggregates import deliberation_id
from fleet.ledger import ApplicationDeliberationStore
from fleet.timeline import History, fold_history
from projectors.cache.view import DeliberationView, view_from_aggregate
from projectors.errors import InvalidQueryError, ReadOnlyQueryError

log = logging.getLogger(__name__)

DEFAULT_ROW_LIMIT = 1000
MAX_ROW_LIMIT = 10_000


class QueryRefusedError(ValueError):
    """A Cypher query that is not read-only, or is malformed; refused before it runs."""


class ServiceUnavailableError(RuntimeError):
    """A part Fleet needs for this read is not running (e.g. no graph configured)."""


class StatusBoard(Protocol):
    def get(self, deliberation_id: UUID) -> DeliberationView | None: ...


class HistoryGraph(Protocol):
    def query(
        self, cypher: str, params: Mapping[str, Any] | None = None, limit: int = ...
    ) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[dict[str, Any]]
    truncated: bool


class DeliberationQueries:
    def __init__(
        self,
        store: ApplicationDeliberationStore,
        board: StatusBoard | None,
        graph: HistoryGraph | None,
    ) -> None:
        self._store = store
        self._board = board
        self._graph = graph

    async def result(self, task_id: str) -> DeliberationView:
        """The freshest view: the cache entry if present, else a replay."""
        d_id = deliberation_id(task_id)
        if self._board is not None:
            try:
                view = await asyncio.to_thread(self._board.get, d_id)
            except Exception as e:  # the cache is an optimisation: a broken one must not fail reads
                log.warning("cache read failed for %s (%s); replaying", d_id, e)
                view = None
            if view is not None:
                return view
        return view_from_aggregate(await self._store.get(d_id))

    async def history(self, task_id: str, to_version: int | None = None) -> History:
        d_id = deliberation_id(task_id)
        return fold_history(await self._store.history(d_id), to_version)

    async def cypher(
        self, cypher: str, params: Mapping[str, Any] | None = None, limit: int = 0
    ) -> QueryResult:
        if self._graph is None:
            raise ServiceUnavailableError("no history graph is configured")
        if not cypher.strip():
            raise QueryRefusedError("cypher: the query is empty")
        limit = DEFAULT_ROW_LIMIT if limit <= 0 else min(limit, MAX_ROW_LIMIT)
        try:
            rows = await asyncio.to_thread(
                self._graph.query, cypher, dict(params or {}), limit=limit + 1
            )
        except (ReadOnlyQueryError, InvalidQueryError) as e:
            raise QueryRefusedError(f"cypher: {e}") from e
        truncated = len(rows) > limit
        rows = rows[:limit]
        columns = list(rows[0].keys()) if rows else []
        return QueryResult(columns=columns, rows=rows, truncated=truncated)
