"""The ``planning.plan.approved`` consumer: NATS JetStream at the edge, policy in dispatchers.

The planning service publishes plan approvals (JSON) on ``planning.plan.approved``. This module
makes sure a stream holds that subject (it creates ``PLANNING`` when none does; it is not the
event stream), reads it through a durable pull consumer shared by every Fleet dispatcher process,
and hands each body to ``dispatchers.plans``: a good one is recorded on the Plan aggregate
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

import contextlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import nats
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import ConsumerConfig, StreamConfig
from nats.js.errors import NotFoundError

from aggregates import InvalidDeliberationError
from application.ports import PlanStore
from dispatchers.plans import BadPlanMessage, approve_plan, parse_plan_approval
from lifecycle import BackgroundService
from natsio import (
    DEAD_LETTER_PREFIX,
    DEAD_LETTER_STREAM,
    dead_letter_stream_config,
    ensure_stream,
    pull_batches,
    servers,
)

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


async def subject_stream(js: Any, name: str, subject: str, *, replicas: int = 1) -> str:
    """The stream that holds ``subject``: an existing one, else a new ``name`` for it with
    ``replicas`` copies."""
    with contextlib.suppress(NotFoundError):
        found: str = await js.find_stream_name_by_subject(subject)
        return found
    await ensure_stream(js, StreamConfig(name=name, subjects=[subject], num_replicas=replicas))
    return name


class PlanApprovalConsumer(BackgroundService):
    """Consumes plan approvals until shut down. Loop affinity: the loop that connected.

    Args:
        nc: a connected NATS client (closed by ``shutdown`` when ``owns_connection``).
        store: where approvals are recorded (the Plan aggregate's store).
        durable: the consumer's name; every Fleet process shares it (each message to one).
        max_deliver: deliveries before a transiently failing message is parked.
        ack_wait_s: how long a delivery may stay unacknowledged before it is redelivered.
        replicas: copies of the streams it creates (``FLEET_STREAM_REPLICAS``).
    """

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
    ) -> None:
        self._nc = nc
        self._js = nc.jetstream()
        self._store = store
        self._durable = durable
        self._stream = stream
        self.max_deliver = max_deliver
        self._ack_wait_s = ack_wait_s
        self._owns = owns_connection
        self._clock = clock
        self._replicas = replicas
        self.accepted = 0
        self.parked = 0

    @classmethod
    async def connect(cls, url: str, store: PlanStore, **kwargs: Any) -> PlanApprovalConsumer:
        nc = await nats.connect(servers(url), name="fleet-plan-consumer", max_reconnect_attempts=-1)
        return cls(nc, store, owns_connection=True, **kwargs)

    async def run(self) -> None:
        stream = await subject_stream(self._js, self._stream, PLAN_SUBJECT, replicas=self._replicas)
        await ensure_stream(self._js, dead_letter_stream_config(self._replicas))
        sub = await self._js.pull_subscribe(
            PLAN_SUBJECT,
            durable=self._durable,
            stream=stream,
            config=ConsumerConfig(ack_wait=self._ack_wait_s, max_deliver=self.max_deliver),
        )
        log.info("consuming %s from stream %s as %s", PLAN_SUBJECT, stream, self._durable)
        async for msgs in pull_batches(sub, batch=32, what=f"plan consumer {self._durable}"):
            for msg in msgs:
                await self.handle(msg)

    async def handle(self, msg: Msg) -> None:
        """One delivery: record, park, or nak for a retry. Never raises."""
        try:
            approval = parse_plan_approval(msg.data)
            plan, created = await approve_plan(self._store, approval, now=self._clock())
        except (BadPlanMessage, InvalidDeliberationError) as e:
            await self._park(msg, f"bad message: {e}")
            return
        except Exception as e:  # the store may be down: retry, then park
            delivered = msg.metadata.num_delivered
            if delivered >= self.max_deliver:
                await self._park(msg, f"gave up after {delivered} deliveries: {e}")
            else:
                log.warning("plan approval delivery %d failed (%s); will retry", delivered, e)
                await msg.nak(delay=min(2.0**delivered * 0.5, 30.0))
            return
        self.accepted += 1
        log.info(
            "plan %s (story %s) %s",
            plan.plan_id,
            plan.story_id,
            "approved" if created else "already approved (redelivery)",
        )
        await msg.ack()

    async def _park(self, msg: Msg, reason: str) -> None:
        meta = msg.metadata
        log.warning(
            "plan approval %s#%d parked on %s: %s",
            meta.stream,
            meta.sequence.stream,
            DEAD_LETTER_SUBJECT,
            reason,
        )
        headers = {
            "Fleet-Dead-Letter-Reason": reason[:1000],
            "Fleet-Original-Subject": msg.subject,
            "Fleet-Original-Sequence": str(meta.sequence.stream),
            "Fleet-Deliveries": str(meta.num_delivered),
            "Nats-Msg-Id": f"dlq:{meta.stream}:{meta.sequence.stream}",
        }
        await self._js.publish(DEAD_LETTER_SUBJECT, msg.data, headers=headers)
        self.parked += 1
        await msg.term()

    @property
    def task_name(self) -> str:
        return "plan-approvals"

    async def shutdown(self) -> None:
        await self.stop_runner()
        if self._owns and not self._nc.is_closed:
            await self._nc.close()
