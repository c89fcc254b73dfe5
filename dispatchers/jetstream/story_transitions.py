"""The ``planning.story.transitioned`` consumer: NATS JetStream at the edge, the use case in
``application.story_phases``.

Like the plan-approval consumer (``dispatchers.jetstream.planning_consumer`` holds what they
share): a durable pull consumer shared by every dispatcher process; a good transition is recorded
on the Story aggregate (idempotent, so a redelivery changes nothing) and acked; a bad body is
parked on ``fleet.deadletter.planning.story.transitioned`` with the reason and terminated. When
no stream holds the subject, ``PLANNING_STORIES`` is created for it (the seed system's
``PLANNING_EVENTS``, ``planning.>``, holds it where that system runs).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import nats
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from aggregates import InvalidDeliberationError
from application.ports import StoryStore
from application.story_phases import BadStoryTransition, parse_story_transition, record_phase_change
from dispatchers.jetstream.planning_consumer import PlanningConsumer
from natsio import servers

__all__ = ["STORY_STREAM", "STORY_SUBJECT", "StoryTransitionConsumer"]

STORY_SUBJECT = "planning.story.transitioned"
STORY_STREAM = "PLANNING_STORIES"


class StoryTransitionConsumer(PlanningConsumer):
    """Consumes story transitions until shut down. Loop affinity: the loop that connected.

    Args:
        nc: a connected NATS client (closed by ``close`` when ``owns_connection``).
        store: where transitions are recorded (the Story aggregate's store).
        clock: the time recorded for a body without a readable timestamp.
        **kwargs: as ``PlanningConsumer`` (durable, stream, max_deliver, ack_wait_s, replicas).
    """

    subject = STORY_SUBJECT
    task_label = "story-transitions"
    bad_message_errors = (BadStoryTransition, InvalidDeliberationError)

    def __init__(
        self,
        nc: NATS,
        store: StoryStore,
        *,
        durable: str = "fleet-stories",
        stream: str = STORY_STREAM,
        clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC),
        **kwargs: Any,
    ) -> None:
        super().__init__(nc, durable=durable, stream=stream, **kwargs)
        self._store = store
        self._clock = clock

    @classmethod
    async def connect(cls, url: str, store: StoryStore, **kwargs: Any) -> StoryTransitionConsumer:
        nc = await nats.connect(
            servers(url), name="fleet-story-consumer", max_reconnect_attempts=-1
        )
        return cls(nc, store, owns_connection=True, **kwargs)

    async def record(self, msg: Msg) -> str:
        t = parse_story_transition(msg.data)
        # Without a time in the body, the time the planning stream stored it: a redelivery
        # carries the same one, so it is still recorded once.
        at = t.at or msg.metadata.timestamp or self._clock()
        new = await record_phase_change(self._store, t.story_id, t.from_phase, t.to_phase, at)
        what = "recorded" if new else "already recorded (redelivery)"
        return f"story {t.story_id}: {t.from_phase.value} → {t.to_phase.value} {what}"
