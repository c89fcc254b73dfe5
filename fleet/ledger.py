"""The async face of the (sync) eventsourcing application: commands in, events out.

``ApplicationDeliberationStore`` and ``ApplicationEventFeed`` implement the dispatcher's ports and
serve the gRPC API. The application's calls block on the event store, so they run in worker threads
(``asyncio.to_thread``); the event store's own loop thread does the NATS I/O.

Writes to one aggregate are serialised per process by an asyncio lock (cheap, avoids conflict
churn when three agents answer at once) and across processes by the store's optimistic
concurrency: an IntegrityError reloads and re-applies the command.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import IntegrityError

from aggregates import Deliberation
from dispatchers.ports import FeedItem
from fleet.application import FleetApplication

T = TypeVar("T")
log = logging.getLogger(__name__)

_CONFLICT_RETRIES = 20


class DeliberationNotFoundError(KeyError):
    """No deliberation with this id (or task id) was ever requested."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "deliberation not found"


class ApplicationDeliberationStore:
    """Loads, changes and saves Deliberation aggregates. Use from one asyncio loop."""

    def __init__(self, app: FleetApplication) -> None:
        self._app = app
        self._locks: weakref.WeakValueDictionary[UUID, asyncio.Lock] = weakref.WeakValueDictionary()

    def _lock(self, d_id: UUID) -> asyncio.Lock:
        lock = self._locks.get(d_id)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[d_id] = lock
        return lock

    async def get(self, deliberation_id: UUID, version: int | None = None) -> Deliberation:
        return await asyncio.to_thread(self._get, deliberation_id, version)

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
        d = self._get(d_id)
        result = change(d)
        self._app.save(d)
        return result

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
