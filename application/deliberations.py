"""The deliberation commands every edge calls: submit one, cancel one.

The gRPC servicer, the web console (and any later edge) map their input to a
``NewDeliberation`` or a task id and call ``DeliberationCommands``; what a Deliberate does and
refuses is defined here once. Errors are the domain's and the application's own
(``InvalidDeliberationError`` naming the field, ``CouncilStateError``, ``InFlightBoundError``,
``DeliberationNotFoundError``, ``DeliberationClosedError``); each edge maps them to its status
codes once.

Loop affinity: the store's loop (every method awaits it).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from aggregates import (
    CouncilStateError,
    Deliberation,
    InvalidDeliberationError,
    Role,
    deliberation_id,
)
from aggregates.ids import check_task_id
from aggregates.task_code import check_task_code
from application.admission import InFlightBound
from application.councils import CouncilView
from application.ports import CouncilDirectory, DeliberationStore

__all__ = ["MAX_REASON_BYTES", "DeliberationCommands", "NewDeliberation"]

log = logging.getLogger(__name__)

MAX_REASON_BYTES = 1024
DEFAULT_CANCEL_REASON = "cancelled by a client"


@dataclass(frozen=True, slots=True)
class NewDeliberation:
    """A request for a deliberation as a client gives it. 0 and "" mean "not set": the role's
    council, then the seed's defaults, fill them in."""

    task_description: str
    role: str
    task_id: str = ""
    """The client's id for the task (a repeated request with it is answered with the stored
    deliberation); "": a fresh one is made up."""
    num_agents: int = 0
    rounds: int = 0
    timeout_seconds: int = 0
    max_iterations: int = 0
    """A cap on the rounds, whichever gave them (0: no cap)."""
    rubric: str = ""
    requirements: tuple[str, ...] = ()
    metadata: dict[str, str] = field(default_factory=dict)
    """The task's constraints' metadata: acceptance tests, reference code, plan and story ids."""
    requested_by: str = ""


def _new_task_id() -> str:
    return uuid.uuid4().hex


def _no_trace() -> str:
    return ""


class DeliberationCommands:
    """Submit and cancel deliberations.

    Args:
        store: where the deliberations are recorded.
        default_timeout_s: a request's timeout when it names none.
        clock: the time a request is recorded at.
        councils: the councils a request takes its defaults from; None: the seed's defaults
            hold (one round, peer review on).
        in_flight: the bound on open deliberations new submissions meet; None: unbounded.
        trace_context: the caller's W3C traceparent, recorded so the dispatcher's work joins
            the caller's trace ("" when there is none).
        new_task_id: the task id of a request that names none.
    """

    def __init__(
        self,
        store: DeliberationStore,
        *,
        default_timeout_s: int,
        clock: Callable[[], datetime],
        councils: CouncilDirectory | None = None,
        in_flight: InFlightBound | None = None,
        trace_context: Callable[[], str] = _no_trace,
        new_task_id: Callable[[], str] = _new_task_id,
    ) -> None:
        self._store = store
        self._default_timeout_s = default_timeout_s
        self._clock = clock
        self._councils = councils
        self._in_flight = in_flight
        self._trace_context = trace_context
        self._new_task_id = new_task_id

    async def submit(self, new: NewDeliberation) -> tuple[Deliberation, bool]:
        """Record a new deliberation: (the stored one, created?), idempotent on its task id.

        Raises:
            InvalidDeliberationError: a bad request, naming the field.
            CouncilStateError: the role has no council, or an empty one.
            InFlightBoundError: the bound on open deliberations is reached; nothing recorded.
        """
        d = self.build(new, await self.council_for(new.role))
        stored, created = await self.record(d)
        log.info(
            "deliberation %s (task %s) %s",
            stored.id,
            stored.task_id,
            "requested" if created else "already requested",
        )
        return stored, created

    def build(
        self, new: NewDeliberation, council: CouncilView | None, *, task_id: str = ""
    ) -> Deliberation:
        """``new`` as a Deliberation not yet recorded (validated, by the aggregate itself for
        what it guards). ``task_id`` is the one to use when ``new`` names none (default: a
        fresh one).

        What ``new`` leaves unset comes from the role's ``council`` (its rounds and peer-review
        setting), else the seed's defaults (one round, peer review on); ``max_iterations`` caps
        the rounds, whichever gave them.
        """
        if new.timeout_seconds < 0:
            raise InvalidDeliberationError(
                "constraints.timeout_seconds", f"{new.timeout_seconds} must be >= 0 (0: default)"
            )
        if new.num_agents < 0:
            raise InvalidDeliberationError("num_agents", f"{new.num_agents} not in 1..16")
        if new.rounds < 0:
            raise InvalidDeliberationError("rounds", f"{new.rounds} not in 1..5")
        if new.max_iterations < 0:
            raise InvalidDeliberationError(
                "constraints.max_iterations", f"{new.max_iterations} must be >= 0 (0: no cap)"
            )
        rounds = new.rounds or (council.deliberation_rounds if council else 1)
        if new.max_iterations:
            rounds = min(rounds, new.max_iterations)
        check_task_code(new.metadata)
        tid = check_task_id(new.task_id) if new.task_id else task_id or self._new_task_id()
        return Deliberation.request(
            task_id=tid,
            task=new.task_description,
            role=new.role,
            num_agents=new.num_agents or 3,  # "not set": the seed's default
            rounds=rounds,
            requested_at=self._clock(),
            timeout_seconds=new.timeout_seconds or self._default_timeout_s,
            rubric=new.rubric,
            requirements=list(new.requirements),
            metadata=dict(new.metadata),
            plan_id=new.metadata.get("plan_id", ""),
            story_id=new.metadata.get("story_id", ""),
            requested_by=new.requested_by,
            trace_context=self._trace_context(),
            peer_review=council.enable_peer_review if council else True,
        )

    async def council_for(self, role: str) -> CouncilView | None:
        """The council a new deliberation of ``role`` takes its defaults (rounds, peer review)
        from; None where no councils are read (the seed's defaults then hold).

        Raises:
            InvalidDeliberationError: an unknown role (naming ``role``).
            CouncilStateError: the role has no council, or an empty one: no agents would
                deliberate, and Fleet invents none (naming ``role``).
        """
        r = Role.parse(role).value
        if self._councils is None:
            return None
        council = await self._councils.council(r)
        if council is None or not council.agents:
            why = "no council" if council is None else "an empty council"
            raise CouncilStateError("role", f"the {r} role has {why}: no agents to deliberate")
        return council

    async def record(self, d: Deliberation) -> tuple[Deliberation, bool]:
        """Record a built deliberation: (the stored one, created?), idempotent on its id.

        Raises:
            InFlightBoundError: the bound on open deliberations is reached; nothing recorded.
        """
        if self._in_flight is None:
            return await self._store.create(d)
        return await self._in_flight.admit(d.id, lambda: self._store.create(d))

    async def cancel(self, task_id: str, reason: str = "") -> Deliberation:
        """Cancel the deliberation ``task_id`` names, now; ``reason`` "" says a client did.

        Raises:
            InvalidDeliberationError: a bad task id or a reason over ``MAX_REASON_BYTES``.
            DeliberationNotFoundError: nothing was requested under ``task_id``.
            DeliberationClosedError: it already ended.
        """
        task = check_task_id(task_id)
        if len(reason.encode()) > MAX_REASON_BYTES:
            raise InvalidDeliberationError("reason", f"longer than {MAX_REASON_BYTES} bytes")
        why = reason.strip() or DEFAULT_CANCEL_REASON

        def cancel(d: Deliberation) -> Deliberation:
            d.cancel(why)
            return d

        d = await self._store.update(deliberation_id(task), cancel)
        log.info("deliberation %s (task %s) cancelled: %s", d.id, task, why)
        return d
