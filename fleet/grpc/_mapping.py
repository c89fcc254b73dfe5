"""Proto ↔ domain mapping, in one place. No servicer method builds messages by hand."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

from aggregates import (
    Deliberation,
    DeliberationStatus,
    InvalidDeliberationError,
    Plan,
    Role,
)
from aggregates.ids import check_task_id
from aggregates.plan import check_plan_id
from application.deliberations import NewDeliberation
from application.listing import ListFilter, Page
from application.queries import QueryResult
from application.timeline import History, to_json
from application.views import DeliberationView, FailureView, ResultView
from application.watch import Progress
from fleet import __version__
from fleet.client import AGENT_ERROR_TAG, FAILED_AGENTS_TAG
from fleet.grpc._check_suite import check_suite
from fleet.orchestrator.v1 import orchestrator_pb2 as pb

STATUS_TO_PB: dict[DeliberationStatus, int] = {
    DeliberationStatus.PENDING: pb.DELIBERATION_STATUS_PENDING,
    DeliberationStatus.IN_PROGRESS: pb.DELIBERATION_STATUS_IN_PROGRESS,
    DeliberationStatus.COMPLETED: pb.DELIBERATION_STATUS_COMPLETED,
    DeliberationStatus.FAILED: pb.DELIBERATION_STATUS_FAILED,
    DeliberationStatus.TIMEOUT: pb.DELIBERATION_STATUS_TIMEOUT,
    DeliberationStatus.CANCELLED: pb.DELIBERATION_STATUS_CANCELLED,
}


def task_id(raw: str, *, field: str = "task_id") -> str:
    return check_task_id(raw, field=field)


def plan_id(raw: str) -> str:
    """A plan id becomes part of its deliberations' task ids (``plan:<id>:<ROLE>``), so it must
    make valid ones: the Plan aggregate's rule, checked before anything is written."""
    if raw.strip():
        check_plan_id(raw.strip())
    return raw


def approve_plan_response(plan: Plan, created: bool) -> pb.ApprovePlanResponse:
    """ApprovePlan's answer: the plan and the task ids of the deliberations it requested."""
    return pb.ApprovePlanResponse(
        plan_id=plan.plan_id, task_ids=plan.requested_task_ids, created=created
    )


def metadata() -> pb.OrchestratorMetadata:
    return pb.OrchestratorMetadata(
        orchestrator_version=f"fleet {__version__}", timestamp_ms=int(time.time() * 1000)
    )


def result(r: ResultView, role: str) -> pb.DeliberationResult:
    """One agent's final proposal in the seed's shape: ``created_at_ms`` is when that proposal
    was received (its event's time), ``revisions`` its earlier versions, oldest first;
    ``scored`` tells a recorded score from an unscored proposal (both read 0 in ``score``)."""
    return pb.DeliberationResult(
        proposal=pb.Proposal(
            author_id=r.agent_id,
            author_role=role,
            content=r.content,
            created_at_ms=_ms(r.received_at),
            revisions=list(r.revisions),
        ),
        checks=check_suite(r.checks),
        score=r.score or 0.0,
        rank=r.rank or 0,
        scored=r.score is not None,
    )


def results(view: DeliberationView) -> list[pb.DeliberationResult]:
    ordered = sorted(view.results, key=lambda r: (r.rank is None, r.rank or 0, r.agent_id))
    return [result(r, view.role) for r in ordered]


def result_response(view: DeliberationView) -> pb.GetDeliberationResultResponse:
    meta = metadata()
    meta.tags.update(failure_tags(view))
    return pb.GetDeliberationResultResponse(
        task_id=view.task_id,
        status=STATUS_TO_PB[view.status],  # type: ignore[arg-type]
        results=results(view),
        winner_id=view.winner or "",
        duration_ms=view.duration_ms or 0,
        error_message=_error_message(view),
        metadata=meta,
    )


def _first_failures(view: DeliberationView) -> dict[str, FailureView]:
    """Each failed agent's first failure (an agent that fails a round takes no later part)."""
    first: dict[str, FailureView] = {}
    for f in view.failures:
        first.setdefault(f.agent_id, f)
    return first


def failure_tags(view: DeliberationView) -> dict[str, str]:
    """Who failed and why, as metadata tags a script can read without parsing a sentence."""
    first = _first_failures(view)
    if not first:
        return {}
    tags = {FAILED_AGENTS_TAG: ",".join(first)}
    tags.update(
        {f"{AGENT_ERROR_TAG}{a}": f"round {f.round + 1}: {f.error}" for a, f in first.items()}
    )
    return tags


def _error_message(view: DeliberationView) -> str:
    if view.reason:
        return view.reason
    if view.status is DeliberationStatus.TIMEOUT:
        missing = f"timed out; missing: {', '.join(view.missing) or 'none'}"
        return "; ".join([missing, *_failure_notes(view)])
    if view.status is DeliberationStatus.COMPLETED and view.failures:
        return _completed_without(view)
    return ""


def _failure_notes(view: DeliberationView) -> list[str]:
    """ "<agent> failed round N: <why>" for each failed agent."""
    return [f"{a} failed round {f.round + 1}: {f.error}" for a, f in _first_failures(view).items()]


def _completed_without(view: DeliberationView) -> str:
    """A council that lost agents completes with the rest and says who and why: "completed
    without dev-agent-2: <why>", and for an agent that failed a later round, whose earlier
    proposal still took part, which round it failed."""
    lost, later = [], []
    for agent, f in _first_failures(view).items():
        kept = view.result(agent)
        if kept is None:
            lost.append(f"{agent}: {f.error}")
        else:
            later.append(
                f"{agent} failed round {f.round + 1} (its round {kept.round + 1} proposal "
                f"stands): {f.error}"
            )
    head = f"completed without {'; '.join(lost)}" if lost else "completed"
    return "; ".join([head, *later])


def to_version(raw: int) -> int | None:
    """GetDeliberationHistory's bound: 0 means every event; a version past the last is the
    whole history (the state "up to" it); below 0 is a mistake, not an empty history."""
    if raw < 0:
        raise InvalidDeliberationError("to_version", f"{raw} must be >= 0 (0: every event)")
    return raw or None


def history_response(task: str, h: History) -> pb.GetDeliberationHistoryResponse:
    from application.views import view_from_aggregate

    view = view_from_aggregate(h.deliberation)
    return pb.GetDeliberationHistoryResponse(
        task_id=task,
        deliberation_id=str(h.deliberation.id),
        events=[
            pb.HistoryEvent(
                version=e.version,
                type=e.type,
                timestamp_ms=int(e.at.timestamp() * 1000),
                data_json=to_json(e.data),
            )
            for e in h.entries
        ],
        status=STATUS_TO_PB[view.status],  # type: ignore[arg-type]
        winner_id=view.winner or "",
        results=results(view),
    )


def query_params(params_json: dict[str, str]) -> dict[str, object]:
    out: dict[str, object] = {}
    for name, raw in params_json.items():
        try:
            out[name] = json.loads(raw)
        except json.JSONDecodeError:
            raise InvalidDeliberationError(
                f"params_json[{name}]", f"{raw[:40]!r} is not a JSON value"
            ) from None
    return out


def query_response(q: QueryResult) -> pb.QueryHistoryResponse:
    return pb.QueryHistoryResponse(
        columns=q.columns, rows_json=[to_json(r) for r in q.rows], truncated=q.truncated
    )


def new_deliberation(request: pb.DeliberateRequest) -> NewDeliberation:
    """DeliberateRequest → the command's input (validated by ``DeliberationCommands``)."""
    c = request.constraints
    return NewDeliberation(
        task_description=request.task_description,
        role=request.role,
        task_id=request.task_id,
        num_agents=request.num_agents,
        rounds=request.rounds,
        timeout_seconds=c.timeout_seconds,
        max_iterations=c.max_iterations,
        rubric=c.rubric,
        requirements=tuple(c.requirements),
        metadata=dict(c.metadata),
        requested_by=c.metadata.get("requested_by", "grpc"),
    )


def deliberate_response(d: Deliberation) -> pb.DeliberateResponse:
    return pb.DeliberateResponse(
        task_id=d.task_id,
        status=STATUS_TO_PB[d.status],  # type: ignore[arg-type]
        metadata=metadata(),
    )


def cancel_response(d: Deliberation) -> pb.CancelDeliberationResponse:
    return pb.CancelDeliberationResponse(
        task_id=d.task_id,
        status=STATUS_TO_PB[d.status],  # type: ignore[arg-type]
    )


# ------------------------------------------------------------------ streaming, listing

PB_TO_STATUS: dict[int, DeliberationStatus] = {v: k for k, v in STATUS_TO_PB.items()}


def update(p: Progress, role: str) -> pb.DeliberationUpdate:
    """A progress step as the seed's DeliberationUpdate (partial_result when there is content)."""
    u = pb.DeliberationUpdate(
        status=p.status, progress_percent=p.percent, current_step=p.step, current_agent=p.agent
    )
    if p.content or p.score is not None or p.rank:
        u.partial_result.CopyFrom(
            pb.DeliberationResult(
                proposal=pb.Proposal(author_id=p.agent, author_role=role, content=p.content),
                score=p.score or 0.0,
                rank=p.rank,
                scored=p.score is not None,
            )
        )
    return u


def _ms_time(ms: int, field: str) -> datetime | None:
    if ms < 0:
        raise InvalidDeliberationError(field, f"{ms} must be >= 0 (0: no bound)")
    return datetime.fromtimestamp(ms / 1000, tz=UTC) if ms else None


def list_filter(request: pb.ListDeliberationsRequest) -> ListFilter:
    status = ""
    if request.status:
        known = PB_TO_STATUS.get(request.status)
        if known is None:
            raise InvalidDeliberationError("status", f"{request.status} is not a status")
        status = known.value
    role = Role.parse(request.role).value if request.role else ""
    plan = task_id(request.plan_id, field="plan_id") if request.plan_id else ""
    after = _ms_time(request.created_after_ms, "created_after_ms")
    before = _ms_time(request.created_before_ms, "created_before_ms")
    if after and before and after >= before:
        raise InvalidDeliberationError("created_before_ms", "must be after created_after_ms")
    return ListFilter(
        status=status, role=role, plan_id=plan, created_after=after, created_before=before
    )


def _ms(t: datetime | None) -> int:
    return int(t.timestamp() * 1000) if t is not None else 0


def list_response(page: Page) -> pb.ListDeliberationsResponse:
    return pb.ListDeliberationsResponse(
        deliberations=[
            pb.DeliberationSummary(
                task_id=s.task_id,
                deliberation_id=s.deliberation_id,
                role=s.role,
                status=_status_pb(s.status),  # type: ignore[arg-type]
                plan_id=s.plan_id,
                story_id=s.story_id,
                created_at_ms=_ms(s.created_at),
                finished_at_ms=_ms(s.finished_at),
                winner_id=s.winner,
                num_agents=s.num_agents,
                rounds=s.rounds,
                task_description=s.task,
            )
            for s in page.items
        ],
        next_page_token=page.next_token,
    )


def _status_pb(name: str) -> int:
    try:
        return STATUS_TO_PB[DeliberationStatus(name)]
    except ValueError:  # a status the graph has and this version does not know
        return pb.DELIBERATION_STATUS_UNKNOWN
