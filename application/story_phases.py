"""Story phase changes: a ``planning.story.transitioned`` body, recorded on the Story aggregate.

A use case the edges call (the NATS consumer ``dispatchers.jetstream.story_transitions``; the
gRPC ``ProcessPlanningEvent``, ``record_phase_change`` alone); it needs the store and nothing else:

* ``parse_story_transition`` reads the planning service's JSON (story_id, from_phase, to_phase,
  timestamp; phases DESIGN, BUILD, TEST, DOCS in any case; unknown fields are tolerated). A body
  that is not JSON, not an object, lacks a field or names an unknown phase raises
  ``BadStoryTransition`` naming the field: a bad message, never turned into a fake event.
* ``record_phase_change`` records it: ``Story.Registered`` the first time Fleet hears of the
  story, then ``Story.PhaseChanged``. Idempotent: a redelivered transition (same story, phases
  and time) records nothing, so the outbox passes each on as ``orchestration.phase.changed``
  once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from aggregates.errors import InvalidDeliberationError
from aggregates.story import Phase, Story, story_id_of
from application.plans import read_timestamp
from application.ports import StoryStore

__all__ = [
    "BadStoryTransition",
    "StoryTransition",
    "parse_story_transition",
    "record_phase_change",
]

MAX_BODY_BYTES = 64 * 1024


class BadStoryTransition(ValueError):
    """A story transition that can never be processed; the message names the field."""


@dataclass(frozen=True)
class StoryTransition:
    story_id: str
    from_phase: Phase
    to_phase: Phase
    at: datetime | None
    """When Planning moved the story (None: the body gave no readable time)."""


def parse_story_transition(body: bytes) -> StoryTransition:
    """The transition a ``planning.story.transitioned`` body carries.

    Raises:
        BadStoryTransition: not JSON, not an object, too large, story_id missing, a phase
            missing or not one of DESIGN, BUILD, TEST, DOCS, or both phases the same.
    """
    if len(body) > MAX_BODY_BYTES:
        raise BadStoryTransition(f"body is {len(body)} bytes; at most {MAX_BODY_BYTES}")
    try:
        data: Any = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadStoryTransition(f"body is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise BadStoryTransition(f"body is a JSON {type(data).__name__}, not an object")
    story_id = data.get("story_id")
    if not isinstance(story_id, str) or not story_id.strip():
        raise BadStoryTransition("story_id: missing or not a string")
    phases = []
    for field in ("from_phase", "to_phase"):
        if field not in data:
            raise BadStoryTransition(f"{field}: missing")
        try:
            phases.append(Phase.parse(data[field], field))
        except InvalidDeliberationError as e:
            raise BadStoryTransition(str(e)) from None
    if phases[0] == phases[1]:
        raise BadStoryTransition(f"to_phase: is {phases[1].value}, as from_phase")
    return StoryTransition(
        story_id.strip(), phases[0], phases[1], read_timestamp(data.get("timestamp"))
    )


async def record_phase_change(
    store: StoryStore, story_id: str, from_phase: Phase, to_phase: Phase, at: datetime
) -> bool:
    """Record that Planning moved ``story_id`` from ``from_phase`` to ``to_phase`` at ``at``.

    Returns:
        True when recorded now; False when this transition was recorded before (a redelivery).

    Raises:
        InvalidDeliberationError: an empty story id, or the same phase twice (naming the field).
    """
    await store.create_story(Story.register(story_id))
    return await store.update_story(
        story_id_of(story_id.strip()), lambda s: s.change_phase(from_phase, to_phase, at)
    )
