"""Work sharing among dispatcher processes: a JetStream work queue of deliberation notices.

Every dispatcher follows the whole event feed (cheap) but must not drive every deliberation.
Each new deliberation gets one *notice* on ``fleet.work.deliberation.<id>`` in the ``FLEET_WORK``
stream (work-queue retention; at most one message per subject, extra ones refused), and one
durable pull consumer, shared by every dispatcher, hands each notice to exactly one of them:

* every dispatcher offers every deliberation it sees requested (and, on start, every open one):
  the subject limit (``discard_new_per_subject``) and ``Nats-Msg-Id`` make the offers idempotent,
  so a crash between saving the event and offering it is covered by the next dispatcher's offer;
* the owner heart-beats (``in_progress``) every ``lease_s / 3`` while it drives the deliberation
  and acks the notice when the deliberation is terminal (the stream then forgets it);
* an owner that dies stops heart-beating: after ``lease_s`` (the consumer's ack wait,
  ``FLEET_WORK_LEASE``, ``DEFAULT_LEASE_S``: 3 s) JetStream redelivers the notice to another
  dispatcher, which derives what is outstanding from the events;
* an owner that stops cleanly naks its notices, so another takes them at once.

The lease is short because the beats, not the lease, say "alive": with a beat a second, a killed
dispatcher's deliberations are taken over 2-3 s after its last beat. A pause longer than about two
beats (a stalled loop, a paused process, a nats-server restart longer than the lease) can hand a
notice to a second dispatcher while the first still works; the aggregate still records one answer
per (agent, round), so the cost is a repeated call, never a repeated fact. The consumer is created
or updated with the lease each dispatcher states, so a changed ``FLEET_WORK_LEASE`` applies to an
existing installation too (run every dispatcher with the same value: the last one started sets it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator
from uuid import UUID

import nats
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js.api import AckPolicy, ConsumerConfig, DiscardPolicy, RetentionPolicy, StreamConfig
from nats.js.errors import APIError

from natsio import close_connection, ensure_stream, pull_batches, servers

log = logging.getLogger(__name__)

WORK_SUBJECT_PREFIX = "fleet.work.deliberation"
OFFER_RETRY_S = 10.0
"""How long an offer is retried while the stream cannot take it (a leader election on an R3
stream, a reconnect) before the error ends the dispatcher's feed follower."""
DEFAULT_LEASE_S = 3.0


class JetStreamClaim:
    """One notice this dispatcher holds."""

    def __init__(self, msg: Msg, deliberation_id: UUID) -> None:
        self._msg = msg
        self._id = deliberation_id

    @property
    def deliberation_id(self) -> UUID:
        return self._id

    async def keep(self) -> None:
        await self._msg.in_progress()

    async def done(self) -> None:
        with contextlib.suppress(Exception):  # already acked, or the connection is closing
            await self._msg.ack()

    async def release(self) -> None:
        with contextlib.suppress(Exception):
            await self._msg.nak()


class JetStreamWorkQueue:
    """The ``dispatchers.ports.WorkQueue`` on JetStream. Loop affinity: the loop that connected.

    Args:
        nc: connected NATS client (closed by ``close`` when ``owns_connection``).
        stream: the work stream's name (one per Fleet installation: per event stream).
        lease_s: how long a silent owner keeps its notices (the consumer's ack wait).
        replicas: copies of the work stream (``FLEET_STREAM_REPLICAS``; an existing stream is
            kept as it is, with a warning when it has fewer).
    """

    def __init__(
        self,
        nc: NATS,
        *,
        stream: str = "FLEET_WORK",
        durable: str = "fleet-dispatchers",
        lease_s: float = DEFAULT_LEASE_S,
        owns_connection: bool = False,
        replicas: int = 1,
    ) -> None:
        self._nc = nc
        self._js = nc.jetstream()
        self.stream = stream
        self.subject_prefix = f"{WORK_SUBJECT_PREFIX}.{stream.lower()}"
        self._durable = durable
        self.lease_s = lease_s
        self._owns = owns_connection
        self.replicas = replicas
        self._ready = False
        self.offered = 0

    @classmethod
    async def connect(cls, url: str, **kwargs: object) -> JetStreamWorkQueue:
        nc = await nats.connect(servers(url), name="fleet-work-queue", max_reconnect_attempts=-1)
        q = cls(nc, owns_connection=True, **kwargs)  # type: ignore[arg-type]
        await q.ensure()
        return q

    async def ensure(self) -> None:
        """Create the work stream when absent (the same config twice is a no-op)."""
        if self._ready:
            return
        config = StreamConfig(
            name=self.stream,
            subjects=[f"{self.subject_prefix}.*"],
            retention=RetentionPolicy.WORK_QUEUE,
            max_msgs_per_subject=1,
            discard=DiscardPolicy.NEW,
            discard_new_per_subject=True,
            duplicate_window=120.0,
            num_replicas=self.replicas,
        )
        await ensure_stream(self._js, config)
        self._ready = True

    def _subject(self, d_id: UUID) -> str:
        return f"{self.subject_prefix}.{d_id.hex}"

    async def offer(self, deliberation_id: UUID) -> None:
        """Put a notice for the deliberation on the queue unless one is already there."""
        await self.ensure()
        delay = 0.05
        loop = asyncio.get_running_loop()
        give_up = loop.time() + OFFER_RETRY_S
        while True:
            try:
                await self._js.publish(
                    self._subject(deliberation_id),
                    deliberation_id.hex.encode(),
                    headers={"Nats-Msg-Id": f"work:{deliberation_id.hex}"},
                )
                self.offered += 1
                return
            except APIError as e:
                # A notice for this deliberation is already queued (10077: discard new per
                # subject), or another dispatcher's offer of it is being stored right now
                # (10158, "duplicate message id is in process", seen on R3 streams).
                if e.err_code in (10077, 10158):
                    return
                if e.code not in (408, 503):  # only "no leader yet" and timeouts pass
                    raise
                error: Exception = e
            except (NatsError, TimeoutError) as e:  # no leader yet, a reconnect: idempotent
                error = e
            if loop.time() + delay > give_up:
                raise error
            log.info("work queue: offer of %s retried: %s", deliberation_id, error)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    async def claims(self) -> AsyncGenerator[JetStreamClaim, None]:
        await self.ensure()
        # Create or update (``pull_subscribe`` would keep an existing consumer's ack wait, and
        # with it the lease of whichever Fleet version created it).
        await self._js.add_consumer(
            self.stream,
            ConsumerConfig(
                durable_name=self._durable,
                ack_policy=AckPolicy.EXPLICIT,
                ack_wait=self.lease_s,
                max_deliver=-1,
                max_ack_pending=10_000,
                filter_subject=f"{self.subject_prefix}.*",
            ),
        )
        sub = await self._js.pull_subscribe_bind(self._durable, self.stream)
        # One notice per fetch: with batches, a notice could wait for the next one to be
        # offered (``natsio.pull``: a pull request kept open while claims are heart-beaten).
        async for msgs in pull_batches(sub, batch=1, what=f"work queue {self._durable}"):
            for msg in msgs:
                try:
                    d_id = UUID(hex=msg.subject.rsplit(".", 1)[-1])
                except ValueError:
                    log.warning("work queue: dropping notice on %s", msg.subject)
                    await msg.term()
                    continue
                yield JetStreamClaim(msg, d_id)

    async def close(self) -> None:
        if self._owns:
            await close_connection(self._nc)
