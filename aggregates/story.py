"""The Story aggregate: a story of the planning service, and the phase changes it went through.

Planning moves a story through phases (the seed's DESIGN, BUILD, TEST, DOCS, or its own state
names); ``Story.PhaseChanged`` records each move as a fact. A repeated transition (a redelivery,
or the gRPC twin of the NATS event) records nothing: the story is already there. The id derives
from the planning service's story id, so every writer names the same aggregate.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from aggregates.errors import InvalidDeliberationError
from aggregates.ids import FLEET_NAMESPACE

__all__ = ["Story", "story_id_of"]

MAX_PHASE = 64


def story_id_of(story_id: str) -> UUID:
    """The aggregate id of the Story the planning service calls ``story_id``."""
    return uuid5(FLEET_NAMESPACE, f"story:{story_id}")


class Story(Aggregate):
    """A story and its current phase. Guards in the commands; mutators only change state."""

    class Registered(Aggregate.Created):
        story_id: str

    class PhaseChanged(Aggregate.Event):
        from_phase: str
        to_phase: str
        at: datetime

    @classmethod
    def register(cls, story_id: str) -> Story:
        """Raises InvalidDeliberationError naming ``story_id`` when it is empty."""
        if not story_id.strip():
            raise InvalidDeliberationError("story_id", "must not be empty")
        return cls._create(cls.Registered, id=story_id_of(story_id.strip()), story_id=story_id)

    @event(Registered)
    def __init__(self, *, story_id: str) -> None:
        self.story_id = story_id
        self.phase = ""
        self.phases: list[tuple[str, str, datetime]] = []

    def change_phase(self, *, from_phase: str, to_phase: str, at: datetime) -> bool:
        """Record a move to ``to_phase``; False (nothing recorded) when the story is there
        already. ``from_phase`` is what planning said it left (kept as said: planning is the
        authority on its own states).

        Raises:
            InvalidDeliberationError: naming ``to_phase`` when it is empty or too long.
        """
        to = to_phase.strip().upper()
        if not to or len(to) > MAX_PHASE:
            raise InvalidDeliberationError("to_phase", f"{to_phase[:80]!r} is not a phase")
        if to == self.phase:
            return False
        self._phase_changed(from_phase=from_phase.strip().upper(), to_phase=to, at=at)
        return True

    @event(PhaseChanged)
    def _phase_changed(self, from_phase: str, to_phase: str, at: datetime) -> None:
        self.phase = to_phase
        self.phases.append((from_phase, to_phase, at))
