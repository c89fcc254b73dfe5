"""The AgentRuntime on a JetStream work queue: agent calls go to plain worker processes, no Ray.

Why ``agent_runtime`` imports ``nats`` here: this module *is* an agent backend, the peer of
``ray_backend.runtime`` (which imports ``ray``); the transport is the backend. It stays below the
dispatchers (they see only ``agent_runtime.api``) and it owns no event: results come back as
return values and ``AgentTurnError``, exactly as from Ray, so nothing above the dispatcher can
tell the backends apart. It must not reach the event stream: its streams are its own.

How a call travels (names in ``_wire.QueueNames``):

1. ``run_turn`` / ``review`` / ``assess`` first look for an answer already stored for the
   call's key (a re-dispatch after a takeover: the answer its first caller never read is
   taken, not asked for again; JetStream's dedupe alone cannot promise that, because a
   work-queue stream forgets acked work's ids when the server restarts). Otherwise they publish
   one message on the work stream (``<STREAM>_AGENT_WORK``, retention *workqueue*, not the
   event stream), subject ``fleet.agents.<ns>.work.<ROLE>.<kind>``, with ``Nats-Msg-Id`` = the
   call's key (``AgentTurn.key`` for turns). A second publish of the same key inside the
   duplicate window is refused by JetStream, so a re-dispatch never queues live work twice; it
   reads the answer stored meanwhile, if there is one, and otherwise waits for the one in
   flight. A stored failure is an earlier caller's: the call is queued again as a new attempt.
2. Workers of the role share one durable pull consumer (``agent_runtime.nats_backend.worker``)
   and answer on ``fleet.agents.<ns>.results.<kind>.<digest of key>`` in the results stream
   (``<STREAM>_AGENT_RESULTS``, limits retention, ``max_age`` bounded).
3. This process reads every result through one durable consumer of its own (``results-<id>``,
   deliver-new, removed when idle) and completes the future waiting on that key. A result for a
   key nobody here awaits (another dispatcher's, a late one) is acked and dropped; the
   aggregate would refuse a second answer anyway. A worker whose answer the results stream
   refuses as a repeat leaves the first one standing, and that is the one the caller reads.
4. A failed call comes back as a result with ``ok=False`` and the reason (the worker's last
   attempt, or the dead-letter path after ``max_deliver``): it raises ``AgentTurnError`` here at
   once, rather than waiting out the call's deadline. If no answer comes within the call's
   ``timeout_s`` plus a grace, ``AgentTurnError`` too.

(Over 400 lines on purpose: one class, the caller's end of the queue; queuing, the stored-answer
lookup and the results listener share its waiting calls and are read together. The wire format
is ``_wire``, the worker's end ``worker``, the shared plumbing ``natsio``.)

No semaphore bounds calls here: the workers' concurrency is the bound on the endpoint, and work
beyond it waits in the queue (its depth is the autoscaling signal).

Loop affinity: the loop that called ``start``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import re
import socket
import time
import uuid
from collections import defaultdict
from typing import Any, TypeVar

import nats
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, PubAck
from nats.js.errors import NotFoundError

from agent_runtime.api import (
    AgentRuntimeError,
    AgentTurn,
    AgentTurnError,
    Assessment,
    AssessmentInput,
    ReviewInput,
    ReviewResult,
    TurnResult,
)
from agent_runtime.nats_backend._wire import QueueNames, ResultMessage, WorkMessage, decode, encode
from natsio import (
    PullSubscription,
    StreamSetupError,
    close_connection,
    ensure_stream,
    pull_batches,
    servers,
)

__all__ = [
    "NatsAgentRuntime",
    "QueueNames",
    "StreamSetupError",
    "ensure_stream",
    "ensure_streams",
]

log = logging.getLogger(__name__)
T = TypeVar("T")

RESULT_GRACE_S = 5.0
"""Extra wait past a call's own timeout for the worker's failure report (the worker enforces the
deadline; this only catches workers that are gone)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


async def ensure_streams(
    js: JetStreamContext,
    names: QueueNames,
    *,
    duplicate_window_s: float = 120.0,
    results_max_age_s: float,
    replicas: int = 1,
) -> None:
    """Create the work and results streams when absent, with ``replicas`` copies each."""
    for config in (
        names.work_stream_config(duplicate_window_s, replicas),
        names.results_stream_config(results_max_age_s, replicas),
    ):
        await ensure_stream(js, config)


def default_runtime_id() -> str:
    raw = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    return _UNSAFE.sub("_", raw)[:64]


class NatsAgentRuntime:
    """AgentRuntime whose calls are served by ``fleet worker`` processes over JetStream.

    Build it with ``await NatsAgentRuntime.start(...)`` (or ``connect(url, ...)``).

    Args:
        nc: a connected NATS client (closed by ``close`` when ``owns_connection``).
        names: the installation's queue names (its namespace is the event stream's name).
        runtime_id: names this process's results consumer; unique per process.
        assess_timeout_s: how long an assessment may take (it has no timeout of its own).
        grace_s: extra wait past a call's timeout for the worker's failure report.
        consumer_idle_s: a results consumer nobody fetches from for this long is removed by the
            server (a crashed dispatcher leaves nothing behind).
        fetch_timeout_s: how long one poll of the results consumer waits (a poll that finds
            nothing simply polls again; tests shorten it to cross many idle polls quickly).
    """

    def __init__(
        self,
        nc: NATS,
        names: QueueNames,
        *,
        runtime_id: str | None = None,
        assess_timeout_s: float = 120.0,
        grace_s: float = RESULT_GRACE_S,
        consumer_idle_s: float = 300.0,
        fetch_timeout_s: float = 1.0,
        owns_connection: bool = False,
    ) -> None:
        self._nc = nc
        self._js = nc.jetstream()
        self.names = names
        self.runtime_id = _UNSAFE.sub("_", runtime_id or default_runtime_id())
        self._assess_timeout_s = assess_timeout_s
        self._grace_s = grace_s
        self._idle_s = consumer_idle_s
        self._fetch_timeout_s = fetch_timeout_s
        self._owns = owns_connection
        self._waiting: defaultdict[tuple[str, str], set[_Waiter]] = defaultdict(set)
        self._listener: asyncio.Task[None] | None = None
        self._listener_error: BaseException | None = None
        self._sub: JetStreamContext.PullSubscription | None = None
        self._closed = False
        self.published = 0
        self.deduplicated = 0
        """Calls JetStream recognised as already queued (re-dispatches)."""
        self.dropped_results = 0
        """Results nobody here was waiting for (late, duplicate, or another process's)."""
        self.reused = 0
        """Calls answered from the results stream without queuing (stored before they were
        asked here: a takeover, or a redelivery after a server restart)."""
        self.found_at_deadline = 0
        """Calls whose answer the feed had not brought by the deadline but the stream held."""

    @property
    def durable(self) -> str:
        return f"results-{self.runtime_id}"

    @classmethod
    async def connect(
        cls,
        url: str,
        names: QueueNames,
        *,
        duplicate_window_s: float = 120.0,
        results_max_age_s: float = 3600.0,
        replicas: int = 1,
        **kwargs: Any,
    ) -> NatsAgentRuntime:
        """Connect to NATS, make sure the streams exist and start reading results."""
        nc = await nats.connect(servers(url), name="fleet-agent-runtime", max_reconnect_attempts=-1)
        runtime = cls(nc, names, owns_connection=True, **kwargs)
        try:
            await runtime.start(
                duplicate_window_s=duplicate_window_s,
                results_max_age_s=results_max_age_s,
                replicas=replicas,
            )
        except BaseException:
            await runtime.close()
            raise
        return runtime

    async def start(
        self,
        *,
        duplicate_window_s: float = 120.0,
        results_max_age_s: float = 3600.0,
        replicas: int = 1,
    ) -> None:
        """Ensure the streams (``replicas`` copies: ``FLEET_STREAM_REPLICAS``) and this
        process's results consumer; start the listener."""
        if self._listener is not None:
            return
        await ensure_streams(
            self._js,
            self.names,
            duplicate_window_s=duplicate_window_s,
            results_max_age_s=results_max_age_s,
            replicas=replicas,
        )
        config = ConsumerConfig(
            durable_name=self.durable,
            deliver_policy=DeliverPolicy.NEW,
            ack_policy=AckPolicy.ALL,
            ack_wait=30.0,
            max_ack_pending=-1,
            inactive_threshold=self._idle_s,
            filter_subject=f"{self.names.results_prefix}.>",
        )
        await self._js.add_consumer(self.names.results_stream, config)
        sub = self._sub = await self._js.pull_subscribe_bind(
            self.durable, self.names.results_stream
        )
        self._listener = asyncio.create_task(
            self._listen(sub), name=f"agent-results-{self.durable}"
        )
        self._listener.add_done_callback(self._listener_ended)

    # -- the Protocol

    async def run_turn(self, turn: AgentTurn) -> TurnResult:
        """Queue one turn for a worker of its role and wait for the answer.

        Raises:
            AgentTurnError: the worker reported a failure (after its retries, or from the dead
                letter), no answer came in time, or the work could not be queued.
        """
        result = await self._call("turn", turn.key, turn.role, encode(turn), turn.timeout_s)
        return _decoded(TurnResult, result, f"turn {turn.key}")

    async def review(self, request: ReviewInput) -> ReviewResult:
        """Queue one peer review. Raises AgentTurnError as ``run_turn``."""
        result = await self._call(
            "review", request.key, request.role, encode(request), request.timeout_s
        )
        return _decoded(ReviewResult, result, f"review {request.key}")

    def precheck(self, request: AssessmentInput) -> None:
        """Not used: ``assess`` already runs on a worker, off the dispatcher's loop."""

    async def assess(self, request: AssessmentInput) -> list[Assessment]:
        """Score on a worker of the role (the checks compile code: not on the dispatcher's loop).

        Raises:
            AgentRuntimeError: the worker failed or none answered in time.
        """
        # The same deliberation may be assessed again with other candidates (after a restart):
        # the key names the candidates, so dedupe never hands back another set's scores.
        digest = hashlib.sha256(
            "\x00".join(f"{c.agent_id}\x01{c.content}" for c in request.candidates).encode()
        ).hexdigest()[:16]
        key = f"{request.deliberation_id}:assess:{digest}"
        try:
            result = await self._call(
                "assess", key, request.role, encode(request), self._assess_timeout_s
            )
        except AgentTurnError as e:
            raise AgentRuntimeError(str(e)) from None
        if not isinstance(result.body, list):
            raise AgentRuntimeError(f"assessment {key}: worker sent {type(result.body).__name__}")
        try:
            return [decode(Assessment, a) for a in result.body]
        except (ValueError, TypeError, KeyError) as e:
            raise AgentRuntimeError(f"assessment {key}: unreadable answer: {e}") from None

    async def close(self) -> None:
        """Stop reading results, fail the calls still waiting, remove the consumer. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._listener is not None:
            self._listener.cancel()
            await asyncio.gather(self._listener, return_exceptions=True)
        if self._sub is not None:
            with contextlib.suppress(NatsError):
                await self._sub.unsubscribe()
        for waiters in self._waiting.values():
            for w in waiters:
                if not w.future.done():
                    w.future.set_exception(AgentTurnError("agent runtime closed"))
        self._waiting.clear()
        if not self._nc.is_closed:
            with contextlib.suppress(NatsError, NotFoundError, TimeoutError, OSError):
                await self._js.delete_consumer(self.names.results_stream, self.durable)
            if self._owns:
                await close_connection(self._nc)

    # -- one call

    async def _call(
        self, kind: str, key: str, role: str, body: dict[str, object], timeout_s: float
    ) -> ResultMessage:
        """Queue one call and wait for its answer, or take the answer already stored.

        The results stream, not the live feed alone, is where answers are found: an answer
        stored before this process asked (its first caller died and this process took the
        deliberation over; a server restart made the work stream forget the call, so it ran
        again and the second answer was refused as a repeat) is looked up first and taken
        without asking the model again. A stored *failure* is an earlier attempt's, whose
        caller is gone (its deadline may be long past): the call is queued anew as an attempt
        of its own (``WorkMessage.attempt``), which neither stream's dedupe mistakes for the
        failed one. Only an answer of this attempt's, or any success, ends the wait.
        """
        if self._closed or self._listener is None:
            raise AgentTurnError(f"{kind} {key}: agent runtime is not running")
        if self._listener_error is not None:
            msg = f"{kind} {key}: agent results listener stopped: {self._listener_error!r}"
            raise AgentTurnError(msg)
        waiter = _Waiter(asyncio.get_running_loop().create_future())
        waiters = self._waiting[(kind, key)]
        waiters.add(waiter)  # before looking or queuing: the answer may land at any moment
        try:
            result = await self._stored_or_queued(waiter, kind, key, role, body, timeout_s)
        finally:
            waiters.discard(waiter)
            if not waiters:
                self._waiting.pop((kind, key), None)
        if not result.ok:
            raise AgentTurnError(result.error or f"{kind} {key} failed (no reason given)")
        return result

    async def _stored_or_queued(
        self,
        waiter: _Waiter,
        kind: str,
        key: str,
        role: str,
        body: dict[str, object],
        timeout_s: float,
    ) -> ResultMessage:
        earlier = await self._stored_result(kind, key)
        if earlier is not None and earlier[1].ok:
            self.reused += 1
            return earlier[1]
        if earlier is not None:
            waiter.attempt = f"after-{earlier[0]}"
        work = WorkMessage(
            kind, key, role.upper(), time.time() + timeout_s, body, attempt=waiter.attempt
        )
        ack = await self._queue(work, role, timeout_s)
        self.published += 1
        if ack.duplicate:  # queued before (this attempt): its answer may be stored already
            self.deduplicated += 1
            await self._offer_stored(waiter, kind, key, earlier)
        try:
            return await asyncio.wait_for(asyncio.shield(waiter.future), timeout_s + self._grace_s)
        except TimeoutError:
            pass
        # The feed may be behind the stream: its consumer reconnecting after a server was lost,
        # with the answer stored meanwhile. Look once more, so that a call a worker answered is
        # never recorded as one nobody answered.
        if await self._offer_stored(waiter, kind, key, earlier):
            self.found_at_deadline += 1
            log.warning(
                "agent results: %s %s found stored at its deadline (the feed was behind)", kind, key
            )
        if waiter.future.done():
            return waiter.future.result()
        msg = f"{kind} {key}: no worker answered within {timeout_s:.1f} s"
        raise AgentTurnError(msg)

    async def _offer_stored(
        self, waiter: _Waiter, kind: str, key: str, earlier: tuple[int, ResultMessage] | None
    ) -> bool:
        """Offer the waiter the answer stored now, if it came after ``earlier`` (the failure
        this attempt replaced); whether it ended the wait."""
        stored = await self._stored_result(kind, key)
        if stored is None or (earlier is not None and stored[0] <= earlier[0]):
            return False
        return waiter.offer(stored[1])

    async def _queue(self, work: WorkMessage, role: str, timeout_s: float) -> PubAck:
        """Publish the work, retried while the stream cannot take it (a leader election on an
        R3 stream, a reconnect): a refused publish is not a failed call, and a repeat is safe
        (the ``Nats-Msg-Id`` makes a second copy a duplicate). Gives up when the call's own
        time is spent."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + timeout_s
        delay = 0.05
        while True:
            try:
                return await self._js.publish(
                    self.names.work_subject(role, work.kind),
                    work.to_bytes(),
                    headers={"Nats-Msg-Id": work.msg_id, "Fleet-Kind": work.kind},
                )
            except (NatsError, TimeoutError, OSError) as e:
                if loop.time() + delay > give_up:
                    msg = f"{work.kind} {work.key}: could not queue the work: {e}"
                    raise AgentTurnError(msg) from e
                log.info("agent work %s %s: queuing retried: %s", work.kind, work.key, e)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    async def _stored_result(self, kind: str, key: str) -> tuple[int, ResultMessage] | None:
        """The last answer stored for a call, with its stream sequence, if any.

        Read from the stream's leader (not a direct get, which a lagging replica of an R3
        stream may answer without the newest message)."""
        try:
            raw = await self._js.get_last_msg(
                self.names.results_stream, self.names.result_subject(kind, key)
            )
        except NotFoundError:
            return None
        except (NatsError, TimeoutError) as e:
            # Not found and unreadable are different: say so, and let the live feed answer.
            log.warning("agent results: could not look up %s %s: %s", kind, key, e)
            return None
        try:
            stored = ResultMessage.from_bytes(raw.data or b"")
        except ValueError:
            return None
        return (raw.seq or 0, stored) if stored.key == key else None

    async def _listen(self, sub: PullSubscription) -> None:
        what = f"agent results ({self.durable})"
        async for msgs in pull_batches(sub, batch=256, timeout_s=self._fetch_timeout_s, what=what):
            for msg in msgs:
                self._deliver(msg)
            with contextlib.suppress(NatsError):  # ack policy "all": the last acks the batch
                await msgs[-1].ack()

    def _listener_ended(self, task: asyncio.Task[None]) -> None:
        """The listener only ends on close; if anything else ends it, no answer can arrive any
        more: say so loudly and fail every waiting call now rather than at its timeout."""
        if task.cancelled() or self._closed:
            return
        error = task.exception() or RuntimeError("agent results listener ended")
        self._listener_error = error
        log.error("agent results listener (%s) stopped: %r", self.durable, error, exc_info=error)
        for waiters in self._waiting.values():
            for w in waiters:
                if not w.future.done():
                    w.future.set_exception(
                        AgentTurnError(f"agent results listener stopped: {error!r}")
                    )

    def _deliver(self, msg: Msg) -> None:
        try:
            result = ResultMessage.from_bytes(msg.data)
        except ValueError as e:
            log.warning("agent results: unreadable message on %s dropped: %s", msg.subject, e)
            return
        waiters = self._waiting.get((result.kind, result.key))
        taken = sum(w.offer(result) for w in waiters or ())
        if not taken:
            self.dropped_results += 1
            log.debug("agent results: %s %s not awaited here; dropped", result.kind, result.key)


class _Waiter:
    """One call waiting for its answer: any success, or a failure of its own attempt (a late
    failure of an earlier attempt must not fail the attempt that replaced it)."""

    __slots__ = ("attempt", "future")

    def __init__(self, future: asyncio.Future[ResultMessage]) -> None:
        self.future = future
        self.attempt = ""

    def offer(self, result: ResultMessage) -> bool:
        """Complete the wait with ``result`` if it answers it; whether it did."""
        if self.future.done() or not (result.ok or result.attempt == self.attempt):
            return False
        self.future.set_result(result)
        return True


def _decoded(cls: type[T], result: ResultMessage, what: str) -> T:
    try:
        return decode(cls, result.body)
    except (ValueError, TypeError, KeyError) as e:
        raise AgentTurnError(
            f"{what}: unreadable answer from worker {result.worker}: {e}"
        ) from None
