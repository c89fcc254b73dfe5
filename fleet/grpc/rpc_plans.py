"""ApprovePlan: record a plan's approval (as the ``planning.plan.approved`` consumer does).

The Plan aggregate records ``Approved`` (idempotent on plan_id), then the deliberations are
requested, one per role, before the answer: the task ids it names (they derive from plan and role)
can be read, watched or cancelled at once. The plan dispatcher does the same for every approval on
the feed, so a node stopped between the two writes loses nothing.

The deliberations are shaped by ``ApiServices.plan_options`` and the roles' councils, as the plan
dispatcher shapes them; ``task_ids`` are those requested (none for a plan that names no roles,
none for a role without a council: the plan's events say why).
"""

from __future__ import annotations

from aggregates import Plan
from application.plans import PlanApproval, approve_and_request
from fleet.grpc import _mapping
from fleet.grpc._errors import Ctx, translated
from fleet.grpc._services import ApiServices
from fleet.orchestrator.v1 import orchestrator_pb2 as pb


class PlanRpcs:
    services: ApiServices

    @translated
    async def ApprovePlan(
        self, request: pb.ApprovePlanRequest, context: Ctx
    ) -> pb.ApprovePlanResponse:
        """INVALID_ARGUMENT naming the field for an empty or malformed plan_id, an empty
        story_id or an unknown role."""
        approval = PlanApproval(
            plan_id=_mapping.plan_id(request.plan_id),
            story_id=request.story_id,
            approved_by=request.approved_by,
            roles=tuple(request.roles),
            description=request.description,
            tasks=tuple(request.tasks),
            metadata=dict(request.metadata),
        )
        s = self.services
        plan, created = await approve_and_request(
            s.store, approval, s.plan_options, s.clock(), s.councils
        )
        return _mapping.approve_plan_response(plan, created)


def dispatch_note(plan: Plan) -> str:
    """What the plan dispatcher did not do, said in a reply: "" when every role deliberates."""
    if plan.nothing_dispatched:
        return f"; nothing dispatched: {plan.nothing_dispatched}"
    return "".join(f"; {why}" for why in plan.skipped_roles.values())
