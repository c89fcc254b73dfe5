"""The NATS worker's dead letters: parking work it gives up on, and work nobody could finish.

Two paths end a call without an answer from the model, and both must leave the work where an
operator finds it (the dead-letter stream, the reason in a header) and tell the caller why, at
once, instead of letting it wait out its deadline:

* the worker's own last attempt failed (``AgentWorker._dead_letter`` parks it here, then answers
  the caller with the reason);
* JetStream stopped delivering the call because every attempt's worker died or stalled
  (the server's ``MAX_DELIVERIES`` advisory): whichever worker of the role hears it (a queue
  group: one of them) parks the work, answers the caller and deletes the message.

Loop affinity: the worker's loop.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Awaitable, Callable

from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import PubAck
from nats.js.errors import NotFoundError

from agent_runtime.nats_backend._wire import QueueNames, ResultMessage, WorkMessage

__all__ = ["MAX_DELIVERIES_ADVISORY", "WorkParking", "WorkerStats", "about"]

# The worker's lines, under the worker's name.
log = logging.getLogger("agent_runtime.nats_backend.worker")

MAX_DELIVERIES_ADVISORY = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES"


@dataclasses.dataclass
class WorkerStats:
    """What a worker did, for its metrics and tests (kept here, where parking counts too)."""

    answered: int = 0
    failed: int = 0
    """Failure results published (final attempt, dead letter, or expired)."""
    retried: int = 0
    """Deliveries nak'ed for another attempt."""
    dead_lettered: int = 0
    expired: int = 0
    in_flight: int = 0


def about(deliberation_id: str) -> dict[str, str]:
    """``extra`` for a line logged outside the call's task: the id ``fleet.logs`` prints."""
    return {"deliberation_id": deliberation_id} if deliberation_id else {}


class WorkParking:
    """Parks one role's work on the dead-letter stream and answers its caller.

    Args:
        js: the worker's JetStream context.
        names: the installation's queue names.
        role: the role whose work this is.
        worker_id: names the worker in log lines and results.
        max_deliver: the consumer's deliveries, when an advisory does not say.
        publish_result: stores a result on the results stream (the worker's own, so both paths
            store alike).
        stats: the worker's counters (parking counts dead letters and failures).
    """

    def __init__(
        self,
        js: JetStreamContext,
        names: QueueNames,
        role: str,
        worker_id: str,
        max_deliver: int,
        publish_result: Callable[[ResultMessage], Awaitable[PubAck]],
        stats: WorkerStats,
    ) -> None:
        self._js = js
        self.names = names
        self.role = role
        self.worker_id = worker_id
        self.max_deliver = max_deliver
        self._publish_result = publish_result
        self._stats = stats

    async def park(
        self, data: bytes, subject: str, seq: int, deliveries: int, reason: str, d_id: str
    ) -> None:
        log.warning(
            "worker %s: work %s#%d dead-lettered: %s",
            self.worker_id,
            subject,
            seq,
            reason,
            extra=about(d_id),
        )
        headers = {
            "Fleet-Dead-Letter-Reason": reason[:1000],
            "Fleet-Original-Subject": subject,
            "Fleet-Original-Sequence": str(seq),
            "Fleet-Deliveries": str(deliveries),
            "Nats-Msg-Id": f"dlq:{self.names.work_stream}:{seq}",
        }
        await self._js.publish(self.names.dead_letter_subject(self.role), data, headers=headers)
        self._stats.dead_lettered += 1

    async def on_max_deliveries(self, advisory: Msg) -> None:
        """Every attempt's worker died or stalled: park the work and answer its caller."""
        try:
            info = json.loads(advisory.data)
            seq = int(info["stream_seq"])
            deliveries = int(info.get("deliveries") or self.max_deliver)
            raw = await self._js.get_msg(self.names.work_stream, seq)
        except (ValueError, KeyError, NotFoundError, NatsError, TimeoutError) as e:
            log.debug("worker %s: max-deliveries advisory not handled: %s", self.worker_id, e)
            return
        reason = (
            f"delivered {deliveries} times with no answer: every worker that took it died or "
            "stalled mid-call"
        )
        data = raw.data or b""
        try:
            work = WorkMessage.from_bytes(data)
            reason = f"{work.kind} {work.key}: {reason}"
        except (ValueError, KeyError, TypeError):
            work = None
        d_id = work.deliberation_id if work is not None else ""
        try:
            await self.park(data, raw.subject or "", seq, deliveries, reason, d_id)
            if work is not None:
                await self._publish_result(
                    ResultMessage(
                        work.kind,
                        work.key,
                        ok=False,
                        error=reason,
                        worker=self.worker_id,
                        deliveries=deliveries,
                        dead_lettered=True,
                        attempt=work.attempt,
                    )
                )
                self._stats.failed += 1
            await self._js.delete_msg(self.names.work_stream, seq)
        except (NatsError, TimeoutError, NotFoundError) as e:
            log.warning(
                "worker %s: could not park work #%d: %s", self.worker_id, seq, e, extra=about(d_id)
            )
