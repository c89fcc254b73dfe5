"""A story's phase change, recorded: what ``planning.story.transitioned`` (a NATS consumer) and
ProcessPlanningEvent's TRANSITION (gRPC) both call, so the two paths record the same fact once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from aggregates.story import Story
from application.ports import RecordStore

__all__ = ["PhaseChange", "record_phase_change"]


@dataclass(frozen=True)
class PhaseChange:
    story_id: str
    from_phase: str
    to_phase: str
    at: datetime | None = None
    """When planning says it happened (``now`` when it does not say)."""


async def record_phase_change(store: RecordStore, change: PhaseChange, *, now: datetime) -> bool:
    """Record ``change`` on the story (created on its first change). False when the story was
    in ``to_phase`` already: a repeated transition records nothing.

    Raises:
        InvalidDeliberationError: naming ``story_id`` or ``to_phase`` when empty.
    """
    story, _ = await store.create_record(Story.register(change.story_id))
    at = change.at or now
    return await store.update_record(
        story.id,
        Story,
        lambda s: s.change_phase(from_phase=change.from_phase, to_phase=change.to_phase, at=at),
    )
