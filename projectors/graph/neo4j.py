"""The graph on Neo4j 5: production's decision graph, with the statements the embedded one runs.

Writes go through ``session.execute_write``: a managed transaction that the driver retries, with
back-off, on transient errors and lost connections (``TransientError``, ``ServiceUnavailable``,
``SessionExpired``) for up to ``RETRY_S`` (the session's ``max_transaction_retry_time``); so the
transaction function must be idempotent and side-effect free outside the transaction, and
``_apply_tx`` is. The exception is a batch of one layer staged past a known position (a live
batch, or any other that fits one layer): it is one query that checks the position itself,
sent as an auto-commit transaction, one round trip in all; the driver does not retry it, the
projection's runner does, from the position the graph holds.

Queries run in read sessions (``READ_ACCESS``), which the server refuses to write from, behind the
same keyword guard as the embedded adapter, with a transaction timeout as their time limit.

Schema set-up is uniqueness constraints on each label's key (they also index the ``MERGE`` keys);
Neo4j needs no declared properties. Schema statements run one per transaction, as Neo4j requires.

The position and the fencing state (``epoch``, ``owner``, ``lease_until``) are the ``Projection``
node's, read and written in the same transaction as the data. The transaction starts by writing
that node, which takes its write lock, so two writers of one projection (two Fleet replicas)
serialise, the second sees the first one's position and epoch, and a fenced one writes nothing.

Thread-safety: the driver is thread-safe; each call opens its own session.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import cast

from neo4j import (
    READ_ACCESS,
    WRITE_ACCESS,
    Driver,
    ManagedTransaction,
    Record,
    Session,
    unit_of_work,
)
from neo4j.exceptions import ClientError

from application.ports import CypherParams
from projectors.errors import InvalidQueryError, QueryTimeoutError
from projectors.graph.batch import Layers, plan_layers
from projectors.graph.guard import require_read_only
from projectors.graph.port import (
    DEFAULT_LIMIT,
    DEFAULT_QUERY_TIMEOUT_S,
    Batch,
    DecisionGraph,
    Fence,
    Row,
    Stored,
    now_ms,
)
from projectors.graph.statements import (
    NODE_LABELS,
    RELEASE,
    VOCABULARY,
    WRITE_CLAIM,
)

__all__ = ["CONSTRAINTS", "LAYER_QUERY", "RETRY_S", "Neo4jGraph"]

#: How long the driver retries one managed transaction (its default is 30 s). Its back-off
#: doubles from 1 s and its last pause can take as long again, so with the default a projector
#: whose Neo4j came back could sit out a pause of 27 s before it tried once more, and its start
#: took 35 s with Neo4j down. Past this bound the error reaches the caller: the projector's
#: runner retries it (``fleet.bootstrap._graph_down``) with a pause of 5 s at most.
RETRY_S = 3.0

CONSTRAINTS = (
    "CREATE CONSTRAINT fleet_plan_id IF NOT EXISTS FOR (n:Plan) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT fleet_deliberation_id IF NOT EXISTS "
    "FOR (n:Deliberation) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT fleet_agent_id IF NOT EXISTS FOR (n:Agent) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT fleet_council_id IF NOT EXISTS FOR (n:Council) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT fleet_proposal_id IF NOT EXISTS FOR (n:Proposal) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT fleet_event_id IF NOT EXISTS FOR (n:Event) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT fleet_story_id IF NOT EXISTS FOR (n:Story) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT fleet_phase_change_id IF NOT EXISTS "
    "FOR (n:PhaseChange) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT fleet_projection_name IF NOT EXISTS "
    "FOR (n:Projection) REQUIRE n.name IS UNIQUE",
    "CREATE INDEX fleet_proposal_agent IF NOT EXISTS FOR (n:Proposal) ON (n.agent_id)",
    "CREATE INDEX fleet_deliberation_status IF NOT EXISTS FOR (n:Deliberation) ON (n.status)",
    "CREATE INDEX fleet_deliberation_task IF NOT EXISTS FOR (n:Deliberation) ON (n.task_id)",
)

_LOCK_POSITION = """
OPTIONAL MATCH (y:Projection {name: $name})
SET y._LOCK_ = true REMOVE y._LOCK_
WITH count(*) AS _
MERGE (x:Projection {name: $name})
SET x.position = coalesce(x.position, 0)
RETURN x.position AS position, x.epoch AS epoch, x.owner AS owner, x.lease_until AS lease_until
"""
"""The lock a claim (and a lease renewal), a batch with no known position, and a batch with
nothing past its base take before they read the position (Neo4j only).

The first clause writes the node blindly (``SET y._LOCK_ = true REMOVE y._LOCK_``, the Neo4j
manual's idiom against lost updates): that takes the node's exclusive lock before anything
reads it. A write that leaves a value as it was (``SET x.position = coalesce(x.position, 0)``
once the position exists) takes only a shared lock, so two writers that both held it
deadlocked when each then moved the epoch or the position: Neo4j aborted one, and the driver
retried it a second later (90 of 200 concurrent claims on a 2-core machine; none with the
blind write, ``tests/integration/projectors/test_neo4j_layer_query.py``). The ``MERGE``
creates the node the first time (the uniqueness constraint serialises two creators)."""
_DELETE_SOME = "MATCH (n:{label}) WITH n LIMIT 10000 DETACH DELETE n RETURN count(*) AS n"
_TIMED_OUT = ("TransactionTimedOut", "TransactionTimedOutClientConfiguration")


def _stored(record: Record | None) -> Stored:
    """The position and fencing state a ``Projection`` row holds (defaults when there is none)."""
    if record is None:
        return Stored()
    return Stored(
        position=int(record["position"] or 0),
        epoch=record["epoch"],
        owner=record["owner"],
        lease_until=record["lease_until"],
    )


def _locked(tx: ManagedTransaction, name: str) -> Stored:
    return _stored(tx.run(_LOCK_POSITION, name=name).single())


_INDEX = {text: i for i, text in enumerate(VOCABULARY)}

_LOCK_AND_CHECK = """
UNWIND $b.lock AS l
OPTIONAL MATCH (y:Projection {name: l.name})
SET y._LOCK_ = true REMOVE y._LOCK_
WITH l
MERGE (x:Projection {name: l.name})
SET x.position = coalesce(x.position, 0)
RETURN collect({
  position: x.position, epoch: x.epoch, owner: x.owner, lease_until: x.lease_until,
  ok: x.position = l.base AND (l.epoch IS NULL OR (x.epoch = l.epoch AND x.owner = l.owner))
}) AS locked
"""
"""The lock, the first subquery of a batch's first layer (``$b.lock``: one row there, none in
the layers after it): it writes the ``Projection`` node, which takes its write lock (a blind
write first, as ``_LOCK_POSITION``'s, so that two writers never deadlock), and
compares the stored position and fence with the ones the batch was staged against. The
statements after it write only when they match (``go``), and the query returns what it found,
which the caller checks again (``Stored.check``) and raises on: no round trip of its own, where
the lock was one of three per batch before (docs/benchmarks.md)."""

_MOVE_POSITION = """
UNWIND CASE WHEN go THEN $b.position ELSE [] END AS p
MATCH (x:Projection {name: p.name})
SET x.position = p.position, x.lease_until = coalesce(p.lease_until, x.lease_until)
"""
"""The position's move, the last subquery of a batch's last layer (the node exists: the lock
wrote it): one round trip less per batch than a statement of its own. Without a fence the
lease is the stored one (``lease_until`` null)."""


def _guarded(text: str, rows: str) -> str:
    """A statement as a subquery of the layer query: it imports ``go`` and writes its rows
    only when the lock's check passed."""
    return "CALL {\nWITH go\n" + text.strip().replace("$rows", rows) + "\n}"


LAYER_QUERY = (
    "CYPHER replan=skip\n"
    + "CALL {\n"
    + _LOCK_AND_CHECK.strip()
    + "\n}\n"
    + "WITH locked, coalesce(all(s IN locked WHERE s.ok), false) AS go\n"
    + "\n".join(
        _guarded(text, f"CASE WHEN go THEN $b.s{i} ELSE [] END")
        for i, text in enumerate(VOCABULARY)
    )
    + "\nCALL {\nWITH go\n"
    + _MOVE_POSITION.strip()
    + "\n}\nRETURN locked"
)
"""One layer of a batch as one query: the lock and check (in the first layer), each statement
of the vocabulary a ``CALL`` subquery over its rows in the map parameter ``$b`` (``$b.s<index>``;
an empty list when the layer has none), then the position's move (``$b.position``: one row in
the batch's last layer). Subqueries run in order and each sees what the ones before it wrote,
as separate executions would. The rows travel inside one map so that the query's parameter
types never change: the server keys its plan cache on them, and a list that is empty in one
batch and holds rows in the next would be planned again, seconds each time. One layer per
query, so that one text is planned (seconds: ``ensure_schema`` does it), and never again while
the server runs (``replan=skip``): the server would otherwise plan it anew once the graph's
statistics have moved, stalling the first commit after a catch-up, for the same plan, since
every statement finds its nodes by a unique key. Figures: docs/benchmarks.md."""
_NO_ROWS: dict[str, list[CypherParams]] = {f"s{i}": [] for i in _INDEX.values()}
_NO_ROWS["position"] = []
_NO_ROWS["lock"] = []


class _Rows(dict[str, list[CypherParams]]):
    """A layer's rows, with a short ``repr``. The driver builds its debug line for a query, the
    ``repr`` of every parameter, before its logger decides to drop it (``Bolt5x5.run``): for a
    catch-up batch of 500 events, half a megabyte of text and 5 µs of CPU per event, on the two
    cores the server needs. Packed as the plain map it is."""

    def __repr__(self) -> str:
        return f"<{sum(map(len, self.values()))} rows>"


def _layer_rows(
    layer: dict[int, list[CypherParams]],
    lock: CypherParams | None,
    position: CypherParams | None,
) -> _Rows:
    """The ``$b`` of one layer query: its rows in their slots, the lock's row in the first
    layer of a guarded batch, the position's move in the last."""
    rows = _Rows(_NO_ROWS)
    rows.update((f"s{i}", r) for i, r in layer.items())
    if lock is not None:
        rows["lock"] = [lock]
    if position is not None:
        rows["position"] = [position]
    return rows


@dataclass(frozen=True)
class _Guard:
    """What a batch staged past a known position is checked against, in its first layer query
    (the lock's row) and again once that query answers (``checked``)."""

    name: str
    base: int
    fence: Fence | None

    def row(self) -> CypherParams:
        fence = self.fence
        return {
            "name": self.name,
            "base": self.base,
            "epoch": fence.epoch if fence else None,
            "owner": fence.owner if fence else None,
        }

    def checked(self, record: Record | None) -> None:
        """Raise when the batch must not be written, which the query's own check refused too
        (``Stored.check`` on what the lock found)."""
        locked = record["locked"] if record is not None else []
        _stored(locked[0] if locked else None).check(self.name, base=self.base, fence=self.fence)
        if not (locked and locked[0]["ok"]):  # the check passed, the query's did not
            raise RuntimeError(f"the graph's lock query refused {self.row()} ({locked})")


@dataclass(frozen=True)
class _Write:
    """A batch ready to send: its layers, the position's move, and, for a batch staged past a
    known position, what its first layer checks (``guard``)."""

    count: int
    planned: Layers
    position: CypherParams
    guard: _Guard | None = None

    def rows(self, k: int) -> _Rows:
        layers = self.planned.layers or [{}]
        lock = self.guard.row() if self.guard is not None and k == 0 else None
        return _layer_rows(layers[k], lock, self.position if k == len(layers) - 1 else None)

    @property
    def layer_count(self) -> int:
        return len(self.planned.layers) or 1


def _prepare(name: str, fresh: Batch, fence: Fence | None, guard: _Guard | None) -> _Write:
    lease = now_ms() + fence.lease_ms if fence else None
    position: CypherParams = {"name": name, "position": fresh[-1][0], "lease_until": lease}
    planned = plan_layers((s for _, ss in fresh for s in ss), _INDEX)
    return _Write(len(fresh), planned, position, guard)


def _prepared(batch: Batch, guard: _Guard) -> _Write | None:
    """A batch staged past ``guard.base`` made ready to send without reading the position
    first, or None when none of it is past it."""
    fresh = [(p, ss) for p, ss in batch if p > guard.base]
    return _prepare(guard.name, fresh, guard.fence, guard) if fresh else None


def _write_tx(tx: ManagedTransaction, write: _Write) -> int:
    """Each layer as one query, the position's move in the last (alone when no event of the
    batch writes anything); a guarded batch's first takes the lock and is checked."""
    for k in range(write.layer_count):
        record = tx.run(LAYER_QUERY, {"b": write.rows(k)}).single()
        if k == 0 and write.guard is not None:
            write.guard.checked(record)
    return write.count


def _apply_tx(
    tx: ManagedTransaction,
    name: str,
    batch: Batch,
    base: int | None = None,
    fence: Fence | None = None,
    write: _Write | None = None,
) -> int:
    """The write transaction: lock and check the position (and epoch), run the statements of
    the events past it, move it. Idempotent, as a retried transaction function must be.

    With ``base`` (the runner's batches), a batch is one round trip per layer besides its
    commit: the first layer's query takes the lock and checks, and writes only when the stored
    position is ``base`` and the fence still holds; a batch is one layer unless a row must
    follow one of a statement listed after its own. Without it, the lock is a round trip of its
    own, to learn the position the batch is applied past. Each round trip costs driver and Bolt
    time besides the server's work, which made the ~20 of them most of a live commit
    (docs/benchmarks.md). ``write``: the batch already made ready (``_prepared``).
    """
    if base is None:
        stored = _locked(tx, name)
        stored.check(name, base=base, fence=fence)
        fresh = [(p, ss) for p, ss in batch if p > stored.position]
        if not fresh:
            return 0
        write = _prepare(name, fresh, fence, None)
    elif write is None:
        write = _prepared(batch, _Guard(name, base, fence))
    if write is None:  # nothing past base: only the check
        _locked(tx, name).check(name, base=base, fence=fence)
        return 0
    return _write_tx(tx, write)


def _pipelined_begin(session: Session) -> contextlib.AbstractContextManager[object]:
    """Send the transaction's BEGIN with its first query instead of waiting for its answer: a
    round trip less per batch. The driver does this for ``driver.execute_query`` through this
    session flag (not public API: without it, BEGIN waits, as before)."""
    flag = getattr(session, "_pipelined_begin", None)
    if flag is None or not hasattr(flag, "__enter__"):
        return contextlib.nullcontext()
    return cast("contextlib.AbstractContextManager[object]", flag)


def _claim_tx(tx: ManagedTransaction, name: str, owner: str, lease_ms: int) -> int | None:
    now = now_ms()
    epoch = _locked(tx, name).claimed_by(owner, lease_ms, now)
    if epoch is not None:
        tx.run(
            WRITE_CLAIM, name=name, owner=owner, epoch=epoch, lease_until=now + lease_ms
        ).consume()
    return epoch


def _release_tx(tx: ManagedTransaction, name: str, owner: str) -> None:
    tx.run(RELEASE, name=name, owner=owner).consume()


def _read_tx(
    tx: ManagedTransaction, cypher: str, params: dict[str, object], limit: int
) -> list[Row]:
    result = tx.run(cypher, params)
    rows: list[Row] = []
    for record in result:
        if len(rows) >= limit:
            break
        rows.append(record.data())  # nodes and relationships become dicts of properties
    return rows


def _schema_tx(tx: ManagedTransaction, ddl: str) -> None:
    tx.run(ddl).consume()


def _stored_tx(tx: ManagedTransaction, name: str) -> Stored:
    record = tx.run(
        "MATCH (x:Projection {name: $name}) RETURN x.position AS position, x.epoch AS epoch, "
        "x.owner AS owner, x.lease_until AS lease_until",
        name=name,
    ).single()
    return _stored(record)


def _delete_some_tx(tx: ManagedTransaction, label: str) -> int:
    record = tx.run(_DELETE_SOME.format(label=label)).single()
    return int(record["n"]) if record is not None else 0


def _reset_tx(tx: ManagedTransaction, name: str) -> None:
    tx.run("MATCH (x:Projection {name: $name}) SET x.position = 0", name=name).consume()


class Neo4jGraph(DecisionGraph):
    """The decision graph in a Neo4j 5 database.

    Args:
        driver: a driver built by the caller (``GraphDatabase.driver(uri, auth=...)``); the
            caller owns it unless ``owns_driver`` is True.
        database: the database name; the server's default when None.
        owns_driver: close the driver in ``close()``.
        query_timeout_s: default time limit of a read query (a transaction timeout).
    """

    def __init__(
        self,
        driver: Driver,
        *,
        database: str | None = None,
        owns_driver: bool = False,
        query_timeout_s: float = DEFAULT_QUERY_TIMEOUT_S,
    ) -> None:
        self._driver = driver
        self._database = database
        self._owns_driver = owns_driver
        self.query_timeout_s = query_timeout_s
        self._closed = False

    def _session(self, mode: str = WRITE_ACCESS) -> Session:
        """A session on the graph's database. The server's notifications are off: the
        statements read properties a fresh graph does not have yet (``x.epoch`` before the
        first claim), which Neo4j 5 answers with a warning that the driver would log on every
        read of the position."""
        return self._driver.session(
            database=self._database,
            default_access_mode=mode,
            notifications_min_severity="OFF",
            max_transaction_retry_time=RETRY_S,
        )

    def ensure_schema(self) -> None:
        """The constraints and indexes, then ``LAYER_QUERY`` run once with no rows (which
        writes nothing): the server plans and compiles it now rather than in the first live
        commit (seconds). Both are quick once done; a restarted server does them again."""
        with self._session() as session:
            for ddl in CONSTRAINTS:
                session.execute_write(_schema_tx, ddl)
            session.run(LAYER_QUERY, b=_NO_ROWS).consume()

    def stored(self, name: str) -> Stored:
        with self._session(READ_ACCESS) as session:
            return session.execute_read(_stored_tx, name)

    def claim(self, name: str, owner: str, lease_ms: int) -> int | None:
        with self._session() as session:
            return session.execute_write(_claim_tx, name, owner, lease_ms)

    def release(self, name: str, owner: str) -> None:
        with self._session() as session:
            session.execute_write(_release_tx, name, owner)

    def apply_batch(
        self, name: str, batch: Batch, *, base: int | None = None, fence: Fence | None = None
    ) -> int:
        if not batch:
            return 0
        guard = None if base is None else _Guard(name, base, fence)
        write = None if guard is None else _prepared(batch, guard)
        if guard is not None and write is not None and write.layer_count == 1:
            # One query, committed by the server as it answers (an auto-commit transaction):
            # one round trip for the whole batch. Not retried by the driver: a lost answer
            # is retried by the runner, from the position the graph holds.
            with self._session() as session:
                record = session.run(LAYER_QUERY, {"b": write.rows(0)}).single()
            guard.checked(record)
            return write.count
        with self._session() as session, _pipelined_begin(session):
            return session.execute_write(_apply_tx, name, list(batch), base, fence, write)

    def reset(self, name: str) -> None:
        with self._session() as session:
            for label in NODE_LABELS:
                if label == "Projection":
                    continue
                while session.execute_write(_delete_some_tx, label):
                    pass
            session.execute_write(_reset_tx, name)

    def query(
        self,
        cypher: str,
        params: CypherParams | None = None,
        limit: int = DEFAULT_LIMIT,
        *,
        timeout_s: float | None = None,
    ) -> list[Row]:
        require_read_only(cypher)
        timeout = self.query_timeout_s if timeout_s is None else timeout_s
        read = unit_of_work(timeout=timeout)(_read_tx)
        with self._session(READ_ACCESS) as session:
            try:
                return session.execute_read(read, cypher, dict(params or {}), limit)
            except ClientError as e:  # syntax, unknown names, bad parameters: the caller's query
                if e.code and e.code.endswith(_TIMED_OUT):
                    msg = f"query stopped after its time limit of {timeout:g} s"
                    raise QueryTimeoutError(msg) from e
                raise InvalidQueryError(f"{e.code}: {e.message}") from e

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._owns_driver:
            self._driver.close()
