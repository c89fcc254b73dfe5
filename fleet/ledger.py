"""The async face of the (sync) eventsourcing application: commands in, events out.

``ApplicationDeliberationStore`` and ``ApplicationEventFeed`` implement the dispatcher's ports and
serve the gRPC API. The application's calls block on the event store, so they run in worker threads
(``asyncio.to_thread``); the event store's own loop thread does the NATS I/O.

Writes to one aggregate are serialised per process by an asyncio lock (cheap, avoids conflict
churn when three agents answer at once) and across processes by the store's optimistic
concurrency: an IntegrityError reloads and re-applies the command.

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
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
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


class ApplicationDeliberationStore:
    """Loads, changes and saves Deliberation aggregates. Use from one asyncio loop."""

    def __init__(self, app: FleetApplication, *, cache_size: int = 4096) -> None:
        self._app = app
        self._locks: weakref.WeakValueDictionary[UUID, asyncio.Lock] = weakref.WeakValueDictionary()
        self._cache: OrderedDict[UUID, Any] = OrderedDict()
        self._cache_size = cache_size
        self._cache_lock = threading.Lock()

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
            d = self._app.repository.get(d_id, version=version)
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
        if not getattr(agg, "is_terminal", False):
            with self._cache_lock:
                self._cache[agg_id] = agg
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        if result is agg:
            return copy.deepcopy(result)  # type: ignore[no-any-return]
        return result

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
            p = self._app.repository.get(plan_id)
        except AggregateNotFoundError:
            raise PlanNotFoundError(f"Plan {plan_id} not found") from None
        if not isinstance(p, Plan):
            raise PlanNotFoundError(f"Aggregate {plan_id} is not a plan")
        return p

    async def update_plan(self, plan_id: UUID, change: Callable[[Plan], T]) -> T:
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
