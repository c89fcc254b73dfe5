"""The graph on LadybugDB: an embedded Cypher database in a directory, Fleet's default graph.

LadybugDB (a Kùzu fork) wants its schema up front: node tables with a primary key, and
relationship tables naming the labels they join. ``SCHEMA`` declares the vocabulary of
``projectors.graph.statements``; keep the two in step. The position is a ``Projection`` node
written in the same ``BEGIN TRANSACTION … COMMIT`` as the data.

Thread-safety: one connection writes (the runner's thread), another answers queries; each sits
behind its own lock, since a connection is not meant for concurrent use. Readers see committed
transactions only.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import ladybug

from projectors.errors import InvalidQueryError
from projectors.graph.guard import require_read_only
from projectors.graph.port import DEFAULT_LIMIT, DecisionGraph, Row
from projectors.graph.statements import READ_POSITION, WRITE_POSITION, Statement

__all__ = ["SCHEMA", "LadybugGraph"]

SCHEMA = (
    """CREATE NODE TABLE IF NOT EXISTS Plan(id STRING, story_id STRING, PRIMARY KEY (id))""",
    """CREATE NODE TABLE IF NOT EXISTS Deliberation(
        id STRING, task_id STRING, task STRING, role STRING, status STRING,
        num_agents INT64, rounds INT64, deadline STRING, plan_id STRING, story_id STRING,
        requested_by STRING, created_at STRING, updated_at STRING, finished_at STRING,
        version INT64, winner STRING, ranking STRING[], missing STRING[], reason STRING,
        PRIMARY KEY (id))""",
    """CREATE NODE TABLE IF NOT EXISTS Agent(id STRING, role STRING, model STRING,
        PRIMARY KEY (id))""",
    """CREATE NODE TABLE IF NOT EXISTS Proposal(
        id STRING, deliberation_id STRING, agent_id STRING, round INT64, content STRING,
        model STRING, tokens INT64, latency_ms INT64, score DOUBLE, checks STRING,
        late BOOLEAN, received_at STRING, PRIMARY KEY (id))""",
    """CREATE NODE TABLE IF NOT EXISTS Event(
        id STRING, seq INT64, type STRING, at STRING, version INT64, agent_id STRING,
        detail STRING, PRIMARY KEY (id))""",
    """CREATE NODE TABLE IF NOT EXISTS Projection(name STRING, position INT64,
        PRIMARY KEY (name))""",
    "CREATE REL TABLE IF NOT EXISTS SPAWNED(FROM Plan TO Deliberation)",
    "CREATE REL TABLE IF NOT EXISTS HAS_PROPOSAL(FROM Deliberation TO Proposal)",
    "CREATE REL TABLE IF NOT EXISTS PROPOSED(FROM Agent TO Proposal)",
    "CREATE REL TABLE IF NOT EXISTS WON_BY(FROM Deliberation TO Proposal)",
    "CREATE REL TABLE IF NOT EXISTS HAD_EVENT(FROM Deliberation TO Event)",
)


class LadybugGraph(DecisionGraph):
    """The decision graph in a LadybugDB database directory.

    Args:
        path: the database path (LadybugDB creates it; its parent must exist).
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = ladybug.Database(str(self.path))
        self._write = ladybug.Connection(self._db)
        self._read = ladybug.Connection(self._db)
        self._write_lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._closed = False
        self.ensure_schema()

    def ensure_schema(self) -> None:
        with self._write_lock:
            for ddl in SCHEMA:
                self._write.execute(ddl)

    def position(self, name: str) -> int:
        with self._write_lock:
            return self._position(name)

    def apply(self, name: str, position: int, statements: Sequence[Statement]) -> bool:
        with self._write_lock:
            self._write.execute("BEGIN TRANSACTION")
            try:
                if position <= self._position(name):
                    self._write.execute("ROLLBACK")
                    return False
                for s in statements:
                    self._write.execute(s.cypher, dict(s.params))
                self._write.execute(WRITE_POSITION, {"name": name, "position": position})
                self._write.execute("COMMIT")
                return True
            except BaseException:
                self._write.execute("ROLLBACK")
                raise

    def query(
        self, cypher: str, params: Mapping[str, Any] | None = None, limit: int = DEFAULT_LIMIT
    ) -> list[Row]:
        require_read_only(cypher)
        with self._read_lock:
            try:
                result = self._read.execute(cypher, dict(params or {}))
            except RuntimeError as e:  # ladybug reports parser and binder errors this way
                raise InvalidQueryError(str(e)) from e
            return _rows(result, limit)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._read.close()
        self._write.close()
        self._db.close()

    def _position(self, name: str) -> int:
        rows = _rows(self._write.execute(READ_POSITION, {"name": name}), 1)
        return int(rows[0]["position"]) if rows else 0


def _rows(result: ladybug.QueryResult | list[ladybug.QueryResult], limit: int) -> list[Row]:
    # A text with several statements yields several results; the last one is the answer.
    last = result[-1] if isinstance(result, list) else result
    columns = last.get_column_names()
    rows: list[Row] = []
    while len(rows) < limit and last.has_next():
        rows.append(dict(zip(columns, last.get_next(), strict=True)))
    last.close()
    return rows
