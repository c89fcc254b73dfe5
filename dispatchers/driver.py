"""One deliberation's driver: it owns that deliberation's state in this process (its task, its
claim and heart-beat, its writes in flight) and takes the protocol's steps for it, from the
first read to a terminal state, within the recorded deadline.

The dispatcher (``deliberations``) supervises one driver per deliberation it drives. The
driver's parts: the agent calls (``calls``), its writes in order (``writes``), the architect's
step (``architect``); the pure changes it records are in ``protocol``. See ``deliberations``'
module docstring for the order of the steps and the latency work behind it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Sequence
from uuid import UUID

from aggregates import (
    AgentId,
    DeadlineNotReachedError,
    Deliberation,
    DeliberationClosedError,
    DeliberationStatus,
)
from application.errors import NotFoundError
from dispatchers.architect import ArchitectStep
from dispatchers.calls import AgentCalls
from dispatchers.councils import seat
from dispatchers.environment import DriverEnvironment
from dispatchers.ports import Claim
from dispatchers.protocol import decision, score_changes, start_change, start_seated
from dispatchers.writes import DeliberationWrites

__all__ = ["FIRST_READ_RETRY_S", "DeliberationDriver"]

FIRST_READ_RETRY_S = 10.0
"""How long a deliberation named by the feed or the queue may read as "not found" (a lagging
replica of an R3 stream) before its driver gives up and hands the claim back."""

log = logging.getLogger("dispatchers.deliberations")  # one logger for the dispatcher's lines


class DeliberationDriver:
    """Drives one deliberation to a terminal state; started and stopped by the dispatcher.

    ``claim`` is the work queue's (None without a queue): the driver heart-beats it while it
    runs, and the dispatcher replaces it when the queue delivers the deliberation again.

    Loop affinity: the dispatcher's loop.
    """

    def __init__(
        self,
        d_id: UUID,
        env: DriverEnvironment,
        *,
        calls: AgentCalls,
        claim: Claim | None = None,
        lease_s: float = 0.0,
    ) -> None:
        self.id = d_id
        self.claim = claim
        self._env = env
        self._store = env.store
        self._calls = calls
        self._lease_s = lease_s
        """The work queue's lease: a claim is kept by heart-beats at a third of it."""
        self._writes = DeliberationWrites(env.store, d_id)
        self._architect = ArchitectStep(env)
        self.task: asyncio.Task[None] | None = None

    def start(self) -> asyncio.Task[None]:
        """Run the driver as a task named ``deliberation:<id>`` (``fleet.logs`` reads it)."""
        self.task = asyncio.create_task(self.run(), name=f"deliberation:{self.id}")
        return self.task

    def cancel(self) -> bool:
        """Stop driving (a terminal event arrived, or the dispatcher stops); False if done."""
        if self.task is None or self.task.done():
            return False
        self.task.cancel()
        return True

    # ------------------------------------------------------------------ supervision

    async def run(self) -> None:
        """Run the protocol until done or until the recorded deadline, whichever comes first."""
        d_id = self.id
        d = await self._first_read()
        if d.is_terminal:
            return
        remaining = (d.deadline - self._env.clock()).total_seconds()
        heartbeat = self._heartbeat()
        try:
            await asyncio.wait_for(self._start_and_drive(d), timeout=max(0.0, remaining))
        except TimeoutError:
            # Answers received before the deadline are kept: they land before TimedOut.
            await self._writes.answers_stored(raising=False)
            await self._time_out()
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
            self._writes.abandon()

    async def _first_read(self) -> Deliberation:
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
                return await self._store.last_known(self.id)
            except NotFoundError:
                if loop.time() + delay > give_up:
                    raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    async def _start_and_drive(self, d: Deliberation) -> None:
        """Record Started while the first calls are already on their way.

        Started must be stored before any answer is (``DeliberationWrites.record`` waits for
        it), not before the calls go out: the calls take seconds, the write milliseconds, and on
        a busy machine that write was a sequential step of every deliberation. A process that
        dies in between has only spent calls; its successor makes them again (a call is
        idempotent by its key).
        """
        if d.status is DeliberationStatus.PENDING:
            # The council as it stands now: recorded in Started, so later changes to the council
            # never reach this deliberation (nor its history).
            change = start_change
            if self._env.councils is not None:
                council = await self._env.councils.council(d.role.value)
                seating = seat(council, d.num_agents)
                if seating is None:  # no agents are invented for a role without a council
                    why = "no council" if council is None else "an empty council"
                    reason = f"the {d.role.value} role has {why}: no agents to deliberate"
                    log.warning("deliberation %s: %s", d.id, reason)
                    await self._store.update(d.id, lambda d: d.fail(reason))
                    return
                change = functools.partial(start_seated, seating=seating)
            self._writes.start(change)
            change(d)  # the same command on our copy (never saved): its agents, its status
            d.collect_events()
        await self._drive(d)

    def _heartbeat(self) -> asyncio.Task[None] | None:
        claim = self.claim
        if claim is None:
            return None
        d_id, lease = self.id, self._lease_s
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

    async def _time_out(self) -> None:
        while True:
            try:
                await self._store.update(self.id, lambda d: d.time_out(self._env.clock()))
                log.info("deliberation %s: timed out", self.id)
                return
            except DeliberationClosedError:
                return
            except DeadlineNotReachedError:
                await asyncio.sleep(0.05)  # woke a hair early on this clock

    # ------------------------------------------------------------------ the protocol's steps

    async def _drive(self, d: Deliberation) -> None:
        d_id = d.id
        for round_no in range(d.rounds):
            if d.is_terminal:
                return
            if round_no == 0:
                asked = d.outstanding(0)
                rate_after = self._rate_after(d, 0, asked)
                await asyncio.gather(*(self._turn(d, a, 0, rate_after) for a in asked))
            else:
                await self._writes.answers_stored()
                d = await self._store.last_known(d_id)
                if len(d.participants(round_no)) < 2:
                    break  # nobody to learn from: the proposals stand
                await self._critique_round(round_no)
                d = await self._store.last_known(d_id)
                done = d.answered(round_no)
                asked = [a for a in d.participants(round_no) if a not in done]
                rate_after = self._rate_after(d, round_no, asked)
                await asyncio.gather(*(self._turn(d, a, round_no, rate_after) for a in asked))
        # ``d`` is the driver's copy with this round's answers applied; their writes may still be
        # in flight, and the ratings and scores below are queued behind them.
        if d.is_terminal:
            return
        last: list[Callable[[Deliberation], object]] = []
        if self._calls.peer_review(d) and len(d.final_proposals()) >= 2:
            last = await self._rate(d)
        await self._conclude(d, last)

    def _rate_after(
        self, d: Deliberation, round_no: int, asked: Sequence[AgentId]
    ) -> tuple[str, ...]:
        """``AgentTurn.rate_after`` for the turns of ``round_no`` asked of ``asked``: those
        agents, when their answers will be the final proposals that ``_rate`` asks each of them
        to rate (the last round, peer review on, every agent with a proposal asked again);
        empty otherwise, so a runtime never starts a rating that will not be asked for."""
        if not self._calls.peer_review(d) or round_no != d.rounds - 1 or len(asked) < 2:
            return ()
        if not set(d.final_proposals()) <= set(asked):
            return ()
        return tuple(asked)

    async def _turn(
        self, d: Deliberation, agent: AgentId, round_no: int, rate_after: tuple[str, ...]
    ) -> None:
        self._writes.answer(d, await self._calls.turn(d, agent, round_no, rate_after))

    async def _critique_round(self, round_no: int) -> None:
        d = await self._store.last_known(self.id)
        critics = [a for a in d.participants(round_no) if a not in d.critiqued(round_no)]

        async def critique(agent: AgentId) -> None:
            await self._writes.record(await self._calls.ask(d, agent, "critique", round_no))

        await asyncio.gather(*(critique(a) for a in critics))

    async def _rate(self, d: Deliberation) -> list[Callable[[Deliberation], object]]:
        """Ask the peers to rate the final proposals; apply every rating to the copy ``d``.

        Ratings that come back while others are still awaited are stored in the background
        (after the proposals), as answers are; the last to come back are returned unrecorded,
        so that ``_conclude`` stores them in the same write as the scores and the decision they
        lead to: one crossing to the store after the last answer instead of two."""
        proposals = self._writes.answers()
        raters = [a for a in d.final_proposals() if a not in d.rated()]
        ask = self._calls.ask
        asking = {asyncio.ensure_future(ask(d, a, "rate", d.rounds - 1)) for a in raters}
        # Behind the ratings, in the same loop turn: see ``AgentCalls.precheck``.
        asyncio.get_running_loop().call_soon(self._calls.precheck, d)
        try:
            while asking:
                done, asking = await asyncio.wait(asking, return_when=asyncio.FIRST_COMPLETED)
                changes = [t.result() for t in done]
                if not asking:
                    for change in changes:
                        with contextlib.suppress(Exception):  # the store decides (see answer)
                            change(d)
                    d.collect_events()
                    return changes
                for change in changes:
                    self._writes.answer(d, change, after=proposals)
        finally:
            for t in asking:
                t.cancel()
        return []

    async def _conclude(
        self, d: Deliberation, ratings: list[Callable[[Deliberation], object]]
    ) -> None:
        """Store the last ratings, the scores and the decision, scored from the copy ``d``.

        One ordered write, once the answers in flight are stored: each score checks that
        the stored deliberation holds exactly the proposal and ratings it was computed from
        (``protocol.score_changes``), so a copy that missed another process's write scores
        nothing. After any refused part, the scores are computed again from the stored state
        (the path a restarted dispatcher takes too).
        """
        request = self._calls.assessment(d)
        assessments = [] if request is None else await self._env.runtime.assess(request)
        changes = [*ratings, *score_changes(assessments, basis=request), *decision(d)]
        await self._writes.started()
        await self._writes.answers_stored()  # the proposals and earlier ratings: long done, mostly
        try:
            await self._store.update_in_order(d.id, changes)
        except DeliberationClosedError:
            raise
        except Exception as e:  # a refused part: the stored state decides
            log.info("deliberation %s: scoring again from the stored state (%s)", d.id, e)
            d = await self._store.last_known(d.id)  # every answer is stored: awaited above
            if not d.is_terminal:
                await self._score_and_complete(d)
            return
        if d.architect_k > 0:
            await self._architect.select_and_complete(d.id)

    async def _score_and_complete(self, d: Deliberation) -> None:
        """Score ``d`` as stored, then decide (each score, then Completed, in this order)."""
        request = self._calls.assessment(d)
        assessments = [] if request is None else await self._env.runtime.assess(request)
        # Completed is stored only once every score is (and the aggregate refuses to complete
        # with a proposal unscored), so a crash in between leaves scores that a restarted
        # dispatcher completes from. Separate one-event writes rather than one atomic batch:
        # batches are serialised per stream, and fifty deliberations finishing together would
        # queue behind each other.
        changes = [*score_changes(assessments, basis=None), *decision(d)]
        await self._store.update_in_order(d.id, changes)
        if d.architect_k > 0:
            await self._architect.select_and_complete(d.id)
