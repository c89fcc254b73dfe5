"""RPCs that start deliberations and read their outcome."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import grpc

from fleet.grpc import _mapping
from fleet.grpc._errors import translated
from fleet.grpc._services import ApiServices
from fleet.orchestrator.v1 import orchestrator_pb2 as pb

log = logging.getLogger(__name__)
Ctx = grpc.aio.ServicerContext[Any, Any]


class DeliberationRpcs:
    services: ApiServices

    @translated
    async def Deliberate(
        self, request: pb.DeliberateRequest, context: Ctx
    ) -> pb.DeliberateResponse:
        s = self.services
        d = _mapping.new_deliberation(
            request,
            now=s.clock(),
            default_timeout_s=s.default_timeout_s,
            new_task_id=uuid.uuid4().hex,
        )
        stored, created = await s.store.create(d)
        log.info(
            "deliberation %s (task %s) %s",
            stored.id,
            stored.task_id,
            "requested" if created else "already requested",
        )
        return pb.DeliberateResponse(
            task_id=stored.task_id,
            status=_mapping.STATUS_TO_PB[stored.status],  # type: ignore[arg-type]
            metadata=_mapping.metadata(),
        )

    @translated
    async def GetDeliberationResult(
        self, request: pb.GetDeliberationResultRequest, context: Ctx
    ) -> pb.GetDeliberationResultResponse:
        view = await self.services.queries.result(_mapping.task_id(request.task_id))
        return _mapping.result_response(view)
