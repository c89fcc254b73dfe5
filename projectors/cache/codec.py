"""``DeliberationView`` to and from a flat hash of strings, the shape it has in Valkey.

Scalars are stored as plain strings (``HGET <key> status`` answers ``COMPLETED``, which people and
other tools can read); lists and results as JSON; an absent optional field is an absent hash field.
Derived figures (``duration_ms``) are written for such readers and ignored on decode.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import fields
from datetime import datetime
from typing import NotRequired, TypedDict
from uuid import UUID

from aggregates import CheckOutcome, DeliberationStatus
from application.views import DeliberationView, FailureView, ResultView

__all__ = ["SCHEMA", "decode_view", "encode_view"]

SCHEMA = "1"
"""Bumped when the hash layout changes; an entry of another schema reads as a miss."""


def encode_view(view: DeliberationView, *, position: int) -> dict[str, str]:
    fields: dict[str, str] = {
        "schema": SCHEMA,
        "deliberation_id": str(view.deliberation_id),
        "task_id": view.task_id,
        "task": view.task,
        "role": view.role,
        "status": view.status.value,
        "num_agents": str(view.num_agents),
        "rounds": str(view.rounds),
        "plan_id": view.plan_id,
        "story_id": view.story_id,
        "requested_by": view.requested_by,
        "deadline": view.deadline.isoformat(),
        "created_at": view.created_at.isoformat(),
        "updated_at": view.updated_at.isoformat(),
        "version": str(view.version),
        "position": str(position),
        "agents": json.dumps(list(view.agents)),
        "results": json.dumps([_result_to_json(r) for r in view.results]),
        "failures": json.dumps([[f.agent_id, f.round, f.error] for f in view.failures]),
        "ranking": json.dumps(list(view.ranking)),
        "missing": json.dumps(list(view.missing)),
        "late": json.dumps(list(view.late)),
        "reason": view.reason,
    }
    if view.winner is not None:
        fields["winner"] = view.winner
    if view.finished_at is not None:
        fields["finished_at"] = view.finished_at.isoformat()
    if view.duration_ms is not None:
        fields["duration_ms"] = str(view.duration_ms)
    return fields


def decode_view(fields: Mapping[str, str]) -> DeliberationView | None:
    """The view in ``fields``; None for an empty hash or one of another schema (a miss)."""
    if fields.get("schema") != SCHEMA:
        return None
    finished = fields.get("finished_at")
    return DeliberationView(
        deliberation_id=UUID(fields["deliberation_id"]),
        task_id=fields["task_id"],
        task=fields["task"],
        role=fields["role"],
        status=DeliberationStatus(fields["status"]),
        num_agents=int(fields["num_agents"]),
        rounds=int(fields["rounds"]),
        plan_id=fields["plan_id"],
        story_id=fields["story_id"],
        requested_by=fields["requested_by"],
        deadline=datetime.fromisoformat(fields["deadline"]),
        created_at=datetime.fromisoformat(fields["created_at"]),
        updated_at=datetime.fromisoformat(fields["updated_at"]),
        version=int(fields["version"]),
        agents=tuple(json.loads(fields["agents"])),
        results=tuple(_result_from_json(r) for r in json.loads(fields["results"])),
        failures=tuple(FailureView(a, int(r), e) for a, r, e in json.loads(fields["failures"])),
        winner=fields.get("winner"),
        ranking=tuple(json.loads(fields["ranking"])),
        missing=tuple(json.loads(fields["missing"])),
        late=tuple(json.loads(fields["late"])),
        reason=fields["reason"],
        finished_at=datetime.fromisoformat(finished) if finished else None,
        position=int(fields["position"]),
    )


class _ResultJson(TypedDict):
    """One ``ResultView`` in an entry's ``results`` (JSON)."""

    agent_id: str
    round: int
    content: str
    model: str
    tokens: int
    latency_ms: int
    score: float | None
    rank: int | None
    checks: list[dict[str, object]]
    received_at: NotRequired[str | None]
    """Absent in entries written before proposals carried their time."""
    revisions: NotRequired[list[str]]


def _result_to_json(r: ResultView) -> _ResultJson:
    return {
        "agent_id": r.agent_id,
        "round": r.round,
        "content": r.content,
        "model": r.model,
        "tokens": r.tokens,
        "latency_ms": r.latency_ms,
        "score": r.score,
        "rank": r.rank,
        "checks": [_check_to_json(c) for c in r.checks],
        "received_at": r.received_at.isoformat() if r.received_at is not None else None,
        "revisions": list(r.revisions),
    }


_CHECK_FIELDS = tuple(f.name for f in fields(CheckOutcome))


def _check_to_json(c: CheckOutcome) -> dict[str, object]:
    # ``CheckOutcome.as_dict`` is ``dataclasses.asdict``, whose recursive deep copy was half of
    # encoding a view; the fields are flat (``details`` a dict of strings), so this is equal.
    return {name: _flat(getattr(c, name)) for name in _CHECK_FIELDS}


def _flat(value: object) -> object:
    return dict(value) if isinstance(value, dict) else value


def _result_from_json(d: _ResultJson) -> ResultView:
    return ResultView(
        agent_id=str(d["agent_id"]),
        round=int(d["round"]),
        content=str(d["content"]),
        model=str(d["model"]),
        tokens=int(d["tokens"]),
        latency_ms=int(d["latency_ms"]),
        score=None if d["score"] is None else float(d["score"]),
        rank=None if d["rank"] is None else int(d["rank"]),
        checks=tuple(CheckOutcome.from_dict(c) for c in d["checks"]),
        received_at=_time(d.get("received_at")),
        revisions=tuple(str(x) for x in d.get("revisions", ())),
    )


def _time(raw: object) -> datetime | None:
    """An entry written before proposals carried their time has none (a rebuild fills it)."""
    return datetime.fromisoformat(raw) if isinstance(raw, str) else None
