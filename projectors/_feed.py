"""The runner's read side: a subscription read ahead by a thread, taken in batches.

A ``Subscription``'s ``__next__`` blocks with no time limit, so the runner's thread cannot wait
on it and still renew its lease or notice a quiet spell. A daemon thread reads it into a bounded
queue instead, and the runner's thread ``take``s from the queue with a time limit: the first
notification it waits for, then whatever else is queued, up to a limit, without waiting. Live,
that is group commit: what arrived while the runner committed goes in its next commit.

Positions at or below the one the caller names, or below one already taken in the same batch,
are dropped there: a redelivery (a resubscription, a reconnect) in the middle of a batch must
not reach the store twice in one transaction, where the store's own position check, done once
per transaction, cannot see it.

A subscription that hands out batches itself (``BatchSource``: the JetStream one) is read by
the runner's thread directly, with no thread or queue of the feed's between: a notification
then crosses one queue and one thread instead of two of each.

Thread-safety: one thread ``take``s; ``close`` may be called from any thread, also while
``take`` waits, which it wakes.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from eventsourcing.persistence import Notification, Subscription

__all__ = ["QUEUE_BOUND", "BatchSource", "Feed", "Taken"]

QUEUE_BOUND = 20_000
"""Notifications read ahead of the runner."""


@runtime_checkable
class BatchSource(Protocol):
    """A subscription that can be read a batch at a time, with a time limit."""

    def take_batch(self, timeout: float, limit: int) -> tuple[list[Notification], bool] | None:
        """Up to ``limit`` notifications (the first waited for up to ``timeout`` s) and whether
        the subscription ended; None when nothing came in time. Raises when it failed."""
        ...


class _End:
    """Queued when the subscription ends (``error`` set when it failed) or the feed closes."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error


@dataclass
class Taken:
    """One batch: notifications in increasing position order, and whether the feed ended."""

    notifications: list[Notification] = field(default_factory=list)
    ended: bool = False
    """The subscription ended (or the feed was closed): take nothing more."""
    error: BaseException | None = None
    """Why the subscription ended, when it failed."""


class Feed:
    """Reads ``subscription`` ahead in a daemon thread named ``name``, or, when it is a
    ``BatchSource``, in the taking thread.

    Args:
        subscription: started by the caller; the feed stops it when it closes.
        name: the reading thread's name.
        bound: the most notifications the reading thread reads ahead.
    """

    def __init__(
        self, subscription: Subscription[Any], *, name: str, bound: int = QUEUE_BOUND
    ) -> None:
        self._subscription = subscription
        self._queue: queue.Queue[Notification | _End] = queue.Queue(maxsize=bound)
        self._closed = threading.Event()
        self._source = subscription if isinstance(subscription, BatchSource) else None
        self._thread = threading.Thread(target=self._read, name=name, daemon=True)
        if self._source is None:
            self._thread.start()

    def take(self, timeout: float, *, after: int, limit: int) -> Taken | None:
        """Wait up to ``timeout`` s for a notification past ``after``, then take what else is
        queued, up to ``limit`` in all. None when nothing came in time."""
        if self._source is not None:
            return self._take_batch(self._source, timeout, after, limit)
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            return None
        taken = Taken()
        while True:
            if isinstance(item, _End):
                taken.ended, taken.error = True, item.error
                return taken
            if item.id > after:
                taken.notifications.append(item)
                after = item.id
            if len(taken.notifications) >= limit:
                return taken
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return taken

    def _take_batch(
        self, source: BatchSource, timeout: float, after: int, limit: int
    ) -> Taken | None:
        if self._closed.is_set():
            return Taken(ended=True)
        try:
            got = source.take_batch(timeout, limit)
        except Exception as e:  # as the reading thread reports it: the runner raises it
            return Taken(ended=True, error=e)
        if got is None:
            return None
        notifications, ended = got
        taken = Taken(ended=ended or self._closed.is_set())
        for n in notifications:
            if n.id > after:
                taken.notifications.append(n)
                after = n.id
        return taken

    def close(self, *, join: bool = True) -> None:
        """Stop the subscription and wake a waiting ``take``; with ``join``, also wait for the
        reading thread (call that from the taking thread only). Idempotent."""
        self._closed.set()
        self._subscription.stop()
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(_End())  # wakes take() at once (the reader's _End may wait)
        if join and self._source is None:
            while self._thread.is_alive():  # free a reader blocked on a full queue
                with contextlib.suppress(queue.Empty):
                    self._queue.get_nowait()
                self._thread.join(0.05)

    def _read(self) -> None:
        try:
            with self._subscription:
                for notification in self._subscription:
                    if not self._put(notification):
                        return
            end = _End()
        except BaseException as e:
            end = _End(e)
        self._put(end)

    def _put(self, item: Notification | _End) -> bool:
        """Queue ``item``, waiting for room; False once the feed is closed."""
        while not self._closed.is_set():
            try:
                self._queue.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False
