"""The one interface the runner drives: a projection that applies events at positions.

A position is the notification id of the event in the application's log (the JetStream stream
sequence in production; gaps allowed). Each projection keeps its position in its own store,
written in the same atomic step as the change, and ignores an event at a position it has passed,
so at-least-once delivery has an exactly-once effect. A runner first ``claim``s the projection
(``projectors.fence``); its batches then carry the fence and the position they were based on,
and the store refuses them when either has changed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from projectors.fence import Fence

__all__ = ["Projection", "StagedProjection"]


class Projection(Protocol):
    """What a ``ProjectorRunner`` drives. Called from one thread (the runner's) at a time."""

    name: str
    """Stable name; identifies the projection's position in its store."""

    def position(self) -> int:
        """The last position applied (0 when none)."""
        ...

    def claim(self, owner: str, lease_ms: int) -> Fence | None:
        """Become (or stay) the projection's writer; None while another instance holds it."""
        ...

    def release(self, owner: str) -> None:
        """End ``owner``'s lease (a clean stop)."""
        ...

    def apply(self, event: object, position: int) -> bool:
        """Apply ``event`` found at ``position``, unfenced.

        Returns:
            True when the store changed; False when the event was ignored (not ours) or its
            position was already applied.
        """
        ...

    def apply_batch(
        self, items: Sequence[tuple[object, int]], *, base: int, fence: Fence | None = None
    ) -> int:
        """Apply the ``(event, position)`` items past ``base`` and store the last position, in
        one atomic step that checks the stored position is ``base`` and ``fence`` still holds.

        Returns:
            How many of the items were the projection's events.

        Raises:
            PositionMovedError: the stored position is not ``base``; nothing was written.
            ProjectionFencedError: another instance claimed the projection; nothing was written.
        """
        ...

    # Optional: ``idle(self) -> None``, called by the runner once its catch-up is applied and when
    # nothing has arrived for a while (housekeeping such as a graph checkpoint; not in the
    # Protocol so that projections without any need not define it).

    def reset(self) -> None:
        """Delete what the projection wrote and set its position to 0 (for a rebuild)."""
        ...


@runtime_checkable
class StagedProjection(Projection, Protocol):
    """A projection whose batch splits into work that needs no store and the write.

    The runner stages the next batch on its own thread while its writer thread writes the one
    before (at most one write in flight, and never beside ``position``, ``claim`` or ``idle``):
    in a catch-up the translation of events (statements, rows) then costs no time of its own.
    """

    def stage(
        self, items: Sequence[tuple[object, int]], *, base: int, fence: Fence | None = None
    ) -> Callable[[], int]:
        """Do the pure part of ``apply_batch(items, base=base, fence=fence)`` now, without I/O,
        and return the rest: the write, which raises and returns as ``apply_batch`` does.
        ``apply_batch`` must equal ``stage(...)()``."""
        ...
