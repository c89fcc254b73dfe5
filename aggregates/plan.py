"""The Plan aggregate: a plan the planning service approved, and the deliberations it spawned.

``Plan.approve`` records ``Approved`` with the plan's own content (description and tasks), so the
deliberations it spawns can carry that content in their task text; ``DeliberationsRequested``
records that the plan dispatcher created them (their task ids derive from plan and role), so a
restarted dispatcher knows the plan is done without re-deriving it. Nothing is invented: an
approval that names no roles deliberates on none (``NothingDispatched`` says so), and a role
without a council is skipped (``RoleSkipped``), as the seed did, with the warning on record.
The id derives from the planning service's ``plan_id``: approving the same plan twice is the
same aggregate.
"""

from __future__ import annotations

import re
from datetime import datetime

from eventsourcing.domain import Aggregate, event

from aggregates.errors import InvalidDeliberationError
from aggregates.ids import plan_deliberation_task_id, plan_id_of
from aggregates.values import MAX_TASK_BYTES, Role

DEFAULT_PLAN_ROLES: tuple[Role, ...] = ()
"""Roles a plan deliberates on when the approval names none: none (the seed skipped such a plan
with a warning; inventing ARCHITECT, DEV and QA work nobody asked for is not Fleet's to do)."""

MAX_TASKS = 200

PLAN_ID = re.compile(r"[A-Za-z0-9._:@/-]+")
"""What a plan id may hold. It becomes part of the task ids of the deliberations the plan spawns
(``plan:<plan_id>:<ROLE>``), and task ids are 1-128 of letters, digits and ``. _ : @ / -`` (what
the API accepts and a reader can name); a plan id outside that would spawn deliberations no read
could ask for."""
MAX_PLAN_ID = 128 - len(plan_deliberation_task_id("", max((r.value for r in Role), key=len)))
"""The longest plan id whose every task id (the longest role's included) stays within 128."""


class Plan(Aggregate):
    """An approved plan of one story. Guards in ``approve``; mutators only change state."""

    class Approved(Aggregate.Created):
        plan_id: str
        story_id: str
        roles: list[str]
        description: str
        tasks: list[str]
        approved_by: str
        approved_at: datetime
        metadata: dict[str, str]

    class DeliberationsRequested(Aggregate.Event):
        """The plan dispatcher created one deliberation per role (these task ids)."""

        task_ids: list[str]

    class RoleSkipped(Aggregate.Event):
        """The plan dispatcher requested no deliberation for ``role``, and ``reason`` says why
        (the role has no council, or an empty one). ``plan_id`` repeats the plan's, so a reader
        of this event alone (the graph) knows whose."""

        plan_id: str
        role: str
        reason: str

    class NothingDispatched(Aggregate.Event):
        """The plan dispatcher requested no deliberation at all for this plan, and ``reason``
        says why (the approval named no roles, or no role it named has a council)."""

        plan_id: str
        reason: str

    @classmethod
    def approve(
        cls,
        *,
        plan_id: str,
        story_id: str,
        approved_by: str = "",
        approved_at: datetime,
        roles: list[str] | None = None,
        description: str = "",
        tasks: list[str] | None = None,
        metadata: dict[str, str] | None = None,
    ) -> Plan:
        """Validate an approval and create the aggregate.

        Raises:
            InvalidDeliberationError: no plan_id or story_id, a plan_id its task ids could not
                carry (see ``PLAN_ID``), an unknown role, too many tasks.
        """
        check_plan_id(plan_id.strip())
        if not story_id.strip():
            raise InvalidDeliberationError("story_id", "must not be empty")
        parsed = [Role.parse(r).value for r in (roles or []) if str(r).strip()]
        chosen = list(dict.fromkeys(parsed)) or [r.value for r in DEFAULT_PLAN_ROLES]
        task_list = [t.strip() for t in (tasks or []) if t and t.strip()]
        if len(task_list) > MAX_TASKS:
            raise InvalidDeliberationError("tasks", f"{len(task_list)} tasks; at most {MAX_TASKS}")
        return cls._create(
            cls.Approved,
            id=plan_id_of(plan_id),
            plan_id=plan_id.strip(),
            story_id=story_id.strip(),
            roles=chosen,
            description=description.strip(),
            tasks=task_list,
            approved_by=approved_by,
            approved_at=approved_at,
            metadata=dict(metadata or {}),
        )

    @event(Approved)
    def __init__(
        self,
        *,
        plan_id: str,
        story_id: str,
        roles: list[str],
        description: str,
        tasks: list[str],
        approved_by: str,
        approved_at: datetime,
        metadata: dict[str, str],
    ) -> None:
        self.plan_id = plan_id
        self.story_id = story_id
        self.roles = [Role(r) for r in roles]
        self.description = description
        self.tasks = list(tasks)
        self.approved_by = approved_by
        self.approved_at = approved_at
        self.metadata = dict(metadata)
        self.requested_task_ids: list[str] = []
        self.skipped_roles: dict[str, str] = {}
        """Role → why no deliberation was requested for it."""
        self.nothing_dispatched = ""
        """Why the plan got no deliberation at all ("" unless it got none)."""

    # ------------------------------------------------------------------ queries

    @property
    def dispatched(self) -> bool:
        """The plan dispatcher has done its part (requested deliberations, or recorded why it
        requested none)."""
        return bool(self.requested_task_ids) or bool(self.nothing_dispatched)

    def task_ids(self) -> list[str]:
        """The task ids of the deliberations this plan spawns, one per role, in role order."""
        return [plan_deliberation_task_id(self.plan_id, r.value) for r in self.roles]

    def task_for(self, role: Role) -> str:
        """The task text of ``role``'s deliberation: the plan's own description and tasks."""
        lines = [f"Story {self.story_id}, approved plan {self.plan_id}: the {role.value} part."]
        if self.description:
            lines += ["", self.description]
        if self.tasks:
            lines += ["", "Tasks:", *(f"{i}. {t}" for i, t in enumerate(self.tasks, start=1))]
        lines += ["", f"Give the {role.value} proposal for this plan."]
        text = "\n".join(lines)
        raw = text.encode()
        if len(raw) > MAX_TASK_BYTES:  # a huge plan: keep its head rather than refuse the role
            text = raw[: MAX_TASK_BYTES - 16].decode(errors="ignore") + "\n[...]"
        return text

    # ------------------------------------------------------------------ commands

    def mark_requested(self, task_ids: list[str], skipped: dict[str, str] | None = None) -> None:
        """Record what the dispatcher did: the deliberations that exist (``task_ids``) and the
        roles it ``skipped`` (role → why), or, with no task ids, that it dispatched nothing.
        Idempotent.
        """
        if self.dispatched:
            return
        for role, reason in (skipped or {}).items():
            if role not in self.skipped_roles:
                self._role_skipped(plan_id=self.plan_id, role=Role.parse(role).value, reason=reason)
        if task_ids:
            self._deliberations_requested(task_ids=list(task_ids))
        elif not self.roles:
            self._nothing_dispatched(plan_id=self.plan_id, reason="the approval named no roles")
        else:
            roles = ", ".join(r.value for r in self.roles)
            why = f"no role of the plan ({roles}) has a council"
            self._nothing_dispatched(plan_id=self.plan_id, reason=why)

    @event(DeliberationsRequested)
    def _deliberations_requested(self, task_ids: list[str]) -> None:
        self.requested_task_ids = list(task_ids)

    @event(RoleSkipped)
    def _role_skipped(self, plan_id: str, role: str, reason: str) -> None:
        self.skipped_roles[role] = reason

    @event(NothingDispatched)
    def _nothing_dispatched(self, plan_id: str, reason: str) -> None:
        self.nothing_dispatched = reason


def check_plan_id(plan_id: str) -> None:
    """Raise InvalidDeliberationError naming ``plan_id`` unless it makes readable task ids."""
    if not plan_id:
        raise InvalidDeliberationError("plan_id", "must not be empty")
    if len(plan_id) > MAX_PLAN_ID or not PLAN_ID.fullmatch(plan_id):
        raise InvalidDeliberationError(
            "plan_id",
            f"{plan_id[:40]!r} is not a plan id (letters, digits, . _ : @ / -; at most "
            f"{MAX_PLAN_ID} characters): its deliberations' task ids would be unreadable",
        )
