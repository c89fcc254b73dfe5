"""A worker of the NATS agent backend: takes one role's agent calls off the JetStream work queue.

Each worker runs a ``member.caller.CouncilMember`` (the same prompts, client and prefill join as
a Ray actor), so a turn's answer does not depend on the backend. Every worker of a role binds the
same durable pull consumer (``agents-<ROLE>``), which makes the role's work a queue: start more
processes, anywhere that reaches NATS and the model endpoint, and they share it.

Delivery is explicit, and the rules are:

* **Ack after the answer is stored.** The result is published to the results stream and
  JetStream's ack of that publish is awaited before the work message is acked. A worker that
  dies in between leaves the work to be redelivered; the second answer is dropped by the results
  stream's dedupe (same ``Nats-Msg-Id``) or by the caller, and the aggregate refuses a second
  answer for the same (agent, round) in any case.
* **Alive means heart-beating.** While a call runs, and until its answer is stored, the worker
  sends ``in_progress`` every third of the ack wait (``DEFAULT_ACK_WAIT_S``: 3 s, so a beat a
  second), so the ack wait can be short however long a model call takes; a worker that is
  SIGKILLed or stalls stops heart-beating and its work is redelivered to another worker within
  the ack wait. A beat that fails (the server restarting) does not end the beating: the next one
  is sent on time. A beat that comes later than the whole ack wait (a loop stalled that long) is
  logged: the call may be running twice, which costs a call, never a second recorded answer.
* **A store that fails for a while is retried in place.** When the results stream cannot take an
  answer (nats-server restarting, a stream without quorum), the worker keeps the delivery,
  heart-beating, and retries the store with a short back-off (``STORE_RETRY_MAX_S``) until it is
  stored or the call's deadline passes: the answer is not thrown away, no model call is repeated
  and no delivery of ``max_deliver`` is spent by a nak.
* **A call comes back to the worker running it: it is not run twice.** A stall past the ack wait
  hands a call back, and so does a beat or an ack lost while nats-server restarts: JetStream
  takes a moment to recover its streams after the server accepts connections again, and what
  reaches it meanwhile is dropped (seen in the restart test: a call answered and acked was
  delivered again at its ack wait). A delivery of a call this worker is still running joins
  that call (beating for it, acked with its answer); one of a call it has answered already is
  acked at once. Another worker that gets it runs it again, and its answer is dropped as above.
* **A failure is retried elsewhere, then dead-lettered.** A failed call (the model endpoint's
  error after the client's own retries, or an unexpected error) is nak'ed with back-off, so the
  next attempt may land on a worker with a healthy path to the endpoint. On the ``max_deliver``-th
  delivery the work is parked on ``fleet.deadletter.agents.<ns>.<ROLE>`` (stream
  ``FLEET_DEADLETTER``, the reason in ``Fleet-Dead-Letter-Reason``) and a failure result with that
  reason is published, so the dispatcher records ``AgentFailed`` at once instead of waiting for its
  deadline. Work that JetStream stops delivering because every attempt's worker died (the server's
  ``MAX_DELIVERIES`` advisory) is parked and answered the same way by whichever worker of the role
  hears the advisory (a queue group: one of them).
* **Work past its deadline is not run.** The caller stops waiting at the deadline the message
  carries; a worker that takes it later answers "expired" without calling the model. Each
  attempt gets what is left of the one budget (workers' clocks are assumed NTP-close).

Every log line about a call names its deliberation: the task serving a call is named
``deliberation:<id>``, the hook ``fleet.logs`` reads (so the client's and the council's lines
inside the call carry it too), and lines logged outside that task pass it as the record's
``deliberation_id``. The streams are made with ``replicas`` copies (``FLEET_STREAM_REPLICAS``).

Loop affinity: the loop that runs ``run``. Lifecycle: ``await run()`` until ``await close()``
(in-flight calls get ``drain_s`` to finish; the rest are nak'ed so another worker takes them at
once), or ``async with``.

Parking work on the dead-letter stream, and the max-deliveries advisory, are
``_worker_parking``'s. (Over 400 lines on purpose: serving one delivery, from its claim through
the heart-beats and the join of a redelivered call to the stored answer and its ack, is one
sequence whose steps share the worker's in-flight state, and reads best in one place.)
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import logging
import os
import socket
import time
from typing import Protocol

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, PubAck
from nats.js.errors import NotFoundError

from agent_runtime.api import (
    AgentRuntimeError,
    AgentTurn,
    Assessment,
    AssessmentInput,
    ReviewInput,
    ReviewResult,
    TurnResult,
)
from agent_runtime.nats_backend._wire import (
    QueueNames,
    ResultMessage,
    WorkMessage,
    decode,
    encode,
)
from agent_runtime.nats_backend._worker_parking import (
    MAX_DELIVERIES_ADVISORY,
    WorkerStats,
    WorkParking,
    about,
)
from agent_runtime.nats_backend.runtime import ensure_streams
from lifecycle import BackgroundService
from natsio import DEAD_LETTER_STREAM, dead_letter_stream_config, ensure_stream

__all__ = ["DEFAULT_ACK_WAIT_S", "AgentWorker", "CallExecutor", "WorkerStats"]

log = logging.getLogger(__name__)

MAX_FETCHERS = 8
"""Pull subscriptions per worker (see ``run``)."""
DEFAULT_ACK_WAIT_S = 3.0
"""How long a silent delivery stays with its worker (``FLEET_WORKER_ACK_WAIT``). Workers beat
every third of it, so a killed worker's call is redelivered 2-3 s after its last beat, and a
live worker's loop may stall for ~2 s (two beats) before its call is handed to another."""
STORE_RETRY_MAX_S = 1.0
"""The longest pause between attempts to store an answer the results stream refused."""
_ANSWERED_KEPT = 4096
"""Stream sequences of answered calls a worker remembers (a late redelivery of one is acked)."""
_TASK_PREFIX = "deliberation:"
"""A task named ``deliberation:<id>`` logs with that id (``fleet.logs``' documented hook)."""


class CallExecutor(Protocol):
    """What runs a call: ``member.caller.CouncilMember`` (one per role) satisfies it."""

    async def run_turn(self, turn: AgentTurn) -> TurnResult: ...

    async def review(self, request: ReviewInput) -> ReviewResult: ...

    def assess(self, request: AssessmentInput) -> list[Assessment]: ...

    async def close(self) -> None: ...


class AgentWorker(BackgroundService):
    """Serves one role's agent calls from the work queue. See the module docstring.

    Args:
        nc: a connected NATS client (shared by the process's workers; not closed here).
        names: the installation's queue names.
        role: the role served (upper case).
        executor: runs the calls (a ``CouncilMember`` of this role); closed by ``close``.
        concurrency: calls in flight at once in this worker.
        ack_wait_s: how long a silent delivery stays with this worker before redelivery.
        max_deliver: deliveries before a call is dead-lettered.
        retry_delay_s: back-off base between attempts (doubles per delivery, capped at 30 s).
        drain_s: on shutdown, how long in-flight calls may take to finish.
        replicas: copies of each stream it creates (``FLEET_STREAM_REPLICAS``).
    """

    def __init__(
        self,
        nc: NATS,
        names: QueueNames,
        role: str,
        executor: CallExecutor,
        *,
        concurrency: int = 8,
        ack_wait_s: float = DEFAULT_ACK_WAIT_S,
        max_deliver: int = 3,
        retry_delay_s: float = 1.0,
        drain_s: float = 10.0,
        worker_id: str | None = None,
        duplicate_window_s: float = 120.0,
        results_max_age_s: float = 3600.0,
        replicas: int = 1,
    ) -> None:
        if concurrency < 1 or max_deliver < 1 or ack_wait_s <= 0:
            raise ValueError("concurrency and max_deliver must be >= 1, ack_wait_s > 0")
        self._nc = nc
        self._js = nc.jetstream()
        self.names = names
        self.role = role.upper()
        self._executor = executor
        self.concurrency = concurrency
        self.ack_wait_s = ack_wait_s
        self.max_deliver = max_deliver
        self._retry_delay_s = retry_delay_s
        self._drain_s = drain_s
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{self.role}"
        self._dup_window_s = duplicate_window_s
        self._results_max_age_s = results_max_age_s
        self._replicas = replicas
        self._slots = asyncio.Semaphore(concurrency)
        self._calls: dict[asyncio.Task[None], Msg] = {}
        self._running: dict[int, asyncio.Future[bool]] = {}
        """Calls being run, by stream sequence: a redelivery of one joins it (``_joined``)."""
        self._answered: collections.OrderedDict[int, None] = collections.OrderedDict()
        """The latest calls answered here, by stream sequence: a delivery of one is stale."""
        self._advisories: Subscription | None = None
        self._subs: list[JetStreamContext.PullSubscription] = []
        self._stopped = False
        self.stats = WorkerStats()
        self._parking = WorkParking(
            self._js,
            names,
            self.role,
            self.worker_id,
            max_deliver,
            self._publish_result,
            self.stats,
        )

    @property
    def durable(self) -> str:
        return self.names.worker_durable(self.role)

    async def ensure(self) -> None:
        """The streams, the dead-letter stream and the role's shared consumer."""
        await ensure_streams(
            self._js,
            self.names,
            duplicate_window_s=self._dup_window_s,
            results_max_age_s=self._results_max_age_s,
            replicas=self._replicas,
        )
        try:  # an operator may keep the dead letters in a stream of their own naming
            name = await self._js.find_stream_name_by_subject(
                self.names.dead_letter_subject(self.role)
            )
        except NotFoundError:
            name = DEAD_LETTER_STREAM
        await ensure_stream(self._js, dead_letter_stream_config(self._replicas, name))
        # Create or update: every worker of the role states the same settings.
        await self._js.add_consumer(
            self.names.work_stream,
            ConsumerConfig(
                durable_name=self.durable,
                ack_policy=AckPolicy.EXPLICIT,
                ack_wait=self.ack_wait_s,
                max_deliver=self.max_deliver,
                max_ack_pending=-1,
                filter_subject=self.names.role_filter(self.role),
            ),
        )

    async def run(self) -> None:
        """Consume until shut down."""
        await self.ensure()
        self._advisories = await self._nc.subscribe(
            f"{MAX_DELIVERIES_ADVISORY}.{self.names.work_stream}.{self.durable}",
            queue=f"fleet-dlq-{self.durable}",
            cb=self._parking.on_max_deliveries,
        )
        # Several fetchers, each pulling one message at a time for a slot it already holds: a
        # pull is a round trip, so one fetcher would cap a worker at ~1/RTT calls/s, and a
        # larger pull would leave deliveries waiting in this process's buffer, their ack wait
        # running, while every slot is busy.
        n = min(self.concurrency, MAX_FETCHERS)
        subs = [
            await self._js.pull_subscribe_bind(self.durable, self.names.work_stream)
            for _ in range(n)
        ]
        self._subs = subs
        log.info("worker %s: serving %s (x%d)", self.worker_id, self.role, self.concurrency)
        await asyncio.gather(*(self._fetch_loop(sub) for sub in subs))

    async def _fetch_loop(self, sub: JetStreamContext.PullSubscription) -> None:
        while not self._stopped:
            await self._slots.acquire()
            try:
                msgs = await sub.fetch(batch=1, timeout=1.0)
            except TimeoutError:
                self._slots.release()
                continue
            except NatsError as e:
                self._slots.release()
                log.warning("worker %s: fetch failed (%s); retrying", self.worker_id, e)
                await asyncio.sleep(0.5)
                continue
            except BaseException:
                self._slots.release()
                raise
            if not msgs:
                self._slots.release()
            for i, msg in enumerate(msgs):
                if i:
                    await self._slots.acquire()
                task = asyncio.create_task(self._serve(msg), name=f"agent-call-{self.role}")
                self._calls[task] = msg
                task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._calls.pop(task, None)
        self._slots.release()
        if not task.cancelled() and task.exception() is not None:
            name = task.get_name()
            d_id = name[len(_TASK_PREFIX) :] if name.startswith(_TASK_PREFIX) else ""
            log.error(
                "worker %s: call crashed: %r", self.worker_id, task.exception(), extra=about(d_id)
            )

    # -- one delivery

    async def _serve(self, msg: Msg) -> None:
        deliveries = msg.metadata.num_delivered
        try:
            work = WorkMessage.from_bytes(msg.data)
        except (ValueError, KeyError, TypeError) as e:
            await self._dead_letter(msg, None, f"unreadable work message: {e}")
            return
        task = asyncio.current_task()
        if task is not None and work.deliberation_id:
            task.set_name(f"{_TASK_PREFIX}{work.deliberation_id}")
        seq = msg.metadata.sequence.stream
        if seq in self._answered:  # a delivery sent before our ack landed: ours is stored
            log.info("worker %s: %s %s answered here already", self.worker_id, work.kind, work.key)
            with contextlib.suppress(NatsError):
                await msg.ack()
            return
        running = self._running.get(seq)
        if running is not None and await self._joined(msg, work, running):
            return
        remaining = work.deadline - time.time()
        if remaining <= 0:
            self.stats.expired += 1
            reason = f"{work.kind} {work.key}: deadline passed before a worker could run it"
            await self._answer(msg, work, None, error=reason)
            return
        # Beats until the answer is stored, not only while the model runs: a store retried
        # through a server restart must not lose the delivery to another worker meanwhile.
        beat = asyncio.create_task(self._heartbeat(msg, work))
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._running[seq] = done
        answered = False
        try:
            answered = await self._serve_beating(msg, work, remaining, deliveries)
        finally:
            beat.cancel()
            if self._running.get(seq) is done:
                del self._running[seq]
            done.set_result(answered)
            if answered:
                self._answered[seq] = None
                while len(self._answered) > _ANSWERED_KEPT:
                    self._answered.popitem(last=False)

    async def _joined(self, msg: Msg, work: WorkMessage, running: asyncio.Future[bool]) -> bool:
        """Whether a redelivery of a call this worker still runs was answered by that call.

        JetStream hands a call back after a stall past the ack wait, or when beats were lost
        while nats-server restarted; when the delivery comes back to the worker still running
        the call, it beats for it too and waits for that call rather than asking the model
        again. Stored: this delivery is acked with it (True). Otherwise (a failure nak'ed for a
        retry, a store given up) it is served as usual.
        """
        log.info(
            "worker %s: %s %s redelivered while this worker still runs it: joining that call",
            self.worker_id,
            work.kind,
            work.key,
        )
        beat = asyncio.create_task(self._heartbeat(msg, work))
        try:
            answered = await asyncio.shield(running)
        finally:
            beat.cancel()
        if answered:
            with contextlib.suppress(NatsError):
                await msg.ack()
        return answered

    async def _serve_beating(
        self, msg: Msg, work: WorkMessage, remaining: float, deliveries: int
    ) -> bool:
        """Run the call and answer it; whether an answer (or a final failure) was stored."""
        self.stats.in_flight += 1
        try:
            body = await self._execute(work, remaining)
            error = ""
        except (AgentRuntimeError, TimeoutError) as e:
            body, error = None, str(e) or f"{work.kind} {work.key} timed out"
        except Exception as e:  # a bug or a poisoned body: retried, then dead-lettered, named
            body, error = None, f"{work.kind} {work.key}: {type(e).__name__}: {e}"
        finally:
            self.stats.in_flight -= 1
        if not error:
            return await self._answer(msg, work, body)
        if deliveries < self.max_deliver and work.deadline - time.time() > 0:
            self.stats.retried += 1
            delay = min(self._retry_delay_s * 2 ** (deliveries - 1), 30.0)
            log.warning(
                "worker %s: %s attempt %d/%d failed (%s); retrying in %.1f s",
                self.worker_id,
                work.key,
                deliveries,
                self.max_deliver,
                error,
                delay,
            )
            with contextlib.suppress(NatsError):
                await msg.nak(delay=delay)
            return False
        reason = f"{error} (attempt {deliveries} of {self.max_deliver})"
        return await self._dead_letter(msg, work, reason)

    async def _execute(self, work: WorkMessage, remaining_s: float) -> object:
        ex = self._executor
        if work.kind == "turn":
            turn = decode(AgentTurn, work.body)
            turn = dataclasses.replace(turn, timeout_s=min(turn.timeout_s, remaining_s))
            return encode(await ex.run_turn(turn))
        if work.kind == "review":
            request = decode(ReviewInput, work.body)
            request = dataclasses.replace(request, timeout_s=min(request.timeout_s, remaining_s))
            return encode(await ex.review(request))
        assessment = decode(AssessmentInput, work.body)
        # Checks compile code: off the loop, so heart-beats and other calls keep going.
        job = asyncio.to_thread(ex.assess, assessment)
        return encode(await asyncio.wait_for(job, remaining_s))

    async def _heartbeat(self, msg: Msg, work: WorkMessage) -> None:
        """``in_progress`` every third of the ack wait until cancelled.

        A failed beat (the connection is down) is not the end: the next is sent on time, so the
        delivery stays here once the server is back. A beat later than the whole ack wait means
        this loop stalled that long: JetStream may have handed the call to another worker.
        """
        loop = asyncio.get_running_loop()
        period = self.ack_wait_s / 3
        last = loop.time()
        while True:
            await asyncio.sleep(period)
            now = loop.time()
            if now - last > self.ack_wait_s:
                log.warning(
                    "worker %s: %s %s heart-beat %.1f s after the last one, past the %.1f s ack "
                    "wait (a stalled loop or a paused process): the call may be redelivered and "
                    "run twice; raise FLEET_WORKER_ACK_WAIT if this recurs",
                    self.worker_id,
                    work.kind,
                    work.key,
                    now - last,
                    self.ack_wait_s,
                    extra=about(work.deliberation_id),
                )
            last = now
            try:
                await msg.in_progress()
            except NatsError as e:
                log.debug("worker %s: heart-beat for %s not sent: %s", self.worker_id, work.key, e)

    async def _answer(
        self,
        msg: Msg,
        work: WorkMessage,
        body: object,
        *,
        error: str = "",
        dead_lettered: bool = False,
    ) -> bool:
        """Store the result, then (only then) ack the work; whether it was stored."""
        result = ResultMessage(
            kind=work.kind,
            key=work.key,
            ok=not error,
            body=body,
            error=error,
            worker=self.worker_id,
            deliveries=msg.metadata.num_delivered if msg.reply else 0,
            dead_lettered=dead_lettered,
            attempt=work.attempt,
        )
        try:
            stored = await self._store_result(result, work)  # once JetStream has stored it
            if msg.reply:
                # A lost ack costs a redelivery whose answer the results stream dedupes.
                await msg.ack()
        except (NatsError, TimeoutError) as e:
            # Not stored or not acked: the ack wait hands the work to another attempt.
            log.warning("worker %s: result for %s not stored: %s", self.worker_id, work.key, e)
            return False
        if stored.duplicate:  # the call ran twice: worth knowing (a stall past the ack wait)
            # Not a loss: the first answer is stored and its caller reads it from the results
            # stream (``NatsAgentRuntime`` looks there before and after queuing a call).
            log.warning(  # a model call spent twice: worth knowing
                "worker %s: %s %s was answered already (redelivered after a stall, a lost ack "
                "or a server restart); the stored answer stands",
                self.worker_id,
                work.kind,
                work.key,
            )
        if error:
            self.stats.failed += 1
        else:
            self.stats.answered += 1
        return True

    async def _store_result(self, result: ResultMessage, work: WorkMessage) -> PubAck:
        """Publish ``result``, retrying in place while the stream refuses it for a while.

        The delivery stays with this worker meanwhile (the caller's heart-beat runs), so a
        nats-server restart costs seconds, not a repeated model call nor a spent delivery.
        Gives up (raising the last error) at the call's deadline, when nobody waits any more,
        or when the worker shuts down.
        """
        delay = 0.05
        while True:
            try:
                return await self._publish_result(result)
            except (NatsError, TimeoutError) as e:
                if self._stopped or time.time() + delay >= work.deadline:
                    raise
                log.info(
                    "worker %s: result for %s not stored yet (%s); retrying in %.2f s",
                    self.worker_id,
                    work.key,
                    e,
                    delay,
                    extra=about(work.deliberation_id),
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, STORE_RETRY_MAX_S)

    async def _publish_result(self, result: ResultMessage) -> PubAck:
        """Store ``result``; a second answer to one call is refused by the stream's dedupe."""
        return await self._js.publish(
            self.names.result_subject(result.kind, result.key),
            result.to_bytes(),
            headers={"Nats-Msg-Id": result.msg_id},
        )

    async def _dead_letter(self, msg: Msg, work: WorkMessage | None, reason: str) -> bool:
        """Park the work with its reason, answer the caller with that reason, drop the work;
        whether the answer was stored."""
        meta = msg.metadata
        d_id = work.deliberation_id if work is not None else ""
        await self._parking.park(
            msg.data, msg.subject, meta.sequence.stream, meta.num_delivered, reason, d_id
        )
        if work is not None:
            return await self._answer(msg, work, None, error=reason, dead_lettered=True)
        with contextlib.suppress(NatsError):
            await msg.term()
        return False

    # -- lifecycle

    async def close(self) -> None:
        """Stop taking work; in-flight calls get ``drain_s`` to finish, the rest are nak'ed."""
        if self._stopped and self._runner is None and not self._calls:
            return
        self._stopped = True
        await self.stop_runner()
        for sub in (self._advisories, *self._subs):
            if sub is not None:
                with contextlib.suppress(NatsError):
                    await sub.unsubscribe()
        self._advisories, self._subs = None, []
        if self._calls:
            _, pending = await asyncio.wait(set(self._calls), timeout=self._drain_s)
            for task in pending:
                msg = self._calls.get(task)
                task.cancel()
                if msg is not None:
                    with contextlib.suppress(NatsError):
                        await msg.nak()  # another worker takes it now, not after the ack wait
            await asyncio.gather(*pending, return_exceptions=True)
        await self._executor.close()

    @property
    def task_name(self) -> str:
        return f"agent-worker-{self.role}"

    async def prepare(self) -> None:
        await self.ensure()
