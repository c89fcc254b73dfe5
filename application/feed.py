"""The application's notification log as async iterators: the event feed that dispatchers, the
watch hub and the API follow (history, then live)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Sequence

from eventsourcing.utils import get_topic

from application.app import FleetApplication
from application.ports import FeedItem

__all__ = ["ApplicationEventFeed"]


class ApplicationEventFeed:
    """The application's notification log as async iterators (history, then live).

    ``types`` narrows either to some event classes: the others are skipped by topic before they
    are decoded into domain events, which is most of a notification's cost (a dispatcher needs
    two kinds of event out of a dozen per deliberation).
    """

    def __init__(self, app: FleetApplication, *, page_size: int = 500) -> None:
        self._app = app
        self._page = page_size

    async def history(self, after: int, types: Sequence[type] = ()) -> AsyncIterator[FeedItem]:
        recorder = self._app.recorder
        topics = [get_topic(t) for t in types]
        head = await asyncio.to_thread(recorder.max_notification_id) or 0
        position = after
        while position < head:
            page = await asyncio.to_thread(
                recorder.select_notifications, position + 1, self._page, head, topics
            )
            if not page:
                return
            for n in page:
                yield FeedItem(n.id, self._app.mapper.to_domain_event(n))
            position = page[-1].id

    async def follow(self, after: int, types: Sequence[type] = ()) -> AsyncIterator[FeedItem]:
        topics = [get_topic(t) for t in types]
        subscribe_async = getattr(self._app.recorder, "subscribe_async", None)
        if subscribe_async is not None:
            # On this loop's own connection: each event reaches us with no thread hand-off.
            notifications = subscribe_async(gt=after, topics=topics)
            try:
                async for n in notifications:
                    yield FeedItem(n.id, self._app.mapper.to_domain_event(n))
            finally:
                await notifications.aclose()
            return
        async for item in self._follow_in_thread(after, topics):
            yield item

    async def _follow_in_thread(self, after: int, topics: list[str]) -> AsyncIterator[FeedItem]:
        """The library's blocking subscription, read in a thread (recorders without an async
        one: the in-memory recorder of the unit tests)."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[FeedItem | BaseException] = asyncio.Queue()
        subscription = self._app.recorder.subscribe(gt=after, topics=topics)

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
