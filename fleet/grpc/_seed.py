"""Proto ↔ domain for the seed's other RPCs (Orchestrate, DeliberateForBacklogReview): the same
habits as ``_mapping`` (which they reuse for the shared messages), kept apart so each group's
mapping reads on its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from aggregates import Deliberation, InvalidDeliberationError, Role
from application.councils import CouncilView
from application.deliberations import NewDeliberation
from application.task_context import SECTIONS
from application.views import view_from_aggregate
from fleet.grpc import _mapping
from fleet.orchestrator.v1 import orchestrator_pb2 as pb

__all__ = [
    "DEFAULT_ARCHITECT_K",
    "BacklogTask",
    "backlog_request",
    "backlog_task",
    "new_orchestration",
    "orchestrate_response",
]

DEFAULT_ARCHITECT_K = 3
"""The seed's k: the architect chooses among the top three candidates."""

BACKLOG_TASK_ID = re.compile(
    r"^ceremony-(?P<ceremony>[A-Za-z0-9._@/-]+):story-(?P<story>[A-Za-z0-9._@/-]+)"
    r":role-(?P<role>[A-Za-z]+)$"
)


@dataclass(frozen=True)
class BacklogTask:
    """The parts of a backlog-review task id ``ceremony-<id>:story-<id>:role-<ROLE>``."""

    ceremony_id: str
    story_id: str
    role: Role


def backlog_task(raw: str) -> BacklogTask:
    """Parse and check a backlog-review task id.

    Raises:
        InvalidDeliberationError: naming ``task_id`` when it is not of that shape or its role is
            unknown.
    """
    m = BACKLOG_TASK_ID.match(raw)
    if m is None:
        raise InvalidDeliberationError(
            "task_id", f"{raw[:80]!r} is not ceremony-<id>:story-<id>:role-<ROLE>"
        )
    try:
        role = Role.parse(m.group("role"))
    except InvalidDeliberationError as e:
        raise InvalidDeliberationError("task_id", f"role: {e.problem}") from None
    _mapping.task_id(raw)  # the general task-id rule (length) too
    return BacklogTask(m.group("ceremony"), m.group("story"), role)


def backlog_request(request: pb.DeliberateRequest) -> tuple[pb.DeliberateRequest, BacklogTask]:
    """The plain DeliberateRequest a backlog review is: the role and story from the task id.

    Raises:
        InvalidDeliberationError: a bad task id, or ``role`` given and not the task id's.
    """
    task = backlog_task(request.task_id)
    if request.role.strip() and Role.parse(request.role) is not task.role:
        raise InvalidDeliberationError(
            "role", f"{request.role!r} disagrees with the task id's role {task.role.value}"
        )
    out = pb.DeliberateRequest()
    out.CopyFrom(request)
    out.role = task.role.value
    meta = out.constraints.metadata
    meta["story_id"] = task.story_id
    meta["ceremony_id"] = task.ceremony_id
    meta.setdefault("source", "backlog-review")
    return out, task


def _architect_k(request: pb.OrchestrateRequest) -> int:
    """0 when selection is off; the seed's 3 unless ``custom_params["architect_k"]`` says."""
    if request.HasField("options") and not request.options.enable_architect_selection:
        return 0
    raw = request.options.custom_params.get("architect_k", "")
    if not raw.strip():
        return DEFAULT_ARCHITECT_K
    try:
        return int(raw)
    except ValueError:
        field = "options.custom_params.architect_k"
        raise InvalidDeliberationError(field, f"{raw[:20]!r} is not a whole number") from None


ORCHESTRATE_PARAMS = ("architect_k", "num_agents")
"""The ``OrchestratorOptions.custom_params`` Fleet honours; any other key is refused."""


def new_orchestration(
    request: pb.OrchestrateRequest,
    *,
    build: Callable[[NewDeliberation], Deliberation],
    council: CouncilView | None = None,
) -> Deliberation:
    """OrchestrateRequest → a new Deliberation marked as an orchestration (not yet saved).

    Without ``options`` the role's ``council`` decides rounds and peer review (the seed's
    defaults, one round and peer review on, without one), and architect selection is on (k=3).
    With them, each is as given (``deliberation_rounds`` 0 means the council's rounds).
    ``custom_params["num_agents"]`` sizes the council (3 by default); another key is refused.
    ``context_options`` shape the story's context in the agents' prompts (recorded with the
    orchestration); they need a ``story_id``.
    """
    options = request.options
    for key in options.custom_params:
        if key not in ORCHESTRATE_PARAMS:
            raise InvalidDeliberationError(
                f"options.custom_params.{key}",
                f"unknown parameter (Fleet honours {', '.join(ORCHESTRATE_PARAMS)})",
            )
    plain = pb.DeliberateRequest(
        task_id=request.task_id,
        task_description=request.task_description,
        role=request.role,
        constraints=request.constraints,
        rounds=options.deliberation_rounds,
        num_agents=_int_param(options.custom_params, "num_agents"),
    )
    meta = plain.constraints.metadata
    for key, value in (
        ("story_id", request.story_id),
        ("plan_id", request.plan_id),
        ("case_id", request.case_id),
    ):
        if value.strip():
            meta[key] = value.strip()
    meta.setdefault("source", "orchestrate")
    context = context_options(request)
    d = build(_mapping.new_deliberation(plain))
    if request.HasField("options"):
        peer_review = options.enable_peer_review
    else:
        peer_review = council.enable_peer_review if council else True
    d.orchestrate(
        architect_k=_architect_k(request),
        peer_review=peer_review,
        case_id=request.case_id,
        context_options=context,
    )
    return d


def context_options(request: pb.OrchestrateRequest) -> dict[str, object]:
    """Orchestrate's ``context_options`` as recorded ({} when not given).

    Raises:
        InvalidDeliberationError: naming ``context_options`` when there is no ``story_id`` (the
            agents' context is their story's: there would be nothing to shape),
            ``context_options.max_events`` below 0, ``context_options.scopes`` for an unknown
            scope.
    """
    if not request.HasField("context_options"):
        return {}
    o = request.context_options
    if not request.story_id.strip():
        raise InvalidDeliberationError(
            "context_options", "the agents' context is their story's: name story_id"
        )
    if o.max_events < 0:
        raise InvalidDeliberationError(
            "context_options.max_events", f"{o.max_events} must be >= 0 (0: 20)"
        )
    scopes = sorted({x.strip().lower() for x in o.scopes if x.strip()})
    unknown = [x for x in scopes if x not in SECTIONS]
    if unknown:
        raise InvalidDeliberationError(
            "context_options.scopes", f"{unknown} not in {sorted(SECTIONS)}"
        )
    return {
        "include_timeline": o.include_timeline,
        "include_decisions": o.include_decisions,
        "include_summaries": o.include_summaries,
        "max_events": o.max_events,
        "scopes": scopes,
    }


def _int_param(params: Mapping[str, str], key: str) -> int:
    raw = params.get(key, "")
    if not raw.strip():
        return 0
    try:
        return int(raw)
    except ValueError:
        field = f"options.custom_params.{key}"
        raise InvalidDeliberationError(field, f"{raw[:20]!r} is not a whole number") from None


def orchestrate_response(d: Deliberation) -> pb.OrchestrateResponse:
    """The seed's OrchestrateResponse from an ended orchestration: the winner and the candidates
    the architect chose among (every ranked result when there was no selection), the
    architect's rationale (or why it fell back) in ``metadata.tags``."""
    view = view_from_aggregate(d)
    results = {r.proposal.author_id: r for r in _mapping.results(view)}
    shortlist = list(d.architect_candidates) or list(view.ranking)
    meta = _mapping.metadata()
    meta.execution_id = str(d.id)
    tags = {
        "task_id": d.task_id,
        "status": d.status.value,
        "selection": _selection(d),
        "architect_id": d.architect_id,
        "architect_rationale": d.architect_rationale,
        "fallback_reason": d.architect_fallback,
        "case_id": d.case_id,
        "story_id": d.story_id,
        "plan_id": d.plan_id,
        "error": d.reason,
    }
    meta.tags.update({k: v for k, v in tags.items() if v})
    resp = pb.OrchestrateResponse(
        candidates=[results[a] for a in shortlist if a in results],
        execution_id=str(d.id),
        duration_ms=view.duration_ms or 0,
        metadata=meta,
    )
    if d.winner is not None and d.winner in results:
        resp.winner.CopyFrom(results[d.winner])
    return resp


def _selection(d: Deliberation) -> str:
    """How the winner was chosen: ``architect``, ``fallback`` (highest score, the architect gave
    no usable choice) or ``score`` (no architect selection asked for)."""
    if d.architect_fallback:
        return "fallback"
    if d.architect_winner:
        return "architect"
    return "score" if d.winner else ""
