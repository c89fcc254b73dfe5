"""The graph on Neo4j 5: production's decision graph, with the statements the embedded one runs.

Writes go through ``session.execute_write``: a managed transaction that the driver retries, with
back-off, on transient errors and lost connections (``TransientError``, ``ServiceUnavailable``,
``SessionExpired``) for up to the driver's ``max_transaction_retry_time``; so the transaction
function must be idempotent and side-effect free outside the transaction, and ``_apply_tx`` is.
Queries run in read sessions (``READ_ACCESS``), which the server refuses to write from, behind the
same keyword guard as the embedded adapter.

Schema set-up is uniqueness constraints on each label's key (they also index the ``MERGE`` keys);
Neo4j needs no declared properties. Schema statements run one per transaction, as Neo4j requires.

The position is the ``Projection`` node's ``position``, written in the same transaction as the
data. The transaction starts by writing that node, which takes its write lock, so two writers of
one projection (two Fleet replicas) serialise and the second sees the first one's position.

Thread-safety: the driver is thread-safe; each call opens its own session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from neo4j import READ_ACCESS, Driver, ManagedTransaction
from neo4j.exceptions import ClientError

from projectors.errors import InvalidQueryError
from projectors.graph.guard import require_read_only
from projectors.graph.port import DEFAULT_LIMIT, DecisionGraph, Row
from projectors.graph.statements import READ_POSITION, WRITE_POSITION, Statement

__all__ = ["CONSTRAINTS", "Neo4jGraph"]

CONSTRAINTS = (
    "CREATE CONSTRAINT fleet_plan_id IF NOT EXISTS FOR (n:Plan) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT fleet_deliberation_id IF NOT EXISTS "
    "FOR (n:Deliberation) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT fleet_agent_id IF NOT EXISTS FOR (n:Agent) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT fleet_proposal_id IF NOT EXISTS FOR (n:Proposal) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT fleet_event_id IF NOT EXISTS FOR (n:Event) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT fleet_projection_name IF NOT EXISTS "
    "FOR (n:Projection) REQUIRE n.name IS UNIQUE",
    "CREATE INDEX fleet_proposal_agent IF NOT EXISTS FOR (n:Proposal) ON (n.agent_id)",
    "CREATE INDEX fleet_deliberation_status IF NOT EXISTS FOR (n:Deliberation) ON (n.status)",
)

# Neo4j only: writing the node takes its lock before the position is compared.
_LOCK_POSITION = """
MERGE (x:Projection {name: $name})
SET x.position = coalesce(x.position, 0)
RETURN x.position AS position
"""


def _apply_tx(
    tx: ManagedTransaction, name: str, position: int, statements: Sequence[Statement]
) -> bool:
    """The write transaction: lock and compare the position, run the statements, move it."""
    record = tx.run(_LOCK_POSITION, name=name).single()
    current = int(record["position"]) if record is not None else 0
    if position <= current:
        return False
    for s in statements:
        tx.run(s.cypher, dict(s.params)).consume()
    tx.run(WRITE_POSITION, name=name, position=position).consume()
    return True


def _read_tx(tx: ManagedTransaction, cypher: str, params: dict[str, Any], limit: int) -> list[Row]:
    result = tx.run(cypher, params)
    rows: list[Row] = []
    for record in result:
        if len(rows) >= limit:
            break
        rows.append(record.data())  # nodes and relationships become dicts of properties
    return rows


def _schema_tx(tx: ManagedTransaction, ddl: str) -> None:
    tx.run(ddl).consume()


def _position_tx(tx: ManagedTransaction, name: str) -> int:
    record = tx.run(READ_POSITION, name=name).single()
    return int(record["position"]) if record is not None and record["position"] is not None else 0


class Neo4jGraph(DecisionGraph):
    """The decision graph in a Neo4j 5 database.

    Args:
        driver: a driver built by the caller (``GraphDatabase.driver(uri, auth=...)``); the
            caller owns it unless ``owns_driver`` is True.
        database: the database name; the server's default when None.
        owns_driver: close the driver in ``close()``.
    """

    def __init__(
        self, driver: Driver, *, database: str | None = None, owns_driver: bool = False
    ) -> None:
        self._driver = driver
        self._database = database
        self._owns_driver = owns_driver
        self._closed = False

    def ensure_schema(self) -> None:
        with self._driver.session(database=self._database) as session:
            for ddl in CONSTRAINTS:
                session.execute_write(_schema_tx, ddl)

    def position(self, name: str) -> int:
        with self._driver.session(
            database=self._database, default_access_mode=READ_ACCESS
        ) as session:
            return session.execute_read(_position_tx, name)

    def apply(self, name: str, position: int, statements: Sequence[Statement]) -> bool:
        with self._driver.session(database=self._database) as session:
            return session.execute_write(_apply_tx, name, position, list(statements))

    def query(
        self, cypher: str, params: Mapping[str, Any] | None = None, limit: int = DEFAULT_LIMIT
    ) -> list[Row]:
        require_read_only(cypher)
        with self._driver.session(
            database=self._database, default_access_mode=READ_ACCESS
        ) as session:
            try:
                return session.execute_read(_read_tx, cypher, dict(params or {}), limit)
            except ClientError as e:  # syntax, unknown names, bad parameters: the caller's query
                raise InvalidQueryError(f"{e.code}: {e.message}") from e

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._owns_driver:
            self._driver.close()
