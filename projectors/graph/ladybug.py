"""The graph on LadybugDB: an embedded Cypher database in a directory, Fleet's default graph.

LadybugDB (a Kùzu fork) wants its schema up front: node tables with a primary key, and
relationship tables naming the labels they join. ``SCHEMA`` declares the vocabulary of
``projectors.graph.statements``; keep the two in step. The position and the fencing state
(``epoch``, ``owner``, ``lease_until``) are a ``Projection`` node read and written in the same
``BEGIN TRANSACTION … COMMIT`` as the data; a database made before fencing gets the columns added.

Thread-safety: one connection writes (the runner's thread), another answers queries; each sits
behind its own lock, since a connection is not meant for concurrent use. Readers see committed
transactions only: each query runs in a ``READ ONLY`` transaction (the engine's own refusal of a
write, behind the guard) with the connection's query timeout set to its time limit.

Checkpoints: committed writes sit in the write-ahead log (~1.2 KB per event) until a checkpoint
folds them into the database file, and no write commits while one runs. The engine folds on its own
inside the commit that takes the log past ``checkpoint_threshold`` bytes. A fold costs a part that
grows with the tables the log touches (each table here fits one storage group, which a fold appears
to rewrite when touched: on a 100,000-event graph, 512 KiB of live writes folded in 220-340 ms,
position updates alone in 36 ms) plus a part that grows with the log (a 4 MiB fold took 0.8-0.9 s,
a 64 MiB one 2.4-3.2 s on that graph), and each MB of log also adds ~0.3-0.7 ms to every commit. So
the threshold follows what is being applied: catch-up batches (``CATCH_UP_EVENTS`` or more) run
under 64 MiB (``CHECKPOINT_THRESHOLD``: throughput counts, a stall does not), live ones under 512
KiB (``LIVE_CHECKPOINT_THRESHOLD``): a stream with no quiet spell meets a ~0.3 s fold every second
or so instead of a 3 s one every two minutes (measured at 500 events/s for 150 s: graph lag p99
1,984 ms and max 3.2 s before, 219 ms and 462 ms after). The runner also calls ``checkpoint`` once
its catch-up is applied and when the projection goes quiet, which folds the log once it holds
``idle_checkpoint_bytes`` (``IDLE_CHECKPOINT_BYTES``), so that bursty traffic (a deliberation step,
then seconds of model time) folds in the gaps rather than inside a commit. The engine stores the
graph uncompressed (``COMPRESSION``), which took a third off each live fold.

Statement sizes: the driver prepares a statement on its first call with a given text and
parameter types, and the prepared statement keeps that call's values: every later execution then
costs time in proportion to the rows it was first prepared with, whatever it is given. Measured on
a 20,000-event graph, one ``_EVENT`` row took 0.23 ms on a statement first prepared with 1 row,
4.7 ms on one first prepared with 500 rows (a catch-up batch) and 13.6 ms with 1,000; a live
batch runs ~8 statements, so each live commit after a catch-up paid tens of ms for rows it did
not have, and more as catch-up batches grew. So each statement runs under a text of its own per
size class (``_sized``: a comment naming the power of two its row count rounds up to), and a
statement is never prepared with more than twice the rows it runs with. Explicit value-free
prepared statements would avoid the cost altogether, but the engine cannot prepare the two that
unwind a list field of a row without its type, and fixes the parameter types at the first
execution (a later null or float in the same field fails to bind), which the driver's cache,
keyed by the parameter types, gets right.

Over 400 lines on purpose: one adapter, whose checkpoint policy, statement sizes, fencing and
read guard each depend on how the engine's single connection behaves; they are read together.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import ladybug

from application.ports import CypherParams
from application.rows import as_int, optional_int, optional_str
from projectors.errors import InvalidQueryError, QueryTimeoutError
from projectors.graph.batch import plan
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
    READ_POSITION,
    RELEASE,
    WRITE_CLAIM,
    WRITE_POSITION,
)

__all__ = [
    "CATCH_UP_EVENTS",
    "CHECKPOINT_THRESHOLD",
    "IDLE_CHECKPOINT_BYTES",
    "LIVE_CHECKPOINT_THRESHOLD",
    "SCHEMA",
    "LadybugGraph",
]

log = logging.getLogger(__name__)

CHECKPOINT_THRESHOLD = 64 * 1024 * 1024
"""Log bytes past which the engine checkpoints on its own during a catch-up (its default is
16 MiB): big batches, where throughput counts and a fold's stall does not."""

LIVE_CHECKPOINT_THRESHOLD = 512 * 1024
"""The same, while the projection is live (small batches): short folds, often, so that a
stream with no quiet spell never meets a long one."""

CATCH_UP_EVENTS = 256
"""A batch of at least this many events is catch-up (live batches at 500 events/s hold a few,
a hundred or so after a fold)."""

IDLE_CHECKPOINT_BYTES = 256 * 1024
"""Log bytes from which ``checkpoint`` (the runner's quiet-time call) folds the log."""

COMPRESSION = False
"""Whether the engine compresses what a checkpoint writes. Off: a live fold rewrites the last
storage group of every table the log touched, and with compression on it also decompresses and
recompresses each of those groups' columns. On the 100,000-event benchmark graph, live lag p99
at 500 events/s was 309 ms with it and 198-218 ms without (``bench/projections_bench.py``,
same machine, same day); catch-up stayed at 61-65% of the raw ceiling. Files written with it on
stay readable with it off (each column chunk records its own encoding)."""

SCHEMA = (
    """CREATE NODE TABLE IF NOT EXISTS Plan(id STRING, story_id STRING, approved_by STRING,
        approved_at STRING, roles STRING[], description STRING, tasks STRING[],
        skipped_roles STRING[], nothing_dispatched STRING, PRIMARY KEY (id))""",
    # A database made before plans carried their approval gets the columns added.
    "ALTER TABLE Plan ADD IF NOT EXISTS approved_by STRING",
    "ALTER TABLE Plan ADD IF NOT EXISTS approved_at STRING",
    "ALTER TABLE Plan ADD IF NOT EXISTS roles STRING[]",
    "ALTER TABLE Plan ADD IF NOT EXISTS description STRING",
    "ALTER TABLE Plan ADD IF NOT EXISTS tasks STRING[]",
    "ALTER TABLE Plan ADD IF NOT EXISTS skipped_roles STRING[]",
    "ALTER TABLE Plan ADD IF NOT EXISTS nothing_dispatched STRING",
    """CREATE NODE TABLE IF NOT EXISTS Deliberation(
        id STRING, task_id STRING, task STRING, role STRING, status STRING,
        num_agents INT64, rounds INT64, deadline STRING, plan_id STRING, story_id STRING,
        requested_by STRING, created_at STRING, updated_at STRING, finished_at STRING,
        version INT64, winner STRING, ranking STRING[], missing STRING[], reason STRING,
        architect_fallback STRING, PRIMARY KEY (id))""",
    "ALTER TABLE Deliberation ADD IF NOT EXISTS architect_fallback STRING",
    """CREATE NODE TABLE IF NOT EXISTS Agent(id STRING, role STRING, model STRING,
        PRIMARY KEY (id))""",
    """CREATE NODE TABLE IF NOT EXISTS Proposal(
        id STRING, deliberation_id STRING, agent_id STRING, round INT64, content STRING,
        model STRING, tokens INT64, latency_ms INT64, score DOUBLE, checks STRING,
        late BOOLEAN, received_at STRING, PRIMARY KEY (id))""",
    """CREATE NODE TABLE IF NOT EXISTS Event(
        id STRING, seq INT64, type STRING, at STRING, version INT64, agent_id STRING,
        detail STRING, PRIMARY KEY (id))""",
    """CREATE NODE TABLE IF NOT EXISTS Projection(name STRING, position INT64, epoch INT64,
        owner STRING, lease_until INT64, PRIMARY KEY (name))""",
    "ALTER TABLE Projection ADD IF NOT EXISTS epoch INT64",
    "ALTER TABLE Projection ADD IF NOT EXISTS owner STRING",
    "ALTER TABLE Projection ADD IF NOT EXISTS lease_until INT64",
    """CREATE NODE TABLE IF NOT EXISTS Council(id STRING, role STRING, status STRING,
        model STRING, endpoint STRING, rounds INT64, version INT64, updated_at STRING,
        PRIMARY KEY (id))""",
    """CREATE REL TABLE IF NOT EXISTS MEMBER_OF(FROM Agent TO Council, since STRING,
        until STRING, model STRING, endpoint STRING)""",
    "CREATE REL TABLE IF NOT EXISTS CONVENED(FROM Council TO Deliberation, version INT64)",
    "CREATE REL TABLE IF NOT EXISTS SAT_IN(FROM Agent TO Deliberation, seat STRING)",
    "CREATE NODE TABLE IF NOT EXISTS Story(id STRING, phase STRING, PRIMARY KEY (id))",
    """CREATE NODE TABLE IF NOT EXISTS PhaseChange(id STRING, seq INT64, from_phase STRING,
        to_phase STRING, at STRING, PRIMARY KEY (id))""",
    "CREATE REL TABLE IF NOT EXISTS SPAWNED(FROM Plan TO Deliberation)",
    "CREATE REL TABLE IF NOT EXISTS HAS_PLAN(FROM Story TO Plan)",
    "CREATE REL TABLE IF NOT EXISTS HAS_DELIBERATION(FROM Story TO Deliberation)",
    "CREATE REL TABLE IF NOT EXISTS CHANGED_PHASE(FROM Story TO PhaseChange)",
    "CREATE REL TABLE IF NOT EXISTS HAS_PROPOSAL(FROM Deliberation TO Proposal)",
    "CREATE REL TABLE IF NOT EXISTS PROPOSED(FROM Agent TO Proposal)",
    "CREATE REL TABLE IF NOT EXISTS WON_BY(FROM Deliberation TO Proposal)",
    "CREATE REL TABLE IF NOT EXISTS HAD_EVENT(FROM Deliberation TO Event)",
    """CREATE REL TABLE IF NOT EXISTS CRITIQUED(FROM Proposal TO Proposal, round INT64,
        critic STRING, content STRING, rating DOUBLE, at STRING)""",
    """CREATE REL TABLE IF NOT EXISTS SELECTED(FROM Agent TO Proposal, deliberation_id STRING,
        rationale STRING, candidates STRING[], model STRING, latency_ms INT64, at STRING)""",
    """CREATE REL TABLE IF NOT EXISTS RATED(FROM Agent TO Proposal, deliberation_id STRING,
        score DOUBLE, content STRING, source STRING, at STRING)""",
)


def _open_database(path: Path, *, compression: bool = COMPRESSION) -> ladybug.Database:
    """Open the database, replaying its write-ahead log up to any damage.

    A process killed while it appends a commit to the log leaves a torn record at its end, and
    the engine then refuses to open the database at all ("Reading past the end of the file",
    "Checksum verification failed, the WAL file is corrupted"): one crash of ``fleet up`` would
    stop every later start. The graph is derived from the stream, and its position is written
    in the same transaction as the data, so replaying the complete transactions before the
    damage leaves data and position that agree (tested), and the runner re-applies the rest
    from the stream. The engine folds the replayed log into the file as it opens, so the damage
    does not outlive this open. Any other failure to open is raised as it is.
    """
    try:
        return ladybug.Database(str(path), compression=compression)
    except RuntimeError as e:
        text = str(e)
        # A garbled record can also fail inside the engine's decoding, before any checksum
        # ("Assertion failed ... UNREACHABLE_CODE"): a failure on open with a log to replay.
        if "lock" in text.lower() or ("wal" not in text.lower() and not _has_log(path)):
            raise
        log.warning(
            "LadybugDB %s: its write-ahead log is damaged (%s); opening with the transactions "
            "before the damage, the projection re-applies the rest from the stream",
            path,
            text,
        )
        return ladybug.Database(
            str(path), compression=compression, throw_on_wal_replay_failure=False
        )


def _has_log(path: Path) -> bool:
    """Whether the database at ``path`` has a non-empty write-ahead log to replay."""
    wal = path.with_name(path.name + ".wal")
    return wal.exists() and wal.stat().st_size > 0


_GRANTED: dict[str, set[str]] = {}
"""Per database path, the owners this process granted a claim to: only they can be alive (see
``LadybugGraph.claim``). Process-wide because one process may open a path more than once."""
_GRANTED_LOCK = threading.Lock()


class LadybugGraph(DecisionGraph):
    """The decision graph in a LadybugDB database directory.

    Args:
        path: the database path (LadybugDB creates it; its parent must exist).
        query_timeout_s: default time limit of a read query.
        checkpoint_threshold: log bytes past which the engine checkpoints during a commit of
            a catch-up batch (``CATCH_UP_EVENTS`` or more).
        live_checkpoint_threshold: the same during a commit of a smaller (live) batch.
        idle_checkpoint_bytes: log bytes below which ``checkpoint`` leaves the log alone.
        compression: compress what checkpoints write (see ``COMPRESSION``).
    """

    def __init__(
        self,
        path: Path | str,
        *,
        query_timeout_s: float = DEFAULT_QUERY_TIMEOUT_S,
        checkpoint_threshold: int = CHECKPOINT_THRESHOLD,
        live_checkpoint_threshold: int = LIVE_CHECKPOINT_THRESHOLD,
        idle_checkpoint_bytes: int = IDLE_CHECKPOINT_BYTES,
        compression: bool = COMPRESSION,
    ) -> None:
        self.path = Path(path)
        self.idle_checkpoint_bytes = idle_checkpoint_bytes
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.query_timeout_s = query_timeout_s
        self._db = _open_database(self.path, compression=compression)
        self._write = ladybug.Connection(self._db)
        self._read = ladybug.Connection(self._db)
        self._write_lock = threading.Lock()
        self._read_lock = threading.Lock()
        self._closed = False
        with _GRANTED_LOCK:
            self._granted = _GRANTED.setdefault(str(self.path.resolve()), set())
        self._thresholds = (int(live_checkpoint_threshold), int(checkpoint_threshold))
        self._threshold = 0
        self._use_threshold(catch_up=True)
        self.ensure_schema()

    def _use_threshold(self, *, catch_up: bool) -> None:
        """The engine's automatic checkpoint threshold for what is being applied (see the
        module docstring). Caller holds the write lock (or is the constructor)."""
        want = self._thresholds[catch_up]
        if want != self._threshold:
            self._write.execute(f"CALL checkpoint_threshold={want}")
            self._threshold = want

    @property
    def checkpoint_threshold(self) -> int:
        """The automatic checkpoint threshold in force (bytes of log)."""
        return self._threshold

    def ensure_schema(self) -> None:
        with self._write_lock:
            for ddl in SCHEMA:
                self._write.execute(ddl)

    def stored(self, name: str) -> Stored:
        with self._write_lock:
            return self._stored(name)

    def claim(self, name: str, owner: str, lease_ms: int) -> int | None:
        """See ``DecisionGraph.claim``; a lease no owner of this open can hold is not waited out.

        The engine lets one process at a time open the database (its file lock; checked: a
        second process is refused, a second open in the same process is not), so an owner no
        open of this path in this process granted a claim to was granted it by an earlier
        process, and that process is gone: its projector was killed and this is its restart.
        Waiting out its lease would only delay the restart (the lease is for owners that may
        still be alive: several runners in one process, or the Neo4j and Valkey stores).
        """
        with self._write_lock, self._transaction():
            now = now_ms()
            stored = self._stored(name)
            if stored.owner and stored.owner != owner and stored.owner not in self._granted:
                stored = dataclasses.replace(stored, lease_until=0)
            epoch = stored.claimed_by(owner, lease_ms, now)
            if epoch is not None:
                self._granted.add(owner)
                params = {
                    "name": name,
                    "owner": owner,
                    "epoch": epoch,
                    "lease_until": now + lease_ms,
                }
                self._run(WRITE_CLAIM, params)
            return epoch

    def release(self, name: str, owner: str) -> None:
        with self._write_lock:
            self._run(RELEASE, {"name": name, "owner": owner})

    def apply_batch(
        self, name: str, batch: Batch, *, base: int | None = None, fence: Fence | None = None
    ) -> int:
        if not batch:
            return 0
        with self._write_lock:
            self._use_threshold(catch_up=len(batch) >= CATCH_UP_EVENTS)  # outside the transaction
            with self._transaction():
                stored = self._stored(name)
                stored.check(name, base=base, fence=fence)
                fresh = [(p, ss) for p, ss in batch if p > stored.position]
                if not fresh:
                    return 0
                for e in plan(s for _, ss in fresh for s in ss):
                    self._run(_sized(e.cypher, len(e.rows)), e.params)
                lease = now_ms() + fence.lease_ms if fence else stored.lease_until
                last = fresh[-1][0]
                self._run(WRITE_POSITION, {"name": name, "position": last, "lease_until": lease})
                return len(fresh)

    def log_bytes(self) -> int:
        """The size of the engine's write-ahead log (0 when it has none)."""
        wal = self.path.with_name(self.path.name + ".wal")
        try:
            return wal.stat().st_size
        except FileNotFoundError:
            return 0

    def checkpoint(self) -> None:
        """Fold the log into the database file once it holds ``idle_checkpoint_bytes``."""
        if self.log_bytes() < max(1, self.idle_checkpoint_bytes):
            return
        with self._write_lock:
            try:
                self._write.execute("CHECKPOINT")
            except RuntimeError as e:  # e.g. a long read still open: the next idle retries
                log.warning("LadybugDB checkpoint skipped: %s", e)

    def reset(self, name: str) -> None:
        with self._write_lock, self._transaction():
            for label in NODE_LABELS:
                if label != "Projection":
                    self._write.execute(f"MATCH (n:{label}) DETACH DELETE n")
            self._write.execute(
                "MATCH (x:Projection {name: $name}) SET x.position = 0", {"name": name}
            )

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
        with self._read_lock:
            self._read.set_query_timeout(max(1, int(timeout * 1000)))
            self._read.execute("BEGIN TRANSACTION READ ONLY")
            try:
                result = self._read.execute(cypher, dict(params or {}))
                return _rows(result, limit)
            except RuntimeError as e:  # ladybug reports parser, binder and timeout errors so
                if "interrupted" in str(e).lower():
                    msg = f"query interrupted after its time limit of {timeout:g} s"
                    raise QueryTimeoutError(msg) from e
                raise InvalidQueryError(str(e)) from e
            finally:
                with contextlib.suppress(RuntimeError):  # a failed query may have ended it
                    self._read.execute("ROLLBACK")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._read.close()
        self._write.close()
        self._db.close()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction on the write connection (hold ``_write_lock``)."""
        self._write.execute("BEGIN TRANSACTION")
        try:
            yield
        except BaseException:
            with contextlib.suppress(RuntimeError):  # a failed statement may have ended it
                self._write.execute("ROLLBACK")
            raise
        self._write.execute("COMMIT")

    def _run(
        self, cypher: str, params: CypherParams
    ) -> ladybug.QueryResult | list[ladybug.QueryResult]:
        """Execute on the write connection (hold ``_write_lock``)."""
        return self._write.execute(cypher, dict(params))

    def _stored(self, name: str) -> Stored:
        rows = _rows(self._run(READ_POSITION, {"name": name}), 1)
        if not rows:
            return Stored()
        r = rows[0]
        return Stored(
            position=as_int(r["position"] or 0),
            epoch=optional_int(r["epoch"]),
            owner=optional_str(r["owner"]),
            lease_until=optional_int(r["lease_until"]),
        )


def _sized(cypher: str, rows: int) -> str:
    """``cypher`` as the text of its size class: rows rounded up to a power of two (see the
    module's docstring); one row keeps the plain text."""
    if rows <= 1:
        return cypher
    return f"{cypher}\n// rows <= {1 << (rows - 1).bit_length()}"


def _rows(result: ladybug.QueryResult | list[ladybug.QueryResult], limit: int) -> list[Row]:
    # A text with several statements yields several results; the last one is the answer.
    last = result[-1] if isinstance(result, list) else result
    columns = last.get_column_names()
    rows: list[Row] = []
    while len(rows) < limit and last.has_next():
        rows.append(dict(zip(columns, last.get_next(), strict=True)))
    last.close()
    return rows
