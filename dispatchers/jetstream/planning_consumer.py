"""What every consumer of a planning subject shares: a durable pull consumer, dead letters.

The planning service publishes JSON facts (``planning.plan.approved``,
``planning.story.transitioned``). Each is read through a durable pull consumer shared by every
Fleet dispatcher process (each message to one of them) and handed to a policy in
``dispatchers``; a good one is recorded (idempotently, so a redelivery changes nothing) and
acked.

A bad message never blocks the consumer. One that can never succeed (the policy raises one of
``bad_message_errors``) is logged with its reason, parked on ``fleet.deadletter.<subject>``
(kept in the ``FLEET_DEADLETTER`` stream, with the reason, the original subject, sequence and
delivery count in headers) and terminated. A failure that may pass (the event store is down) is
nak'ed with back-off, and parked the same way once it has been delivered ``max_deliver`` times.

The streams it creates (one for the subject when no stream holds it, ``FLEET_DEADLETTER``) get
``replicas`` copies (``FLEET_STREAM_REPLICAS``); an existing stream that holds the subject is
left as it is: it is the planning service's.

Cut-over: when Fleet takes over from the seed orchestrator, the planning service's stream
(``PLANNING_EVENTS``) still retains approvals the old orchestrator handled long ago. A durable
created with JetStream's default deliver policy would hand every one of them to Fleet, which
would deliberate each again. So the durable, when it does not exist yet, starts where
``start`` says (``FLEET_PLANNING_START``): at the stream's tail by default (``new``), or at its
head (``all``), a time, or a stream sequence; what that skips is logged with its count. A durable
that exists is never touched: a restart resumes where it stands, whatever ``start`` says.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, ClassVar

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import NoRespondersError
from nats.js.api import ConsumerConfig, ConsumerInfo, DeliverPolicy, StreamConfig
from nats.js.errors import NotFoundError, ServiceUnavailableError

from dispatchers.planning_start import PlanningStart
from lifecycle import BackgroundService
from natsio import (
    DEAD_LETTER_PREFIX,
    dead_letter_stream_config,
    ensure_stream,
    pull_batches,
)

__all__ = ["PlanningConsumer", "PlanningStart", "subject_stream"]

log = logging.getLogger(__name__)

_TRANSIENT = (TimeoutError, NoRespondersError, ServiceUnavailableError)
"""Set-up errors worth another try: no answer in time (``nats.errors.TimeoutError`` is a
``TimeoutError``), no responder yet, JetStream not available yet."""
_SETUP_RETRY_FIRST_S = 0.5
_SETUP_RETRY_MAX_S = 5.0


def _deliver_from(start: PlanningStart) -> dict[str, Any]:
    """The deliver-policy fields of a new consumer that begins at ``start``."""
    if start.policy == "all":
        return {"deliver_policy": DeliverPolicy.ALL}
    if start.policy == "sequence":
        return {"deliver_policy": DeliverPolicy.BY_START_SEQUENCE, "opt_start_seq": start.sequence}
    if start.policy == "time":
        return {"deliver_policy": DeliverPolicy.BY_START_TIME, "opt_start_time": start.time}
    return {"deliver_policy": DeliverPolicy.NEW}


async def subject_stream(js: Any, name: str, subject: str, *, replicas: int = 1) -> str:
    """The stream that holds ``subject``: an existing one, else a new ``name`` for it with
    ``replicas`` copies."""
    with contextlib.suppress(NotFoundError):
        found: str = await js.find_stream_name_by_subject(subject)
        return found
    await ensure_stream(js, StreamConfig(name=name, subjects=[subject], num_replicas=replicas))
    return name


class PlanningConsumer(BackgroundService):
    """Consumes one planning subject until shut down. Loop affinity: the loop that connected.

    Subclasses set ``subject`` and ``task_label`` and implement ``record``.

    Args:
        nc: a connected NATS client (closed by ``close`` when ``owns_connection``).
        durable: the consumer's name; every Fleet process shares it (each message to one).
        stream: the stream created for the subject when no stream holds it.
        max_deliver: deliveries before a transiently failing message is parked.
        ack_wait_s: how long a delivery may stay unacknowledged before it is redelivered.
        replicas: copies of the streams it creates (``FLEET_STREAM_REPLICAS``).
        start: where the durable begins if it does not exist yet (see the module docstring).
    """

    subject: ClassVar[str]
    task_label: ClassVar[str]
    bad_message_errors: ClassVar[tuple[type[Exception], ...]] = (ValueError,)
    """What ``record`` raises for a message that can never succeed."""

    def __init__(
        self,
        nc: NATS,
        *,
        durable: str,
        stream: str,
        max_deliver: int = 5,
        ack_wait_s: float = 30.0,
        owns_connection: bool = False,
        replicas: int = 1,
        start: PlanningStart | None = None,
    ) -> None:
        self._nc = nc
        self._js = nc.jetstream()
        self._durable = durable
        self._stream = stream
        self.max_deliver = max_deliver
        self._ack_wait_s = ack_wait_s
        self._owns = owns_connection
        self._replicas = replicas
        self._start = start or PlanningStart()
        self.accepted = 0
        self.parked = 0
        self.skipped: int | None = None
        """What the durable skipped when this process created it (None: it existed)."""
        self.consuming = asyncio.Event()
        """Set once the durable is bound: a message published from then on is delivered."""

    @property
    def dead_letter_subject(self) -> str:
        return f"{DEAD_LETTER_PREFIX}.{self.subject}"

    async def record(self, msg: Msg) -> str:
        """Record one message; returns what to log. Raises ``bad_message_errors`` for a bad
        one."""
        raise NotImplementedError

    async def run(self) -> None:
        stream = await self._set_up()
        sub = await self._js.pull_subscribe_bind(self._durable, stream)
        self.consuming.set()
        log.info("consuming %s from stream %s as %s", self.subject, stream, self._durable)
        async for msgs in pull_batches(sub, batch=32, what=f"consumer {self._durable}"):
            for msg in msgs:
                await self.handle(msg)

    async def _set_up(self) -> str:
        """The subject's stream, the dead-letter stream and the durable; the stream's name.

        A cluster that is electing leaders or placing a new replicated stream answers late or
        not at all for a while: a request that times out (or finds no responder) is tried again,
        with back-off, instead of ending the consumer, which would leave a node that looks up
        and never consumes (``fleet up`` would exit on it; the node's restart would meet the
        same cluster). What the server refuses outright still ends it."""
        delay = _SETUP_RETRY_FIRST_S
        attempt = 0
        while True:
            attempt += 1
            try:
                stream = await subject_stream(
                    self._js, self._stream, self.subject, replicas=self._replicas
                )
                await ensure_stream(self._js, dead_letter_stream_config(self._replicas))
                await self._create_durable(stream)
                return stream
            except _TRANSIENT as e:
                log.warning(
                    "%s: setting up durable %s failed (attempt %d: %r); retrying in %.1f s",
                    self.subject,
                    self._durable,
                    attempt,
                    e,
                    delay,
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, _SETUP_RETRY_MAX_S)

    async def _create_durable(self, stream: str) -> None:
        """Create the durable where ``start`` says, unless it exists; log what it skipped."""
        with contextlib.suppress(NotFoundError):
            info = await self._js.consumer_info(stream, self._durable)
            log.info(
                "%s: durable %s exists; resuming where it stands (%d pending)",
                self.subject,
                self._durable,
                info.num_pending or 0,
            )
            return
        retained = await self._retained(stream)
        config = ConsumerConfig(
            durable_name=self._durable,
            filter_subject=self.subject,
            ack_wait=self._ack_wait_s,
            max_deliver=self.max_deliver,
            **_deliver_from(self._start),
        )
        # Two processes starting together create the same config: the second gets the first's.
        created: ConsumerInfo = await self._js.add_consumer(stream, config=config)
        self.skipped = max(0, retained - (created.num_pending or 0))
        log.warning(
            "%s: new durable %s starts at %s (FLEET_PLANNING_START): %d retained message(s) "
            "skipped, %d to consume",
            self.subject,
            self._durable,
            self._start,
            self.skipped,
            created.num_pending or 0,
        )

    async def _retained(self, stream: str) -> int:
        """How many messages of the subject the stream holds now."""
        info = await self._js.stream_info(stream, subjects_filter=self.subject)
        return int((info.state.subjects or {}).get(self.subject, 0))

    async def handle(self, msg: Msg) -> None:
        """One delivery: record, park, or nak for a retry. Never raises."""
        try:
            done = await self.record(msg)
        except self.bad_message_errors as e:
            await self._park(msg, f"bad message: {e}")
            return
        except Exception as e:  # the store may be down: retry, then park
            delivered = msg.metadata.num_delivered
            if delivered >= self.max_deliver:
                await self._park(msg, f"gave up after {delivered} deliveries: {e}")
            else:
                log.warning("%s delivery %d failed (%s); will retry", self.subject, delivered, e)
                await msg.nak(delay=min(2.0**delivered * 0.5, 30.0))
            return
        self.accepted += 1
        log.info("%s", done)
        await msg.ack()

    async def _park(self, msg: Msg, reason: str) -> None:
        meta = msg.metadata
        log.warning(
            "%s %s#%d parked on %s: %s",
            self.subject,
            meta.stream,
            meta.sequence.stream,
            self.dead_letter_subject,
            reason,
        )
        headers = {
            "Fleet-Dead-Letter-Reason": reason[:1000],
            "Fleet-Original-Subject": msg.subject,
            "Fleet-Original-Sequence": str(meta.sequence.stream),
            "Fleet-Deliveries": str(meta.num_delivered),
            "Nats-Msg-Id": f"dlq:{meta.stream}:{meta.sequence.stream}",
        }
        await self._js.publish(self.dead_letter_subject, msg.data, headers=headers)
        self.parked += 1
        await msg.term()

    @property
    def task_name(self) -> str:
        return self.task_label

    async def close(self) -> None:
        await self.stop_runner()
        if self._owns and not self._nc.is_closed:
            await self._nc.close()
