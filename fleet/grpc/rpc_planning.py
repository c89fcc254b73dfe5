"""ProcessPlanningEvent (the gRPC twin of the planning consumers) and DeriveSubtasks.

ProcessPlanningEvent: ``PLAN_APPROVED``/``APPROVED`` take the plan-approval path the
``planning.plan.approved`` consumer takes (``application.plans``: the plan recorded, one
deliberation per role requested; their task ids are ``derived_task_ids``); ``TRANSITION`` records
the story's phase change (``application.story_phases``, as the ``planning.story.transitioned``
consumer does). The story is ``metadata["story_id"]``, else ``case_id`` (the seed's case is the
story). Any other event type is answered ``processed=false`` with a message, not an error: the
planning service sends more kinds than the orchestrator acts on.

DeriveSubtasks asks the councils through ``ApiServices.runtime``: this node's agents, or, on a
node without them, those of the process that runs them (over NATS,
``agent_runtime.nats_backend.turns``), and records in ``ApiServices.records``; it answers
UNAVAILABLE when no process runs agents or a council cannot answer.
"""

from __future__ import annotations

from datetime import UTC, datetime

from aggregates import InvalidDeliberationError, plan_id_of
from aggregates.story import Phase, Story, story_id_of
from application.errors import NotFoundError, PlanNotFoundError, ServiceUnavailableError
from application.plans import PlanApproval, approve_plan, request_deliberations
from application.ports import NodeStore
from application.story_phases import record_phase_change
from dispatchers.derivation import DerivationRequest, derive_subtasks
from dispatchers.derivation import request_deliberations as request_task_deliberations
from fleet.grpc import _mapping
from fleet.grpc._errors import Ctx, translated
from fleet.grpc._services import ApiServices
from fleet.grpc.rpc_plans import dispatch_note
from fleet.orchestrator.v1 import orchestrator_pb2 as pb

APPROVALS = ("PLAN_APPROVED", "APPROVED")
TRANSITIONS = ("TRANSITION",)


async def _last_move(records: NodeStore, story_id: str) -> tuple[Phase, Phase] | None:
    """The story's last recorded transition, if it has one."""
    try:
        story = await records.get_record(story_id_of(story_id.strip()), Story)
    except NotFoundError:
        return None
    return story.transitions[-1][:2] if story.transitions else None


def _at(ms: int) -> datetime | None:
    return datetime.fromtimestamp(ms / 1000, tz=UTC) if ms > 0 else None


class PlanningRpcs:
    services: ApiServices

    @translated
    async def ProcessPlanningEvent(
        self, request: pb.PlanningEventRequest, context: Ctx
    ) -> pb.PlanningEventResponse:
        kind = request.event_type.strip().upper()
        meta = dict(request.metadata)
        story_id = meta.pop("story_id", "") or request.case_id
        s = self.services
        if kind in APPROVALS:
            approval = PlanApproval(
                plan_id=_mapping.plan_id(request.plan_id),
                story_id=story_id,
                approved_by=meta.pop("approved_by", ""),
                approved_at=_at(request.timestamp_ms),
                roles=tuple(r.strip() for r in meta.pop("roles", "").split(",") if r.strip()),
                description=meta.pop("description", ""),
                metadata=meta,
            )
            plan, created = await approve_plan(s.store, approval, now=s.clock())
            await request_deliberations(s.store, plan.id, s.plan_options, s.clock(), s.councils)
            plan = await s.store.get_plan(plan.id)
            said = "approved" if created else "was approved already"
            return pb.PlanningEventResponse(
                processed=True,
                message=f"plan {plan.plan_id} {said}{dispatch_note(plan)}",
                derived_task_ids=plan.requested_task_ids,
            )
        if kind in TRANSITIONS:
            records = s.records
            if records is None:
                raise ServiceUnavailableError("this node records no story phases")
            if not story_id.strip():
                raise InvalidDeliberationError("case_id", "names no story (nor metadata.story_id)")
            to = Phase.parse(request.to_state, "to_state")
            from_ = Phase.parse(request.from_state, "from_state")
            at = _at(request.timestamp_ms)
            if at is None and await _last_move(records, story_id) == (from_, to):
                moved = False  # a retry without a time of its own: the move is there already
            else:
                moved = await record_phase_change(records, story_id, from_, to, at or s.clock())
            said = f"moved to {to.value}" if moved else f"moved to {to.value} already (recorded)"
            return pb.PlanningEventResponse(processed=True, message=f"story {story_id} {said}")
        known = ", ".join((*APPROVALS, *TRANSITIONS))
        return pb.PlanningEventResponse(
            processed=False,
            message=f"event type {request.event_type!r} is not acted on (acted on: {known})",
        )

    @translated
    async def DeriveSubtasks(
        self, request: pb.DeriveSubtasksRequest, context: Ctx
    ) -> pb.DeriveSubtasksResponse:
        """INVALID_ARGUMENT naming ``plan_id`` for a plan never approved, ``roles`` or
        ``strategy.*`` for bad roles or caps; UNAVAILABLE when no process runs agents, or when a
        role's council cannot answer (then nothing is recorded: a later call derives anew)."""
        s = self.services
        records, runtime = s.records, s.runtime
        if records is None or runtime is None:
            raise ServiceUnavailableError("this node has no agents to derive subtasks with")
        plan_key = _mapping.plan_id(request.plan_id).strip()
        if not plan_key:
            raise InvalidDeliberationError("plan_id", "must not be empty")
        try:
            plan = await records.get_plan(plan_id_of(plan_key))
        except PlanNotFoundError:
            raise InvalidDeliberationError("plan_id", f"{plan_key!r} was never approved") from None
        st = request.strategy
        councils = await s.councils.list_councils() if s.councils is not None else []
        members = {c.role: c.agents[0] for c in councils if c.agents}
        derivation, _ = await derive_subtasks(
            records,
            runtime,
            DerivationRequest(
                plan=plan,
                case_id=request.case_id,
                roles=tuple(request.roles),
                dependency_order=tuple(st.dependency_order),
                max_tasks_per_role=st.max_tasks_per_role,
                parallel=st.parallel_execution,
            ),
            sampling=s.derivation.sampling,
            timeout_s=s.derivation.timeout_s,
            members=members,
        )
        if st.auto_publish_to_nats:
            o = s.plan_options
            await request_task_deliberations(
                records,
                derivation,
                plan,
                num_agents=o.num_agents,
                rounds=o.rounds or 1,
                timeout_seconds=o.timeout_seconds,
                now=s.clock(),
            )
        return pb.DeriveSubtasksResponse(
            derivation_id=str(derivation.id),
            total_tasks=len(derivation.tasks),
            tasks=[
                pb.AtomicTask(
                    task_id=t.task_id,
                    role=t.role,
                    description=t.description,
                    dependencies=list(t.dependencies),
                    case_id=derivation.case_id,
                    plan_id=derivation.plan_id,
                    priority=t.priority,
                )
                for t in derivation.tasks
            ],
        )
