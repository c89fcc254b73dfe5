"""The dispatchers' own ports: how several dispatcher processes share the work (``WorkQueue``,
``Claim``; the JetStream adapter is ``dispatchers.jetstream.work_queue``).

They are here and not in ``application.ports`` because only dispatchers use them and only
dispatchers implement them: they describe how dispatch is organised, not what the application
layer offers. Where a deliberation's agents get their context from (``ContextSource``) is the
application layer's to offer (``application.task_context`` implements it on the store), so it is
in ``application.ports``. The store and the event feed a
dispatcher works through are the application layer's ports (``application.ports``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol
from uuid import UUID


class Claim(Protocol):
    """One deliberation handed to this dispatcher by the work queue, until ``done``."""

    @property
    def deliberation_id(self) -> UUID: ...

    async def keep(self) -> None:
        """Still working on it (a heartbeat); without one the queue gives it to another."""
        ...

    async def done(self) -> None:
        """Finished (terminal, or nothing to do): the queue forgets it."""
        ...

    async def release(self) -> None:
        """Hand it back now (this dispatcher is stopping): another takes it at once."""
        ...


class WorkQueue(Protocol):
    """Shares deliberations among dispatcher processes: each is driven by one at a time.

    ``offer`` is idempotent (every dispatcher offers what it sees on the feed); ``claims``
    yields what this dispatcher should drive. An owner that stops heart-beating (crashed)
    loses its claims after ``lease_s``, and another dispatcher gets them.
    """

    lease_s: float

    async def offer(self, deliberation_id: UUID) -> None: ...

    def claims(self) -> AsyncIterator[Claim]: ...
