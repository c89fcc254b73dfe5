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

from application.errors import ServiceUnavailableError
from fleet.grpc import _mapping, _seed
from fleet.grpc._errors import Ctx, translated
from fleet.grpc._services import ApiServices
from fleet.orchestrator.v1 import orchestrator_pb2 as pb

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
        commands = s.deliberations
        council = await commands.council_for(request.role)
        d = _seed.new_orchestration(
            request, build=lambda new: commands.build(new, council), council=council
        )
        stored, created = await commands.record(d)
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
        commands = self.services.deliberations
        council = await commands.council_for(plain.role)
        d = commands.build(_mapping.new_deliberation(plain), council)
        stored, created = await commands.record(d)
        log.info("backlog review %s (story %s) %s", stored.task_id, task.story_id, _said(created))
        response = _mapping.deliberate_response(stored)
        response.metadata.execution_id = str(stored.id)
        response.metadata.tags.update({"ceremony_id": task.ceremony_id, "story_id": task.story_id})
        return response


def _said(created: bool) -> str:
    return "requested" if created else "already requested"
