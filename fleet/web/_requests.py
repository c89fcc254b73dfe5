"""What the web console reads from a request: the list's filters, whole-number parameters, JSON
bodies and a new deliberation, each refused with a 400 that names the bad part, before any
command or servicer is called."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from aggregates import DeliberationStatus, InvalidDeliberationError
from aggregates.task_code import ACCEPTANCE_TESTS_KEY
from application.deliberations import NewDeliberation
from application.listing import MAX_PAGE_SIZE, ListFilter
from application.plans import PlanApproval


def list_filter(q: Mapping[str, object]) -> ListFilter:
    """``fleet list``'s filters from query parameters; a bad one names itself."""
    status = str(q.get("status", "")).upper()
    if status and status not in DeliberationStatus.__members__:
        choices = ", ".join(DeliberationStatus.__members__)
        raise InvalidDeliberationError("status", f"{status!r} is not one of {choices}")
    after, before = _when(q, "after"), _when(q, "before")
    if after and before and after >= before:
        raise InvalidDeliberationError("before", "must be after 'after'")
    f = ListFilter(
        status=status,
        role=str(q.get("role", "")),
        plan_id=str(q.get("plan", "")),
        story_id=str(q.get("story", "")),
        created_after=after,
        created_before=before,
    )
    f.params()  # validates the role
    return f


def _when(q: Mapping[str, object], name: str) -> datetime | None:
    raw = str(q.get(name, "")).strip()
    if not raw:
        return None
    try:
        t = datetime.fromisoformat(raw)
    except ValueError:
        raise InvalidDeliberationError(name, f"{raw!r} is not an ISO-8601 time") from None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def int_param(source: Mapping[str, object], name: str, default: int) -> int:
    raw = source.get(name, default)
    try:
        if not isinstance(raw, str | int | float):  # JSON's null, lists and objects
            raise TypeError(raw)
        value = int(raw)
    except (TypeError, ValueError):
        raise web.HTTPBadRequest(
            text=json.dumps({"error": f"{name}: {raw!r} is not an integer"}),
            content_type="application/json",
        ) from None
    if name == "page_size" and not 0 <= value <= MAX_PAGE_SIZE:
        raise web.HTTPBadRequest(
            text=json.dumps({"error": f"page_size: {value} not in 0..{MAX_PAGE_SIZE}"}),
            content_type="application/json",
        )
    return value


async def json_body(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        raise web.HTTPBadRequest(
            text=json.dumps({"error": "body: not JSON"}), content_type="application/json"
        ) from None
    if not isinstance(body, dict):
        raise web.HTTPBadRequest(
            text=json.dumps({"error": "body: must be a JSON object"}),
            content_type="application/json",
        )
    return body


def new_deliberation(body: Mapping[str, Any]) -> NewDeliberation:
    """The submit form's JSON as the command's input (the command validates what it means)."""
    requirements = tuple(str(r) for r in body.get("requirements") or [])
    timeout_seconds = int_param(body, "timeout_seconds", 0)
    tests = str(body.get("acceptance_tests") or "")
    return NewDeliberation(
        task_id=str(body.get("task_id") or ""),
        task_description=str(body.get("task") or ""),
        role=str(body.get("role") or ""),
        num_agents=int_param(body, "num_agents", 0),
        rounds=int_param(body, "rounds", 0),
        timeout_seconds=timeout_seconds,
        requirements=requirements,
        metadata={ACCEPTANCE_TESTS_KEY: tests} if tests else {},
        requested_by="web",  # recorded in Requested: who asked (the RPCs record "grpc")
    )


def plan_approval(body: Mapping[str, Any]) -> PlanApproval:
    """The approve form's JSON as ApprovePlan's input (the Plan aggregate validates its ids,
    roles and tasks, naming the field)."""
    return PlanApproval(
        plan_id=str(body.get("plan_id") or ""),
        story_id=str(body.get("story_id") or ""),
        approved_by=str(body.get("approved_by") or "web console"),
        roles=tuple(str(r) for r in body.get("roles") or []),
        description=str(body.get("description") or ""),
        tasks=tuple(str(t) for t in body.get("tasks") or []),
    )
