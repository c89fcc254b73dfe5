"""Which events the projectors follow: Deliberation's, recognised by class, known or not yet."""

from __future__ import annotations

from aggregates import Deliberation

__all__ = ["is_deliberation_event"]


def is_deliberation_event(event: object) -> bool:
    """True for an event class nested in ``Deliberation`` (so a new one still counts a version)."""
    cls = type(event)
    return getattr(Deliberation, cls.__name__, None) is cls
