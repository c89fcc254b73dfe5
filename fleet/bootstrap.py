"""Wiring: settings in, a running Fleet out. The only module that turns settings into components.

``FleetNode`` starts every part in dependency order (event store first, API last) and stops them
in reverse. Parts with no URL configured are embedded: a private nats-server, a private
valkey/redis-server, the LadybugDB graph, local Ray and llama.cpp serving Gemma 3 270M.
Each stage's start-up time is recorded, because people want to know where the seconds go.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from aggregates import Role
from dispatchers.deliberations import DeliberationDispatcher, DispatcherOptions
from fleet.application import FleetApplication
from fleet.config import EMBEDDED_MODEL_ALIAS, Settings
from fleet.grpc._services import ApiServices
from fleet.grpc.server import GrpcServer, OrchestratorServicer
from fleet.ledger import ApplicationDeliberationStore, ApplicationEventFeed
from fleet.queries import DeliberationQueries, HistoryGraph, StatusBoard

log = logging.getLogger(__name__)
T = TypeVar("T")

RUN_FILE = "run.json"


@dataclass
class Endpoints:
    """Where each part listens; written to ``<data_dir>/run.json`` for the CLI."""

    grpc: str = ""
    nats_url: str = ""
    stream: str = ""
    valkey_url: str = ""
    graph: str = ""
    llm_url: str = ""
    model: str = ""
    ray: str = ""
    pid: int = field(default_factory=os.getpid)


class FleetNode:
    """One Fleet process: event store, projections, dispatcher, agents and the gRPC API.

    Loop affinity: start, stop and run on one asyncio loop.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        on_stage: Callable[[str, float], None] | None = None,
    ) -> None:
        self.settings = settings
        self.endpoints = Endpoints()
        self.stage_seconds: dict[str, float] = {}
        self._on_stage = on_stage
        self._stack = contextlib.AsyncExitStack()
        self._tasks: list[asyncio.Task[None]] = []
        self.app: FleetApplication | None = None
        self.store: ApplicationDeliberationStore | None = None
        self.queries: DeliberationQueries | None = None
        self.runners: list[Any] = []
        self.servers: dict[str, Any] = {}

    async def _stage(self, name: str, work: Callable[[], Awaitable[T]]) -> T:
        t0 = time.perf_counter()
        result = await work()
        dt = time.perf_counter() - t0
        self.stage_seconds[name] = dt
        if self._on_stage:
            self._on_stage(name, dt)
        log.info("%s ready in %.1f s", name, dt)
        return result

    async def start(self) -> None:
        s = self.settings
        s.data_dir.mkdir(parents=True, exist_ok=True)
        try:
            await self._stage("event store (JetStream)", self._start_event_store)
            board, graph = await self._stage("projections", self._start_projections)
            await self._stage("LLM endpoint", self._start_llm)
            runtime = await self._stage("agents (Ray)", self._start_agents)
            assert self.store is not None and self.app is not None
            self.queries = DeliberationQueries(self.store, board, graph)
            dispatcher = DeliberationDispatcher(
                self.store,
                ApplicationEventFeed(self.app),
                runtime,
                options=DispatcherOptions(
                    call_timeout_s=s.agent_call_timeout,
                    model=self.endpoints.model,
                    max_tokens=s.llm_max_tokens,
                ),
            )
            await self._stack.enter_async_context(dispatcher)
            self.servers["dispatcher"] = dispatcher
            await self._stage("gRPC API", self._start_api)
            self._write_run_file()
        except BaseException:
            await self.stop()
            raise

    async def _start_event_store(self) -> None:
        s = self.settings
        url = s.nats_url
        if url is None:
            from fleet.embedded.nats import NatsServer

            nats = NatsServer(s.data_dir / "nats")
            await asyncio.to_thread(nats.start)
            self._stack.callback(nats.stop)
            self.servers["nats"] = nats
            url = nats.url
        self.endpoints.nats_url = url
        self.endpoints.stream = s.stream
        env = {
            "PERSISTENCE_MODULE": "eventstore.jetstream",
            "FLEET_NATS_URL": url,
            "FLEET_NATS_STREAM": s.stream,
            "FLEET_NATS_STREAM_REPLICAS": str(s.stream_replicas),
        }
        self.app = await asyncio.to_thread(FleetApplication, env)
        self._stack.callback(self.app.close)
        self.store = ApplicationDeliberationStore(self.app)

    async def _start_projections(self) -> tuple[StatusBoard | None, HistoryGraph | None]:
        from projectors.cache.projection import CacheProjection
        from projectors.graph.projection import GraphProjection
        from projectors.runner import ProjectorRunner

        s = self.settings
        assert self.app is not None
        graph: Any
        if s.neo4j_uri:
            from neo4j import GraphDatabase

            from projectors.graph.neo4j import Neo4jGraph

            driver = GraphDatabase.driver(s.neo4j_uri, auth=(s.neo4j_user, s.neo4j_password))
            graph = Neo4jGraph(driver, owns_driver=True)
            await asyncio.to_thread(graph.ensure_schema)
            self.endpoints.graph = s.neo4j_uri
        else:
            from projectors.graph.ladybug import LadybugGraph

            path = s.data_dir / "graph"
            graph = await asyncio.to_thread(LadybugGraph, path)
            self.endpoints.graph = f"ladybug:{path}"
        self._stack.callback(graph.close)
        runners = [ProjectorRunner(self.app, GraphProjection(graph))]

        board = await asyncio.to_thread(self._connect_cache)
        if board is not None:
            runners.append(ProjectorRunner(self.app, CacheProjection(board)))
        for r in runners:
            r.start()
            self._stack.callback(r.stop)
        self.runners = runners
        return board, graph

    def _connect_cache(self) -> Any:
        s = self.settings
        if not s.cache_enabled:
            return None
        import valkey

        from projectors.cache.valkey import ValkeyDeliberationBoard

        url = s.valkey_url
        if url is None:
            from fleet.embedded.valkey import ValkeyServer

            try:
                server = ValkeyServer(s.data_dir / "valkey")
            except FileNotFoundError as e:
                log.warning("no valkey-server or redis-server installed (%s): cache off", e)
                return None
            server.start()
            self._stack.callback(server.stop)
            self.servers["valkey"] = server
            url = server.url
        self.endpoints.valkey_url = url
        client = valkey.Valkey.from_url(url)
        self._stack.callback(client.close)
        return ValkeyDeliberationBoard(
            client, key_prefix=f"{s.key_prefix}:", cleanup_seconds=s.deliberation_cleanup
        )

    async def _start_llm(self) -> None:
        s = self.settings
        if s.vllm_url:
            self.endpoints.llm_url = s.vllm_url
            self.endpoints.model = s.vllm_model
            return
        from fleet.embedded.llm import LlamaServer

        llm = LlamaServer(s.data_dir / "llm", model_alias=EMBEDDED_MODEL_ALIAS)
        await asyncio.to_thread(llm.start, timeout=180.0)
        self._stack.callback(llm.stop)
        self.servers["llm"] = llm
        self.endpoints.llm_url = llm.url
        self.endpoints.model = EMBEDDED_MODEL_ALIAS

    async def _start_agents(self) -> Any:
        from agent_runtime.ray_runtime import RayAgentRuntime
        from fleet.embedded.ray_local import connect_ray, disconnect_ray

        s = self.settings
        info = await asyncio.to_thread(connect_ray, s.ray_address)
        self.endpoints.ray = s.ray_address or f"local {info.get('address', '')}"
        if info["started"]:
            self._stack.callback(disconnect_ray)
        runtime = await RayAgentRuntime.start(
            self.endpoints.llm_url,
            self.endpoints.model,
            [r.value for r in Role],
            s.actors_per_role,
            max_in_flight=s.llm_max_in_flight,
        )
        self._stack.push_async_callback(runtime.close)
        return runtime

    async def _start_api(self) -> None:
        s = self.settings
        assert self.store is not None and self.queries is not None
        servicer = OrchestratorServicer(
            ApiServices(self.store, self.queries, default_timeout_s=s.deliberation_timeout)
        )
        server = GrpcServer(servicer, host=s.grpc_host, port=s.grpc_port)
        await self._stack.enter_async_context(server)
        self.servers["grpc"] = server
        self.endpoints.grpc = f"{s.grpc_host}:{server.port}"

    def _write_run_file(self) -> None:
        path = self.settings.data_dir / RUN_FILE
        path.write_text(json.dumps(vars(self.endpoints), indent=2))
        self._stack.callback(lambda: path.unlink(missing_ok=True))

    async def stop(self) -> None:
        """Stop everything started so far, newest first. Idempotent."""
        await self._stack.aclose()

    async def wait_projected(self, timeout: float = 30.0) -> None:
        """Block until every projection has applied the stream's current head."""
        assert self.app is not None
        head = await asyncio.to_thread(self.app.recorder.max_notification_id) or 0
        for r in self.runners:
            await asyncio.to_thread(r.wait, head, timeout)

    async def __aenter__(self) -> FleetNode:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()


def read_run_file(data_dir: Path) -> dict[str, Any] | None:
    """The endpoints a running ``fleet up`` wrote, or None."""
    try:
        data: dict[str, Any] = json.loads((data_dir / RUN_FILE).read_text())
    except (OSError, ValueError):
        return None
    return data
