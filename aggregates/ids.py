"""Deterministic ids: the same client task id (or plan and role) always names the same aggregate."""

from __future__ import annotations

import re
from uuid import UUID, uuid5

from aggregates.errors import InvalidDeliberationError

# Fixed forever: changing it would re-key every stored deliberation.
FLEET_NAMESPACE = UUID("6f1c2a7e-3d4b-5a69-8e0f-1b2c3d4e5f60")


TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}$")
"""What a client may call a task: it is shown, logged and typed back, so readable characters."""


def check_task_id(raw: str, *, field: str = "task_id") -> str:
    """``raw`` when it is a task id a client may give; else InvalidDeliberationError naming
    ``field``."""
    if not TASK_ID.match(raw):
        raise InvalidDeliberationError(
            field, f"{raw[:40]!r} is not a task id (1-128 of letters, digits, . _ : @ / -)"
        )
    return raw


def deliberation_id(task_id: str) -> UUID:
    """The aggregate id of the deliberation a client calls ``task_id``."""
    return uuid5(FLEET_NAMESPACE, f"deliberation:{task_id}")


def plan_deliberation_task_id(plan_id: str, role: str) -> str:
    """The task id of the deliberation a plan spawns for one role (redelivery-safe)."""
    return f"plan:{plan_id}:{role}"


def plan_id_of(plan_id: str) -> UUID:
    """The aggregate id of the Plan the planning service calls ``plan_id``."""
    return uuid5(FLEET_NAMESPACE, f"plan:{plan_id}")


def council_id(role: str) -> UUID:
    """The aggregate id of ``role``'s council (one council per role, re-created in place)."""
    return uuid5(FLEET_NAMESPACE, f"council:{role.strip().upper()}")
