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
``ports.WorkQueue``). Without one, this process drives every open deliberation. Either way a
process drives at most ``DispatcherOptions.concurrency`` at once: past it, it asks the queue for
no further notice until one of its deliberations ends (without a queue, the rest wait here in
the order they were requested), so work past what the process can drive stays in the queue,
where another dispatcher can take it and where it costs this process's loop nothing.

Latency: the first calls go out while Started is written (no answer is recorded before it); the
peer ratings go out while the last round's answers are written (no rating is recorded before
them), from the driver's own copy of the deliberation with those answers applied; the last
rating to come back, the scores computed from the copy and the decision are one ordered write
(each score checks the stored state it lands on, see ``DeliberationDriver._conclude``), of
one-event units rather than one atomic batch; and the driver reads its own last state between
steps (``last_known``) instead of a replay. Each of these removed a sequential store step from
every deliberation's critical path. The last round's turns also promise the final ratings
(``AgentTurn.rate_after``, see ``DeliberationDriver._rate_after``), so a runtime holding all
of the round's agents starts those calls as the last answer comes in, a Ray round trip before
they are asked for.

This module is the dispatcher, a supervisor: it follows the feed, takes claims from the work
queue, and starts and stops one driver per deliberation (``driver.DeliberationDriver``), which
owns that deliberation's state (its task, claim and heart-beat, its writes in flight) and takes
the steps above within the deadline. The parts a driver uses are owned, not inherited: its agent
calls (``calls``), its ordered writes (``writes``), the architect's step (``architect``), all
over one ``environment.DriverEnvironment`` the dispatcher builds once; the pure parts live in
``protocol``, ``councils``, ``sampling`` and the aggregate.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from datetime import datetime
from uuid import UUID

from agent_runtime.api import AgentRuntime, Sampling
from aggregates import (
    DeadlineNotReachedError,
    Deliberation,
    DeliberationClosedError,
    DeliberationStatus,
)
from application.ports import ContextSource, CouncilDirectory, DeliberationStore, EventFeed
from dispatchers.calls import AgentCalls
from dispatchers.driver import DeliberationDriver
from dispatchers.environment import DispatcherOptions, DriverEnvironment, utc_now
from dispatchers.ports import Claim, WorkQueue
from lifecycle import BackgroundService

__all__ = ["DeliberationDispatcher", "DispatcherOptions", "utc_now"]

log = logging.getLogger(__name__)

_TERMINAL_EVENTS = (
    Deliberation.Completed,
    Deliberation.TimedOut,
    Deliberation.Failed,
    Deliberation.Cancelled,
)
_FOLLOWED = (Deliberation.Requested, *_TERMINAL_EVENTS)
"""What the dispatcher reacts to; the feed skips the rest before decoding it."""


class DeliberationDispatcher(BackgroundService):
    """Drives open deliberations to a terminal state, one driver each. Runs on one asyncio loop.

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
        self._env = DriverEnvironment(
            store=store,
            runtime=runtime,
            options=options or DispatcherOptions(),
            clock=clock,
            sampling=sampling,
            context=context,
            councils=councils,
        )
        self._calls = AgentCalls(self._env)
        """Stateless: one for every driver."""
        self._feed = feed
        self._queue = work_queue
        self._drivers: dict[UUID, DeliberationDriver] = {}
        """The deliberations this process drives now, each by its driver, until it ends."""
        self._waiting: dict[UUID, None] = {}
        """Without a work queue: open deliberations waiting for a driver slot, oldest first."""
        self._room = asyncio.Event()
        """Set when a driver ends: the claimer, held at the bound, looks again."""
        self._deadlines: dict[UUID, asyncio.TimerHandle] = {}
        """Open deliberations' deadlines, watched while they may wait undriven (``concurrency``)."""
        self._expiring: set[asyncio.Task[None]] = set()
        self._claimer: asyncio.Task[None] | None = None
        self.cancelled_drivers = 0
        """Drivers stopped because a terminal event (e.g. a cancel) arrived on the feed."""

    @property
    def active(self) -> int:
        """Deliberations this process is driving now (the dispatcher's queue depth)."""
        return len(self._drivers)

    # ------------------------------------------------------------------ following the feed

    async def run(self) -> None:
        """Recover open deliberations from the stream's history, then follow it live."""
        open_ids: dict[UUID, datetime] = {}
        last = 0
        async for item in self._feed.history(after=0, types=_FOLLOWED):
            # Catch-up: only what is still open at the head needs a driver.
            if isinstance(item.event, Deliberation.Requested):
                open_ids[item.event.originator_id] = item.event.deadline
            elif isinstance(item.event, _TERMINAL_EVENTS):
                open_ids.pop(item.event.originator_id, None)
            last = item.position
        if open_ids:
            log.info("recovering %d open deliberation(s)", len(open_ids))
        if self._queue is not None and self._claimer is None:
            self._claimer = asyncio.create_task(self._take_claims(), name="dispatcher-claims")
        for d_id, deadline in open_ids.items():
            self._watch_deadline(d_id, deadline)
            await self._new_work(d_id)
        async for item in self._feed.follow(after=last, types=_FOLLOWED):
            event = item.event
            if isinstance(event, Deliberation.Requested):
                self._watch_deadline(event.originator_id, event.deadline)
                await self._new_work(event.originator_id)
            elif isinstance(event, _TERMINAL_EVENTS):
                self._stop_driver(event.originator_id)

    async def _new_work(self, d_id: UUID) -> None:
        if self._queue is not None:
            await self._queue.offer(d_id)
        elif self._full():
            self._waiting[d_id] = None
        else:
            self._spawn(d_id)

    def _full(self) -> bool:
        """Whether this process drives as many deliberations as it may (``concurrency``)."""
        bound = self._env.options.concurrency
        return bound > 0 and len(self._drivers) >= bound

    async def _until_room(self) -> None:
        """Return once a driver slot is free. The claimer waits here before it asks the queue
        for the next notice, so notices past the bound stay in the queue for any dispatcher."""
        while self._full():
            self._room.clear()
            await self._room.wait()

    async def _take_claims(self) -> None:
        assert self._queue is not None
        async for claim in self._queue.claims():
            d_id = claim.deliberation_id
            driver = self._drivers.get(d_id)
            if driver is not None:  # redelivered to its owner: keep it, through the new delivery
                driver.claim = claim
                await claim.keep()
                continue
            self._spawn(d_id, claim)
            await self._until_room()

    # ------------------------------------------------------------------ waiting past a deadline

    def _watch_deadline(self, d_id: UUID, deadline: datetime) -> None:
        """At ``deadline``, time the deliberation out if nobody has started it.

        With a bound on what each dispatcher drives, an open deliberation can wait in the queue
        past its deadline; unwatched, it would read PENDING until a dispatcher had room and its
        driver timed it out, however late. Every dispatcher watches every open deliberation;
        only one that is still PENDING is timed out (one that a driver started is that
        driver's to end, after the answers it holds), and the aggregate takes one terminal
        event, so the others' attempts change nothing.
        """
        if self._env.options.concurrency <= 0 or d_id in self._deadlines:
            return  # unbounded: every deliberation has a driver, which keeps its deadline
        delay = (deadline - self._env.clock()).total_seconds()
        loop = asyncio.get_running_loop()
        self._deadlines[d_id] = loop.call_later(max(0.0, delay), self._deadline_passed, d_id)

    def _deadline_passed(self, d_id: UUID) -> None:
        self._deadlines.pop(d_id, None)
        if d_id in self._drivers or self._stopping:
            return
        self._waiting.pop(d_id, None)
        task = asyncio.get_running_loop().create_task(self._expire(d_id), name=f"expire:{d_id}")
        self._expiring.add(task)
        task.add_done_callback(self._expiring.discard)

    async def _expire(self, d_id: UUID) -> None:
        clock = self._env.clock

        def time_out_if_waiting(d: Deliberation) -> bool:
            if d.status is not DeliberationStatus.PENDING:
                return False  # started meanwhile (its driver keeps the deadline) or ended
            d.time_out(clock())
            return True

        for _ in range(100):  # DeadlineNotReachedError: the timer woke a hair early
            try:
                if await self._env.store.update(d_id, time_out_if_waiting):
                    log.info("deliberation %s: timed out waiting for a dispatcher", d_id)
                return
            except DeadlineNotReachedError:
                await asyncio.sleep(0.05)
            except DeliberationClosedError:
                return  # ended by someone else first
            except Exception:  # the store is down: the driver that takes it will time it out
                log.warning("deliberation %s: not timed out while waiting", d_id, exc_info=True)
                return

    def _stop_driver(self, d_id: UUID) -> None:
        timer = self._deadlines.pop(d_id, None)
        if timer is not None:
            timer.cancel()
        self._waiting.pop(d_id, None)
        driver = self._drivers.get(d_id)
        if driver is not None and driver.cancel():
            self.cancelled_drivers += 1

    def _spawn(self, d_id: UUID, claim: Claim | None = None) -> None:
        self._waiting.pop(d_id, None)
        if d_id in self._drivers:
            return
        lease_s = self._queue.lease_s if self._queue is not None else 0.0
        driver = DeliberationDriver(
            d_id, self._env, calls=self._calls, claim=claim, lease_s=lease_s
        )
        self._drivers[d_id] = driver
        driver.start().add_done_callback(functools.partial(self._finished, driver))

    def _finished(self, driver: DeliberationDriver, task: asyncio.Task[None]) -> None:
        d_id = driver.id
        self._drivers.pop(d_id, None)
        self._room.set()
        if self._waiting and not self._stopping and not self._full():
            self._spawn(next(iter(self._waiting)))
        claim = driver.claim
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
        for timer in self._deadlines.values():
            timer.cancel()
        self._deadlines.clear()
        for expiring in list(self._expiring):
            expiring.cancel()
        await asyncio.gather(*self._expiring, return_exceptions=True)
        if self._claimer is not None:
            self._claimer.cancel()
        drivers = list(self._drivers.values())
        tasks = [d.task for d in drivers if d.task is not None]
        claims = [d.claim for d in drivers if d.claim is not None]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*(c.release() for c in claims), return_exceptions=True)
        if self._claimer is not None:
            await asyncio.gather(self._claimer, return_exceptions=True)
