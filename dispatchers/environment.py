"""What every deliberation driver of one dispatcher shares: its options, the clock, and the
collaborators it works through (the store, the agent runtime, the councils, the context source).

The dispatcher (``deliberations``) builds one ``DriverEnvironment`` and hands it to each driver
(``driver``) and to the stateless parts a driver uses (``calls``, ``architect``): they own
nothing of it, and nothing in it belongs to one deliberation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from agent_runtime.api import AgentRuntime, Sampling
from application.ports import ContextSource, CouncilDirectory, DeliberationStore
from dispatchers.councils import Councils

__all__ = ["DispatcherOptions", "DriverEnvironment", "utc_now"]


def utc_now() -> datetime:
    return datetime.now(tz=UTC)


@dataclass(frozen=True)
class DispatcherOptions:
    call_timeout_s: float = 120.0
    """Upper bound for one agent call (the deliberation's own deadline may end it sooner)."""
    model: str = ""
    """The model name agents ask the endpoint for (a council may name its own per agent)."""
    max_tokens: int = 384
    peer_review: bool = True
    """Agents rate each other's final proposals, and the ratings weigh in the score."""
    councils: Councils = field(default_factory=Councils)
    architect_agent: str = "architect-agent-1"
    """The agent that chooses an orchestration's winner (``architect``) where no council
    directory is wired (with one, the ARCHITECT council's first member chooses)."""
    architect_timeout_s: float = 60.0
    """Upper bound for the architect's call (less when the deadline is nearer): then the
    highest score wins, and the fallback says why."""
    concurrency: int = 0
    """The most deliberations this dispatcher drives at once (0: no bound). Past it the process
    takes no new work until one ends: the rest waits in the work queue, for this or another
    dispatcher, so that a burst of accepted work does not crowd out the process's own loop (and
    the API on it), and a dispatcher started later takes its share instead of finding every
    notice held by the first."""


@dataclass(frozen=True)
class DriverEnvironment:
    """The shared, stateless collaborators of a dispatcher's drivers. Built once per dispatcher."""

    store: DeliberationStore
    runtime: AgentRuntime
    options: DispatcherOptions
    clock: Callable[[], datetime]
    sampling: Callable[[str, int, str], Sampling] | None = None
    """Overrides the councils' sampling per (role, agent index, model); None: the councils'."""
    context: ContextSource | None = None
    """Builds a story deliberation's context for its prompts (``application.task_context``)."""
    councils: CouncilDirectory | None = None
    """The councils as they stand: a starting deliberation takes its seats from its role's
    council, and the architect is the ARCHITECT council's first member. None: the default
    agents, and ``options.architect_agent`` chooses."""
