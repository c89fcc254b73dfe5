"""Group commit for the ledger: many callers' changes applied together, each saved on its own.

Callers queue (aggregate id, change); one writer task, on the caller's event loop, takes whatever
is queued (up to ``max_group``), applies the changes in queue order (so in order per aggregate)
and saves them in ONE crossing to the event store. Each change's events are their own atomic
unit, independent of the others (``insert_events_each_async``):

* a change that records one event (almost all of them: a proposal, a rating, Started) is one
  plain conditional publish: ~0.2 ms, in flight together with every other unit of the group,
  instead of a share of one ADR-50 atomic batch (~2.3 ms fixed on a file stream, serialised per
  stream, so batches queue behind each other under load);
* a change that records several events (scores and Completed) is one atomic batch;
* units of one aggregate land in order; a conflict (another process wrote the aggregate) fails
  that unit and the later ones of the same aggregate only: the aggregate is reloaded and those
  changes re-applied, as a single update would; the rest of the group is unaffected.

The writer runs on the caller's loop and awaits the store (no worker thread per save: on two
cores each thread hand-off can wait out the GIL's 5 ms switch interval under load). Only replays
(a cache miss, a reload after a conflict) and snapshots go to a worker thread, as they are sync
library calls that read the store.

Per caller the semantics are those of one update: a change that raises affects only its caller
(if it recorded events before raising, the aggregate is reloaded and the others re-applied, since
its state is no longer the stored one); each caller gets its own result or exception, and only
once its events are stored; snapshots are taken after that, so ``drain`` waits for them before
the application closes. The units go through the event store's async face
(``application.ports.AsyncRecorder``): the JetStream recorder's own, or, for a blocking recorder
(the in-memory one in unit tests), ``ThreadedRecorder``, which saves them one by one in a worker
thread.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar, cast
from uuid import UUID

from eventsourcing.domain import Aggregate, CanMutateAggregate
from eventsourcing.persistence import IntegrityError, StoredEvent

from application.app import FleetApplication
from application.async_recorder import async_recorder

T = TypeVar("T")
G = TypeVar("G", bound=Aggregate)
Event = CanMutateAggregate[UUID]
"""A domain event of one of the application's aggregates."""
log = logging.getLogger(__name__)

CONFLICT_RETRIES = 20


class AggregateCache:
    """The open aggregates the store last saved, newest last (an LRU). Thread-safe.

    Safe with other writers because every save is checked against the stream (optimistic
    concurrency): a stale entry fails to save, is dropped, and the aggregate is reloaded.
    """

    def __init__(self, size: int) -> None:
        self._items: OrderedDict[UUID, Aggregate] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def take(self, agg_id: UUID) -> Aggregate | None:
        """Remove and return the cached aggregate (the caller changes it), or None."""
        with self._lock:
            return self._items.pop(agg_id, None)

    def copy_of(self, agg_id: UUID) -> Aggregate | None:
        """A deep copy of the cached aggregate, or None: readers never get the cached object."""
        with self._lock:
            agg = self._items.get(agg_id)
            return None if agg is None else copy.deepcopy(agg)

    def keep(self, agg_id: UUID, agg: Aggregate) -> None:
        """Cache an aggregate just saved, unless terminal or older than the one cached."""
        if getattr(agg, "is_terminal", False):
            with self._lock:
                self._items.pop(agg_id, None)
            return
        with self._lock:
            cached = self._items.get(agg_id)
            if cached is not None and cached.version > agg.version:
                return  # a newer state was saved meanwhile (e.g. create racing an update)
            self._items[agg_id] = agg
            self._items.move_to_end(agg_id)
            while len(self._items) > self._size:
                self._items.popitem(last=False)

    def forget(self, agg_id: UUID) -> None:
        with self._lock:
            self._items.pop(agg_id, None)


@dataclass(eq=False)
class Change:
    """One caller's command, waiting for the group writer."""

    agg_id: UUID
    change: Callable[[Aggregate], object]
    load: Callable[[UUID], Aggregate]
    future: asyncio.Future[object]
    outcome: tuple[Literal[True], object] | tuple[Literal[False], BaseException] | None = None
    """(True, result) or (False, exception) once applied; None while not (or no longer) applied."""
    events: list[Event] = field(default_factory=list)
    """The domain events the change recorded (its unit: saved atomically, on its own)."""

    def settle(self) -> None:
        """Hand the outcome to the caller (unless it was cancelled meanwhile)."""
        if self.future.done():
            return  # the caller was cancelled; its change may still have been saved
        if self.outcome is None:
            self.future.set_exception(RuntimeError(f"{self.agg_id}: change not applied"))
        elif self.outcome[0]:
            self.future.set_result(self.outcome[1])
        else:
            self.future.set_exception(self.outcome[1])

    def fail(self, error: BaseException) -> None:
        self.outcome = (False, error)
        self.settle()


class GroupWriter:
    """Queues changes and commits them in groups. Use from one asyncio loop.

    Args:
        app: the application whose mapper and recorder store the events.
        cache: the store's aggregate cache, shared with its readers.
        max_group: most changes taken in one group.
    """

    def __init__(self, app: FleetApplication, cache: AggregateCache, *, max_group: int) -> None:
        self._app = app
        self._cache = cache
        self._max_group = max_group
        self._queue: deque[Change] = deque()
        self._writer: asyncio.Task[None] | None = None
        self._recorder = async_recorder(app.recorder)
        self.groups_committed = 0
        """Groups taken by the writer (each one crossing to the store, plus retries)."""
        self.conflicts_retried = 0
        """Aggregates reloaded and re-applied after another writer got there first."""

    async def submit(self, agg_id: UUID, change: Callable[[G], T], load: Callable[[UUID], G]) -> T:
        (result,) = await self.submit_in_order(agg_id, [change], load)
        return result

    async def submit_in_order(
        self, agg_id: UUID, changes: Sequence[Callable[[G], T]], load: Callable[[UUID], G]
    ) -> list[T]:
        """Queue ``changes`` together (one group, this order) and wait for all of them.

        Each is its own unit, stored once the ones before it are; a change that raises records
        nothing and does not stop the later ones. Raises the first error, once all are settled.
        """
        loop = asyncio.get_running_loop()
        futures: list[asyncio.Future[object]] = []
        for change in changes:
            future: asyncio.Future[object] = loop.create_future()
            # The writer handles every kind of aggregate alike; ``load`` gives ``change`` the
            # kind it takes, and its future gets what it returned (a ``T``).
            erased = cast("Callable[[Aggregate], object]", change)
            self._queue.append(Change(agg_id, erased, load, future))
            futures.append(future)
        if self._writer is None or self._writer.done():
            self._writer = loop.create_task(self._write_groups(), name="ledger-group-commit")
        if len(futures) == 1:
            return [cast(T, await futures[0])]
        outcomes = await asyncio.gather(*futures, return_exceptions=True)
        for o in outcomes:
            if isinstance(o, BaseException):
                raise o
        return cast("list[T]", list(outcomes))

    async def drain(self) -> None:
        """Wait until every queued change is settled and its snapshots are taken.

        Callers are answered once their events are stored, before the snapshots those events
        call for: whoever closes the application must drain first, or the last snapshots are
        lost (a later load then replays from further back). Changes queued meanwhile are
        waited for too. The writer's own failures are its callers' to hear, not raised here.
        """
        while (writer := self._writer) is not None and not writer.done():
            await asyncio.wait({writer})

    async def save_units(
        self, units: Sequence[Sequence[StoredEvent]]
    ) -> Sequence[Sequence[int] | Exception]:
        """Save independent units (each atomic; same-aggregate ones in order) in one go."""
        return await self._recorder.insert_events_each_async(units)

    # ------------------------------------------------------------------ the writer

    async def _write_groups(self) -> None:
        while self._queue:
            n = min(len(self._queue), self._max_group)
            group = [self._queue.popleft() for _ in range(n)]
            self.groups_committed += 1
            try:
                await self._commit(group)
            except asyncio.CancelledError:
                # The loop is shutting down: nobody will write what is queued.
                for c in (*group, *self._queue):
                    c.future.cancel()
                self._queue.clear()
                raise
            except Exception as e:  # a bug in the writer: every caller of the group hears of it
                log.exception("group commit failed")
                for c in group:
                    if not c.future.done():
                        c.fail(e)

    async def _commit(self, group: list[Change]) -> None:
        work: dict[UUID, list[Change]] = {}
        for c in group:
            work.setdefault(c.agg_id, []).append(c)
        reload = False
        for attempt in range(CONFLICT_RETRIES):
            work = await self._commit_once(work, reload=reload)
            if not work:
                return
            self.conflicts_retried += len(work)
            log.debug("%d aggregate(s) conflicted, retry %d", len(work), attempt)
            reload = True
            await asyncio.sleep(0.002 * attempt)
        for agg_id, changes in work.items():
            msg = f"Aggregate {agg_id}: {CONFLICT_RETRIES} write conflicts in a row"
            for c in changes:
                c.fail(IntegrityError(msg))

    async def _commit_once(
        self, work: dict[UUID, list[Change]], *, reload: bool
    ) -> dict[UUID, list[Change]]:
        """Apply and save ``work``; settle every change that is final. Returns the changes to
        apply again to a reloaded aggregate (another writer got there first)."""
        aggs = await self._aggregates(work, reload=reload)
        applied: list[tuple[UUID, Aggregate, list[Change]]] = []
        for agg_id, agg in aggs.items():
            done = await self._apply(agg_id, agg, work[agg_id])
            if done is not None:
                applied.append((agg_id, *done))
        units: list[list[StoredEvent]] = []
        for _, _, changes in applied:
            for c in changes:
                if c.events:
                    units.append([self._app.mapper.to_stored_event(e) for e in c.events])
        results = iter(await self.save_units(units) if units else [])
        retry: dict[UUID, list[Change]] = {}
        snapshots: list[tuple[UUID, int]] = []
        for agg_id, agg, changes in applied:
            error: Exception | None = None
            for i, c in enumerate(changes):
                result = next(results) if c.events else None
                if error is None and isinstance(result, Exception):
                    error = result
                    if isinstance(result, IntegrityError):
                        retry[agg_id] = changes[i:]
                if error is not None:
                    if agg_id not in retry:
                        c.fail(error)  # nothing of it is stored: its caller hears why
                    continue
                snapshots += self._snapshot_points(agg, c.events)
                c.settle()
            if error is None:
                self._cache.keep(agg_id, agg)
        for changes in retry.values():
            for c in changes:
                c.outcome, c.events = None, []
        if snapshots:
            await asyncio.to_thread(self._take_snapshots, snapshots)
        return retry

    async def _aggregates(
        self, work: dict[UUID, list[Change]], *, reload: bool
    ) -> dict[UUID, Aggregate]:
        """Each aggregate to change: the cached one, else loaded (in a worker thread)."""
        aggs: dict[UUID, Aggregate] = {}
        missing: list[tuple[UUID, Callable[[UUID], Aggregate]]] = []
        for agg_id, changes in work.items():
            agg = None if reload else self._cache.take(agg_id)
            if agg is None:
                if reload:
                    self._cache.forget(agg_id)
                missing.append((agg_id, changes[0].load))
            else:
                aggs[agg_id] = agg
        if missing:
            for agg_id, loaded in await asyncio.to_thread(_load_all, missing):
                if isinstance(loaded, Exception):
                    for c in work[agg_id]:
                        c.fail(loaded)
                else:
                    aggs[agg_id] = loaded
        return aggs

    async def _apply(
        self, agg_id: UUID, agg: Aggregate | None, changes: list[Change]
    ) -> tuple[Aggregate, list[Change]] | None:
        """Apply ``changes`` in order, each one's events kept apart as its unit. Returns the
        aggregate and the changes that succeeded, or None when none did. Failed changes are
        settled here; the others get their outcome (delivered once their events are stored)."""
        pending = list(changes)
        while pending:
            if agg is None:  # a change left the aggregate half-changed: start again from the store
                try:
                    agg = await asyncio.to_thread(pending[0].load, agg_id)
                except Exception as e:
                    for c in pending:
                        c.fail(e)
                    return None
            ok: list[Change] = []
            polluted = False
            for c in pending:
                try:
                    result = c.change(agg)
                except Exception as e:
                    # Commands change state only through events: with none pending, the
                    # aggregate is as it was; otherwise its state is not the stored one.
                    polluted = bool(agg.pending_events)
                    c.fail(e)
                    if polluted:
                        break
                    continue
                c.events = list(agg.collect_events())
                c.outcome = (True, copy.deepcopy(result) if result is agg else result)
                ok.append(c)
            if not polluted:
                return (agg, ok) if ok else None
            pending = [c for c in pending if not c.future.done()]
            for c in pending:
                c.outcome, c.events = None, []
            agg = None
        return None

    # ------------------------------------------------------------------ snapshots

    def _snapshot_points(self, agg: Aggregate, events: list[Event]) -> list[tuple[UUID, int]]:
        """Where the application takes snapshots (as ``Application.save`` would)."""
        intervals = self._app.snapshotting_intervals
        if self._app.snapshots is None or not intervals:
            return []
        interval = intervals.get(type(agg))
        if not interval:
            return []
        return [
            (e.originator_id, e.originator_version)
            for e in events
            if e.originator_version % interval == 0
        ]

    def _take_snapshots(self, points: list[tuple[UUID, int]]) -> None:
        for agg_id, version in points:
            try:
                self._app.take_snapshot(agg_id, version=version)
            except Exception:  # the events are stored; a snapshot only shortens later replays
                log.exception("aggregate %s: snapshot at version %d failed", agg_id, version)


def _load_all(
    wanted: list[tuple[UUID, Callable[[UUID], Aggregate]]],
) -> list[tuple[UUID, Aggregate | Exception]]:
    """Load each aggregate; an exception (not found, say) is returned in its place."""
    out: list[tuple[UUID, Aggregate | Exception]] = []
    for agg_id, load in wanted:
        try:
            out.append((agg_id, load(agg_id)))
        except Exception as e:
            out.append((agg_id, e))
    return out
