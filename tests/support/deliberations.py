"""A deliberation request with the fields a test does not care about filled in."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from aggregates import Deliberation

FIB_TASK = "Write a Python function that returns the n-th Fibonacci number"
"""The task the end-to-end tests give a council (a model answers it in a few lines)."""


def requested(
    task_id: str | None = None,
    *,
    task: str = "Write fib(n)",
    role: str = "DEV",
    num_agents: int = 3,
    rounds: int = 1,
    timeout_seconds: int = 60,
    **more: Any,
) -> Deliberation:
    """``Deliberation.request`` now, under ``task_id`` (a fresh one if not given).

    ``more`` passes the request's optional fields (``requirements``, ``trace_context``, ...).
    """
    return Deliberation.request(
        task_id=task_id or f"t-{uuid.uuid4().hex[:8]}",
        task=task,
        role=role,
        num_agents=num_agents,
        rounds=rounds,
        requested_at=datetime.now(tz=UTC),
        timeout_seconds=timeout_seconds,
        **more,
    )
