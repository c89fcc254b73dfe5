"""The Story aggregate: a story of the planning service, and the phase changes it went through.

Planning owns a story's phase; Fleet records each transition it hears of
(``planning.story.transitioned``) as a fact, so the graph can show a story's history beside its
plans and deliberations and the outbox can pass it on as ``orchestration.phase.changed``. The id
derives from the planning service's story id: every transition of one story lands on one
aggregate. A redelivered transition (same from, to and time) is recorded once.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from aggregates.errors import InvalidDeliberationError
from aggregates.ids import FLEET_NAMESPACE

__all__ = ["Phase", "Story", "story_id_of"]

MAX_STORY_ID = 256


class Phase(str, Enum):
    """The planning service's story phases, in their usual order."""

    DESIGN = "DESIGN"
    BUILD = "BUILD"
    TEST = "TEST"
    DOCS = "DOCS"

    @classmethod
    def parse(cls, value: object, field: str) -> Phase:
        """Accept any case; anything else is an error naming ``field`` and the choices."""
        try:
            return cls(str(value).strip().upper())
        except ValueError:
            choices = ", ".join(p.value for p in cls)
            raise InvalidDeliberationError(field, f"{value!r} is not one of {choices}") from None


def story_id_of(story_id: str) -> UUID:
    """The aggregate id of the Story the planning service calls ``story_id``."""
    return uuid5(FLEET_NAMESPACE, f"story:{story_id}")


class Story(Aggregate):
    """One story's phase history. Guards in the commands; mutators only change state."""

    class Registered(Aggregate.Created):
        """Fleet first heard of the story (with its first phase change)."""

        story_id: str

    class PhaseChanged(Aggregate.Event):
        """Planning moved the story from ``from_phase`` to ``to_phase`` at ``at`` (the story id
        repeated, so a reader of this event alone can name the story)."""

        story_id: str
        from_phase: str
        to_phase: str
        at: datetime

    @classmethod
    def register(cls, story_id: str) -> Story:
        """Create the aggregate of ``story_id``.

        Raises:
            InvalidDeliberationError: an empty or over-long story id (naming ``story_id``).
        """
        sid = story_id.strip()
        if not sid:
            raise InvalidDeliberationError("story_id", "must not be empty")
        if len(sid) > MAX_STORY_ID:
            raise InvalidDeliberationError("story_id", f"longer than {MAX_STORY_ID} characters")
        return cls._create(cls.Registered, id=story_id_of(sid), story_id=sid)

    @event(Registered)
    def __init__(self, *, story_id: str) -> None:
        self.story_id = story_id
        self.phase: Phase | None = None
        self.transitions: list[tuple[Phase, Phase, datetime]] = []

    def change_phase(self, from_phase: Phase, to_phase: Phase, at: datetime) -> bool:
        """Record a transition; False (nothing recorded) when this one is recorded already.

        A transition whose ``from_phase`` is not the phase last recorded is still recorded:
        Planning owns the phase, and a transition Fleet missed must not hide the next one.

        Raises:
            InvalidDeliberationError: ``to_phase`` equals ``from_phase`` (naming ``to_phase``).
        """
        if from_phase == to_phase:
            raise InvalidDeliberationError("to_phase", f"is {to_phase.value}, as from_phase")
        if (from_phase, to_phase, at) in self.transitions:
            return False
        self._phase_changed(
            story_id=self.story_id, from_phase=from_phase.value, to_phase=to_phase.value, at=at
        )
        return True

    @event(PhaseChanged)
    def _phase_changed(self, story_id: str, from_phase: str, to_phase: str, at: datetime) -> None:
        self.phase = Phase(to_phase)
        self.transitions.append((Phase(from_phase), Phase(to_phase), at))
