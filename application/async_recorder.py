"""The event store's async face (``application.ports.AsyncRecorder``) for every recorder.

The JetStream recorder has it natively: it saves and subscribes on the caller's loop, with no
thread hand-off. The library's other recorders (the in-memory one of the unit tests, SQLite,
PostgreSQL) are blocking; ``ThreadedRecorder`` gives them the same face by running their calls in
worker threads. The group commit and the event feed then have one path each, typed, whatever the
recorder.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING
from uuid import UUID

from eventsourcing.persistence import (
    ApplicationRecorder,
    IntegrityError,
    Notification,
    OperationalError,
    StoredEvent,
)

from application.ports import AsyncRecorder

__all__ = ["READ_AHEAD", "ThreadedRecorder", "async_recorder"]

READ_AHEAD = 10_000
"""Notifications a subscription holds for a slow reader at most, as the JetStream recorder's
(``eventstore.jetstream.READ_AHEAD``): a follower that falls behind a long stream holds a
bounded part of it, not all of it."""


def async_recorder(recorder: ApplicationRecorder) -> AsyncRecorder:
    """``recorder`` itself when it has the async face, else ``recorder`` in worker threads."""
    if isinstance(recorder, AsyncRecorder):
        return recorder
    return ThreadedRecorder(recorder)


class ThreadedRecorder:
    """``AsyncRecorder`` over a blocking recorder: each save, and the subscription's blocking
    reads, in a worker thread. Use from one asyncio loop."""

    def __init__(self, recorder: ApplicationRecorder) -> None:
        self._recorder = recorder

    async def insert_events_each_async(
        self, batches: Sequence[Sequence[StoredEvent]]
    ) -> list[Sequence[int] | Exception]:
        return await asyncio.to_thread(self._insert_each, batches)

    def _insert_each(
        self, batches: Sequence[Sequence[StoredEvent]]
    ) -> list[Sequence[int] | Exception]:
        """One ``insert_events`` per batch, in order; after a failure, the same aggregate's
        later batches are not written (as the JetStream recorder does)."""
        failed: dict[UUID | str | None, Exception] = {}
        out: list[Sequence[int] | Exception] = []
        for batch in batches:
            key = batch[0].originator_id if batch else None
            if key in failed:
                earlier = failed[key]
                kind = IntegrityError if isinstance(earlier, IntegrityError) else OperationalError
                out.append(kind(f"not written: an earlier save of {key} failed ({earlier})"))
                continue
            try:
                ids = self._recorder.insert_events(list(batch)) if batch else []
                out.append(list(ids or []))
            except Exception as e:
                failed[key] = e
                out.append(e)
        return out

    async def subscribe_async(
        self,
        gt: int | None = None,
        topics: Sequence[str] = (),
        *,
        read_ahead: int = READ_AHEAD,
    ) -> AsyncGenerator[Notification, None]:
        """The library's blocking subscription, read in a thread and handed to the loop; the
        thread waits while ``read_ahead`` notifications wait for the reader."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Notification | BaseException] = asyncio.Queue()
        slots = threading.Semaphore(max(1, read_ahead))
        subscription = self._recorder.subscribe(gt=gt, topics=topics)

        def pump() -> None:
            try:
                for n in subscription:
                    slots.acquire()
                    loop.call_soon_threadsafe(queue.put_nowait, n)
            except BaseException as e:  # handed to the async side, which raises it
                with contextlib.suppress(RuntimeError):  # loop already closed
                    loop.call_soon_threadsafe(queue.put_nowait, e)

        thread = threading.Thread(target=pump, name="fleet-feed", daemon=True)
        thread.start()
        try:
            while True:
                item = await queue.get()
                slots.release()
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            subscription.stop()
            slots.release(max(1, read_ahead))  # a pump waiting for a slot sees the stop


if TYPE_CHECKING:  # the JetStream recorder has the port's face, as mypy sees it
    from eventstore.jetstream import JetStreamApplicationRecorder

    def _jetstream_is_async(r: JetStreamApplicationRecorder) -> AsyncRecorder:
        return r

    def _threaded_is_async(r: ThreadedRecorder) -> AsyncRecorder:
        return r
