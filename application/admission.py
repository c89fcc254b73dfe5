"""The bound on work in flight: past ``bound`` open deliberations, a new one is refused.

A burst of submissions far beyond what the agents can work through is not work accepted faster:
every open deliberation holds a driver, a claim that heart-beats and calls queued for a model,
so the queue grows without end and everything on the node slows down, the submissions with it.
Past the bound a submission is refused at once (``InFlightBoundError``, RESOURCE_EXHAUSTED at
the API, with the bound in the message) and records nothing; the caller retries later, or
elsewhere.

What counts: the deliberations open in the event store (Requested and no terminal event yet), as
the node's statistics fold counts them (``application.stats``, the whole system's, not only
this node's), plus those this node accepted that the fold has not read back yet. The second part
makes the check hold under a burst: the fold follows the stream a moment behind the writes, and
two hundred concurrent submissions would otherwise all see the same count. (Several nodes each
add their own recent acceptances only, so the bound can be overshot by what the others accepted
in that moment; it is a bound on load, not a quota.)

A submission that names a deliberation already open is not new work and is never refused (it is
answered with the stored one, as before). Loop affinity: the statistics follower's loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar
from uuid import UUID

from aggregates import Deliberation
from application.errors import ServiceUnavailableError
from application.ports import FleetEvent
from application.stats import StatsFollower

__all__ = ["CATCH_UP_WAIT_S", "InFlightBound", "InFlightBoundError"]

T = TypeVar("T")

CATCH_UP_WAIT_S = 10.0
"""How long a submission waits for a starting node's fold to count what is open before it is
answered UNAVAILABLE (the node cannot yet say how much is in flight)."""


class InFlightBoundError(Exception):
    """The node's bound on open deliberations is reached: nothing was recorded."""


class InFlightBound:
    """Admits a new deliberation while fewer than ``bound`` are open (0: no bound).

    Args:
        bound: the most open deliberations (PENDING or IN_PROGRESS); 0 admits everything.
        follower: the node's statistics fold, whose open deliberations are counted.
    """

    def __init__(self, bound: int, follower: StatsFollower) -> None:
        if bound < 0:
            raise ValueError(f"bound {bound} must be >= 0 (0: unbounded)")
        self.bound = bound
        self._follower = follower
        self._unseen: dict[UUID, None] = {}
        """Accepted here, their Requested not yet folded: counted until it is."""
        follower.listeners.append(self._folded)
        self.refused = 0
        """Submissions refused since start (for tests and benchmarks)."""

    def _folded(self, event: FleetEvent) -> None:
        if isinstance(event, Deliberation.Requested):
            self._unseen.pop(event.originator_id, None)

    @property
    def open_now(self) -> int:
        """Open deliberations as counted for the bound (the fold's and this node's unseen)."""
        return len(self._follower.stats.open) + len(self._unseen)

    async def admit(
        self, deliberation_id: UUID, create: Callable[[], Awaitable[tuple[T, bool]]]
    ) -> tuple[T, bool]:
        """Run ``create`` (the write of a new deliberation) if the bound allows it.

        Raises:
            InFlightBoundError: ``bound`` deliberations are open; ``create`` was not called.
            ServiceUnavailableError: the fold cannot count (still catching up after
                ``CATCH_UP_WAIT_S``, or stopped on an error).
        """
        if not self.bound:
            return await create()
        await self._counting()
        known = deliberation_id in self._unseen or deliberation_id in self._follower.stats.open
        if not known and self.open_now >= self.bound:
            self.refused += 1
            raise InFlightBoundError(
                f"{self.open_now} deliberations are open, the bound of this node is "
                f"{self.bound} (FLEET_MAX_IN_FLIGHT): nothing was recorded; retry later"
            )
        mine = deliberation_id not in self._unseen
        self._unseen[deliberation_id] = None  # before the write: concurrent submits count it
        try:
            stored, created = await create()
        except BaseException:
            if mine:
                self._unseen.pop(deliberation_id, None)
            raise
        if not created and mine:
            self._unseen.pop(deliberation_id, None)  # it existed: nothing new will be folded
        return stored, created

    async def _counting(self) -> None:
        """Return once the fold counts the whole stream; else ServiceUnavailableError."""
        f = self._follower
        if f.failed:
            raise ServiceUnavailableError(
                "the count of open deliberations stopped (the statistics fold failed): "
                "the in-flight bound cannot be checked"
            )
        if not f.caught_up:
            try:
                await asyncio.wait_for(f.wait_caught_up(), CATCH_UP_WAIT_S)
            except TimeoutError:
                raise ServiceUnavailableError(
                    "the node is still counting open deliberations (catching up on the event "
                    "stream); retry shortly"
                ) from None
