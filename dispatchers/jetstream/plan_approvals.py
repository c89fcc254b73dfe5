"""The ``planning.plan.approved`` consumer: NATS JetStream at the edge, policy in dispatchers.

The planning service publishes plan approvals (JSON) on ``planning.plan.approved``. This module
makes sure a stream holds that subject (it creates ``PLANNING`` when none does; it is not the
event stream), reads it through a durable pull consumer shared by every Fleet dispatcher process,
and hands each body to ``application.plans``: a good one is recorded on the Plan aggregate
(idempotent on plan_id, so a redelivery changes nothing) and acked.

A bad message never blocks the consumer. One that can never succeed (not JSON, no plan_id or
story_id, an unknown role) is logged with its reason, parked on the dead-letter subject
``fleet.deadletter.planning.plan.approved`` (kept in the ``FLEET_DEADLETTER`` stream, with the
reason, the original subject, sequence and delivery count in headers) and terminated. A failure
that may pass (the event store is down) is nak'ed with back-off, and parked the same way once it
has been delivered ``max_deliver`` times.

The streams it creates (``PLANNING`` when no stream holds the subject, ``FLEET_DEADLETTER``) get
``replicas`` copies (``FLEET_STREAM_REPLICAS``), as every other stream of Fleet's does; an
existing dead-letter stream is raised to it, never lowered. An existing stream that holds the
plan subject is left as it is: it is the planning service's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import nats
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from aggregates import InvalidDeliberationError
from application.plans import BadPlanMessage, approve_plan, parse_plan_approval
from application.ports import PlanStore
from dispatchers.jetstream.planning_consumer import PlanningConsumer, subject_stream
from dispatchers.planning_start import PlanningStart
from natsio import DEAD_LETTER_PREFIX, DEAD_LETTER_STREAM, servers

__all__ = [
    "DEAD_LETTER_STREAM",
    "DEAD_LETTER_SUBJECT",
    "PLAN_STREAM",
    "PLAN_SUBJECT",
    "PlanApprovalConsumer",
    "subject_stream",
]

log = logging.getLogger(__name__)

PLAN_SUBJECT = "planning.plan.approved"
PLAN_STREAM = "PLANNING"
DEAD_LETTER_SUBJECT = f"{DEAD_LETTER_PREFIX}.{PLAN_SUBJECT}"


class PlanApprovalConsumer(PlanningConsumer):
    """Consumes plan approvals until shut down. Loop affinity: the loop that connected.

    Args:
        nc: a connected NATS client (closed by ``close`` when ``owns_connection``).
        store: where approvals are recorded (the Plan aggregate's store).
        durable: the consumer's name; every Fleet process shares it (each message to one).
        max_deliver: deliveries before a transiently failing message is parked.
        ack_wait_s: how long a delivery may stay unacknowledged before it is redelivered.
        replicas: copies of the streams it creates (``FLEET_STREAM_REPLICAS``).
        start: where the durable begins when it is created (``FLEET_PLANNING_START``; the
            stream's tail by default, so a cut-over replays no old approval).
    """

    subject = PLAN_SUBJECT
    task_label = "plan-approvals"
    bad_message_errors = (BadPlanMessage, InvalidDeliberationError)

    def __init__(
        self,
        nc: NATS,
        store: PlanStore,
        *,
        durable: str = "fleet-plans",
        stream: str = PLAN_STREAM,
        max_deliver: int = 5,
        ack_wait_s: float = 30.0,
        owns_connection: bool = False,
        clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC),
        replicas: int = 1,
        start: PlanningStart | None = None,
    ) -> None:
        super().__init__(
            nc,
            durable=durable,
            stream=stream,
            max_deliver=max_deliver,
            ack_wait_s=ack_wait_s,
            owns_connection=owns_connection,
            replicas=replicas,
            start=start,
        )
        self._store = store
        self._clock = clock

    @classmethod
    async def connect(cls, url: str, store: PlanStore, **kwargs: Any) -> PlanApprovalConsumer:
        nc = await nats.connect(servers(url), name="fleet-plan-consumer", max_reconnect_attempts=-1)
        return cls(nc, store, owns_connection=True, **kwargs)

    async def record(self, msg: Msg) -> str:
        approval = parse_plan_approval(msg.data)
        plan, created = await approve_plan(self._store, approval, now=self._clock())
        how = "approved" if created else "already approved (redelivery)"
        return f"plan {plan.plan_id} (story {plan.story_id}) {how}"
