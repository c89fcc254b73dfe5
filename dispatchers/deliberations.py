"""DeliberationRequested → agent work → proposals, scores and a terminal state, on time.

The dispatcher is a policy from events to work. What is outstanding is always derived from the
aggregate (its recorded events), never from this process's memory, so a restarted dispatcher picks
up where the last one stopped: it re-runs only the (agent, round) pairs that have no answer, and the
aggregate refuses a second answer for the same pair. The deadline is read from the
``Requested`` event, so a restart still times out on time.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from types import TracebackType
from uuid import UUID

from agent_runtime.api import (
    AgentRuntime,
    AgentTurn,
    AgentTurnError,
    AssessmentInput,
    Candidate,
    PeerProposal,
    Sampling,
)
from aggregates import (
    AgentId,
    DeadlineNotReachedError,
    Deliberation,
    DeliberationClosedError,
    DuplicateProposalError,
)
from dispatchers.ports import DeliberationStore, EventFeed
from dispatchers.sampling import council_sampling

log = logging.getLogger(__name__)

_TERMINAL_EVENTS = (
    Deliberation.Completed,
    Deliberation.TimedOut,
    Deliberation.Failed,
    Deliberation.Cancelled,
)


def utc_now() -> datetime:
    return datetime.now(tz=UTC)


@dataclass(frozen=True)
class DispatcherOptions:
    call_timeout_s: float = 120.0
    """Upper bound for one agent call (the deliberation's own deadline may end it sooner)."""
    model: str = ""
    """The model name agents ask the endpoint for."""
    max_tokens: int = 384


class DeliberationDispatcher:
    """Drives every open deliberation to a terminal state. Runs on one asyncio loop.

    Lifecycle: ``await run()`` until ``await shutdown()``; or ``async with``.
    """

    def __init__(
        self,
        store: DeliberationStore,
        feed: EventFeed,
        runtime: AgentRuntime,
        *,
        options: DispatcherOptions | None = None,
        clock: Callable[[], datetime] = utc_now,
        sampling: Callable[[str, int, str], Sampling] = council_sampling,
    ) -> None:
        self._store = store
        self._feed = feed
        self._runtime = runtime
        self._options = options or DispatcherOptions()
        self._clock = clock
        self._sampling = sampling
        self._active: dict[UUID, asyncio.Task[None]] = {}
        self._runner: asyncio.Task[None] | None = None
        self._stopped = asyncio.Event()

    @property
    def active(self) -> int:
        """Deliberations this process is driving now (the dispatcher's queue depth)."""
        return len(self._active)

    async def run(self) -> None:
        """Recover open deliberations from the stream's history, then follow it live."""
        open_ids: dict[UUID, None] = {}
        last = 0
        async for item in self._feed.history(after=0):
            # Catch-up: only what is still open at the head needs a driver.
            if isinstance(item.event, Deliberation.Requested):
                open_ids[item.event.originator_id] = None
            elif isinstance(item.event, _TERMINAL_EVENTS):
                open_ids.pop(item.event.originator_id, None)
            last = item.position
        self._recover(list(open_ids))
        async for item in self._feed.follow(after=last):
            if isinstance(item.event, Deliberation.Requested):
                self._spawn(item.event.originator_id)

    def _recover(self, ids: list[UUID]) -> None:
        if ids:
            log.info("recovering %d open deliberation(s)", len(ids))
        for d_id in ids:
            self._spawn(d_id)

    def _spawn(self, d_id: UUID) -> None:
        if d_id in self._active:
            return
        task = asyncio.create_task(self._supervise(d_id), name=f"deliberation:{d_id}")
        self._active[d_id] = task
        task.add_done_callback(functools.partial(self._finished, d_id))

    def _finished(self, d_id: UUID, task: asyncio.Task[None]) -> None:
        self._active.pop(d_id, None)
        if not task.cancelled() and task.exception() is not None:
            log.error("deliberation %s: driver failed", d_id, exc_info=task.exception())

    async def _supervise(self, d_id: UUID) -> None:
        """Run the protocol until done or until the recorded deadline, whichever comes first."""
        d = await self._store.get(d_id)
        if d.is_terminal:
            return
        remaining = (d.deadline - self._clock()).total_seconds()
        try:
            await asyncio.wait_for(self._drive(d_id), timeout=max(0.0, remaining))
        except TimeoutError:
            await self._time_out(d_id)
        except Exception as e:
            # A bug or an infrastructure failure: the deliberation must still end, and say why.
            log.exception("deliberation %s: failed", d_id)
            reason = f"{type(e).__name__}: {e}"
            with contextlib.suppress(DeliberationClosedError):
                await self._store.update(d_id, lambda d: d.fail(reason))

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

    async def _drive(self, d_id: UUID) -> None:
        d = await self._store.update(d_id, _start)
        for round_no in range(d.rounds):
            d = await self._store.get(d_id)
            if d.is_terminal:
                return
            peers = _latest(d, before_round=round_no)
            await asyncio.gather(
                *(self._turn(d, agent, round_no, peers) for agent in d.outstanding(round_no))
            )
        d = await self._store.get(d_id)
        if d.is_terminal:
            return
        final = d.final_proposals()
        unscored = {a: p for a, p in final.items() if p.score is None}
        if unscored:
            assessments = await self._runtime.assess(
                AssessmentInput(
                    deliberation_id=str(d_id),
                    role=d.role.value,
                    task=d.task,
                    rubric=d.rubric,
                    requirements=tuple(d.requirements),
                    candidates=tuple(Candidate(a, p.content) for a, p in sorted(unscored.items())),
                )
            )

            def record_scores(d: Deliberation) -> None:
                for a in assessments:
                    agent = AgentId(a.agent_id)
                    if d.final_proposals()[agent].score is None:
                        d.score(agent_id=agent, score=a.score, checks=list(a.checks))

            await self._store.update(d_id, record_scores)
        with contextlib.suppress(DeliberationClosedError):
            await self._store.update(d_id, lambda d: d.complete())

    async def _turn(
        self, d: Deliberation, agent: AgentId, round_no: int, peers: dict[AgentId, str]
    ) -> None:
        index = d.agents.index(agent)
        turn = AgentTurn(
            deliberation_id=str(d.id),
            agent_id=agent,
            role=d.role.value,
            round=round_no,
            task=d.task,
            rubric=d.rubric,
            requirements=tuple(d.requirements),
            peers=tuple(PeerProposal(a, c) for a, c in sorted(peers.items()) if a != agent),
            own_previous=peers.get(agent, ""),
            sampling=replace(
                self._sampling(d.role.value, index, self._options.model),
                max_tokens=self._options.max_tokens,
            ),
            timeout_s=self._options.call_timeout_s,
        )
        try:
            result = await self._runtime.run_turn(turn)
        except AgentTurnError as e:
            await self._record_failure(d.id, agent, round_no, str(e))
            return
        except Exception as e:  # an unexpected runtime error is still an agent failure, named
            await self._record_failure(d.id, agent, round_no, f"{type(e).__name__}: {e}")
            return
        await self._record(
            d.id,
            lambda d: d.receive_proposal(
                agent_id=agent,
                round=round_no,
                content=result.content,
                model=result.model,
                tokens=result.completion_tokens,
                latency_ms=result.latency_ms,
                prompt_tokens=result.prompt_tokens,
                temperature=turn.sampling.temperature,
                seed=turn.sampling.seed,
                persona=turn.sampling.persona,
            ),
        )

    async def _record_failure(self, d_id: UUID, agent: AgentId, round_no: int, error: str) -> None:
        await self._record(
            d_id, lambda d: d.fail_agent(agent_id=agent, round=round_no, error=error)
        )

    async def _record(self, d_id: UUID, change: Callable[[Deliberation], object]) -> None:
        try:
            await self._store.update(d_id, change)
        except DuplicateProposalError:
            log.info("deliberation %s: duplicate answer ignored", d_id)

    async def shutdown(self) -> None:
        """Cancel every driver and the follower. Idempotent. Work resumes on the next start."""
        tasks = list(self._active.values())
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._stopped.set()

    async def __aenter__(self) -> DeliberationDispatcher:
        self._runner = asyncio.create_task(self.run(), name="dispatcher")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._runner is not None:
            self._runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._runner
        await self.shutdown()


def _start(d: Deliberation) -> Deliberation:
    d.start()
    return d


def _latest(d: Deliberation, *, before_round: int) -> dict[AgentId, str]:
    """Each agent's latest proposal from the rounds before ``before_round``."""
    latest: dict[AgentId, str] = {}
    for (agent, r), p in sorted(d.proposals.items(), key=lambda kv: kv[0][1]):
        if r < before_round:
            latest[agent] = p.content
    return latest
