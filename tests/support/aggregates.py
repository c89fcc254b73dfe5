"""Small aggregates for the event-store tests: they store and replay, and nothing more.

Their topics name this module, so a test process and the worker processes it starts read each
other's events.
"""

from __future__ import annotations

from eventsourcing.domain import Aggregate


class Counter(Aggregate):
    """Counts its increments: one event each, no payload."""

    def __init__(self) -> None:
        self.count = 0

    def increment(self) -> None:
        self.trigger_event(self.Incremented)

    class Incremented(Aggregate.Event):
        def apply(self, aggregate: Aggregate) -> None:
            assert isinstance(aggregate, Counter)
            aggregate.count += 1


class Ledger(Aggregate):
    """Counts increments and remembers each one's token, so a duplicate would show."""

    def __init__(self) -> None:
        self.tokens: list[str] = []

    def add(self, token: str) -> None:
        self.trigger_event(self.Added, token=token)

    class Added(Aggregate.Event):
        token: str

        def apply(self, aggregate: Aggregate) -> None:
            assert isinstance(aggregate, Ledger)
            aggregate.tokens.append(self.token)
