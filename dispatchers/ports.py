"""What a dispatcher needs from the rest of Fleet, as Protocols the composition root provides.

A dispatcher decides; it does not know how events are stored or where agents run. It changes an
aggregate only through ``DeliberationStore.update`` (load, apply a command, save; retried on a
concurrent write) and learns about new work only from the event stream (``EventFeed``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar
from uuid import UUID

from aggregates import Deliberation

T = TypeVar("T")


@dataclass(frozen=True)
class FeedItem:
    position: int
    """The event's notification id (the JetStream stream sequence)."""
    event: Any
    """The domain event, e.g. ``Deliberation.Requested``."""


class DeliberationStore(Protocol):
    async def get(self, deliberation_id: UUID) -> Deliberation:
        """The aggregate replayed from the stream. Raises KeyError naming the id when unknown."""
        ...

    async def update(self, deliberation_id: UUID, change: Callable[[Deliberation], T]) -> T:
        """Load, apply ``change``, save its events atomically; retry on a concurrent writer.

        Domain errors raised by ``change`` propagate and nothing is saved.
        """
        ...


class EventFeed(Protocol):
    def history(self, after: int) -> AsyncIterator[FeedItem]:
        """Every event after ``after`` up to the stream's head when called; then it ends."""
        ...

    def follow(self, after: int) -> AsyncIterator[FeedItem]:
        """Every event after ``after``, in commit order, then new ones as they land; forever."""
        ...
