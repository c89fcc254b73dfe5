"""The application's notification log as async iterators: the event feed that dispatchers, the
watch hub and the API follow (history, then live)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from eventsourcing.utils import get_topic

from application.app import FleetApplication
from application.async_recorder import async_recorder
from application.events import fleet_event
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
        self._recorder = async_recorder(app.recorder)

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
                yield FeedItem(n.id, fleet_event(self._app.mapper.to_domain_event(n)))
            position = page[-1].id

    async def follow(self, after: int, types: Sequence[type] = ()) -> AsyncIterator[FeedItem]:
        # On this loop's own connection (JetStream): each event reaches us with no thread
        # hand-off; a blocking recorder is read in a thread (``ThreadedRecorder``).
        topics = [get_topic(t) for t in types]
        notifications = self._recorder.subscribe_async(gt=after, topics=topics)
        try:
            async for n in notifications:
                yield FeedItem(n.id, fleet_event(self._app.mapper.to_domain_event(n)))
        finally:
            await notifications.aclose()
