"""RPCs over the history: one deliberation's events, and read-only Cypher over all of them."""

from __future__ import annotations

from fleet.grpc import _mapping
from fleet.grpc._errors import Ctx, translated
from fleet.grpc._services import ApiServices
from fleet.orchestrator.v1 import orchestrator_pb2 as pb


class HistoryRpcs:
    services: ApiServices

    @translated
    async def GetDeliberationHistory(
        self, request: pb.GetDeliberationHistoryRequest, context: Ctx
    ) -> pb.GetDeliberationHistoryResponse:
        task = _mapping.task_id(request.task_id)
        h = await self.services.queries.history(task, _mapping.to_version(request.to_version))
        return _mapping.history_response(task, h)

    @translated
    async def QueryHistory(
        self, request: pb.QueryHistoryRequest, context: Ctx
    ) -> pb.QueryHistoryResponse:
        params = _mapping.query_params(dict(request.params_json))
        q = await self.services.queries.cypher(request.cypher, params, request.limit)
        return _mapping.query_response(q)
