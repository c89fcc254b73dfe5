"""The async face of the (sync) eventsourcing application: commands in, events out.

``ApplicationDeliberationStore`` and ``ApplicationEventFeed`` implement the dispatcher's ports and
serve the gRPC API. The application's calls block on the event store, so they run in worker threads
(``asyncio.to_thread``); the event store's own loop thread does the NATS I/O.

Updates are group-committed: one writer task gathers whatever changes are queued while the
previous save is in flight, applies them in order (so in order per aggregate) in one worker-thread
call and saves every changed aggregate in one ``app.save``, i.e. one JetStream atomic batch (~2.3
ms fixed cost each, serialised per stream: saving changes one by one caps a process at a few
hundred updates/s). Each caller still gets its own result or exception, only once its events are
stored; see "group commit" below. Across processes, writes are checked by the store's optimistic
concurrency: an IntegrityError reloads and re-applies the command. ``group_commit=False`` gives
the former path: a per-aggregate asyncio lock and one save per update.

(Over 400 lines on purpose: the group writer shares the store's cache and retry rules, and the
brief for it allowed no new module; move it to ``fleet/_group_commit.py`` when it grows.)

The store keeps the open aggregates it last saved (an LRU of ``cache_size``), so an update is one
write instead of a replay plus a write. That is safe with other writers because every save is
checked against the stream (optimistic concurrency): an aggregate someone else changed fails to
save, is dropped, reloaded and the command re-applied. Readers get a copy, never the cached
object (an update in a worker thread may be changing it).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import threading
import time
import weakref
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import IntegrityError

from aggregates import Deliberation, Plan
from dispatchers.ports import FeedItem
from fleet.application import FleetApplication

T = TypeVar("T")
log = logging.getLogger(__name__)

_CONFLICT_RETRIES = 20


class DeliberationNotFoundError(KeyError):
    """No deliberation with this id (or task id) was ever requested."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "deliberation not found"


class PlanNotFoundError(KeyError):
    """No plan with this id was ever approved."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "plan not found"


@dataclass(eq=False)
class _Change:
    """One caller's command, waiting for the group writer."""

    agg_id: UUID
    change: Callable[[Any], Any]
    load: Callable[[UUID], Any]
    future: asyncio.Future[Any]
    outcome: tuple[bool, Any] | None = None
    """(True, result) or (False, exception) once applied; None while not (or no longer) applied."""


class ApplicationDeliberationStore:
    """Loads, changes and saves Deliberation aggregates. Use from one asyncio loop.

    With ``group_commit`` (the default) updates go through one writer task: whatever changes are
    queued when it is free are applied in one worker-thread call and saved in one ``app.save``
    (one atomic batch), see ``_commit_group``. Without it, each update is its own save.
    """

    def __init__(
        self,
        app: FleetApplication,
        *,
        cache_size: int = 4096,
        group_commit: bool = True,
        max_group: int = 256,
        max_batch_events: int = 1000,
    ) -> None:
        self._app = app
        self._locks: weakref.WeakValueDictionary[UUID, asyncio.Lock] = weakref.WeakValueDictionary()
        self._cache: OrderedDict[UUID, Any] = OrderedDict()
        self._cache_size = cache_size
        self._cache_lock = threading.Lock()
        self.group_commit = group_commit
        """Gather concurrent updates into one save (switch off to compare, or to rule it out)."""
        self._max_group = max_group
        self._max_batch_events = max_batch_events
        self._queue: deque[_Change] = deque()
        self._writer: asyncio.Task[None] | None = None
        self.groups_committed = 0
        """Group saves attempted (each one atomic batch unless split); for benchmarks."""

    def _lock(self, d_id: UUID) -> asyncio.Lock:
        lock = self._locks.get(d_id)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[d_id] = lock
        return lock

    async def get(self, deliberation_id: UUID, version: int | None = None) -> Deliberation:
        if version is None:
            cached = self._cached(deliberation_id)
            if isinstance(cached, Deliberation):
                return cached
        return await asyncio.to_thread(self._get, deliberation_id, version)

    def _cached(self, aggregate_id: UUID) -> Any:
        with self._cache_lock:
            agg = self._cache.get(aggregate_id)
            return None if agg is None else copy.deepcopy(agg)

    def forget(self, aggregate_id: UUID) -> None:
        """Drop a cached aggregate (e.g. another process changed it)."""
        with self._cache_lock:
            self._cache.pop(aggregate_id, None)

    def _get(self, d_id: UUID, version: int | None = None) -> Deliberation:
        try:
            d: Any = self._app.repository.get(d_id, version=version)
        except AggregateNotFoundError:
            raise DeliberationNotFoundError(f"Deliberation {d_id} not found") from None
        if not isinstance(d, Deliberation):
            raise DeliberationNotFoundError(f"Aggregate {d_id} is not a deliberation")
        return d

    async def create(self, deliberation: Deliberation) -> tuple[Deliberation, bool]:
        """Save a new deliberation. Returns (the stored one, created?): idempotent on the id."""
        async with self._lock(deliberation.id):
            try:
                await asyncio.to_thread(self._app.save, deliberation)
                return deliberation, True
            except IntegrityError:
                return await self.get(deliberation.id), False

    async def update(self, deliberation_id: UUID, change: Callable[[Deliberation], T]) -> T:
        if self.group_commit:
            return await self._grouped(deliberation_id, change, self._get)
        async with self._lock(deliberation_id):
            for attempt in range(_CONFLICT_RETRIES):
                try:
                    return await asyncio.to_thread(self._update, deliberation_id, change)
                except IntegrityError:
                    # Another process wrote first: reload and apply the command to the new state.
                    log.debug("deliberation %s: write conflict, retry %d", deliberation_id, attempt)
                    await asyncio.sleep(0.005 * (attempt + 1))
            msg = f"Deliberation {deliberation_id}: {_CONFLICT_RETRIES} write conflicts in a row"
            raise IntegrityError(msg)

    def _update(self, d_id: UUID, change: Callable[[Deliberation], T]) -> T:
        return self._update_any(d_id, change, self._get)

    def _update_any(
        self, agg_id: UUID, change: Callable[[Any], T], load: Callable[[UUID], Any]
    ) -> T:
        with self._cache_lock:
            agg = self._cache.pop(agg_id, None)
        if agg is None:
            agg = load(agg_id)
        # Popped: if the command or the save fails, the object (maybe half-changed) is dropped.
        result = change(agg)
        self._app.save(agg)
        self._keep(agg_id, agg)
        if result is agg:
            return copy.deepcopy(result)
        return result

    def _keep(self, agg_id: UUID, agg: Any) -> None:
        if getattr(agg, "is_terminal", False):
            return
        with self._cache_lock:
            self._cache[agg_id] = agg
            self._cache.move_to_end(agg_id)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    # ------------------------------------------------------------------ group commit
    #
    # Callers queue (aggregate id, change); one writer task takes everything queued (up to
    # max_group), and a worker thread applies the changes in queue order (so in order per
    # aggregate) and saves every changed aggregate in one app.save: one atomic batch instead of
    # one per change. While that batch is in flight the next group queues up, so the group size
    # follows the load with no timer. Per caller the semantics are those of one update:
    #   * a change that raises affects only its caller: the (maybe half-changed) aggregate is
    #     dropped, reloaded, and the other changes of the group to it are applied again;
    #   * IntegrityError on the group (another process wrote one of the aggregates): the group is
    #     split in halves, each saved again (pending events restored), down to the aggregate
    #     that conflicts, which is reloaded and its changes re-applied, as a single update does;
    #   * each caller gets its own result or exception, only after its events are stored.

    async def _grouped(
        self, agg_id: UUID, change: Callable[[Any], T], load: Callable[[UUID], Any]
    ) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.append(_Change(agg_id, change, load, future))
        if self._writer is None or self._writer.done():
            self._writer = loop.create_task(self._write_groups(), name="ledger-group-commit")
        return await future

    async def _write_groups(self) -> None:
        while self._queue:
            n = min(len(self._queue), self._max_group)
            group = [self._queue.popleft() for _ in range(n)]
            try:
                await asyncio.to_thread(self._commit_group, group)
            except asyncio.CancelledError:
                # The loop is shutting down: nobody will write what is queued.
                for c in (*group, *self._queue):
                    c.future.cancel()
                self._queue.clear()
                raise
            except Exception as e:  # a bug in the writer: every caller of the group hears of it
                log.exception("group commit failed")
                for c in group:
                    if c.outcome is None or c.outcome[0]:
                        c.outcome = (False, e)
            for c in group:
                if c.future.done():
                    continue  # the caller was cancelled; its change may still have been saved
                if c.outcome is None:
                    c.future.set_exception(RuntimeError(f"{c.agg_id}: change not applied"))
                elif c.outcome[0]:
                    c.future.set_result(c.outcome[1])
                else:
                    c.future.set_exception(c.outcome[1])

    def _commit_group(self, group: list[_Change]) -> None:
        by_agg: dict[UUID, list[_Change]] = {}
        for c in group:
            by_agg.setdefault(c.agg_id, []).append(c)
        changed: list[tuple[UUID, Any]] = []
        for agg_id, changes in by_agg.items():
            with self._cache_lock:
                cached = self._cache.pop(agg_id, None)
            agg = self._apply(agg_id, changes, cached)
            if agg is not None:
                changed.append((agg_id, agg))
        chunk: list[tuple[UUID, Any]] = []
        size = 0
        for agg_id, agg in changed:
            n = len(agg.pending_events)
            if chunk and size + n > self._max_batch_events:
                self._save_chunk(chunk, by_agg)
                chunk, size = [], 0
            chunk.append((agg_id, agg))
            size += n
        if chunk:
            self._save_chunk(chunk, by_agg)

    def _apply(self, agg_id: UUID, changes: list[_Change], agg: Any) -> Any:
        """Apply ``changes`` in order to ``agg`` (loaded if None). Returns the changed aggregate,
        or None when no change succeeded. Every change gets its outcome."""
        pending = list(changes)
        while pending:
            if agg is None:
                try:
                    agg = pending[0].load(agg_id)
                except Exception as e:
                    for c in pending:
                        c.outcome = (False, e)
                    return None
            failed: _Change | None = None
            for c in pending:
                try:
                    result = c.change(agg)
                except Exception as e:
                    c.outcome = (False, e)
                    failed = c
                    break
                c.outcome = (True, copy.deepcopy(result) if result is agg else result)
            if failed is None:
                return agg
            # The failed change may have half-changed the object: drop it, reload, and apply the
            # others again (those before it succeeded once; they are applied to the stored state).
            pending = [c for c in pending if c is not failed]
            for c in pending:
                c.outcome = None
            agg = None
        return None

    def _save_chunk(self, chunk: list[tuple[UUID, Any]], by_agg: dict[UUID, list[_Change]]) -> None:
        saved = [list(agg.pending_events) for _, agg in chunk]
        self.groups_committed += 1
        try:
            self._app.save(*(agg for _, agg in chunk))
        except IntegrityError:
            if len(chunk) == 1:
                agg_id, _ = chunk[0]
                self._retry_alone(agg_id, by_agg[agg_id])
                return
            # Someone else wrote one of them: find which by halves; the others save unchanged.
            for (_, agg), events in zip(chunk, saved, strict=True):
                agg.pending_events[:] = events
            mid = len(chunk) // 2
            self._save_chunk(chunk[:mid], by_agg)
            self._save_chunk(chunk[mid:], by_agg)
            return
        except Exception as e:
            for agg_id, _ in chunk:
                _fail_applied(by_agg[agg_id], e)
            return
        for agg_id, agg in chunk:
            self._keep(agg_id, agg)

    def _retry_alone(self, agg_id: UUID, changes: list[_Change]) -> None:
        """One aggregate's changes after a conflict: reload, re-apply, save; as ``update`` does."""
        live = [c for c in changes if c.outcome is not None and c.outcome[0]]
        for attempt in range(_CONFLICT_RETRIES):
            log.debug("aggregate %s: write conflict, retry %d", agg_id, attempt)
            for c in live:
                c.outcome = None
            agg = self._apply(agg_id, live, None)
            if agg is None:
                return
            live = [c for c in live if c.outcome is not None and c.outcome[0]]
            try:
                self._app.save(agg)
            except IntegrityError:
                time.sleep(0.002 * (attempt + 1))
                continue
            except Exception as e:
                _fail_applied(live, e)
                return
            self._keep(agg_id, agg)
            return
        msg = f"Aggregate {agg_id}: {_CONFLICT_RETRIES} write conflicts in a row"
        _fail_applied(live, IntegrityError(msg))

    # ------------------------------------------------------------------ plans

    async def create_plan(self, plan: Plan) -> tuple[Plan, bool]:
        """Save a newly approved plan. Returns (the stored one, created?): idempotent on the id."""
        async with self._lock(plan.id):
            try:
                await asyncio.to_thread(self._app.save, plan)
                return plan, True
            except IntegrityError:
                return await asyncio.to_thread(self._get_plan, plan.id), False

    async def get_plan(self, plan_id: UUID) -> Plan:
        return await asyncio.to_thread(self._get_plan, plan_id)

    def _get_plan(self, plan_id: UUID) -> Plan:
        try:
            p: Any = self._app.repository.get(plan_id)
        except AggregateNotFoundError:
            raise PlanNotFoundError(f"Plan {plan_id} not found") from None
        if not isinstance(p, Plan):
            raise PlanNotFoundError(f"Aggregate {plan_id} is not a plan")
        return p

    async def update_plan(self, plan_id: UUID, change: Callable[[Plan], T]) -> T:
        if self.group_commit:
            return await self._grouped(plan_id, change, self._get_plan)
        async with self._lock(plan_id):
            for attempt in range(_CONFLICT_RETRIES):
                try:
                    return await asyncio.to_thread(
                        self._update_any, plan_id, change, self._get_plan
                    )
                except IntegrityError:
                    await asyncio.sleep(0.005 * (attempt + 1))
            msg = f"Plan {plan_id}: {_CONFLICT_RETRIES} write conflicts in a row"
            raise IntegrityError(msg)

    async def history(self, deliberation_id: UUID) -> list[Any]:
        """Every stored event of one deliberation, oldest first (domain events)."""

        def read() -> list[Any]:
            return list(self._app.events.get(deliberation_id))

        events = await asyncio.to_thread(read)
        if not events:
            raise DeliberationNotFoundError(f"Deliberation {deliberation_id} not found")
        return events


def _fail_applied(changes: list[_Change], error: Exception) -> None:
    """The save failed: every change that had applied fails with ``error``."""
    for c in changes:
        if c.outcome is None or c.outcome[0]:
            c.outcome = (False, error)


class ApplicationEventFeed:
    """The application's notification log as async iterators (history, then live)."""

    def __init__(self, app: FleetApplication, *, page_size: int = 500) -> None:
        self._app = app
        self._page = page_size

    async def history(self, after: int) -> AsyncIterator[FeedItem]:
        recorder = self._app.recorder
        head = await asyncio.to_thread(recorder.max_notification_id) or 0
        position = after
        while position < head:
            page = await asyncio.to_thread(
                recorder.select_notifications, position + 1, self._page, head
            )
            if not page:
                return
            for n in page:
                yield FeedItem(n.id, self._app.mapper.to_domain_event(n))
            position = page[-1].id

    async def follow(self, after: int) -> AsyncIterator[FeedItem]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[FeedItem | BaseException] = asyncio.Queue()
        subscription = self._app.recorder.subscribe(gt=after)

        def pump() -> None:
            try:
                for n in subscription:
                    item = FeedItem(n.id, self._app.mapper.to_domain_event(n))
                    loop.call_soon_threadsafe(queue.put_nowait, item)
            except BaseException as e:  # handed to the async side, which raises it
                with contextlib.suppress(RuntimeError):  # loop already closed
                    loop.call_soon_threadsafe(queue.put_nowait, e)

        thread = threading.Thread(target=pump, name="fleet-feed", daemon=True)
        thread.start()
        try:
            while True:
                item = await queue.get()
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            subscription.stop()
