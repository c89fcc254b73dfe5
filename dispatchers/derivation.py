"""A plan's atomic tasks per role, derived by each role's council, recorded as one event.

For each role (in ``dependency_order`` first, then the plan's order) one agent of the role's
council is asked, through the agent runtime, to split the approved plan into at most
``max_tasks_per_role`` tasks. The answer is read tolerantly (``parse_task_list``: a JSON or
Python list of strings, which is what a code role's answer in a ```python block gives, else a
numbered or bulleted list). A derivation is all or nothing: when a role's agent cannot be reached
(the call fails or times out) or answers no task list, nothing is recorded and
``DerivationUnavailableError`` names each such role and why, so a later call asks again and
derives for real (no placeholder task is ever written as if a model had derived it; the
``fallback_roles`` of derivations recorded before this rule stay readable). When the strategy
orders roles (``dependency_order``, not ``parallel_execution``), each
role's tasks depend on the previous role's.

The derivation's id derives from the request (``aggregates.derivation.derivation_id``): a retry
finds the recorded derivation and asks no council again. ``request_deliberations`` then asks for
one deliberation per task (ids from the task ids, so a retry starts nothing twice), as the plan
dispatcher does for a plan's roles; the dependencies travel in the deliberation's metadata.

It is a use case the gRPC ``DeriveSubtasks`` calls, yet it lives here and not in
``application/`` with the plan's other use cases (``application.plans``): deriving asks the
role's agents, through the agent runtime, and a use case that needs the agents lives on the
floor that may call them (``application`` sits beside ``agent_runtime`` and imports nothing of
it).
"""

from __future__ import annotations

import ast
import asyncio
import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime

from agent_runtime.api import AgentRuntimeError, AgentTurn, Sampling, TurnRunner
from aggregates import Deliberation, InvalidDeliberationError, Plan, Role
from aggregates.derivation import (
    MAX_TASKS_PER_ROLE,
    AtomicTaskSpec,
    Derivation,
    derivation_id,
)
from application.councils import CouncilAgentView
from application.errors import RecordNotFoundError
from application.ports import DerivationStore

__all__ = [
    "DEFAULT_TASKS_PER_ROLE",
    "DerivationOptions",
    "DerivationRequest",
    "DerivationUnavailableError",
    "derive_subtasks",
    "order_roles",
    "parse_task_list",
    "request_deliberations",
]

log = logging.getLogger(__name__)

DEFAULT_TASKS_PER_ROLE = 5
TASK_CHARS = 500
_ITEM = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+(.+?)\s*$")


class DerivationUnavailableError(Exception):
    """No derivation: some role's council could not answer (unreachable, failing, or no task
    list in its answer). Nothing was recorded; asking again later derives anew."""


@dataclass(frozen=True)
class DerivationOptions:
    """How the councils are asked: the sampling of the agent asked, its call's time limit."""

    sampling: Sampling = field(default_factory=lambda: Sampling(temperature=0.2))
    timeout_s: float = 120.0


@dataclass(frozen=True)
class DerivationRequest:
    plan: Plan
    case_id: str = ""
    roles: tuple[str, ...] = ()
    """The roles to derive for; empty: the plan's."""
    dependency_order: tuple[str, ...] = ()
    max_tasks_per_role: int = 0
    """0: ``DEFAULT_TASKS_PER_ROLE``; at most ``MAX_TASKS_PER_ROLE``."""
    parallel: bool = False


def order_roles(plan_roles: list[str], roles: tuple[str, ...], order: tuple[str, ...]) -> list[str]:
    """The roles in the order tasks are derived and depend: ``order`` first, then the rest in
    the plan's (or the request's) order.

    Raises:
        InvalidDeliberationError: an unknown role, naming ``roles`` or
            ``strategy.dependency_order``.
    """
    try:
        chosen = [Role.parse(r).value for r in roles if r.strip()] or list(plan_roles)
    except InvalidDeliberationError as e:
        raise InvalidDeliberationError("roles", e.problem) from None
    try:
        first = [Role.parse(r).value for r in order if r.strip()]
    except InvalidDeliberationError as e:
        raise InvalidDeliberationError("strategy.dependency_order", e.problem) from None
    ordered = [r for r in dict.fromkeys(first) if r in chosen]
    return ordered + [r for r in dict.fromkeys(chosen) if r not in ordered]


def parse_task_list(text: str, limit: int) -> list[str]:
    """Task descriptions from a model's answer (see the module docstring); [] when none."""
    items: list[str] = []
    start, end = text.find("["), text.rfind("]")
    if 0 <= start < end:
        literal = text[start : end + 1]
        for reader in (json.loads, ast.literal_eval):
            try:
                value = reader(literal)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            if isinstance(value, list):
                items = [v.strip() for v in value if isinstance(v, str) and v.strip()]
                break
    if not items:
        items = [m.group(1) for line in text.splitlines() if (m := _ITEM.match(line))]
    clipped = [i if len(i) <= TASK_CHARS else i[: TASK_CHARS - 6] + " [...]" for i in items]
    return list(dict.fromkeys(clipped))[:limit]


def _prompt(plan: Plan, role: str, limit: int) -> str:
    body = plan.task_for(Role(role))
    return (
        f"Split this approved plan into at most {limit} atomic {role} tasks, each small enough "
        "to do and check on its own.\n\n"
        f"{body}\n\n"
        'Answer with a list of strings only, one per task, e.g. ["first task", "second task"].'
    )


def _task_id(plan_id: str, role: str, n: int) -> str:
    tid = f"sub:{plan_id}:{role}:{n}"
    if len(tid) > 128:
        raise InvalidDeliberationError("plan_id", f"too long for subtask ids ({tid[:40]}...)")
    return tid


async def derive_subtasks(
    store: DerivationStore,
    runtime: TurnRunner,
    request: DerivationRequest,
    *,
    sampling: Sampling,
    timeout_s: float,
    members: Mapping[str, CouncilAgentView] | None = None,
) -> tuple[Derivation, bool]:
    """The recorded derivation for ``request``: (it, derived now?). A retry returns the stored
    one without asking the councils again.

    ``members``: who answers for each role (its council's first member, with its model and
    endpoint); a role without one is asked as ``<role>-agent-1`` with ``sampling``.

    Raises:
        InvalidDeliberationError: an unknown role, or a ``max_tasks_per_role`` out of range.
        DerivationUnavailableError: a role's council could not answer (nothing recorded).
    """
    plan = request.plan
    limit = request.max_tasks_per_role or DEFAULT_TASKS_PER_ROLE
    if not 1 <= limit <= MAX_TASKS_PER_ROLE:
        raise InvalidDeliberationError(
            "strategy.max_tasks_per_role", f"{limit} not in 1..{MAX_TASKS_PER_ROLE}"
        )
    roles = order_roles([r.value for r in plan.roles], request.roles, request.dependency_order)
    d_id = derivation_id(plan.plan_id, roles, limit, request.parallel)
    try:
        return await store.get_record(d_id, Derivation), False
    except RecordNotFoundError:
        pass

    async def ask(role: str) -> list[str] | str:
        """The role's tasks, or why there are none (the call failed, or no list came back)."""
        member = (members or {}).get(role)
        agent_id, how = f"{role.lower()}-agent-1", sampling
        if member is not None:
            agent_id = member.agent_id
            how = replace(sampling, model=member.model or sampling.model, endpoint=member.endpoint)
        turn = AgentTurn(
            deliberation_id=str(d_id),
            agent_id=agent_id,
            role=role,
            round=0,
            task=_prompt(plan, role, limit),
            sampling=how,
            timeout_s=timeout_s,
        )
        try:
            result = await runtime.run_turn(turn)
        except (AgentRuntimeError, TimeoutError) as e:  # the runtime's failures, nothing else
            log.info("derivation %s: %s's council failed (%s)", d_id, role, e)
            return f"{agent_id} failed: {e}"
        return parse_task_list(result.content, limit) or f"{agent_id} answered no task list"

    answers = await asyncio.gather(*(ask(r) for r in roles))
    missing = [f"{r}: {a}" for r, a in zip(roles, answers, strict=True) if isinstance(a, str)]
    if missing:
        msg = f"plan {plan.plan_id}: no derivation, nothing recorded ({'; '.join(missing)})"
        raise DerivationUnavailableError(msg)
    chain = bool(request.dependency_order) and not request.parallel
    tasks: list[AtomicTaskSpec] = []
    previous: tuple[str, ...] = ()
    found = [a for a in answers if not isinstance(a, str)]  # every role's, as checked above
    for role, items in zip(roles, found, strict=True):
        mine = [
            AtomicTaskSpec(
                task_id=_task_id(plan.plan_id, role, n),
                role=role,
                description=text,
                dependencies=previous if chain else (),
                priority=len(tasks) + n,
            )
            for n, text in enumerate(items, start=1)
        ]
        tasks += mine
        previous = tuple(t.task_id for t in mine)
    derivation = Derivation.derive(
        id=d_id,
        plan_id=plan.plan_id,
        case_id=request.case_id,
        roles=roles,
        tasks=tasks,
        fallback_roles=[],
    )
    return await store.create_record(derivation)


async def request_deliberations(
    store: DerivationStore,
    derivation: Derivation,
    plan: Plan,
    *,
    num_agents: int,
    rounds: int,
    timeout_seconds: int,
    now: datetime,
) -> list[str]:
    """One deliberation per derived task (idempotent: ids from the task ids); the task ids."""
    for t in derivation.tasks:
        d = Deliberation.request(
            task_id=t.task_id,
            task=f"Story {plan.story_id}, plan {plan.plan_id}, {t.role} task: {t.description}",
            role=t.role,
            num_agents=num_agents,
            rounds=rounds,
            requested_at=now,
            timeout_seconds=timeout_seconds,
            metadata={
                "source": "derivation",
                "derivation_id": str(derivation.id),
                "depends_on": ",".join(t.dependencies),
                "priority": str(t.priority),
            },
            plan_id=plan.plan_id,
            story_id=plan.story_id,
            requested_by="derivation",
        )
        await store.create(d)
    ids = [t.task_id for t in derivation.tasks]
    await store.update_record(derivation.id, Derivation, lambda x: x.mark_requested(ids))
    return ids
