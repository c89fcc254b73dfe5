"""The OrchestratorService servicer and the grpc.aio server around it (health, reflection).

Each method is proto → command or query → await → proto; mapping lives in ``_mapping``, error
translation in ``_errors``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from fleet.grpc import _mapping
from fleet.grpc._errors import translated
from fleet.ledger import ApplicationDeliberationStore
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet.orchestrator.v1 import orchestrator_pb2_grpc as pb_grpc
from fleet.queries import DeliberationQueries

log = logging.getLogger(__name__)

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["OrchestratorService"].full_name
MAX_MESSAGE_BYTES = 4 * 1024 * 1024  # a task is at most 64 KiB; results of 16 agents fit easily

Ctx = grpc.aio.ServicerContext[Any, Any]


class OrchestratorServicer(pb_grpc.OrchestratorServiceServicer):
    def __init__(
        self,
        store: ApplicationDeliberationStore,
        queries: DeliberationQueries,
        *,
        default_timeout_s: int,
        clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC),
    ) -> None:
        self._store = store
        self._queries = queries
        self._default_timeout_s = default_timeout_s
        self._clock = clock

    @translated
    async def Deliberate(
        self, request: pb.DeliberateRequest, context: Ctx
    ) -> pb.DeliberateResponse:
        d = _mapping.new_deliberation(
            request,
            now=self._clock(),
            default_timeout_s=self._default_timeout_s,
            new_task_id=uuid.uuid4().hex,
        )
        stored, created = await self._store.create(d)
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
        view = await self._queries.result(_mapping.task_id(request.task_id))
        return _mapping.result_response(view)

    @translated
    async def GetDeliberationHistory(
        self, request: pb.GetDeliberationHistoryRequest, context: Ctx
    ) -> pb.GetDeliberationHistoryResponse:
        task = _mapping.task_id(request.task_id)
        h = await self._queries.history(task, request.to_version or None)
        return _mapping.history_response(task, h)

    @translated
    async def QueryHistory(
        self, request: pb.QueryHistoryRequest, context: Ctx
    ) -> pb.QueryHistoryResponse:
        params = _mapping.query_params(dict(request.params_json))
        q = await self._queries.cypher(request.cypher, params, request.limit)
        return _mapping.query_response(q)


class GrpcServer:
    """grpc.aio server with standard health checking and reflection.

    Health says NOT_SERVING until ``start`` completes and again from the start of ``shutdown``,
    so a load balancer drains it before it stops.
    """

    def __init__(self, servicer: OrchestratorServicer, *, host: str, port: int) -> None:
        self.address = f"{host}:{port}"
        self._server = grpc.aio.server(
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ]
        )
        pb_grpc.add_OrchestratorServiceServicer_to_server(servicer, self._server)
        self._health = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self._health, self._server)
        reflection.enable_server_reflection(
            (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), self._server
        )
        bound = self._server.add_insecure_port(self.address)
        if bound == 0:
            raise OSError(f"gRPC: cannot listen on {self.address} (in use?)")
        self.port = bound
        self._stopped = False

    async def start(self) -> None:
        for name in ("", SERVICE_NAME):
            await self._health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
        await self._server.start()
        for name in ("", SERVICE_NAME):
            await self._health.set(name, health_pb2.HealthCheckResponse.SERVING)
        log.info("gRPC API listening on %s", self.address)

    async def wait(self) -> None:
        await self._server.wait_for_termination()

    async def shutdown(self, grace: float = 5.0) -> None:
        if self._stopped:
            return
        self._stopped = True
        await self._health.enter_graceful_shutdown()
        await self._server.stop(grace)

    async def __aenter__(self) -> GrpcServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.shutdown()
