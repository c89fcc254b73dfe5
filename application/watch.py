"""Watching deliberations live: one fan-out of the event feed, and progress updates from events.

``WatchHub`` follows the application's event feed once per process and routes each event by
aggregate id to whoever watches that deliberation, so N open ``StreamDeliberation`` calls cost one
JetStream subscription, not N. ``WatchHub.watch`` gives one deliberation's events with no gap and
no duplicate: it registers for live events *first*, then reads the deliberation's stored events,
then yields live ones whose aggregate version is past the last one yielded (versions are dense per
aggregate, so the version is the de-duplication key). It ends after a terminal event.

``ProgressTracker`` folds those events into the seed's ``DeliberationUpdate`` vocabulary
(``generating`` / ``reviewing`` / ``scoring`` / ``complete``, a percentage, the step and agent).

Loop affinity: one asyncio loop (the node's). A watcher's queue is unbounded on purpose: one
deliberation has a few dozen events, and a slow reader must not stall the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from uuid import UUID

from aggregates import Deliberation
from application.ports import EventFeed, FeedItem, FleetEvent
from lifecycle import BackgroundService

log = logging.getLogger(__name__)

TERMINAL_EVENTS: tuple[type[FleetEvent], ...] = (
    Deliberation.Completed,
    Deliberation.TimedOut,
    Deliberation.Failed,
    Deliberation.Cancelled,
)


class WatchUnavailableError(RuntimeError):
    """The hub stopped (the node is shutting down) or its feed failed; reconnect elsewhere."""


class _Closed:
    def __init__(self, error: BaseException | None) -> None:
        self.error = error


_Item = FleetEvent | _Closed
EventHistory = Callable[[UUID], Awaitable[Sequence[FleetEvent]]]
"""(deliberation id) -> its stored domain events, oldest first."""


class WatchHub(BackgroundService):
    """One follower of the event feed, fanning events out by aggregate id.

    Subscribers with the key ``None`` receive every event (metrics derive from them).

    Lifecycle: ``async with hub`` (or ``start``/``close``); ``close`` ends every watcher
    with ``WatchUnavailableError`` and is idempotent.
    """

    def __init__(self, feed: EventFeed, history: EventHistory, *, after: int = 0) -> None:
        self._feed = feed
        self._history = history
        self._after = after
        self._subscribers: dict[UUID | None, set[asyncio.Queue[_Item]]] = {}
        self._closed: _Closed | None = None
        self.position = after
        """The last feed position routed."""

    @property
    def watchers(self) -> int:
        return sum(len(s) for k, s in self._subscribers.items() if k is not None)

    @property
    def task_name(self) -> str:
        return "watch-hub"

    async def run(self) -> None:
        """Route the feed to the watchers until shut down (or until the feed fails: then every
        watcher ends with ``WatchUnavailableError``)."""
        try:
            async for item in self._feed.follow(after=self._after):
                self._route(item)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            log.exception("watch hub: the event feed failed")
            self._close(e)

    def _route(self, item: FeedItem) -> None:
        self.position = item.position
        key = getattr(item.event, "originator_id", None)
        for q in (*self._subscribers.get(key, ()), *self._subscribers.get(None, ())):
            q.put_nowait(item.event)

    def _close(self, error: BaseException | None) -> None:
        self._closed = _Closed(error)
        for subs in self._subscribers.values():
            for q in subs:
                q.put_nowait(self._closed)

    @contextlib.asynccontextmanager
    async def subscribe(self, key: UUID | None) -> AsyncIterator[asyncio.Queue[_Item]]:
        """A queue of live events for aggregate ``key`` (None: every event) while inside."""
        if self._closed is not None:
            raise WatchUnavailableError("the watch hub is stopped")
        q: asyncio.Queue[_Item] = asyncio.Queue()
        self._subscribers.setdefault(key, set()).add(q)
        try:
            yield q
        finally:
            subs = self._subscribers.get(key)
            if subs is not None:
                subs.discard(q)
                if not subs:
                    del self._subscribers[key]

    async def watch(self, deliberation_id: UUID) -> AsyncIterator[FleetEvent]:
        """The deliberation's stored events, then live ones; ends after a terminal event.

        Raises:
            DeliberationNotFoundError: (from the history reader) no such deliberation.
            WatchUnavailableError: the hub stopped before the deliberation ended.
        """
        async with self.subscribe(deliberation_id) as live:
            version = 0
            for e in await self._history(deliberation_id):
                version = e.originator_version
                yield e
                if isinstance(e, TERMINAL_EVENTS):
                    return
            while True:
                got = await live.get()
                if isinstance(got, _Closed):
                    raise WatchUnavailableError(
                        "the node is shutting down; resume the stream on another"
                        if got.error is None
                        else f"the event feed failed: {got.error}"
                    )
                if got.originator_version <= version:
                    continue  # already read from the store
                version = got.originator_version
                yield got
                if isinstance(got, TERMINAL_EVENTS):
                    return

    def release_watchers(self) -> None:
        """End every open watch (before the API's grace period, so streams do not hold it)."""
        if self._closed is None:
            self._close(None)

    async def close(self) -> None:
        self.release_watchers()
        await self.stop_runner()


# ---------------------------------------------------------------------------------- progress


@dataclass(frozen=True)
class Progress:
    """One step of a deliberation, in the seed's ``DeliberationUpdate`` terms.

    ``step`` begins with a fixed keyword (requested, assigned, proposed, agent_failed, late,
    scored, COMPLETED, TIMEOUT, FAILED, CANCELLED) followed by details for people.
    """

    status: str
    """generating (round 1), reviewing (later rounds), scoring, complete (any terminal state)."""
    percent: int
    step: str
    agent: str = ""
    content: str = ""
    score: float | None = None
    rank: int = 0


@dataclass
class ProgressTracker:
    """Folds a deliberation's events into ``Progress`` steps (one or more per event)."""

    num_agents: int = 1
    rounds: int = 1
    answered: int = 0
    scored: int = 0
    percent: int = 0
    phase: str = "generating"
    ranking: list[str] = field(default_factory=list)

    def _pct(self) -> int:
        # Answers carry 80 %, scoring 15 %, the end the rest; never goes backwards.
        total = max(1, self.num_agents * self.rounds)
        pct = 5 + int(75 * min(self.answered, total) / total)
        pct += int(15 * min(self.scored, self.num_agents) / max(1, self.num_agents))
        self.percent = max(self.percent, min(pct, 99))
        return self.percent

    def apply(self, e: FleetEvent) -> list[Progress]:
        if isinstance(e, Deliberation.Requested):
            self.num_agents, self.rounds = e.num_agents, e.rounds
            return [
                Progress(
                    "generating",
                    0,
                    f"requested: {e.role} x{e.num_agents}, {e.rounds} round(s)",
                )
            ]
        if isinstance(e, Deliberation.Started):
            return [
                Progress("generating", self._pct(), f"assigned: round 1/{self.rounds}", agent=a)
                for a in e.agents
            ]
        if isinstance(e, Deliberation.ProposalReceived):
            self.answered += 1
            self.phase = "generating" if e.round == 0 else "reviewing"
            step = (
                f"proposed: round {e.round + 1}/{self.rounds}, {e.tokens} tokens, {e.latency_ms} ms"
            )
            return [Progress(self.phase, self._pct(), step, e.agent_id, e.content)]
        if isinstance(e, Deliberation.AgentFailed):
            self.answered += 1
            step = f"agent_failed: round {e.round + 1}/{self.rounds}: {e.error}"
            return [Progress(self.phase, self._pct(), step, e.agent_id)]
        if isinstance(e, Deliberation.LateProposalReceived):
            step = f"late: round {e.round + 1} arrived after {e.status_at_arrival}"
            return [Progress("complete", 100, step, e.agent_id)]
        if isinstance(e, Deliberation.ProposalScored):
            self.scored += 1
            passed = sum(1 for c in e.checks if c.get("passed"))
            step = f"scored: {e.score:.2f} ({passed}/{len(e.checks)} checks passed)"
            return [Progress("scoring", self._pct(), step, e.agent_id, score=e.score)]
        if isinstance(e, Deliberation.Completed):
            return [Progress("complete", 100, f"COMPLETED: winner {e.winner}", e.winner, rank=1)]
        if isinstance(e, Deliberation.TimedOut):
            missing = ", ".join(e.missing) or "none"
            return [Progress("complete", 100, f"TIMEOUT: missing {missing}")]
        if isinstance(e, Deliberation.Failed):
            return [Progress("complete", 100, f"FAILED: {e.reason}")]
        if isinstance(e, Deliberation.Cancelled):
            return [Progress("complete", 100, f"CANCELLED: {e.reason or 'no reason given'}")]
        # An event the protocol added later (critiques, revisions): still a step, in its phase.
        name = type(e).__name__
        agent = str(getattr(e, "agent_id", "") or "")
        return [Progress(self.phase, self.percent, f"{name[0].lower()}{name[1:]}", agent)]
