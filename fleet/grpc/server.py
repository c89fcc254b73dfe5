"""The OrchestratorService servicer and the grpc.aio server around it (health, reflection).

Each method is proto → command or query → await → proto; methods live in ``rpc_*.py`` by group,
mapping in ``_mapping``, error translation in ``_errors``, the parts they use in ``_services``.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Awaitable, Callable, Sequence

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from application.errors import ServiceUnavailableError
from fleet.grpc._auth import OPEN_SERVICES, refusing
from fleet.grpc._services import ApiServices
from fleet.grpc.rpc_context import ContextRpcs
from fleet.grpc.rpc_councils import CouncilRpcs
from fleet.grpc.rpc_deliberations import DeliberationRpcs
from fleet.grpc.rpc_history import HistoryRpcs
from fleet.grpc.rpc_orchestration import OrchestrationRpcs
from fleet.grpc.rpc_planning import PlanningRpcs
from fleet.grpc.rpc_plans import PlanRpcs
from fleet.grpc.rpc_seed_status import SeedStatusRpcs
from fleet.grpc.rpc_status import StatusRpcs
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet.orchestrator.v1 import orchestrator_pb2_grpc as pb_grpc
from lifecycle import AsyncClosing

log = logging.getLogger(__name__)

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["OrchestratorService"].full_name
MAX_MESSAGE_BYTES = 4 * 1024 * 1024  # a task is at most 64 KiB; results of 16 agents fit easily
STARTING = "the node is starting; retry when its health check says SERVING"
ALWAYS_SERVED = (*OPEN_SERVICES, f"/{reflection.SERVICE_NAME}/")
"""Served while starting: probes, and reflection (it describes the API, it reads nothing)."""


class ListenError(OSError):
    """The API cannot listen on its address (taken, or not this machine's); names the address."""


class OrchestratorServicer(
    DeliberationRpcs,
    HistoryRpcs,
    PlanRpcs,
    StatusRpcs,
    OrchestrationRpcs,
    SeedStatusRpcs,
    PlanningRpcs,
    ContextRpcs,
    CouncilRpcs,
    pb_grpc.OrchestratorServiceServicer,
):
    """The service, one mixin per group of RPCs (``rpc_*.py``); an RPC not yet implemented
    answers UNIMPLEMENTED (the generated base class).

    A node registers it before its parts exist (the port opens first, so probes see the node
    starting) and hands it its services with ``bind`` once they do; until then every RPC is
    UNAVAILABLE (``GrpcServer`` refuses them before they get here).
    """

    def __init__(self, services: ApiServices | None = None) -> None:
        self._services = services

    @property
    def services(self) -> ApiServices:  # type: ignore[override]  # set once, by bind
        if self._services is None:
            raise ServiceUnavailableError(STARTING)
        return self._services

    def bind(self, services: ApiServices) -> None:
        self._services = services


class _StartingGate(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Refuses every call but health and reflection with UNAVAILABLE until ``open``.

    UNAVAILABLE is the code clients retry, and it is what a node that is not up yet is.
    """

    def __init__(self) -> None:
        self.is_open = False

    def open(self) -> None:
        self.is_open = True

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method or ""
        if self.is_open or handler is None or method.startswith(ALWAYS_SERVED):
            return handler
        return refusing(handler, grpc.StatusCode.UNAVAILABLE, STARTING)


class GrpcServer(AsyncClosing):
    """grpc.aio server with standard health checking and reflection.

    Start-up is two steps, so that a probe can tell "starting" from "down": ``open`` listens at
    once with health NOT_SERVING and every other call UNAVAILABLE; ``ready`` serves them and
    says SERVING. ``start`` does both. Health says NOT_SERVING again from the start of
    ``close``, so a load balancer drains the node before it stops.

    The port is this server's alone: gRPC would otherwise set ``SO_REUSEPORT`` and a second
    node on the same port would silently take half of the calls. ``shared=True`` is the one
    exception, a hand-over between two servers of one node (``fleet.api_process``): the node
    listens with ``SO_REUSEPORT`` while it starts, its API child binds the same port the same way
    (``check_free=False``: the node holds it), and the node stops listening once the child
    serves, so the port never refuses a connection in between.
    """

    def __init__(
        self,
        servicer: OrchestratorServicer,
        *,
        host: str,
        port: int,
        credentials: grpc.ServerCredentials | None = None,
        interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
        shared: bool = False,
        check_free: bool = True,
    ) -> None:
        self.address = f"{host}:{port}"
        self.servicer = servicer
        self._gate = _StartingGate()
        self._server = grpc.aio.server(
            interceptors=[*interceptors, self._gate],
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                ("grpc.so_reuseport", 1 if shared else 0),
            ],
        )
        pb_grpc.add_OrchestratorServiceServicer_to_server(servicer, self._server)  # type: ignore[no-untyped-call]
        self._health = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self._health, self._server)
        reflection.enable_server_reflection(
            (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), self._server
        )
        self.port = self._bind(host, port, credentials, check_free)
        self._stopped = False

    def _bind(
        self, host: str, port: int, credentials: grpc.ServerCredentials | None, check_free: bool
    ) -> int:
        """Listen on ``host:port`` (TLS, and mTLS, when credentials are given) or raise
        ``ListenError`` naming the address; gRPC itself only says "Failed to bind"."""
        if check_free:
            _require_free(host, port)
        try:
            bound = (
                self._server.add_secure_port(self.address, credentials)
                if credentials is not None
                else self._server.add_insecure_port(self.address)
            )
        except RuntimeError as e:
            raise ListenError(f"gRPC API: cannot listen on {self.address}: {e}") from None
        if bound == 0:
            raise ListenError(f"gRPC API: cannot listen on {self.address}")
        return int(bound)

    async def open(self) -> None:
        """Listen now, health NOT_SERVING and every other call UNAVAILABLE until ``ready``."""
        for name in ("", SERVICE_NAME):
            await self._health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
        await self._server.start()
        log.info("gRPC API listening on %s (starting: NOT_SERVING)", self.address)

    async def ready(self) -> None:
        """Serve every RPC and say SERVING (unless a shutdown has begun)."""
        self._gate.open()
        for name in ("", SERVICE_NAME):
            await self._health.set(name, health_pb2.HealthCheckResponse.SERVING)
        log.info("gRPC API serving on %s", self.address)

    async def start(self) -> None:
        await self.open()
        await self.ready()

    async def wait(self) -> None:
        await self._server.wait_for_termination()

    async def close(self, grace: float = 5.0) -> None:
        if self._stopped:
            return
        self._stopped = True
        await self._health.enter_graceful_shutdown()
        await self._server.stop(grace)

    async def __aenter__(self) -> GrpcServer:
        await self.start()
        return self


def _require_free(host: str, port: int) -> None:
    """Raise ``ListenError`` naming the address when something already listens there.

    Asked before gRPC binds, because a failed bind in gRPC also writes its own log line to
    stderr, and ``fleet up`` promises one clear line.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC binds
        try:
            probe.bind((host, port))
        except OSError as e:
            msg = f"gRPC API: cannot listen on {host}:{port}: {e.strerror or e}"
            raise ListenError(msg) from None


def fork_handlers_off() -> bool:
    """Whether gRPC was told not to run its fork handlers (``GRPC_ENABLE_FORK_SUPPORT=0``, read
    when gRPC is imported; the ``fleet`` command sets it).

    With them on, a child forked while a gRPC server runs is now and then aborted in the fork
    (SIGABRT, "epoll_wait error: Bad file descriptor"), and the embedded servers are started
    with a fork (``preexec_fn``). A node therefore listens before its servers start only when
    they are off.
    """
    return os.environ.get("GRPC_ENABLE_FORK_SUPPORT", "").strip().lower() in ("0", "false", "no")
