"""The plan dispatcher: follows the event feed and requests the deliberations of every approved
plan (``PlanApproved`` → one ``DeliberationRequested`` per role).

It is a policy, not a use case: what an approval records and what it requests are
``application.plans``' (``approve_plan``, ``request_deliberations``), which the gRPC methods and
the ``planning.plan.approved`` consumer call too. This one only decides when: on start, every
approval the feed holds without a ``DeliberationsRequested`` or ``NothingDispatched`` after it
(a node that stopped between the two writes); then each new approval, live.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from uuid import UUID

from aggregates import InvalidDeliberationError, Plan
from application.plans import PlanOptions, request_deliberations
from application.ports import CouncilDirectory, EventFeed, PlanDeliberationStore
from lifecycle import BackgroundService

log = logging.getLogger(__name__)

_FOLLOWED = (Plan.Approved, Plan.DeliberationsRequested, Plan.NothingDispatched)
"""What the plan dispatcher reads on start; live, only approvals."""

__all__ = ["PlanDispatcher"]


class PlanDispatcher(BackgroundService):
    """Requests the deliberations of every approved plan. Loop affinity: one asyncio loop.

    Lifecycle: ``await run()``; or ``async with``.
    """

    def __init__(
        self,
        store: PlanDeliberationStore,
        feed: EventFeed,
        *,
        options: PlanOptions | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC),
        councils: CouncilDirectory | None = None,
    ) -> None:
        self._store = store
        self._councils = councils
        self._feed = feed
        self._options = options or PlanOptions()
        self._clock = clock
        self.plans_dispatched = 0

    async def run(self) -> None:
        pending: dict[UUID, None] = {}
        last = 0
        async for item in self._feed.history(after=0, types=_FOLLOWED):
            if isinstance(item.event, Plan.Approved):
                pending[item.event.originator_id] = None
            else:  # DeliberationsRequested or NothingDispatched: done
                pending.pop(item.event.originator_id, None)
            last = item.position
        for plan_id in pending:
            await self._dispatch(plan_id)
        async for item in self._feed.follow(after=last, types=(Plan.Approved,)):
            if isinstance(item.event, Plan.Approved):
                await self._dispatch(item.event.originator_id)

    async def _dispatch(self, plan_id: UUID) -> None:
        try:
            if await request_deliberations(
                self._store, plan_id, self._options, self._clock(), self._councils
            ):
                self.plans_dispatched += 1
        except InvalidDeliberationError:
            log.exception("plan %s: cannot request its deliberations", plan_id)

    @property
    def task_name(self) -> str:
        return "plan-dispatcher"
