"""The eventsourcing Application: repository, mapper and recorder for Fleet's aggregates.

It is the only writer of events. Everything else (projectors, dispatchers) reads the stream it
writes. Its name ("Fleet") prefixes its settings (``FLEET_NATS_URL`` before ``NATS_URL``) and
names the upstream application in every projection's tracking records.

Its aggregates share one event stream: ``Deliberation``, ``Plan`` and ``Council`` (one per role).
Councils hold a few dozen small events each, so they replay whole and are never snapshotted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.domain import MutableOrImmutableAggregate

from aggregates import Council, Deliberation, Plan

AGGREGATES: tuple[type[MutableOrImmutableAggregate[UUID]], ...] = (Deliberation, Plan, Council)
"""Every aggregate this application stores (``fleet verify`` and replay walk their events)."""


class FleetApplication(Application[UUID]):
    name = "Fleet"
    # Bounded replay: a long deliberation reloads from a snapshot plus its last few events.
    snapshotting_intervals: ClassVar[dict[type[MutableOrImmutableAggregate[UUID]], int]] = {
        Deliberation: 50
    }

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        super().__init__(env)


def jetstream_application(nats_url: str, stream: str) -> FleetApplication:
    """The application over ``stream`` on the JetStream at ``nats_url`` (the caller closes it)."""
    return FleetApplication(
        env={
            "PERSISTENCE_MODULE": "eventstore.jetstream",
            "FLEET_NATS_URL": nats_url,
            "FLEET_NATS_STREAM": stream,
        }
    )
