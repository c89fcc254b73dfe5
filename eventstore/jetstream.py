"""The `eventsourcing` persistence module on NATS JetStream.

Select it with ``PERSISTENCE_MODULE=eventstore.jetstream``. One stream holds everything:

* events on ``<prefix>.e.<originator_id>``; the stream sequence is the notification id (gaps are
  allowed: snapshots and tracking records share the stream; order is commit order);
* snapshots on ``<prefix>.s.<originator_id>``;
* tracking records on ``<prefix>.t.<application_name>``, so a process recorder writes its events
  and its tracking record in one atomic batch.

Per-aggregate optimistic concurrency uses ``Nats-Expected-Last-Subject-Sequence``; a save of
several events (one aggregate or several, plus a tracking record) is one ADR-50 atomic batch.
See ``_writes.py`` for the write protocol and ``_codec.py`` for the message layout.

A message that cannot be decoded (written by something else, or damaged) raises ``DataError``
naming its stream sequence and subject; it never stops other aggregates from loading, since
each aggregate is read from its own subject. Reads are retried while the server is unreachable
(they are idempotent); writes are conditional, so a lost acknowledgement is resolved by reading
back (see ``_lost_acks.py``): the caller gets success, IntegrityError, or an OperationalError that
says plainly whether the write may have landed (``OutcomeUnknownError``).

Beyond the library's API, the application recorder offers ``insert_events_each(_async)``:
several independent batches in one crossing, each atomic on its own (the ledger's group commit:
a one-event batch is a plain conditional publish rather than an atomic batch).

Settings (read the eventsourcing way: ``<APPNAME>_<KEY>`` first, then ``<KEY>``):
``NATS_URL``, ``NATS_STREAM``, ``NATS_SUBJECT_PREFIX``, ``NATS_STREAM_REPLICAS``, ``NATS_TIMEOUT``,
``NATS_OWN_CONNECTIONS`` (default yes: a thread writing alone writes on a connection of its own;
see ``JetStreamConnection.write``).

(Over 400 lines on purpose: this is the persistence module ``PERSISTENCE_MODULE`` names, and the
recorders, the subscription and the factory share one connection and one set of row decoders;
the wire protocol itself lives in ``_stream.py`` and the parts it is made of.)
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import re
import threading
import time
from collections.abc import AsyncGenerator, Callable, Coroutine, Sequence
from typing import Any, Final, TypeVar
from uuid import UUID

from eventsourcing.persistence import (
    AggregateRecorder,
    ApplicationRecorder,
    DataError,
    InfrastructureFactory,
    Notification,
    OperationalError,
    PersistenceError,
    ProcessRecorder,
    ProgrammingError,
    StoredEvent,
    Subscription,
    Tracking,
    TrackingRecorder,
)
from eventsourcing.utils import Environment, EnvType, resolve_topic

from eventstore._caller_loops import CallerLoops
from eventstore._codec import decode, encode, subject_token, topic
from eventstore._errors import OutcomeUnknownError, translate
from eventstore._loop_thread import LoopThread
from eventstore._records import MAX_BATCH, Row, StreamSettings, Write
from eventstore._running_loops import RunningLoops
from eventstore._stream import JetStreamLog

__all__ = [
    "Factory",
    "JetStreamAggregateRecorder",
    "JetStreamApplicationRecorder",
    "JetStreamConnection",
    "JetStreamFactory",
    "JetStreamProcessRecorder",
    "JetStreamSubscription",
    "JetStreamTrackingRecorder",
    "OutcomeUnknownError",
]

T = TypeVar("T")

_EVENTS: Final = "e"
_SNAPSHOTS: Final = "s"
_TRACKING: Final = "t"


class JetStreamConnection:
    """The loop thread and the stream log one factory's recorders share.

    Every recorder call is one crossing into the loop thread, except a write from a thread that
    runs no event loop, which runs on that thread's own connection (``write``), and the async
    extensions (``awrite``, ``loop_log``), which run on a connection of the calling loop's own
    (both off with ``own_connections=False``). Every NATS error is translated here, once, into
    the PEP 249 hierarchy.
    """

    def __init__(self, settings: StreamSettings, *, own_connections: bool = True) -> None:
        self.settings = settings
        self.loop = LoopThread(name=f"eventstore:{settings.stream}")
        try:
            self.log: JetStreamLog = self.call(JetStreamLog.open(settings), "connect")
        except BaseException:
            self.loop.close()
            raise
        self._writing = 0  # writes in flight, from any thread
        self._writing_lock = threading.Lock()
        name = f"eventstore:{settings.stream}:writer"
        self._own: CallerLoops[JetStreamLog] | None = (
            CallerLoops(lambda: self.log.sibling(name), JetStreamLog.close)
            if own_connections
            else None
        )
        self._loops: RunningLoops[JetStreamLog] | None = (
            RunningLoops(lambda: self.log.sibling(f"{name}:loop"), JetStreamLog.close)
            if own_connections
            else None
        )

    def write(self, op: Callable[[JetStreamLog], Coroutine[object, object, T]], where: str) -> T:
        """Run a write, ``op(log)``: on the calling thread's own connection when it is the only
        write in flight and the thread may have one (see ``CallerLoops``), else on the loop
        thread. The logs share what they know of each subject, and the server checks every
        write against the stream either way.

        Alone, a write on its own connection skips two thread wake-ups. With others in flight
        it crosses: sixteen threads each driving a loop of their own fight over the GIL (16
        writers measured 0.5x one writer that way), while one loop thread serves them all.
        """
        own = self._own
        if own is not None and not self.log.nc.is_connected:
            # The loop thread's connection notices a lost server at once (its loop runs); a
            # thread's own one only when it next writes. Crossing, such a write is refused as
            # certainly not written, rather than sent into a dead socket with an unknown outcome.
            own = None
        with self._writing_lock:
            self._writing += 1
            alone = self._writing == 1
        try:
            if own is None or not alone or not own.available():
                return self.call(op(self.log), where)
            try:
                return own.run(op, timeout=self.settings.timeout * 10)
            except ProgrammingError:
                raise
            except Exception as e:
                raise translate(e, url=self.settings.url, where=where) from e
        finally:
            with self._writing_lock:
                self._writing -= 1

    async def loop_log(self) -> JetStreamLog | None:
        """The calling loop's own log (a connection made on this loop on first use), or None
        when the store runs without own connections (the caller crosses instead)."""
        if self._loops is None:
            return None
        try:
            return await self._loops.get()
        except Exception as e:
            raise translate(e, url=self.settings.url, where="connect") from e

    async def awrite(
        self, op: Callable[[JetStreamLog], Coroutine[object, object, T]], where: str
    ) -> T:
        """``write`` for a coroutine: ``op(log)`` on the calling loop's own connection, awaited
        here, no thread involved; crossing into the loop thread only without own connections.

        A crossing is two thread wake-ups per write (caller → loop thread → caller), each one
        a GIL hand-off that waits behind the other threads of a busy process (projection
        runners, Ray's): on the dispatcher's writes that was most of a write's latency.
        """
        log = await self.loop_log()
        if log is None:
            return await self.acall(op(self.log), where)
        try:
            return await asyncio.wait_for(op(log), self.settings.timeout * 10)
        except ProgrammingError:
            raise
        except Exception as e:
            raise translate(e, url=self.settings.url, where=where) from e

    def call(self, coro: Coroutine[object, object, T], where: str) -> T:
        # The inner NATS requests carry their own timeouts; this outer one only bounds a call
        # that retries or reads many batches.
        try:
            return self.loop.run(coro, timeout=self.settings.timeout * 10)
        except ProgrammingError:
            raise
        except Exception as e:
            raise translate(e, url=self.settings.url, where=where) from e

    async def acall(self, coro: Coroutine[object, object, T], where: str) -> T:
        """``call`` for a coroutine on another event loop: awaits instead of blocking a thread."""
        try:
            return await self.loop.run_async(coro, timeout=self.settings.timeout * 10)
        except ProgrammingError:
            raise
        except Exception as e:
            raise translate(e, url=self.settings.url, where=where) from e

    def read(self, coro: Callable[[], Coroutine[object, object, T]], where: str) -> T:
        """Run a read, retrying while the server is unreachable (reads are idempotent).

        Gives up with OperationalError (naming the URL) after about three request timeouts.
        """
        deadline = time.monotonic() + self.settings.timeout * 3
        while True:
            try:
                return self.call(coro(), where)
            except OutcomeUnknownError:
                raise
            except OperationalError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)

    def close(self) -> None:
        if self._loops is not None:
            self._loops.close()
        if self._own is not None:
            self._own.close(timeout=self.settings.timeout)
        if not self.loop.in_loop_thread():
            try:
                self.loop.run(self.log.close(), timeout=self.settings.timeout)
            except Exception:  # closing a dead connection: nothing left to save
                pass
        self.loop.close()

    def subject(self, kind: str, key: UUID | str) -> str:
        return f"{self.settings.prefix}.{kind}.{subject_token(key)}"


def _decode(row: Row) -> tuple[UUID | str, int, str, bytes]:
    try:
        return decode(row.payload)
    except (DataError, UnicodeDecodeError, ValueError) as e:
        msg = (
            f"undecodable message at stream sequence {row.seq} on subject {row.subject!r} "
            f"({len(row.payload)} bytes): {e}"
        )
        raise DataError(msg) from e


def _stored(row: Row) -> StoredEvent:
    oid, version, topic, state = _decode(row)
    return StoredEvent(originator_id=oid, originator_version=version, topic=topic, state=state)


def _notification(row: Row) -> Notification:
    oid, version, topic, state = _decode(row)
    return Notification(
        id=row.seq, originator_id=oid, originator_version=version, topic=topic, state=state
    )


class JetStreamAggregateRecorder(AggregateRecorder):
    """Stored events (or, with ``kind="s"``, snapshots) of aggregates, one subject each."""

    def __init__(self, connection: JetStreamConnection, *, kind: str = _EVENTS) -> None:
        self.connection = connection
        self.kind = kind

    def insert_events(
        self,
        stored_events: Sequence[StoredEvent],
        **kwargs: Any,  # eventsourcing's signature
    ) -> Sequence[int] | None:
        self._insert(stored_events, kwargs.get("tracking"))
        return None

    def _insert(self, stored_events: Sequence[StoredEvent], tracking: Tracking | None) -> list[int]:
        writes = self._writes(stored_events, tracking)
        if not writes:
            return []
        c = self.connection
        optimistic = self._optimistic
        last = c.write(
            lambda log: log.append(writes, optimistic=optimistic),
            f"insert into {writes[0].subject}",
        )
        first = last - len(writes) + 1
        return list(range(first, first + len(stored_events)))

    def _writes(
        self, stored_events: Sequence[StoredEvent], tracking: Tracking | None
    ) -> list[Write]:
        c = self.connection
        writes = [
            Write(c.subject(self.kind, e.originator_id), e.originator_version, encode(e))
            for e in stored_events
        ]
        if tracking is not None:
            writes.append(_tracking_write(c, tracking))
        if len(writes) > MAX_BATCH:
            msg = (
                f"{len(writes)} records in one insert_events(); JetStream's atomic batch holds "
                f"at most {MAX_BATCH}: nothing was written"
            )
            raise ProgrammingError(msg)
        return writes

    def _optimistic(self, w: Write) -> bool:
        # A first event (version 0 or 1) of an aggregate we have not seen is most likely a new
        # aggregate: publish expecting an empty subject instead of looking first.
        return w.position <= 1 and not w.subject.startswith(self._tracking_prefix)

    @property
    def _tracking_prefix(self) -> str:
        return f"{self.connection.settings.prefix}.{_TRACKING}."

    # -- independent saves (an extension of the library's API, used by application.stores)

    def insert_events_each(
        self, batches: Sequence[Sequence[StoredEvent]]
    ) -> list[Sequence[int] | PersistenceError]:
        """Insert several independent batches in one crossing; see ``insert_events_each_async``."""
        c = self.connection
        return c.call(self._insert_each(batches, c.log), "independent inserts")

    async def insert_events_each_async(
        self, batches: Sequence[Sequence[StoredEvent]]
    ) -> list[Sequence[int] | PersistenceError]:
        """Insert several independent batches, each atomic on its own, from a coroutine.

        What ``insert_events`` does for each batch, but the batches succeed or fail separately
        and travel together: a one-event batch is a plain conditional publish (no atomic batch,
        not serialised behind other batches), batches of different aggregates are in flight at
        once, and batches of the same aggregate land in order (a later one is not sent when an
        earlier one failed). For each batch: its notification ids, or the error ``insert_events``
        would have raised (IntegrityError on a conflict). Lost acknowledgements are resolved as
        in ``insert_events``: never a duplicate. Runs on the calling loop's own connection (see
        ``JetStreamConnection.awrite``): no thread is involved.
        """
        c = self.connection
        return await c.awrite(lambda log: self._insert_each(batches, log), "independent inserts")

    async def _insert_each(
        self, batches: Sequence[Sequence[StoredEvent]], log: JetStreamLog
    ) -> list[Sequence[int] | PersistenceError]:
        c = self.connection
        out: list[Sequence[int] | PersistenceError | None] = []
        units: list[list[Write]] = []
        for batch in batches:
            try:
                writes = self._writes(batch, None)
            except ProgrammingError as e:
                out.append(e)
                continue
            if writes:
                units.append(writes)
                out.append(None)
            else:
                out.append([])
        results = iter(await log.append_each(units, optimistic=self._optimistic))
        unit_iter = iter(units)
        for i, slot in enumerate(out):
            if slot is not None:
                continue
            writes, result = next(unit_iter), next(results)
            if isinstance(result, BaseException):
                where = f"insert into {writes[0].subject}"
                out[i] = translate(result, url=c.settings.url, where=where)
            else:
                first = result - len(writes) + 1
                out[i] = list(range(first, first + len(writes)))
        return [x for x in out if x is not None]

    def select_events(
        self,
        originator_id: UUID | str,
        *,
        gt: int | None = None,
        lte: int | None = None,
        desc: bool = False,
        limit: int | None = None,
    ) -> Sequence[StoredEvent]:
        c = self.connection
        subject = c.subject(self.kind, originator_id)
        if desc and limit == 1 and gt is None and lte is None:
            # The latest snapshot (or event): one direct get by subject.
            last = c.read(lambda: c.log.last_on_subject(subject), f"last of {subject}")
            return [] if last is None else [_stored(last)]
        # Versions increase along a subject, so stream order is version order. There is no
        # server-side index on versions: the log starts near the first version above ``gt`` (a
        # load from a snapshot reads what follows it) and skips rows at or below ``gt`` by their
        # head before they are decoded; the other bounds are applied here.
        after = max(gt or 0, 0)
        rows = c.read(lambda: c.log.read_subject(subject, after=after), f"read {subject}")
        events = [
            e
            for e in map(_stored, rows)
            if (gt is None or e.originator_version > gt)
            and (lte is None or e.originator_version <= lte)
        ]
        if desc:
            events.reverse()
        return events if limit is None else events[:limit]


READ_AHEAD: Final = 10_000
"""Rows a blocking subscription holds for its reader at most. Past it the subscription stops
its consumer, and starts another after the last row it holds once the reader has taken half:
the server would otherwise push a whole backlog at once (a 100,000-event catch-up: every row in
memory, 59 MiB, and 2.7 CPU-s of this process in its first 4.5 s, beside the nats-server's own,
while the store being caught up needs the cores; a rebuild of millions of events could run out
of memory). A consumer is stopped, not paused: nats.py answers a stalled server's flow control
on its own and drops what overflows its pending limits, so a callback that waited would bound
nothing and could lose rows."""


class JetStreamApplicationRecorder(JetStreamAggregateRecorder, ApplicationRecorder):
    """Events plus the application sequence: the stream sequence of each event message."""

    def __init__(self, connection: JetStreamConnection) -> None:
        super().__init__(connection, kind=_EVENTS)
        self.events_subject = f"{connection.settings.prefix}.{_EVENTS}.>"

    def insert_events(
        self,
        stored_events: Sequence[StoredEvent],
        **kwargs: Any,  # eventsourcing's signature
    ) -> Sequence[int] | None:
        return self._insert(stored_events, kwargs.get("tracking"))

    def select_notifications(
        self,
        start: int | None,
        limit: int,
        stop: int | None = None,
        topics: Sequence[str] = (),
        *,
        inclusive_of_start: bool = True,
    ) -> Sequence[Notification]:
        if start is None:
            start, inclusive_of_start = 1, True
        first = max(start if inclusive_of_start else start + 1, 1)
        c = self.connection
        where = f"notifications from {first}"
        wanted = frozenset(topics)
        return c.read(lambda: self._select(first, limit, stop, wanted), where)

    async def _select(
        self, first: int, limit: int, stop: int | None, topics: frozenset[str]
    ) -> list[Notification]:
        log = self.connection.log
        if not topics:
            rows = await log.read(self.events_subject, first, limit=limit, stop=stop)
            return [_notification(row) for row in rows]
        # Filter, then keep reading until `limit` matches: the library's log reader stops at
        # the first short page, so scan-then-filter would lose events.
        out: list[Notification] = []
        page = max(limit, 256)
        seq = first
        while len(out) < limit:
            rows = await log.read(self.events_subject, seq, limit=page, stop=stop)
            for row in rows:
                n = _notification(row)
                if n.topic in topics:
                    out.append(n)
                    if len(out) == limit:
                        break
            if len(rows) < page:
                break
            seq = rows[-1].seq + 1
        return out

    def max_notification_id(self) -> int | None:
        c = self.connection
        last = c.read(lambda: c.log.last(self.events_subject), "max notification id")
        return None if last is None else last.seq

    def subscribe(
        self, gt: int | None = None, topics: Sequence[str] = ()
    ) -> Subscription[ApplicationRecorder]:
        return JetStreamSubscription(self, gt=gt, topics=topics)

    async def subscribe_async(
        self,
        gt: int | None = None,
        topics: Sequence[str] = (),
        *,
        read_ahead: int = READ_AHEAD,
    ) -> AsyncGenerator[Notification, None]:
        """``subscribe`` for a coroutine: the notifications after ``gt``, then each new one as
        it lands, until the iterator is closed (an extension of the library's API, used by
        ``application.feed``).

        The ordered consumer runs on the calling loop's own connection, so a notification
        reaches its reader with no thread hand-off: the blocking ``subscribe`` takes two (the
        loop thread, then the reader's thread) before a reader on an event loop sees it. At
        most about ``read_ahead`` rows wait for the reader, as in ``subscribe``.
        """
        rows = _AsyncRows(self, gt or 0, frozenset(topics), read_ahead)
        try:
            await rows.start()
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                # nats-py's subscribe can swallow a cancellation that arrives while it waits for
                # the consumer (Python 3.11's wait_for): honour it here, or the reader waits
                # forever.
                raise asyncio.CancelledError
            while True:
                row = await rows.get()
                n = _notification(row)  # DataError names the sequence and subject
                if rows.wanted and n.topic not in rows.wanted:
                    continue
                yield n
        finally:
            await rows.close()


class _AsyncRows:
    """The rows of one ``subscribe_async``, on the reader's loop, at most about ``read_ahead``
    of them queued (``READ_AHEAD`` says why): past it the consumer is stopped and rows that
    still arrive are dropped; once the reader has taken half, a new consumer starts after the
    last row queued. Where the store has no own connections, the consumer runs on the loop
    thread and hands each row over."""

    def __init__(
        self,
        recorder: JetStreamApplicationRecorder,
        after: int,
        wanted: frozenset[str],
        read_ahead: int,
    ) -> None:
        self.wanted = wanted
        self._c = recorder.connection
        self._subject = recorder.events_subject
        self._loop = asyncio.get_running_loop()
        self._rows: asyncio.Queue[Row] = asyncio.Queue()
        self._read_ahead = max(2, read_ahead)
        self._last = after  # the last row queued (or skipped as unwanted)
        self._paused = False
        self._crossed = False  # the consumer runs on the loop thread
        # The consumer, from when it starts being made: the server pushes rows before the
        # reply ``subscribe`` returns on, so a pause can come while it is being made.
        self._consumer: asyncio.Task[_Stop] | None = None
        self._halting: asyncio.Task[None] | None = None
        self._failure: Exception | None = None

    async def start(self) -> None:
        log = await self._c.loop_log()
        self._crossed = log is None
        await self._begin(log)

    async def _begin(self, log: JetStreamLog | None) -> None:
        made = self._loop.create_task(self._consume(log, self._last + 1))
        self._consumer = made
        await made

    async def _consume(self, log: JetStreamLog | None, first: int) -> _Stop:
        if log is None:  # no own connections: the loop thread consumes and hands rows over

            def handed_over(row: Row) -> None:  # on the loop thread
                if not _unwanted(row, self.wanted):
                    self._loop.call_soon_threadsafe(self._accept, row)

            c = self._c
            return await c.acall(c.log.consume(self._subject, first, handed_over), "subscribe")
        try:
            return await log.consume(self._subject, first, self._on_msg)
        except Exception as e:
            raise translate(e, url=self._c.settings.url, where="subscribe") from e

    def _on_msg(self, row: Row) -> None:  # on the reader's loop
        if _unwanted(row, self.wanted):
            if not self._paused:
                self._last = max(self._last, row.seq)
            return
        self._accept(row)

    def _accept(self, row: Row) -> None:  # on the reader's loop
        if self._paused or row.seq <= self._last:
            return  # after a stop asked for (read again on resume), or a re-delivery
        self._last = row.seq
        self._rows.put_nowait(row)
        if self._rows.qsize() >= self._read_ahead:
            self._paused = True
            self._halting = self._loop.create_task(self._halt())

    async def _halt(self, *, closing: bool = False) -> None:
        made, self._consumer = self._consumer, None
        stop = await _made(made)
        if stop is None:
            return
        if self._crossed and closing:  # made on the loop thread: stopped there, not waited for
            self._c.loop.submit(stop())
            return
        with contextlib.suppress(Exception):  # the connection may be closing already
            if self._crossed:  # a pause: the old consumer must be gone before the new one
                await self._c.acall(stop(), "unsubscribe")
            else:
                await stop()

    async def get(self) -> Row:
        if self._paused and self._failure is None and self._rows.qsize() < self._read_ahead // 2:
            await self._resume()
        if self._failure is not None and self._rows.empty():
            raise self._failure  # after every row queued before it
        return await self._rows.get()

    async def _resume(self) -> None:
        if self._halting is not None:
            await self._halting  # the old consumer delivers nothing more
            self._halting = None
        self._paused = False
        try:
            await self._begin(None if self._crossed else await self._c.loop_log())
        except Exception as e:  # the reader raises it, after what it holds
            self._failure = e

    async def close(self) -> None:
        if self._halting is not None:
            with contextlib.suppress(Exception):
                await self._halting
        await self._halt(closing=True)


_Stop = Callable[[], Coroutine[object, object, None]]
"""A consumer's unsubscribe."""


async def _made(consumer: asyncio.Task[_Stop] | None) -> _Stop | None:
    """The unsubscribe of ``consumer`` once it is made, None if it never was: a consumer asked
    to stop while it is being made already delivers, so it is stopped once made, not left
    running beside the next one (which it would overtake: rows lost)."""
    if consumer is None:
        return None
    await asyncio.wait({consumer})
    if consumer.cancelled() or consumer.exception() is not None:
        return None
    return consumer.result()


def _unwanted(row: Row, wanted: frozenset[str]) -> bool:
    """Whether a subscription narrowed to ``wanted`` topics can skip ``row`` before decoding
    it (a row whose topic cannot be read is kept: decoding it names the problem)."""
    if not wanted:
        return False
    try:
        return topic(row.payload) not in wanted
    except (DataError, UnicodeDecodeError):
        return False


class JetStreamSubscription(Subscription[JetStreamApplicationRecorder]):
    """Notifications after ``gt``, blocking for new ones, from an ordered consumer.

    The consumer's callback runs on the loop thread and only enqueues; ``__next__`` blocks on
    the queue in the caller's thread; ``stop()`` from any thread wakes it with a sentinel. At
    most about ``read_ahead`` rows wait in the queue (``READ_AHEAD``): the consumer is stopped
    there and started again, after the last queued row, once the reader has taken half.
    """

    def __init__(
        self,
        recorder: JetStreamApplicationRecorder,
        gt: int | None = None,
        topics: Sequence[str] = (),
        *,
        read_ahead: int = READ_AHEAD,
    ) -> None:
        super().__init__(recorder=recorder, gt=gt, topics=topics)
        self._wanted = frozenset(topics)
        self._queue: queue.SimpleQueue[Row | None] = queue.SimpleQueue()
        self._failure: Exception | None = None
        self._read_ahead = max(2, read_ahead)
        self._last_queued = gt or 0  # on the loop thread
        self._paused = False  # on the loop thread: rows arriving now are dropped, read again
        self._resume_asked = threading.Event()  # the reader asked for a new consumer
        self._pausing = False  # on the loop thread: the consumer is being stopped
        c = recorder.connection
        self._connection = c
        self._subject = recorder.events_subject
        # On the loop thread, from when it starts being made (``_AsyncRows._consumer``).
        self._consumer: asyncio.Task[_Stop] | None = None
        c.call(self._begin(), "subscribe")

    async def _begin(self) -> None:  # on the loop thread
        c = self._connection
        made = asyncio.ensure_future(
            c.log.consume(self._subject, self._last_queued + 1, self._on_msg)
        )
        self._consumer = made
        await made

    def _on_msg(self, row: Row) -> None:  # on the loop thread
        if self._paused or row.seq <= self._last_queued:
            return  # after a stop asked for (read again on resume), or a re-delivery
        self._last_queued = row.seq
        # Skip unwanted topics here: the reader's thread is not woken for them at all.
        if not _unwanted(row, self._wanted):
            self._queue.put(row)
            if self._queue.qsize() >= self._read_ahead and not self._has_been_stopped:
                self._paused = True
                self._pausing = True
                self._connection.loop.loop.create_task(self._pause())

    async def _pause(self) -> None:  # on the loop thread
        try:
            with contextlib.suppress(Exception):  # gone with its connection: nothing to stop
                await self._stop_consumer()
        finally:
            self._pausing = False  # a resume asked for meanwhile was left to the check below
        if self._has_been_stopped:
            return
        if self._queue.qsize() < self._read_ahead // 2:  # taken meanwhile: no one will ask
            await self._resume()

    async def _resume(self) -> None:  # on the loop thread
        self._resume_asked.clear()
        if (
            not self._paused
            or self._pausing  # the old consumer may still deliver: _pause resumes after it
            or self._consumer is not None
            or self._has_been_stopped
        ):
            return
        self._paused = False
        c = self._connection
        try:
            await self._begin()
        except Exception as e:  # the reader raises it, after what it holds
            self._failure = translate(e, url=c.settings.url, where="subscribe (resume)")
            self._queue.put(None)
            return
        if self._has_been_stopped:  # stopped while the consumer was being made
            await self._stop_consumer()

    def _taken(self) -> None:  # on the reader's thread, after it took rows
        if (
            self._queue.qsize() < self._read_ahead // 2
            and not self._resume_asked.is_set()
            and not self._has_been_stopped
        ):
            self._resume_asked.set()
            self._connection.loop.submit(self._resume())

    def stop(self) -> None:
        if self._has_been_stopped:
            return
        super().stop()
        self._queue.put(None)
        self._connection.loop.submit(self._stop_consumer())

    async def _stop_consumer(self) -> None:  # on the loop thread
        made, self._consumer = self._consumer, None
        stop = await _made(made)
        if stop is not None:
            await stop()

    def __next__(self) -> Notification:
        while not self._has_been_stopped:
            item = self._queue.get()
            if item is None:
                if self._failure is not None and not self._has_been_stopped:
                    self._queue.put(None)
                    raise self._failure
                break
            self._taken()
            n = _notification(item)  # DataError names the sequence and subject
            if self._wanted and n.topic not in self._wanted:
                continue
            self._last_notification_id = item.seq
            return n
        raise StopIteration

    def take_batch(self, timeout: float, limit: int) -> tuple[list[Notification], bool] | None:
        """Up to ``limit`` notifications, in order: the first waited for up to ``timeout`` s,
        the rest already queued; and whether the subscription has ended (stopped). None when
        nothing came in time. Raises as ``__next__`` does, after what came before the failure.

        For a reader that takes batches (the projection runner's ``Feed``): one call per batch,
        where ``__next__`` read by a thread of the reader's own crossed two queues and two
        threads per notification (a tenth of a catch-up's Python time, and its GIL hand-offs).
        Only the reading thread calls it; ``stop()`` from any thread wakes it.
        """
        if self._failure is not None:
            raise self._failure
        try:
            item = self._queue.get(timeout=timeout) if timeout > 0 else self._queue.get_nowait()
        except queue.Empty:
            return None
        try:
            return self._batch(item, limit)
        finally:
            self._taken()

    def _batch(self, item: Row | None, limit: int) -> tuple[list[Notification], bool]:
        out: list[Notification] = []
        while item is not None and not self._has_been_stopped:
            try:
                n = _notification(item)
            except DataError as e:
                if not out:
                    raise
                self._failure = e  # raised by the next call: what came before is delivered
                return out, False
            if not (self._wanted and n.topic not in self._wanted):
                self._last_notification_id = item.seq
                out.append(n)
                if len(out) >= limit:
                    return out, False
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return out, False
        self._queue.put(None)  # ended: the next call says so again at once
        if self._failure is not None and not self._has_been_stopped:  # a consumer lost
            if not out:
                raise self._failure
            return out, False  # the next call raises it
        return out, True


def _tracking_write(c: JetStreamConnection, tracking: Tracking) -> Write:
    record = StoredEvent(
        originator_id=tracking.application_name,
        originator_version=tracking.notification_id,
        topic="",
        state=b"",
    )
    subject = c.subject(_TRACKING, tracking.application_name)
    return Write(subject, tracking.notification_id, encode(record))


class JetStreamTrackingRecorder(TrackingRecorder):
    """Tracking records on ``<prefix>.t.<application>``: one message per position.

    Strictly increasing positions per upstream application are enforced like aggregate
    versions (expected last subject sequence), so a lower or repeated id is an IntegrityError.
    """

    def __init__(self, connection: JetStreamConnection) -> None:
        self.connection = connection

    def insert_tracking(self, tracking: Tracking) -> None:
        c = self.connection
        write = _tracking_write(c, tracking)
        c.write(
            lambda log: log.append([write], optimistic=lambda _: False), f"tracking {write.subject}"
        )

    def max_tracking_id(self, application_name: str) -> int | None:
        c = self.connection
        subject = c.subject(_TRACKING, application_name)
        last = c.read(lambda: c.log.last(subject), f"tracking {subject}")
        return None if last is None else _decode(last)[1]


class JetStreamProcessRecorder(
    JetStreamTrackingRecorder, JetStreamApplicationRecorder, ProcessRecorder
):
    """Events and the tracking record that caused them, in one atomic batch."""

    def __init__(self, connection: JetStreamConnection) -> None:
        JetStreamApplicationRecorder.__init__(self, connection)


def _stream_name(app_name: str) -> str:
    base = re.sub(r"[^A-Za-z0-9_-]", "_", app_name.upper()) if app_name else ""
    return f"{base}_EVENTS" if base else "EVENTS"


class JetStreamFactory(InfrastructureFactory[JetStreamTrackingRecorder]):
    """Builds JetStream recorders that share one connection and one loop thread.

    Connects (and creates or verifies the stream) on construction, so a bad URL, a server older
    than 2.12 or an incompatible stream fails the application's start, not its first save.
    """

    NATS_URL = "NATS_URL"
    NATS_STREAM = "NATS_STREAM"
    NATS_SUBJECT_PREFIX = "NATS_SUBJECT_PREFIX"
    NATS_STREAM_REPLICAS = "NATS_STREAM_REPLICAS"
    NATS_TIMEOUT = "NATS_TIMEOUT"
    NATS_OWN_CONNECTIONS = "NATS_OWN_CONNECTIONS"

    DEFAULT_URL = "nats://127.0.0.1:4222"
    DEFAULT_TIMEOUT = 5.0

    def __init__(self, env: Environment | EnvType | None) -> None:
        super().__init__(env)
        stream = self.env.get(self.NATS_STREAM) or _stream_name(self.env.name)
        settings = StreamSettings(
            url=self.env.get(self.NATS_URL) or self.DEFAULT_URL,
            stream=stream,
            prefix=self.env.get(self.NATS_SUBJECT_PREFIX) or stream,
            replicas=int(self.env.get(self.NATS_STREAM_REPLICAS) or 1),
            timeout=float(self.env.get(self.NATS_TIMEOUT) or self.DEFAULT_TIMEOUT),
        )
        own = (self.env.get(self.NATS_OWN_CONNECTIONS) or "yes").lower()
        self.connection = JetStreamConnection(
            settings, own_connections=own not in ("0", "no", "false", "off")
        )

    def aggregate_recorder(self, purpose: str = "events") -> AggregateRecorder:
        kind = _SNAPSHOTS if purpose == "snapshots" else _EVENTS
        return JetStreamAggregateRecorder(self.connection, kind=kind)

    def application_recorder(self) -> ApplicationRecorder:
        return JetStreamApplicationRecorder(self.connection)

    def tracking_recorder(
        self, tracking_recorder_class: type[JetStreamTrackingRecorder] | None = None
    ) -> JetStreamTrackingRecorder:
        if tracking_recorder_class is None:
            topic = self.env.get(self.TRACKING_RECORDER_TOPIC)
            tracking_recorder_class = resolve_topic(topic) if topic else JetStreamTrackingRecorder
        if not (
            isinstance(tracking_recorder_class, type)
            and issubclass(tracking_recorder_class, JetStreamTrackingRecorder)
        ):
            msg = f"{tracking_recorder_class!r} is not a JetStreamTrackingRecorder subclass"
            raise ProgrammingError(msg)
        return tracking_recorder_class(self.connection)

    def process_recorder(self) -> ProcessRecorder:
        return JetStreamProcessRecorder(self.connection)

    def close(self) -> None:
        self.connection.close()


Factory = JetStreamFactory
