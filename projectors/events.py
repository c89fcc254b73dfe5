"""Which events the projectors follow: Deliberation's and Council's, recognised by class, known
or not yet."""

from __future__ import annotations

from typing import TypeGuard

from eventsourcing.domain import DomainEvent

from aggregates import Council, Deliberation

__all__ = ["is_council_event", "is_deliberation_event"]


def is_deliberation_event(event: object) -> TypeGuard[DomainEvent]:
    """True for an event class nested in ``Deliberation`` (so a new one still counts a version)."""
    cls = type(event)
    return getattr(Deliberation, cls.__name__, None) is cls


def is_council_event(event: object) -> TypeGuard[DomainEvent]:
    """True for an event class nested in ``Council`` (the graph shows councils over time)."""
    cls = type(event)
    return getattr(Council, cls.__name__, None) is cls
