"""The store as the API and the dispatchers use it: every write timed, traced and logged by id.

``ObservedStore`` implements ``application.ports.PlanDeliberationStore`` (the ports'
``DeliberationStore`` and ``PlanStore``, and ``get_plan``) and ``application.ports.StoryStore``,
which is all the API and the dispatchers call, and wraps any store that implements them
(``application.stores.ApplicationDeliberationStore`` in a node). Every method is written out,
with no ``__getattr__``: a method that fell through to the wrapped store would write untimed and
outside the deliberation's trace, so one the ports gain must be added here to be reachable at
all (``tests/unit/fleet/test_observed_store.py`` checks the list). The API's read side (status,
history) and the watch hub read the application store directly: they write nothing.

Each deliberation it loads tells ``traces`` which trace it belongs to (the ``traceparent``
recorded in its ``Requested``), and its writes join that trace (see ``fleet.telemetry``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate

from aggregates import Deliberation, Plan
from aggregates.story import Story
from application.ports import NodeStore, RecordStore
from fleet import logs
from fleet.metrics import FleetMetrics
from fleet.telemetry import TraceContexts, span, tracing_on

T = TypeVar("T")
A = TypeVar("A", bound=Aggregate)


class ObservedStore(NodeStore):
    """``inner``, with each write timed (``fleet_store_write_seconds{op}``), in a ``store <op>``
    span, and its logs bound to the deliberation. Use from one asyncio loop, as ``inner``."""

    def __init__(
        self,
        inner: NodeStore,
        metrics: FleetMetrics | None,
        traces: TraceContexts | None = None,
    ) -> None:
        self._inner = inner
        self._metrics = metrics
        self._traces = traces or TraceContexts()

    # ------------------------------------------------------------------ reads

    async def get(self, deliberation_id: UUID) -> Deliberation:
        d = await self._inner.get(deliberation_id)
        self._traces.remember(str(deliberation_id), d.trace_context)
        return d

    async def last_known(self, deliberation_id: UUID) -> Deliberation:
        d = await self._inner.last_known(deliberation_id)
        self._traces.remember(str(deliberation_id), d.trace_context)
        return d

    async def get_plan(self, plan_id: UUID) -> Plan:
        return await self._inner.get_plan(plan_id)

    # ----------------------------------------------------------------- writes

    async def create(self, deliberation: Deliberation) -> tuple[Deliberation, bool]:
        d_id = str(deliberation.id)
        with self._deliberation_write("create", d_id, parent=""):
            result = await self._inner.create(deliberation)
            self._traces.remember(d_id, result[0].trace_context)
            return result

    async def update(self, deliberation_id: UUID, change: Callable[[Deliberation], T]) -> T:
        d_id = str(deliberation_id)
        with self._deliberation_write("update", d_id, parent=await self._trace_of(deliberation_id)):
            return await self._inner.update(deliberation_id, change)

    async def update_in_order(
        self, deliberation_id: UUID, changes: Sequence[Callable[[Deliberation], T]]
    ) -> list[T]:
        d_id = str(deliberation_id)
        parent = await self._trace_of(deliberation_id)
        with self._deliberation_write("update_in_order", d_id, parent=parent, changes=len(changes)):
            return await self._inner.update_in_order(deliberation_id, changes)

    async def create_plan(self, plan: Plan) -> tuple[Plan, bool]:
        with self._write("create_plan", parent="", **{"fleet.plan_id": str(plan.id)}):
            return await self._inner.create_plan(plan)

    async def update_plan(self, plan_id: UUID, change: Callable[[Plan], T]) -> T:
        with self._write("update_plan", parent="", **{"fleet.plan_id": str(plan_id)}):
            return await self._inner.update_plan(plan_id, change)

    # ---------------------------------------------------------- other records

    async def create_record(self, aggregate: A) -> tuple[A, bool]:
        with self._write("create_record", parent="", **{"fleet.kind": type(aggregate).__name__}):
            return await self._records().create_record(aggregate)

    async def get_record(self, aggregate_id: UUID, kind: type[A]) -> A:
        return await self._records().get_record(aggregate_id, kind)

    async def update_record(self, aggregate_id: UUID, kind: type[A], change: Callable[[A], T]) -> T:
        with self._write("update_record", parent="", **{"fleet.kind": kind.__name__}):
            return await self._records().update_record(aggregate_id, kind, change)

    def _records(self) -> RecordStore:
        return self._inner

    async def create_story(self, story: Story) -> tuple[Story, bool]:
        with self._write("create_story", parent="", **{"fleet.story_id": str(story.id)}):
            return await self._inner.create_story(story)

    async def update_story(self, story_id: UUID, change: Callable[[Story], T]) -> T:
        with self._write("update_story", parent="", **{"fleet.story_id": str(story_id)}):
            return await self._inner.update_story(story_id, change)

    # ---------------------------------------------------------------- helpers

    async def _trace_of(self, deliberation_id: UUID) -> str:
        """The deliberation's recorded ``traceparent``; loaded first when tracing is on and this
        process has not seen it yet (a restarted dispatcher): the write belongs in that trace."""
        d_id = str(deliberation_id)
        if tracing_on() and not self._traces.knows(d_id):
            await self.last_known(deliberation_id)
        return self._traces.of(d_id)

    @contextlib.contextmanager
    def _deliberation_write(
        self, op: str, d_id: str, *, parent: str, **attrs: str | int
    ) -> Iterator[None]:
        """Logs bound to the deliberation, and ``_write`` tagged with its id."""
        with (
            logs.bind(d_id),
            self._write(op, parent=parent, **{"fleet.deliberation_id": d_id}, **attrs),
        ):
            yield

    @contextlib.contextmanager
    def _write(self, op: str, *, parent: str, **attrs: str | int) -> Iterator[None]:
        """A ``store <op>`` span (a child of ``parent``, or of the current span when empty),
        and the write's latency."""
        with span(f"store {op}", parent=parent, **attrs):
            t0 = time.perf_counter()
            try:
                yield
            finally:
                if self._metrics is not None:
                    self._metrics.store_seconds.labels(op).observe(time.perf_counter() - t0)
