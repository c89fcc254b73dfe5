"""The application layer's ports, in one file: every Protocol the layers above are written
against, and that the adapters (here, in ``projectors``, in ``fleet``) implement.

The write side. A dispatcher decides; it does not know how events are stored. It changes an
aggregate only through ``DeliberationStore.update`` / ``update_in_order`` (load, apply a command,
save; retried on a concurrent write) and learns about new work only from the event stream
(``EventFeed``). ``application.stores`` and ``application.feed`` implement these on the
eventsourcing application; the unit tests' fakes implement them in memory. The store is one
object with several faces; each caller names the narrowest face it needs (``PlanStore``,
``StoryStore``, ``ContextStore``, ...), and ``NodeStore`` is all of them.

The event store's async face. ``AsyncRecorder`` is what the group commit
(``application.group_commit``) writes through and the event feed (``application.feed``)
follows: the JetStream recorder implements it on the caller's loop, and
``application.async_recorder.ThreadedRecorder`` adapts the library's blocking recorders (the
in-memory one of the unit tests) with worker threads, so both take the same path.

The read side. ``StatusBoard`` (the cache's view, implemented in ``projectors.cache``),
``HistoryGraph`` and ``GraphReader`` (Cypher over the history graph, in ``projectors.graph`` and
``projectors.service``) and ``CouncilDirectory`` (the councils as they stand, in
``application.council_store``).

Where a deliberation's agents get their context from: ``ContextSource`` (the dispatcher's drivers
ask it; ``application.task_context`` implements it on the store's ``ContextStore`` face).

The dispatchers' own ports (how dispatcher processes share work) are theirs: ``dispatchers.ports``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable
from uuid import UUID

from eventsourcing.domain import Aggregate
from eventsourcing.persistence import Notification, StoredEvent

from aggregates import Deliberation, Plan
from aggregates.story import Story
from application.councils import CouncilChange, CouncilView
from application.events import FleetEvent
from application.views import DeliberationView

__all__ = [
    "AsyncRecorder",
    "ContextStore",
    "CouncilDirectory",
    "CypherParams",
    "CypherRow",
    "DeliberationStore",
    "DerivationStore",
    "EventFeed",
    "FeedItem",
    "FleetEvent",
    "GraphReader",
    "HistoryGraph",
    "NodeStore",
    "PlanDeliberationStore",
    "PlanStore",
    "RecordStore",
    "StatusBoard",
    "StoryStore",
]

T = TypeVar("T")
A = TypeVar("A", bound=Aggregate)

CypherParams = Mapping[str, object]
"""A Cypher statement's parameters, name to value: what the engine's driver accepts (str, int,
float, bool, None, and lists and maps of them). Checked by the engine, not here."""

CypherRow = dict[str, object]
"""One result row of a Cypher query, column name to a plain value (nodes come back as dicts of
properties). The engine decides each value's type; a reader narrows what it uses."""


@dataclass(frozen=True)
class FeedItem:
    position: int
    """The event's notification id (the JetStream stream sequence)."""
    event: FleetEvent
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


@runtime_checkable
class AsyncRecorder(Protocol):
    """The event store, from a coroutine: independent saves in one crossing, and a live
    subscription. Runtime-checkable so that ``application.async_recorder.async_recorder`` can
    tell a recorder that has this face from one that needs the threaded adapter."""

    async def insert_events_each_async(
        self, batches: Sequence[Sequence[StoredEvent]]
    ) -> Sequence[Sequence[int] | Exception]:
        """Save several independent batches, each atomic on its own; batches of one aggregate
        land in order (a later one is not written when an earlier one failed). For each
        batch: its notification ids, or the error ``insert_events`` would have raised
        (``IntegrityError`` on a conflict)."""
        ...

    def subscribe_async(
        self, gt: int | None = None, topics: Sequence[str] = ()
    ) -> AsyncGenerator[Notification, None]:
        """The notifications after ``gt`` (of ``topics`` only, when given), then each new one
        as it lands, until the generator is closed."""
        ...


class StoryStore(Protocol):
    """Where Story aggregates live (``application.stores.ApplicationDeliberationStore``)."""

    async def create_story(self, story: Story) -> tuple[Story, bool]:
        """Save a new story; (the stored one, created?). Idempotent on the id."""
        ...

    async def update_story(self, story_id: UUID, change: Callable[[Story], T]) -> T:
        """Load, apply ``change``, save (retried on a concurrent writer)."""
        ...


class PlanDeliberationStore(DeliberationStore, PlanStore, Protocol):
    """Deliberations and plans: what plan approval reads and writes."""

    async def get_plan(self, plan_id: UUID) -> Plan: ...


class DerivationStore(PlanDeliberationStore, RecordStore, Protocol):
    """Deliberations, plans and other records: what a derivation reads and writes."""


class ContextStore(Protocol):
    """The reads a task's context is gathered from (``application.task_context``)."""

    async def get(self, deliberation_id: UUID) -> Deliberation: ...

    async def get_plan(self, plan_id: UUID) -> Plan: ...

    async def get_record(self, aggregate_id: UUID, kind: type[Story]) -> Story: ...


class NodeStore(PlanDeliberationStore, StoryStore, RecordStore, Protocol):
    """Every write a node's API and dispatchers make: deliberations, plans, stories and the
    other records (derivations)."""


class ContextSource(Protocol):
    """The context text a deliberation's agents are given with their task (the dispatcher's
    drivers ask; ``application.task_context.StoreContextSource`` answers from the store)."""

    async def for_deliberation(self, d: Deliberation) -> str:
        """The context text for ``d``'s agents ("" for none)."""
        ...


# ------------------------------------------------------------------ the read side


class StatusBoard(Protocol):
    """The cache's view of each deliberation (``projectors.cache``); None: no entry."""

    def get(self, deliberation_id: UUID) -> DeliberationView | None: ...


class HistoryGraph(Protocol):
    """Read-only Cypher on the graph this process holds (``projectors.graph``'s adapters)."""

    def query(
        self,
        cypher: str,
        params: CypherParams | None = None,
        limit: int = ...,
        *,
        timeout_s: float | None = ...,
    ) -> list[CypherRow]: ...


class GraphReader(Protocol):
    """Read-only Cypher as the API runs it: on the graph this process holds
    (``LocalGraphReader``), or on the one a projectors node holds
    (``projectors.service.RemoteGraph``: the embedded graph is one process's alone).

    Raises what ``DecisionGraph.query`` raises, and ``ServiceUnavailableError`` when the graph
    cannot be reached.
    """

    async def query(
        self,
        cypher: str,
        params: CypherParams | None = None,
        limit: int = ...,
        *,
        timeout_s: float | None = ...,
    ) -> list[CypherRow]: ...


class CouncilDirectory(Protocol):
    """The current councils, from the events (never from start-up configuration alone)."""

    async def list_councils(self) -> list[CouncilView]:
        """Every council that exists now, one per role, ordered by role."""
        ...

    async def council(self, role: str) -> CouncilView | None:
        """The role's council, or None when it has none."""
        ...

    async def history(self, role: str) -> list[CouncilChange]:
        """Every change of the role's council, oldest first (empty when it never had one)."""
        ...
