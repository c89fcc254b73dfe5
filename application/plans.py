"""A plan's use cases: its approval recorded, then one deliberation requested per role.

Every edge calls these (the ``planning.plan.approved`` consumer in
``dispatchers.jetstream.plan_approvals``, the gRPC ``ApprovePlan`` and ``ProcessPlanningEvent``,
and the plan dispatcher, ``dispatchers.plans.PlanDispatcher``, which follows the feed):

* ``parse_plan_approval`` reads a ``planning.plan.approved`` body (the planning service's JSON:
  story_id, plan_id, approved_by, timestamp, roles[] optional, and often more, e.g. ceremony_id,
  tasks_created; unknown fields are tolerated). A body that is not JSON, not an object, or lacks
  plan_id/story_id raises ``BadPlanMessage`` with the reason: it is a bad message, never turned
  into a fake event. ``approve_plan`` records it on the Plan aggregate (idempotent on plan_id).
* ``request_deliberations`` requests one deliberation per role of an approved plan, its task
  text carrying the plan's own description and tasks, with task ids from
  ``plan_deliberation_task_id(plan_id, role)``, so a redelivered approval (or two dispatchers,
  or a restart) starts nothing twice. ``DeliberationsRequested`` on the plan records that it is
  done. Nothing is invented: a role whose council does not exist (or has no members) is skipped
  (``RoleSkipped``, with a warning in the log), and a plan that names no roles, or none with a
  council, gets no deliberation (``NothingDispatched``, logged too). Each deliberation takes its
  council's rounds and peer-review setting unless ``PlanOptions.rounds`` names rounds.

Loop affinity: the store's loop (every coroutine awaits it).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from aggregates import Deliberation, Plan, Role
from application.councils import CouncilView
from application.ports import CouncilDirectory, PlanDeliberationStore, PlanStore

log = logging.getLogger(__name__)

__all__ = [
    "BadPlanMessage",
    "PlanApproval",
    "PlanOptions",
    "approve_and_request",
    "approve_plan",
    "parse_plan_approval",
    "read_timestamp",
    "request_deliberations",
]

MAX_BODY_BYTES = 1024 * 1024


class BadPlanMessage(ValueError):
    """A plan approval that can never be processed; the message says why."""


@dataclass(frozen=True)
class PlanApproval:
    plan_id: str
    story_id: str
    approved_by: str = ""
    approved_at: datetime | None = None
    roles: tuple[str, ...] = ()
    description: str = ""
    tasks: tuple[str, ...] = ()
    metadata: Mapping[str, str] = field(default_factory=dict)


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _task_text(item: Any) -> str:
    if isinstance(item, str):
        return item.strip()
    if isinstance(item, Mapping):
        title = _text(item.get("title") or item.get("name") or item.get("id"))
        body = _text(item.get("description") or item.get("summary"))
        return f"{title}: {body}" if title and body else title or body
    return ""


def read_timestamp(value: Any) -> datetime | None:
    """A planning body's time: epoch seconds or ms, or ISO 8601 (UTC when it names no zone)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = value / 1000 if value > 1e11 else value  # epoch ms or s
        return datetime.fromtimestamp(seconds, tz=UTC)
    if isinstance(value, str) and value.strip():
        try:
            t = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        return t if t.tzinfo else t.replace(tzinfo=UTC)
    return None


def parse_plan_approval(body: bytes) -> PlanApproval:
    """The approval a ``planning.plan.approved`` body carries.

    Content is taken from whichever of the planning service's fields are present: ``description``
    (or ``summary``/``title``), ``tasks`` or ``tasks_created`` when it is a list (strings, or
    objects with title/description); scalar extras (ceremony_id, a task count, …) go to metadata.

    Raises:
        BadPlanMessage: not JSON, not an object, too large, plan_id or story_id missing, or a
            roles field that is not a list of strings.
    """
    if len(body) > MAX_BODY_BYTES:
        raise BadPlanMessage(f"body is {len(body)} bytes; at most {MAX_BODY_BYTES}")
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadPlanMessage(f"body is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise BadPlanMessage(f"body is a JSON {type(data).__name__}, not an object")
    plan_id, story_id = _text(data.get("plan_id")), _text(data.get("story_id"))
    if not plan_id or not story_id:
        missing = [k for k, v in (("plan_id", plan_id), ("story_id", story_id)) if not v]
        raise BadPlanMessage(f"missing {' and '.join(missing)}")
    roles = data.get("roles") or []
    if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
        raise BadPlanMessage("roles must be a list of strings")
    tasks_raw: list[Any] = []
    for key in ("tasks", "tasks_created"):
        if isinstance(data.get(key), list):
            tasks_raw = data[key]
            break
    known = {"plan_id", "story_id", "approved_by", "timestamp", "roles", "tasks", "description"}
    metadata = {
        str(k): str(v)
        for k, v in data.items()
        if k not in known and isinstance(v, str | int | float | bool)
    }
    return PlanApproval(
        plan_id=plan_id,
        story_id=story_id,
        approved_by=_text(data.get("approved_by")),
        approved_at=read_timestamp(data.get("timestamp")),
        roles=tuple(r.strip() for r in roles if r.strip()),
        description=_text(data.get("description") or data.get("summary") or data.get("title")),
        tasks=tuple(t for t in (_task_text(x) for x in tasks_raw) if t),
        metadata=metadata,
    )


async def approve_plan(
    store: PlanStore, approval: PlanApproval, *, now: datetime
) -> tuple[Plan, bool]:
    """Record the approval on the Plan aggregate. Returns (plan, created?); idempotent.

    Raises:
        InvalidDeliberationError: an unknown role (or an empty id), naming the field.
    """
    plan = Plan.approve(
        plan_id=approval.plan_id,
        story_id=approval.story_id,
        approved_by=approval.approved_by,
        approved_at=approval.approved_at or now,
        roles=list(approval.roles),
        description=approval.description,
        tasks=list(approval.tasks),
        metadata=dict(approval.metadata),
    )
    return await store.create_plan(plan)


@dataclass(frozen=True)
class PlanOptions:
    num_agents: int = 3
    rounds: int = 0
    """0: each role's council's ``deliberation_rounds`` (1 without a council directory)."""
    timeout_seconds: int = 300


async def request_deliberations(
    store: PlanDeliberationStore,
    plan_id: UUID,
    options: PlanOptions,
    now: datetime,
    councils: CouncilDirectory | None = None,
) -> bool:
    """Request one deliberation per role of an approved plan; False if the plan already said
    what was done (two writers racing may both return True; nothing is recorded twice).

    Idempotent, and safe beside another writer doing the same: each deliberation's id derives
    from (plan, role), and ``DeliberationsRequested`` is recorded once. The gRPC ``ApprovePlan``
    calls it before answering, so the task ids it returns can be read at once; the dispatcher
    calls it for every approval on the feed (NATS approvals, or a node that stopped between the
    two writes).

    With ``councils``, a role without a council (or with an empty one) is skipped and recorded
    so (``Plan.RoleSkipped``); each deliberation takes its council's rounds (unless
    ``options.rounds`` names them) and peer-review setting. Without it (no council directory
    wired), every role is requested with one round and peer review on.

    Raises:
        InvalidDeliberationError: the plan cannot make a valid deliberation.
    """
    plan = await store.get_plan(plan_id)
    if plan.dispatched:
        return False
    requested: list[str] = []
    skipped: dict[str, str] = {}
    for role, task_id in zip(plan.roles, plan.task_ids(), strict=True):
        council: CouncilView | None = None
        if councils is not None:
            council = await councils.council(role.value)
            if council is None or not council.agents:
                why = "has no council" if council is None else "has an empty council"
                skipped[role.value] = f"the {role.value} role {why}: no deliberation requested"
                log.warning("plan %s: %s", plan.plan_id, skipped[role.value])
                continue
        rounds = options.rounds or (council.deliberation_rounds if council else 1)
        d = Deliberation.request(
            task_id=task_id,
            task=plan.task_for(Role(role)),
            role=role,
            num_agents=options.num_agents,
            rounds=rounds,
            requested_at=now,
            timeout_seconds=options.timeout_seconds,
            metadata={"source": "plan", **dict(plan.metadata)},
            plan_id=plan.plan_id,
            story_id=plan.story_id,
            requested_by=plan.approved_by or "planning",
            peer_review=council.enable_peer_review if council else True,
        )
        await store.create(d)  # idempotent: the id derives from (plan, role)
        requested.append(task_id)

    def mark(p: Plan) -> Plan:
        p.mark_requested(requested, skipped)
        return p

    updated = await store.update_plan(plan_id, mark)
    if requested:
        log.info("plan %s: requested %d deliberation(s)", plan.plan_id, len(requested))
    else:
        log.warning("plan %s: nothing dispatched: %s", plan.plan_id, updated.nothing_dispatched)
    return True


async def approve_and_request(
    store: PlanDeliberationStore,
    approval: PlanApproval,
    options: PlanOptions,
    now: datetime,
    councils: CouncilDirectory | None,
) -> tuple[Plan, bool]:
    """ApprovePlan, for every edge (the RPC, the web console): the approval recorded
    (idempotent on the plan id), then its deliberations requested, before the answer, so the
    task ids it names can be read, watched or cancelled at once. Returns (the plan as stored
    after both, created?). The plan dispatcher does the second step too, for every approval on
    the feed, so a node stopped between the two writes loses nothing.

    Raises:
        InvalidDeliberationError: a bad plan or story id, an unknown role, too many tasks,
            naming the field; nothing is recorded.
    """
    plan, created = await approve_plan(store, approval, now=now)
    await request_deliberations(store, plan.id, options, now, councils)
    return await store.get_plan(plan.id), created
