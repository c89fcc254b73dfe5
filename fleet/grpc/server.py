"""The OrchestratorService servicer and the grpc.aio server around it (health, reflection).

Each method is proto → command or query → await → proto; methods live in ``rpc_*.py`` by group,
mapping in ``_mapping``, error translation in ``_errors``, the parts they use in ``_services``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from types import TracebackType

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from fleet.grpc._services import ApiServices
from fleet.grpc.rpc_deliberations import DeliberationRpcs
from fleet.grpc.rpc_history import HistoryRpcs
from fleet.grpc.rpc_plans import PlanRpcs
from fleet.grpc.rpc_status import StatusRpcs
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet.orchestrator.v1 import orchestrator_pb2_grpc as pb_grpc

log = logging.getLogger(__name__)

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["OrchestratorService"].full_name
MAX_MESSAGE_BYTES = 4 * 1024 * 1024  # a task is at most 64 KiB; results of 16 agents fit easily


class OrchestratorServicer(
    DeliberationRpcs, HistoryRpcs, PlanRpcs, StatusRpcs, pb_grpc.OrchestratorServiceServicer
):
    """The service, one mixin per group of RPCs (``rpc_*.py``); an RPC not yet implemented
    answers UNIMPLEMENTED (the generated base class)."""

    def __init__(self, services: ApiServices) -> None:
        self.services = services


class GrpcServer:
    """grpc.aio server with standard health checking and reflection.

    Health says NOT_SERVING until ``start`` completes and again from the start of ``shutdown``,
    so a load balancer drains it before it stops.
    """

    def __init__(
        self,
        servicer: OrchestratorServicer,
        *,
        host: str,
        port: int,
        credentials: grpc.ServerCredentials | None = None,
        interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
    ) -> None:
        self.address = f"{host}:{port}"
        self._server = grpc.aio.server(
            interceptors=list(interceptors),
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ],
        )
        pb_grpc.add_OrchestratorServiceServicer_to_server(servicer, self._server)
        self._health = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self._health, self._server)
        reflection.enable_server_reflection(
            (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), self._server
        )
        # TLS (and mTLS) when credentials are given (``fleet.grpc._auth.server_credentials``).
        bound = (
            self._server.add_secure_port(self.address, credentials)
            if credentials is not None
            else self._server.add_insecure_port(self.address)
        )
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
