"""The async face of the (sync) eventsourcing application: commands in, events out.

``ApplicationDeliberationStore`` implements ``application.ports.DeliberationStore`` and
``PlanStore`` (the event feed beside it is ``application.feed``) and serves the gRPC API.

Updates are group-committed (``application/group_commit.py``): one writer task on the caller's loop
gathers whatever changes are queued while the previous group is being saved, applies them in
order and saves each change's events as its own unit, all of them in one crossing to the event
store (a one-event change is a plain conditional publish, not an atomic batch). Each caller gets
its own result or exception, only once its events are stored. Across processes, writes are
checked by the store's optimistic concurrency: an IntegrityError reloads the aggregate and
re-applies the command. (An earlier plain path, a per-aggregate lock and one ``app.save`` per
update in a worker thread, was the comparison group commit was measured against; it is gone.)

The store keeps the open aggregates it last saved, created or read (``AggregateCache``), so an
update is one write instead of a replay plus a write. ``get`` returns a cached copy only when it
is at the aggregate's last stored version (another process may have written since);
``last_known`` skips that check, for the dispatcher's own next step (its writes are checked by
optimistic concurrency anyway). Readers get a copy, never the cached object. Replays (a miss, a
version, a history) are sync library calls: they run in worker threads.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import weakref
from collections.abc import Callable, Sequence
from typing import TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import IntegrityError

from aggregates import Deliberation, Plan
from aggregates.story import Story
from application.app import FleetApplication, fold
from application.errors import (
    DeliberationNotFoundError,
    NotFoundError,
    PlanNotFoundError,
    RecordNotFoundError,
    StoryNotFoundError,
)
from application.events import FleetEvent, fleet_event
from application.group_commit import AggregateCache, GroupWriter

T = TypeVar("T")
A = TypeVar("A", bound=Aggregate)
log = logging.getLogger(__name__)


class ApplicationDeliberationStore:
    """Loads, changes and saves Deliberation (and Plan) aggregates. Use from one asyncio loop.

    Args:
        app: the application (its recorder stores the events).
        cache_size: open aggregates kept in memory.
        max_group: most changes the writer takes at once.
    """

    def __init__(
        self,
        app: FleetApplication,
        *,
        cache_size: int = 4096,
        max_group: int = 256,
    ) -> None:
        self._app = app
        self._locks: weakref.WeakValueDictionary[UUID, asyncio.Lock] = weakref.WeakValueDictionary()
        self._cache = AggregateCache(cache_size)
        self._writer = GroupWriter(app, self._cache, max_group=max_group)

    @property
    def groups_committed(self) -> int:
        """Groups the writer took (each one crossing to the store); for benchmarks and tests."""
        return self._writer.groups_committed

    @property
    def conflicts_retried(self) -> int:
        """Aggregates reloaded and re-applied because another writer got there first."""
        return self._writer.conflicts_retried

    async def drain(self) -> None:
        """Wait for the updates in flight and the snapshots they call for (group commit answers
        a caller before taking them). Call it before the application closes."""
        await self._writer.drain()

    def _lock(self, agg_id: UUID) -> asyncio.Lock:
        lock = self._locks.get(agg_id)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[agg_id] = lock
        return lock

    async def get(self, deliberation_id: UUID, version: int | None = None) -> Deliberation:
        """The deliberation as stored now (or at ``version``): never stale.

        A cached copy is returned only when it is at the aggregate's last stored version (one
        "last event of the subject" read, not a replay): another process may have changed it.
        """
        if version is not None:
            return await asyncio.to_thread(self._get, deliberation_id, version)
        cached = self._cache.copy_of(deliberation_id)
        if isinstance(cached, Deliberation):
            if await asyncio.to_thread(self._latest_version, deliberation_id) == cached.version:
                return cached
        return await asyncio.to_thread(self._get_and_keep, deliberation_id)

    async def last_known(self, deliberation_id: UUID) -> Deliberation:
        """The deliberation as this store last saved, created or read it, without asking the
        event store when it has a copy (else a replay). For the writer's own next decision: it
        may miss another process's change, which the write it leads to is checked against."""
        cached = self._cache.copy_of(deliberation_id)
        if isinstance(cached, Deliberation):
            return cached
        return await asyncio.to_thread(self._get_and_keep, deliberation_id)

    def _latest_version(self, agg_id: UUID) -> int | None:
        last = self._app.recorder.select_events(agg_id, desc=True, limit=1)
        return last[0].originator_version if last else None

    def _get_and_keep(self, d_id: UUID) -> Deliberation:
        """A replay whose result is cached too: the update that usually follows a read (the
        dispatcher's first) then costs one write, not another replay."""
        d = self._get(d_id)
        self._cache.keep(d_id, copy.deepcopy(d))
        return d

    def _get(self, d_id: UUID, version: int | None = None) -> Deliberation:
        try:
            d: object = self._app.repository.get(d_id, version=version)
        except AggregateNotFoundError:
            raise DeliberationNotFoundError(f"Deliberation {d_id} not found") from None
        if not isinstance(d, Deliberation):
            raise DeliberationNotFoundError(f"Aggregate {d_id} is not a deliberation")
        return d

    async def create(self, deliberation: Deliberation) -> tuple[Deliberation, bool]:
        """Save a new deliberation. Returns (the stored one, created?): idempotent on the id."""
        if await self._create(deliberation):
            return deliberation, True
        return await self.get(deliberation.id), False

    async def _create(self, agg: Aggregate) -> bool:
        """Save a new aggregate's events; False if it exists already. Caches a copy of it."""
        async with self._lock(agg.id):
            events = agg.collect_events()
            if not events:  # nothing new: this object was saved already
                return False
            unit = [self._app.mapper.to_stored_event(e) for e in events]
            (result,) = await self._writer.save_units([unit])
            if isinstance(result, IntegrityError):
                return False
            if isinstance(result, Exception):
                agg.pending_events[:0] = events  # as a failed app.save leaves them: unsaved
                raise result
            # A copy, since the caller keeps (and may change) the object it handed in: the fold
            # of the events just stored, as a read would load it (10 µs for a new deliberation,
            # against 122 µs for a deep copy: once per submit).
            stored = fold(None, events)
            if stored is not None:
                self._cache.keep(agg.id, stored)
            return True

    async def update(self, deliberation_id: UUID, change: Callable[[Deliberation], T]) -> T:
        return await self._writer.submit(deliberation_id, change, self._get)

    async def update_in_order(
        self, deliberation_id: UUID, changes: Sequence[Callable[[Deliberation], T]]
    ) -> list[T]:
        """Apply ``changes`` in this order, each saved as its own write once the ones before it
        are stored (one that raises records nothing and does not stop the others); then raise
        the first error. For facts that must land in order but need not land together: one
        single-event write each costs less than an atomic batch."""
        return await self._writer.submit_in_order(deliberation_id, changes, self._get)

    # ------------------------------------------------------------------ plans

    async def create_plan(self, plan: Plan) -> tuple[Plan, bool]:
        """Save a newly approved plan. Returns (the stored one, created?): idempotent on the id."""
        if await self._create(plan):
            return plan, True
        return await asyncio.to_thread(self._get_plan, plan.id), False

    async def get_plan(self, plan_id: UUID) -> Plan:
        return await asyncio.to_thread(self._get_plan, plan_id)

    def _get_plan(self, plan_id: UUID) -> Plan:
        return self._get_kind(plan_id, Plan, PlanNotFoundError)

    def _get_kind(self, agg_id: UUID, kind: type[A], missing: type[NotFoundError]) -> A:
        """The aggregate ``agg_id`` if it is a ``kind``; else ``missing`` naming the id."""
        try:
            agg: object = self._app.repository.get(agg_id)
        except AggregateNotFoundError:
            raise missing(f"{kind.__name__} {agg_id} not found") from None
        if not isinstance(agg, kind):
            raise missing(f"Aggregate {agg_id} is not a {kind.__name__.lower()}")
        return agg

    async def update_plan(self, plan_id: UUID, change: Callable[[Plan], T]) -> T:
        return await self._writer.submit(plan_id, change, self._get_plan)

    # ------------------------------------------------------------------ other records

    async def create_record(self, aggregate: A) -> tuple[A, bool]:
        """Save a new aggregate of any kind (a Story, a Derivation): (the stored one,
        created?), idempotent on the id as ``create_plan`` is."""
        if await self._create(aggregate):
            return aggregate, True
        return await asyncio.to_thread(self._get_record, aggregate.id, type(aggregate)), False

    async def get_record(self, aggregate_id: UUID, kind: type[A]) -> A:
        """Raises RecordNotFoundError naming the id when there is no such ``kind``."""
        return await asyncio.to_thread(self._get_record, aggregate_id, kind)

    def _get_record(self, aggregate_id: UUID, kind: type[A]) -> A:
        try:
            a: object = self._app.repository.get(aggregate_id)
        except AggregateNotFoundError:
            raise RecordNotFoundError(f"{kind.__name__} {aggregate_id} not found") from None
        if not isinstance(a, kind):
            raise RecordNotFoundError(f"Aggregate {aggregate_id} is not a {kind.__name__}")
        return a

    async def update_record(self, aggregate_id: UUID, kind: type[A], change: Callable[[A], T]) -> T:
        return await self._writer.submit(aggregate_id, change, lambda i: self._get_record(i, kind))

    # ------------------------------------------------------------------ stories

    async def create_story(self, story: Story) -> tuple[Story, bool]:
        """Save a newly heard-of story. Returns (the stored one, created?): idempotent."""
        if await self._create(story):
            return story, True
        return await asyncio.to_thread(self._get_story, story.id), False

    def _get_story(self, story_id: UUID) -> Story:
        return self._get_kind(story_id, Story, StoryNotFoundError)

    async def update_story(self, story_id: UUID, change: Callable[[Story], T]) -> T:
        return await self._writer.submit(story_id, change, self._get_story)

    async def history(self, deliberation_id: UUID) -> list[FleetEvent]:
        """Every stored event of one deliberation, oldest first (domain events)."""

        def read() -> list[FleetEvent]:
            return [fleet_event(e) for e in self._app.events.get(deliberation_id)]

        events = await asyncio.to_thread(read)
        if not events:
            raise DeliberationNotFoundError(f"Deliberation {deliberation_id} not found")
        return events
