"""The Derivation aggregate: a plan's atomic tasks per role, as a council derived them.

One event, ``Derived``, holds every task (with its role, dependencies and priority) and which
roles fell back to the plan's own text because their council gave no usable list: the whole
derivation lands at once or not at all. The id derives from the request (plan, roles in order,
the cap, whether roles run in parallel), so a retried DeriveSubtasks finds the recorded tasks
instead of asking the councils again.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from aggregates.errors import InvalidDeliberationError
from aggregates.ids import FLEET_NAMESPACE

__all__ = ["AtomicTaskSpec", "Derivation", "derivation_id"]

MAX_TASKS_PER_ROLE = 20


def derivation_id(plan_id: str, roles: list[str], max_per_role: int, parallel: bool) -> UUID:
    """The id of the derivation of ``plan_id`` for these roles (in order) and cap."""
    key = f"derivation:{plan_id}:{','.join(roles)}:{max_per_role}:{int(parallel)}"
    return uuid5(FLEET_NAMESPACE, key)


@dataclass(frozen=True)
class AtomicTaskSpec:
    task_id: str
    role: str
    description: str
    dependencies: tuple[str, ...]
    priority: int

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["dependencies"] = list(self.dependencies)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AtomicTaskSpec:
        return cls(
            task_id=str(d["task_id"]),
            role=str(d["role"]),
            description=str(d["description"]),
            dependencies=tuple(str(x) for x in d.get("dependencies", [])),
            priority=int(d.get("priority", 0)),
        )


class Derivation(Aggregate):
    class Derived(Aggregate.Created):
        plan_id: str
        case_id: str
        roles: list[str]
        tasks: list[dict[str, Any]]
        fallback_roles: list[str]
        """Roles whose council gave no usable list: one task from the plan's text each."""

    class DeliberationsRequested(Aggregate.Event):
        task_ids: list[str]

    @classmethod
    def derive(
        cls,
        *,
        id: UUID,
        plan_id: str,
        case_id: str,
        roles: list[str],
        tasks: list[AtomicTaskSpec],
        fallback_roles: list[str],
    ) -> Derivation:
        if not tasks:
            raise InvalidDeliberationError("tasks", "a derivation needs at least one task")
        return cls._create(
            cls.Derived,
            id=id,
            plan_id=plan_id,
            case_id=case_id,
            roles=list(roles),
            tasks=[t.as_dict() for t in tasks],
            fallback_roles=list(fallback_roles),
        )

    @event(Derived)
    def __init__(
        self,
        *,
        plan_id: str,
        case_id: str,
        roles: list[str],
        tasks: list[dict[str, Any]],
        fallback_roles: list[str],
    ) -> None:
        self.plan_id = plan_id
        self.case_id = case_id
        self.roles = list(roles)
        self.tasks = [AtomicTaskSpec.from_dict(t) for t in tasks]
        self.fallback_roles = list(fallback_roles)
        self.requested: list[str] = []

    def mark_requested(self, task_ids: list[str]) -> None:
        """Record that the tasks' deliberations were requested. Idempotent."""
        if not self.requested:
            self._requested(task_ids=list(task_ids))

    @event(DeliberationsRequested)
    def _requested(self, task_ids: list[str]) -> None:
        self.requested = list(task_ids)
