"""Orchestrate (a deliberation, then the architect's choice) and DeliberateForBacklogReview.

Orchestrate records the deliberation as an orchestration (``Deliberation.orchestrate``: the
architect's k, the client's peer-review choice, the case) in the same write as the request, and
answers when it ends. It waits on the node's watch hub (``ApiServices.watch``), an await on the
event feed: no thread is held, and a client that goes away only stops its own wait, never the
deliberation, which the dispatcher drives to its end. A repeated call with the same task id waits
for the same deliberation.
"""

from __future__ import annotations

import logging
import uuid

from aggregates import Deliberation
from application.errors import ServiceUnavailableError
from fleet.grpc import _mapping, _seed
from fleet.grpc._errors import Ctx, translated
from fleet.grpc._services import ApiServices
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet.telemetry import current_traceparent

log = logging.getLogger(__name__)


class OrchestrationRpcs:
    services: ApiServices

    @translated
    async def Orchestrate(
        self, request: pb.OrchestrateRequest, context: Ctx
    ) -> pb.OrchestrateResponse:
        """INVALID_ARGUMENT naming the field for a bad request (as Deliberate, plus
        ``options.custom_params.<key>`` for a bad or unknown parameter and
        ``context_options...`` for context options Fleet cannot honour); UNAVAILABLE on a node
        without a watch hub."""
        s = self.services
        hub = s.watch
        if hub is None:
            raise ServiceUnavailableError("this node does not serve 'watch' (Orchestrate waits)")
        d = _seed.new_orchestration(
            request,
            now=s.clock(),
            default_timeout_s=s.default_timeout_s,
            new_task_id=uuid.uuid4().hex,
            trace_context=current_traceparent(),
            council=await s.council_for(request.role),
        )
        stored, created = await s.submit(d)
        log.info("orchestration %s (task %s) %s", stored.id, stored.task_id, _said(created))
        async for _ in hub.watch(stored.id):  # ends after the terminal event
            pass
        return _seed.orchestrate_response(await s.store.get(stored.id))

    @translated
    async def DeliberateForBacklogReview(
        self, request: pb.DeliberateRequest, context: Ctx
    ) -> pb.DeliberateResponse:
        """Deliberate, for a backlog-review task id ``ceremony-<id>:story-<id>:role-<ROLE>``:
        the role and story come from the id (INVALID_ARGUMENT naming ``task_id`` when it is
        malformed, ``role`` when the request's role disagrees with it)."""
        plain, task = _seed.backlog_request(request)
        s = self.services
        d: Deliberation = _mapping.new_deliberation(
            plain,
            now=s.clock(),
            default_timeout_s=s.default_timeout_s,
            new_task_id=plain.task_id,
            trace_context=current_traceparent(),
            council=await s.council_for(plain.role),
        )
        stored, created = await s.submit(d)
        log.info("backlog review %s (story %s) %s", stored.task_id, task.story_id, _said(created))
        meta = _mapping.metadata()
        meta.execution_id = str(stored.id)
        meta.tags.update({"ceremony_id": task.ceremony_id, "story_id": task.story_id})
        return pb.DeliberateResponse(
            task_id=stored.task_id,
            status=_mapping.STATUS_TO_PB[stored.status],  # type: ignore[arg-type]
            metadata=meta,
        )


def _said(created: bool) -> str:
    return "requested" if created else "already requested"
