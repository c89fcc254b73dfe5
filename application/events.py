"""The type of Fleet's domain events, and the one narrowing from what the library decodes.

The library's mapper and event store hand back ``DomainEventProtocol`` objects (an id and a
version, nothing more). Every event of Fleet's aggregates is an ``AggregateEvent`` (a frozen
dataclass with a timestamp and a ``mutate``), and its class says which event it is: readers
narrow further with ``isinstance`` or dispatch on the class.
"""

from __future__ import annotations

from uuid import UUID

from eventsourcing.domain import AggregateEvent, DomainEventProtocol

__all__ = ["FleetEvent", "fleet_event"]

FleetEvent = AggregateEvent
"""A domain event of one of Fleet's aggregates (``Deliberation.Requested``, ``Plan.Approved``,
...)."""


def fleet_event(event: DomainEventProtocol[UUID]) -> FleetEvent:
    """``event`` as the ``FleetEvent`` it is (what the mapper decodes from Fleet's stream).

    Raises:
        TypeError: ``event`` is not an aggregate event (not one of Fleet's).
    """
    if not isinstance(event, AggregateEvent):
        msg = f"{type(event).__qualname__} (version {event.originator_version}) is not Fleet's"
        raise TypeError(msg)
    return event
