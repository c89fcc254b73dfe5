"""The one interface the runner drives: a projection that applies events at positions.

A position is the notification id of the event in the application's log (the JetStream stream
sequence in production; gaps allowed). Each projection keeps its position in its own store,
written in the same atomic step as the change, and ignores an event at a position it has passed,
so at-least-once delivery has an exactly-once effect.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["Projection"]


class Projection(Protocol):
    """What a ``ProjectorRunner`` drives. Called from one thread (the runner's) at a time."""

    name: str
    """Stable name; identifies the projection's position in its store."""

    def position(self) -> int:
        """The last position applied (0 when none)."""
        ...

    def apply(self, event: object, position: int) -> bool:
        """Apply ``event`` found at ``position``.

        Returns:
            True when the store changed; False when the event was ignored (not ours) or its
            position was already applied.
        """
        ...
