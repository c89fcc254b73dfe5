"""Counts and timings of deliberations, folded from the event stream: what GetStatus's
OrchestratorStats and GetMetrics answer with (never a counter kept beside the events).

``DeliberationStats`` is the pure fold: each event it is given changes its tallies, and the same
events always give the same numbers, so two API replicas agree and a restart loses nothing.
``StatsFollower`` feeds it: the stream's history from sequence 1 (only the event types it reads,
so the catch-up decodes little), then live events. ``ready`` says when the catch-up reached the
head the follower saw on start ("starting" until then).

What is counted:

* a deliberation: a ``Requested`` event; an orchestration: an ``OrchestrationRequested``;
* its time: request to terminal event (``Completed``/``TimedOut``/``Failed``/``Cancelled``);
* an agent call: a ``ProposalReceived`` (its ``latency_ms`` is the call's) or an ``AgentFailed``;
  an agent is busy while a deliberation it was started with (``Started``) is open, and failing
  while its latest calls failed (``AgentFailed`` since its last ``ProposalReceived``).

Loop affinity: the fold is plain data (read and written on one loop, the node's).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from uuid import UUID

from aggregates import Deliberation
from application.councils import CouncilView
from application.ports import EventFeed, FleetEvent
from application.watch import TERMINAL_EVENTS
from lifecycle import BackgroundService

__all__ = [
    "AGENT_STATUSES",
    "STATS_EVENTS",
    "AgentCall",
    "AgentMetrics",
    "CouncilHealth",
    "DeliberationStats",
    "Finished",
    "Performance",
    "StatsFollower",
    "agent_metrics",
    "council_health",
    "percentile",
    "performance",
    "since",
]

log = logging.getLogger(__name__)

_TERMINAL = TERMINAL_EVENTS
RETAINED = 100_000
"""Ended deliberations and agent calls kept one by one (about 100 bytes each): windows and
percentiles are over at most these; all-time counts and the all-time average are exact."""
STATS_EVENTS: tuple[type[FleetEvent], ...] = (
    Deliberation.Requested,
    Deliberation.OrchestrationRequested,
    Deliberation.Started,
    Deliberation.ProposalReceived,
    Deliberation.AgentFailed,
    *_TERMINAL,
)
"""The events the fold reads (``ProposalRevised`` is a ``ProposalReceived`` too)."""


@dataclass(frozen=True)
class Finished:
    """A deliberation that ended: when, how long it took, what it was."""

    at: datetime
    duration_ms: float
    role: str
    orchestrated: bool
    status: str


@dataclass(frozen=True)
class AgentCall:
    at: datetime
    agent_id: str
    role: str
    ok: bool
    latency_ms: int


@dataclass
class _Open:
    role: str
    requested_at: datetime
    orchestrated: bool = False
    agents: tuple[str, ...] = ()


@dataclass
class DeliberationStats:
    """The fold (see the module docstring). ``apply`` each event in stream order."""

    total: int = 0
    orchestrations: int = 0
    role_counts: Counter[str] = field(default_factory=Counter)
    open: dict[UUID, _Open] = field(default_factory=dict)
    finished: deque[Finished] = field(default_factory=lambda: deque(maxlen=RETAINED))
    """The latest ``RETAINED`` ended deliberations (windows and percentiles read these)."""
    calls: deque[AgentCall] = field(default_factory=lambda: deque(maxlen=RETAINED))
    ended: int = 0
    ended_ms: float = 0.0
    """All-time count and total time of the ended deliberations (the all-time average)."""
    failing: dict[tuple[str, str], tuple[int, str]] = field(default_factory=dict)
    """(role, agent) → (its calls that failed in a row since its last answer, the last error);
    an agent that answers leaves it."""

    def apply(self, event: FleetEvent) -> None:
        d_id: UUID = event.originator_id
        if isinstance(event, Deliberation.Requested):
            self.total += 1
            self.role_counts[event.role] += 1
            self.open[d_id] = _Open(event.role, event.timestamp)
        elif isinstance(event, Deliberation.OrchestrationRequested):
            self.orchestrations += 1
            if d_id in self.open:
                self.open[d_id].orchestrated = True
        elif isinstance(event, Deliberation.Started):
            if d_id in self.open:
                self.open[d_id].agents = tuple(event.agents)
        elif isinstance(event, Deliberation.ProposalReceived | Deliberation.AgentFailed):
            ok = isinstance(event, Deliberation.ProposalReceived)
            latency = event.latency_ms if isinstance(event, Deliberation.ProposalReceived) else 0
            o = self.open.get(d_id)  # calls are answered while it is open (late ones are not)
            role = o.role if o is not None else ""
            self.calls.append(AgentCall(event.timestamp, event.agent_id, role, ok, latency))
            key = (role, event.agent_id)
            if isinstance(event, Deliberation.AgentFailed):
                streak, _ = self.failing.get(key, (0, ""))
                self.failing[key] = (streak + 1, event.error)
            else:
                self.failing.pop(key, None)
        elif isinstance(event, _TERMINAL):
            o = self.open.pop(d_id, None)
            if o is not None:
                ms = (event.timestamp - o.requested_at).total_seconds() * 1000
                status = type(event).__name__
                self.finished.append(Finished(event.timestamp, ms, o.role, o.orchestrated, status))
                self.ended += 1
                self.ended_ms += ms

    @property
    def avg_ms(self) -> float:
        """The mean time of every deliberation that ever ended."""
        return self.ended_ms / self.ended if self.ended else 0.0

    # ------------------------------------------------------------------ reads

    def finished_since(self, since: datetime | None) -> list[Finished]:
        return [f for f in self.finished if since is None or f.at >= since]

    def calls_since(self, since: datetime | None) -> list[AgentCall]:
        return [c for c in self.calls if since is None or c.at >= since]

    def busy_agents(self) -> dict[str, set[str]]:
        """Role → the agents working on an open deliberation now."""
        out: dict[str, set[str]] = {}
        for o in self.open.values():
            out.setdefault(o.role, set()).update(o.agents)
        return out

    def open_by_role(self) -> Counter[str]:
        return Counter(o.role for o in self.open.values())

    def agent_status(self, role: str, agent_id: str) -> str:
        """What one council member is doing, as far as the events say (``AGENT_STATUSES``).

        ``failing (N calls failed in a row: <last error>)`` when its latest calls failed (until
        it answers again), else ``busy (on N open deliberations)`` while deliberations it was
        started with are open, else ``idle``.
        """
        streak, error = self.failing.get((role, agent_id), (0, ""))
        if streak:
            calls = "call" if streak == 1 else "calls"
            return f"failing ({streak} {calls} failed in a row: {error[:120]})"
        on = sum(1 for o in self.open.values() if o.role == role and agent_id in o.agents)
        if on:
            return f"busy (on {on} open deliberation{'s' if on > 1 else ''})"
        return "idle"


AGENT_STATUSES = ("idle", "busy", "failing", "unknown")
"""The first word of ``AgentInfo.status`` (``DeliberationStats.agent_status``); ``unknown`` on
a node that keeps no statistics."""


def since(now: datetime, time_range_ms: int) -> datetime | None:
    """The start of a window of ``time_range_ms`` ending now; None (all time) for 0 or less."""
    return now - timedelta(milliseconds=time_range_ms) if time_range_ms > 0 else None


def mean(values: Iterable[float]) -> float:
    xs = list(values)
    return sum(xs) / len(xs) if xs else 0.0


def percentile(values: Sequence[float], p: float) -> float:
    """The nearest-rank percentile (``p`` in 0..100) of ``values``; 0 when there are none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass(frozen=True)
class Performance:
    avg_deliberation_ms: float
    avg_orchestration_ms: float
    p50_ms: float
    p95_ms: float
    p99_ms: float


def performance(stats: DeliberationStats, window_start: datetime | None) -> Performance:
    """Times of the deliberations that ended in the window (every terminal outcome counts: a
    timeout took its time too); orchestrations are deliberations as well."""
    done = stats.finished_since(window_start)
    ms = [f.duration_ms for f in done]
    return Performance(
        avg_deliberation_ms=mean(ms),
        avg_orchestration_ms=mean(f.duration_ms for f in done if f.orchestrated),
        p50_ms=percentile(ms, 50),
        p95_ms=percentile(ms, 95),
        p99_ms=percentile(ms, 99),
    )


@dataclass(frozen=True)
class AgentMetrics:
    total: int
    active: int
    """Council members that answered at least once in the window."""
    per_role: dict[str, int]
    avg_response_ms: float
    """Mean latency of the answered calls in the window (``ProposalReceived.latency_ms``)."""


def agent_metrics(
    stats: DeliberationStats, councils: Sequence[CouncilView], window_start: datetime | None
) -> AgentMetrics:
    calls = stats.calls_since(window_start)
    members = {a.agent_id for c in councils for a in c.agents}
    answered = {c.agent_id for c in calls if c.ok}
    return AgentMetrics(
        total=len(members),
        active=len(members & answered),
        per_role={c.role: len(c.agents) for c in councils},
        avg_response_ms=mean(c.latency_ms for c in calls if c.ok),
    )


@dataclass(frozen=True)
class CouncilHealth:
    status: str
    """``busy`` (a deliberation of its role is open), ``active`` (members, none busy) or
    ``idle`` (no members)."""
    available: int
    busy: int
    success_rate: float
    """Answered calls / calls (answered + failed) of the role in the window; 1.0 when none."""


def council_health(
    stats: DeliberationStats, councils: Sequence[CouncilView], window_start: datetime | None
) -> dict[str, CouncilHealth]:
    """Health per council, keyed by its council id."""
    busy_by_role = stats.busy_agents()
    calls = stats.calls_since(window_start)
    out: dict[str, CouncilHealth] = {}
    for c in councils:
        members = {a.agent_id for a in c.agents}
        busy = len(members & busy_by_role.get(c.role, set()))
        role_calls = [x for x in calls if x.role == c.role]
        ok = sum(x.ok for x in role_calls)
        status = "idle" if not members else "busy" if busy else "active"
        rate = ok / len(role_calls) if role_calls else 1.0
        out[c.council_id] = CouncilHealth(status, len(members) - busy, busy, rate)
    return out


class StatsFollower(BackgroundService):
    """Folds the stream into ``stats``: history first, then live. Loop affinity: one loop."""

    def __init__(self, feed: EventFeed) -> None:
        self.stats = DeliberationStats()
        self._feed = feed
        self.position = 0
        self.caught_up = False
        """True once the fold read the stream's history (up to the head when it started)."""
        self._caught_up = asyncio.Event()
        self.listeners: list[Callable[[FleetEvent], None]] = []
        """Called with each event once folded (``application.admission`` counts what it
        accepted until the fold has read it back)."""

    async def wait_caught_up(self) -> None:
        await self._caught_up.wait()

    def _apply(self, event: FleetEvent, position: int) -> None:
        self.stats.apply(event)
        self.position = position
        for listener in self.listeners:
            listener(event)

    @property
    def task_name(self) -> str:
        return "deliberation-stats"

    async def run(self) -> None:
        async for item in self._feed.history(after=0, types=STATS_EVENTS):
            self._apply(item.event, item.position)
        self.caught_up = True
        self._caught_up.set()
        async for item in self._feed.follow(after=self.position, types=STATS_EVENTS):
            self._apply(item.event, item.position)

    @property
    def failed(self) -> bool:
        """The follower ended on an error: its numbers stop growing (the node is degraded)."""
        runner = self._runner
        return runner is not None and runner.done() and not runner.cancelled()
