"""DeliberationRequested → the deliberation protocol on agents → a terminal state, on time.

The protocol (every step's outcome is an event, so a restart resumes from the record):

1. round 0: every council member proposes in parallel, each with its own sampling (temperature,
   seed, persona: recorded in ProposalReceived);
2. rounds 1..R-1: every agent that has a proposal critiques its peers' latest proposals
   (CritiqueReceived, one per critic, with a rating per peer), then revises its own, shown its
   peers' work and what they said about its own (ProposalRevised);
3. scoring: every agent with a final proposal rates its peers' final proposals against the rubric
   and requirements (PeerRatingsReceived); the runtime's executable checks (DEV: compile, lint)
   and those ratings give each proposal's score (ProposalScored, checks in the CheckSuite shape);
4. Completed names the winner and ranking from the recorded scores (the aggregate breaks ties by
   a content hash, never by agent order); Failed with reasons when every agent failed.

What is outstanding is always derived from the aggregate (its events), never from this process's
memory: a restarted dispatcher re-runs only the calls without a recorded answer, and the aggregate
refuses a second answer for the same (agent, round). The deadline is read from the ``Requested``
event, so a restart still times out on time. A terminal event on the feed (a cancel from the API,
a timeout recorded by another process) cancels the driver's in-flight agent work at once.

With a ``WorkQueue`` several dispatcher processes share the work: every one follows the feed and
offers each new deliberation to the queue, and drives only those the queue hands it (see
``ports.WorkQueue``). Without one, this process drives every open deliberation.

Latency: the first calls go out while Started is written (no answer is recorded before it); the
peer ratings go out while the last round's answers are written (no rating is recorded before
them), from the driver's own copy of the deliberation with those answers applied; the last
rating to come back, the scores computed from the copy and the decision are one ordered write
(each score checks the stored state it lands on, see ``_conclude``), of one-event units rather
than one atomic batch; and the driver reads its own last state between steps (``last_known``)
instead of a replay. Each of these removed a sequential store step from every deliberation's
critical path. The last round's turns also promise the final ratings
(``AgentTurn.rate_after``, see ``_rate_after``), so a runtime holding all of the round's agents
starts those calls as the last answer comes in, a Ray round trip before they are asked for.

This module is the dispatcher: following the feed, taking claims from the work queue,
supervising one driver task per deliberation (heart-beats, the deadline, a cancel). The steps a
driver takes are ``protocol.DeliberationProtocol``'s; the pure parts live in ``councils``,
``sampling`` and the aggregate.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable
from datetime import datetime
from uuid import UUID

from agent_runtime.api import (
    AgentRuntime,
    Sampling,
)
from aggregates import (
    DeadlineNotReachedError,
    Deliberation,
    DeliberationClosedError,
    DeliberationStatus,
)
from application.errors import NotFoundError
from application.ports import CouncilDirectory, DeliberationStore, EventFeed
from dispatchers.councils import seat
from dispatchers.ports import Claim, ContextSource, WorkQueue
from dispatchers.protocol import (
    DeliberationProtocol,
    DispatcherOptions,
    retrieved,
    start_change,
    start_seated,
    utc_now,
)
from lifecycle import BackgroundService

__all__ = ["DeliberationDispatcher", "DispatcherOptions", "utc_now"]

FIRST_READ_RETRY_S = 10.0
"""How long a deliberation named by the feed or the queue may read as "not found" (a lagging
replica of an R3 stream) before its driver gives up and hands the claim back."""

log = logging.getLogger(__name__)

_TERMINAL_EVENTS = (
    Deliberation.Completed,
    Deliberation.TimedOut,
    Deliberation.Failed,
    Deliberation.Cancelled,
)
_FOLLOWED = (Deliberation.Requested, *_TERMINAL_EVENTS)
"""What the dispatcher reacts to; the feed skips the rest before decoding it."""


class DeliberationDispatcher(DeliberationProtocol, BackgroundService):
    """Drives open deliberations to a terminal state. Runs on one asyncio loop.

    Lifecycle: ``await run()`` until ``await close()``; or ``async with``.
    """

    def __init__(
        self,
        store: DeliberationStore,
        feed: EventFeed,
        runtime: AgentRuntime,
        *,
        options: DispatcherOptions | None = None,
        clock: Callable[[], datetime] = utc_now,
        sampling: Callable[[str, int, str], Sampling] | None = None,
        work_queue: WorkQueue | None = None,
        context: ContextSource | None = None,
        councils: CouncilDirectory | None = None,
    ) -> None:
        self._store = store
        self._councils = councils
        """The councils as they stand: a starting deliberation takes its seats from its role's
        council, and the architect is the ARCHITECT council's first member. None: the default
        agents, and ``options.architect_agent`` chooses."""
        self._context = context
        """Builds a story deliberation's context for its prompts (``dispatchers.context``)."""
        self._feed = feed
        self._runtime = runtime
        self._options = options or DispatcherOptions()
        self._architect_default = self._options.architect_agent
        self._clock = clock
        self._sampling = sampling
        self._queue = work_queue
        self._active: dict[UUID, asyncio.Task[None]] = {}
        self._claims: dict[UUID, Claim] = {}
        self._starting: dict[UUID, asyncio.Future[Deliberation]] = {}
        """Started writes still in flight, by deliberation (see ``_start_and_drive``)."""
        self._answers: dict[UUID, list[asyncio.Future[None]]] = {}
        """Answer writes still in flight, by deliberation (see ``_turn``): reviews and scores
        are recorded only once these are stored."""
        self._claimer: asyncio.Task[None] | None = None
        self.cancelled_drivers = 0
        """Drivers stopped because a terminal event (e.g. a cancel) arrived on the feed."""

    @property
    def active(self) -> int:
        """Deliberations this process is driving now (the dispatcher's queue depth)."""
        return len(self._active)

    # ------------------------------------------------------------------ following the feed

    async def run(self) -> None:
        """Recover open deliberations from the stream's history, then follow it live."""
        open_ids: dict[UUID, None] = {}
        last = 0
        async for item in self._feed.history(after=0, types=_FOLLOWED):
            # Catch-up: only what is still open at the head needs a driver.
            if isinstance(item.event, Deliberation.Requested):
                open_ids[item.event.originator_id] = None
            elif isinstance(item.event, _TERMINAL_EVENTS):
                open_ids.pop(item.event.originator_id, None)
            last = item.position
        if open_ids:
            log.info("recovering %d open deliberation(s)", len(open_ids))
        if self._queue is not None and self._claimer is None:
            self._claimer = asyncio.create_task(self._take_claims(), name="dispatcher-claims")
        for d_id in open_ids:
            await self._new_work(d_id)
        async for item in self._feed.follow(after=last, types=_FOLLOWED):
            event = item.event
            if isinstance(event, Deliberation.Requested):
                await self._new_work(event.originator_id)
            elif isinstance(event, _TERMINAL_EVENTS):
                self._stop_driver(event.originator_id)

    async def _new_work(self, d_id: UUID) -> None:
        if self._queue is None:
            self._spawn(d_id)
        else:
            await self._queue.offer(d_id)

    async def _take_claims(self) -> None:
        assert self._queue is not None
        async for claim in self._queue.claims():
            d_id = claim.deliberation_id
            if d_id in self._active:  # redelivered to its owner: keep it, through the new delivery
                self._claims[d_id] = claim
                await claim.keep()
                continue
            self._claims[d_id] = claim
            self._spawn(d_id)

    def _stop_driver(self, d_id: UUID) -> None:
        task = self._active.get(d_id)
        if task is not None and not task.done():
            self.cancelled_drivers += 1
            task.cancel()

    def _spawn(self, d_id: UUID) -> None:
        if d_id in self._active:
            return
        task = asyncio.create_task(self._supervise(d_id), name=f"deliberation:{d_id}")
        self._active[d_id] = task
        task.add_done_callback(functools.partial(self._finished, d_id))

    def _finished(self, d_id: UUID, task: asyncio.Task[None]) -> None:
        self._active.pop(d_id, None)
        claim = self._claims.pop(d_id, None)
        failed = not task.cancelled() and task.exception() is not None
        if failed:
            log.error("deliberation %s: driver failed", d_id, exc_info=task.exception())
        if claim is None or (task.cancelled() and self._stopping):
            return  # on shutdown the claims are released (see close)
        # Done (or ended by a terminal event): the queue forgets it. A driver that failed before
        # it could drive (the deliberation unreadable) hands the claim back instead, so that
        # this or another dispatcher tries again: the deliberation must not stay open, undriven.
        asyncio.get_running_loop().create_task(claim.release() if failed else claim.done())

    _stopping = False

    # ------------------------------------------------------------------ one deliberation

    async def _supervise(self, d_id: UUID) -> None:
        """Run the protocol until done or until the recorded deadline, whichever comes first."""
        d = await self._first_read(d_id)
        if d.is_terminal:
            return
        remaining = (d.deadline - self._clock()).total_seconds()
        heartbeat = self._heartbeat(d_id)
        try:
            await asyncio.wait_for(self._start_and_drive(d), timeout=max(0.0, remaining))
        except TimeoutError:
            # Answers received before the deadline are kept: they land before TimedOut.
            await self._answers_stored(d_id, raising=False)
            await self._time_out(d_id)
        except DeliberationClosedError:
            return  # closed by someone else (a cancel, another process's timeout)
        except Exception as e:
            # A bug or an infrastructure failure: the deliberation must still end, and say why.
            log.exception("deliberation %s: failed", d_id)
            reason = f"{type(e).__name__}: {e}"
            with contextlib.suppress(DeliberationClosedError):
                await self._store.update(d_id, lambda d: d.fail(reason))
        finally:
            if heartbeat is not None:
                heartbeat.cancel()
            started = self._starting.pop(d_id, None)
            if started is not None and not started.done():
                started.cancel()
            for write in self._answers.pop(d_id, []):  # left to land, or to fail, on their own
                write.add_done_callback(retrieved)

    async def _first_read(self, d_id: UUID) -> Deliberation:
        """The deliberation this process just heard of, read from the store.

        It exists (the feed or the queue named it), but on a replicated stream the read may be
        answered by a replica that has not stored it yet: "not found" is retried for a while
        rather than ending the driver, which would leave the deliberation open and undriven.
        """
        loop = asyncio.get_running_loop()
        give_up = loop.time() + FIRST_READ_RETRY_S
        delay = 0.05
        while True:
            try:
                return await self._store.last_known(d_id)
            except NotFoundError:
                if loop.time() + delay > give_up:
                    raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    async def _start_and_drive(self, d: Deliberation) -> None:
        """Record Started while the first calls are already on their way.

        Started must be stored before any answer is (``_record`` waits for it), not before the
        calls go out: the calls take seconds, the write milliseconds, and on a busy machine that
        write was a sequential step of every deliberation. A process that dies in between has
        only spent calls; its successor makes them again (a call is idempotent by its key).
        """
        if d.status is DeliberationStatus.PENDING:
            # The council as it stands now: recorded in Started, so later changes to the council
            # never reach this deliberation (nor its history).
            change = start_change
            if self._councils is not None:
                council = await self._councils.council(d.role.value)
                seating = seat(council, d.num_agents)
                if seating is None:  # no agents are invented for a role without a council
                    why = "no council" if council is None else "an empty council"
                    reason = f"the {d.role.value} role has {why}: no agents to deliberate"
                    log.warning("deliberation %s: %s", d.id, reason)
                    await self._store.update(d.id, lambda d: d.fail(reason))
                    return
                change = functools.partial(start_seated, seating=seating)
            self._starting[d.id] = asyncio.ensure_future(self._store.update(d.id, change))
            change(d)  # the same command on our copy (never saved): its agents, its status
            d.collect_events()
        await self._drive(d)

    def _heartbeat(self, d_id: UUID) -> asyncio.Task[None] | None:
        claim = self._claims.get(d_id)
        if claim is None or self._queue is None:
            return None
        lease = self._queue.lease_s
        period = max(lease / 3, 0.05)

        async def beat() -> None:
            loop = asyncio.get_running_loop()
            last = loop.time()
            while True:
                await asyncio.sleep(period)
                now = loop.time()
                if now - last > lease:  # this loop stalled past the lease: said, not hidden
                    log.warning(
                        "deliberation %s: heart-beat %.1f s after the last one, past the %.1f s "
                        "lease (a stalled loop or a paused process): another dispatcher may "
                        "drive it too; raise FLEET_WORK_LEASE if this recurs",
                        d_id,
                        now - last,
                        lease,
                    )
                last = now
                with contextlib.suppress(Exception):  # a failed beat: the next one is on time
                    await claim.keep()

        return asyncio.create_task(beat(), name=f"heartbeat:{d_id}")

    async def _time_out(self, d_id: UUID) -> None:
        while True:
            try:
                await self._store.update(d_id, lambda d: d.time_out(self._clock()))
                log.info("deliberation %s: timed out", d_id)
                return
            except DeliberationClosedError:
                return
            except DeadlineNotReachedError:
                await asyncio.sleep(0.05)  # woke a hair early on this clock

    # ------------------------------------------------------------------ lifecycle

    def background_tasks(self) -> list[asyncio.Task[None]]:
        """What must keep running for this dispatcher to work: following the feed and taking
        claims. Either ending on its own is a failure the process should not outlive."""
        claimer = [self._claimer] if self._claimer is not None else []
        return [*super().background_tasks(), *claimer]

    @property
    def task_name(self) -> str:
        return "dispatcher"

    async def close(self) -> None:
        """Cancel every driver and hand claimed work back. Idempotent. Work resumes elsewhere
        (or on the next start): what is outstanding is in the events."""
        await self.stop_runner()  # first: no new driver starts while the others stop
        self._stopping = True
        if self._claimer is not None:
            self._claimer.cancel()
        tasks = list(self._active.values())
        claims = list(self._claims.values())
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*(c.release() for c in claims), return_exceptions=True)
        if self._claimer is not None:
            await asyncio.gather(self._claimer, return_exceptions=True)
