"""What the rest of Fleet needs from the application layer, as Protocols.

A dispatcher decides; it does not know how events are stored. It changes an aggregate only
through ``DeliberationStore.update`` / ``update_in_order`` (load, apply a command, save; retried
on a concurrent write) and learns about new work only from the event stream (``EventFeed``).
``application.stores`` and ``application.feed`` implement these on the eventsourcing
application; the unit tests' fakes implement them in memory.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar
from uuid import UUID

from aggregates import Deliberation, Plan

__all__ = ["DeliberationStore", "EventFeed", "FeedItem", "PlanStore", "RecordStore"]

T = TypeVar("T")
A = TypeVar("A")


@dataclass(frozen=True)
class FeedItem:
    position: int
    """The event's notification id (the JetStream stream sequence)."""
    event: Any
    """The domain event, e.g. ``Deliberation.Requested``."""


class DeliberationStore(Protocol):
    async def create(self, deliberation: Deliberation) -> tuple[Deliberation, bool]:
        """Save a new deliberation; (the stored one, created?). Idempotent on the id."""
        ...

    async def get(self, deliberation_id: UUID) -> Deliberation:
        """The aggregate as stored now (never stale). Raises ``DeliberationNotFoundError``
        naming the id when unknown."""
        ...

    async def last_known(self, deliberation_id: UUID) -> Deliberation:
        """The aggregate as this store last saved or read it (no round trip when it has it):
        for the writer's own next step, which may miss another process's change; the write
        that step leads to is checked against the stream, and a terminal event on the feed
        stops the driver. Raises ``DeliberationNotFoundError`` naming the id when unknown."""
        ...

    async def update(self, deliberation_id: UUID, change: Callable[[Deliberation], T]) -> T:
        """Load, apply ``change``, save its events atomically; retry on a concurrent writer.

        Domain errors raised by ``change`` propagate and nothing is saved.
        """
        ...

    async def update_in_order(
        self, deliberation_id: UUID, changes: Sequence[Callable[[Deliberation], T]]
    ) -> list[T]:
        """``update`` for each change in turn: each its own atomic write, applied after the ones
        before it and stored only once they are (one that raises records nothing and does not
        stop the later ones); then raises the first error, if any. Facts that must land in
        order but need not land together (scores, then the decision) cost one plain write each
        this way instead of one atomic batch (serialised per stream on JetStream)."""
        ...


class EventFeed(Protocol):
    """The stream as events. ``types`` (event classes) narrows it: a follower that needs two
    kinds of event should not pay for decoding all the others."""

    def history(self, after: int, types: Sequence[type] = ()) -> AsyncIterator[FeedItem]:
        """Every event after ``after`` up to the stream's head when called; then it ends."""
        ...

    def follow(self, after: int, types: Sequence[type] = ()) -> AsyncIterator[FeedItem]:
        """Every event after ``after``, in commit order, then new ones as they land; forever."""
        ...


class PlanStore(Protocol):
    async def create_plan(self, plan: Plan) -> tuple[Plan, bool]:
        """Save a newly approved plan; (the stored one, created?). Idempotent on the id."""
        ...

    async def update_plan(self, plan_id: UUID, change: Callable[[Plan], T]) -> T:
        """Load, apply ``change``, save (retried on a concurrent writer)."""
        ...


class RecordStore(Protocol):
    """Aggregates of any other kind (a Story, a Derivation): saved, read and changed as the
    plans are. ``kind`` is the aggregate class; a read of another kind is "not found"."""

    async def create_record(self, aggregate: A) -> tuple[A, bool]:
        """Save a new aggregate; (the stored one, created?). Idempotent on the id."""
        ...

    async def get_record(self, aggregate_id: UUID, kind: type[A]) -> A:
        """Raises ``RecordNotFoundError`` naming the id when there is none."""
        ...

    async def update_record(self, aggregate_id: UUID, kind: type[A], change: Callable[[A], T]) -> T:
        """Load, apply ``change``, save (retried on a concurrent writer)."""
        ...
