"""Wiring: settings in, a running Fleet out. The only module that turns settings into components.

``FleetNode`` starts every part in dependency order (event store first, API last) and stops them
in reverse. Parts with no URL configured are embedded: a private nats-server, a private
valkey/redis-server, the LadybugDB graph (or, with ``FLEET_GRAPH=neo4j``, a private Neo4j),
local Ray and llama.cpp serving Gemma 3 270M.
Each stage's start-up time is recorded, because people want to know where the seconds go.

(Over 400 lines on purpose: the node's start order is its dependency order, and each stage's
choice of an embedded or a configured part is read best next to the stages around it; the
choice of agent runtime is ``agents``'.)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol, TypeVar

from eventsourcing.persistence import OperationalError

from agent_runtime.api import AgentRuntime, Sampling, TurnRunner
from agent_runtime.checks.sandbox import SandboxState
from aggregates import Role
from application.admission import InFlightBound
from application.app import FleetApplication
from application.council_store import CouncilEventStore
from application.feed import ApplicationEventFeed
from application.listing import DeliberationListing
from application.ports import GraphReader, StatusBoard
from application.queries import DeliberationQueries, LocalGraphReader, recorder_latest_version
from application.stats import StatsFollower
from application.stores import ApplicationDeliberationStore
from application.watch import WatchHub
from dispatchers.councils import startup_councils
from dispatchers.derivation import DerivationOptions
from fleet.agents import checks_sandbox, make_agent_runtime, queue_names
from fleet.config import EMBEDDED_MODEL_ALIAS, Settings
from fleet.endpoints import RUN_FILE, Endpoints, read_run_file
from fleet.grpc._auth import BearerTokenInterceptor, server_credentials
from fleet.grpc._services import ApiServices
from fleet.grpc.server import GrpcServer, OrchestratorServicer, fork_handlers_off
from fleet.health import NodeHealth, Probe, Problem, model_endpoints_probe
from fleet.metrics import FleetMetrics, agent_queues, dispatcher_queue
from fleet.observed_store import ObservedStore
from fleet.run_dispatcher import plan_options, start_dispatch
from fleet.telemetry import TraceContexts, TracedAgentRuntime, configure_tracing
from lifecycle import AsyncClosing
from natsio import servers
from projectors.control import Projections
from projectors.graph.port import DecisionGraph
from projectors.runner import ProjectorRunner
from projectors.service import (
    LocalProjections,
    ProjectionControl,
    ProjectionRequester,
    ProjectionService,
    RemoteGraph,
    RemoteProjections,
    subject,
)

if TYPE_CHECKING:
    from nats.aio.client import Client as NATS

    from agent_runtime.nats_backend.turns import RemoteTurns
    from fleet.api_process import ApiProcess
    from projectors.cache.valkey import ValkeyDeliberationBoard

__all__ = ["RUN_FILE", "Endpoints", "FleetNode", "read_run_file"]

log = logging.getLogger(__name__)
T = TypeVar("T")

COUNCILS_START_WAIT_S = 120.0
"""How long a starting node waits for the event store to take the councils' configuration
(a clustered JetStream electing a leader answers 503 meanwhile) before it gives up."""


class BackgroundPart(Protocol):
    """A part that runs tasks of its own as long as the node does (dispatchers, the watch hub)."""

    def background_tasks(self) -> Sequence[asyncio.Task[None]]: ...


class FleetNode(AsyncClosing):
    """One Fleet process: event store, projections, dispatcher, agents and the gRPC API.

    ``settings.components`` (``fleet up --components``) picks the parts: an ``api`` replica
    reads the graph and cache but runs no projector; ``dispatcher`` brings the agents it drives.
    The event store is always connected. A node that runs the projectors serves them to the
    others over NATS (``projectors.service``); a replica reads a graph it cannot open
    itself (the embedded one, which is the projectors' process's alone) through that, and asks
    that node for projection status, rebuilds and, unless it reads every store itself, verify.

    Loop affinity: start, close and run on one asyncio loop.
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
        self.started_at = datetime.now(tz=UTC)
        """When this node was made (GetStatus's uptime counts from it)."""
        self._stats_follower: StatsFollower | None = None
        self._api_child: ApiProcess | None = None
        """The API's process (``FLEET_API_PROCESS=child``), from the start of this node's."""
        self._remote_turns: RemoteTurns | None = None
        """The agents of the process that runs them, on a node that runs none (DeriveSubtasks'
        turns, and where their checks run for GetStatus)."""
        self._on_stage = on_stage
        self._stack = contextlib.AsyncExitStack()
        self._tasks: list[asyncio.Task[None]] = []
        self.app: FleetApplication | None = None
        self.store: ApplicationDeliberationStore | None = None
        self.councils: CouncilEventStore | None = None
        self.queries: DeliberationQueries | None = None
        self.runners: list[ProjectorRunner] = []
        self.projections: Projections | None = None
        self.control: ProjectionControl | None = None
        """What the API asks of the projections: this node's, or those of the node running them."""
        self.servers: dict[str, object] = {}
        """The parts this node started, by name (what ``fleet demo`` and the tests look for)."""
        self._grpc: GrpcServer | None = None
        self.metrics: FleetMetrics | None = None
        self.hub: WatchHub | None = None
        self.runtime: AgentRuntime | None = None
        """The agents, when this process runs them (DeriveSubtasks asks them too)."""
        self.sandbox: SandboxState | None = None
        """Where this node's agent checks run, as found at start (None: not this node's to
        know; ``fleet.agents.checks_sandbox``). Shown by GetNodeStatus."""
        self.traces = TraceContexts()
        """Which trace each deliberation belongs to, shared by the store and agent wrappers."""
        self._watched: dict[str, BackgroundPart] = {}
        """Parts whose ``background_tasks()`` must run as long as the node does (``failure``)."""

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
        runs = s.runs  # --components: which parts this process runs (the event store always)
        self.endpoints.components = ",".join(sorted(runs))
        try:
            tracing_off = configure_tracing(s.otel_endpoint, s.service_name)
            if tracing_off is not None:
                self._stack.callback(tracing_off)
            # The API in a process of its own (``fleet.api_process``) when asked for, beside
            # other parts: started last, on the servers this node started.
            api_child = "api" in runs and s.api_process == "child" and runs != {"api"}
            # First, so a probe sees NOT_SERVING while the rest starts (when forking servers
            # with gRPC running is safe: ``fork_handlers_off``); else last, as it is ready.
            # With the API in a child, the node holds the port until the child serves it.
            api_first = "api" in runs and fork_handlers_off()
            if api_first:
                await self._open_api(hand_over=api_child)
            if api_child:
                await self._launch_api_process()
            await self._stage("event store (JetStream)", self._start_event_store)
            await self._stage("councils", self._start_councils)
            board, graph = None, None
            if runs & {"api", "projectors", "web"}:
                board, graph = await self._stage("projections", self._start_projections)
            assert self.store is not None and self.app is not None
            self.queries = DeliberationQueries(
                self.store, board, graph, latest_version=recorder_latest_version(self.app.recorder)
            )
            await self._start_observability()
            if "agents" not in runs and s.vllm_url:
                # The model the system's agents call, though not from here: GetStatus still
                # says whether it answers (an API replica, or a node's API in its own process).
                self.endpoints.llm_url, self.endpoints.model = s.vllm_url, s.vllm_model
            if "agents" in runs:
                await self._stage("LLM endpoint", self._start_llm)
                runtime = await self._stage("agents (Ray)", self._start_agents)
                self.runtime = runtime
            if "dispatcher" in runs:
                app = self.app
                observed = self._observed_store()
                parts = await start_dispatch(
                    self._stack,
                    s,
                    store=observed,
                    story_store=observed,
                    feed_factory=lambda: ApplicationEventFeed(app),
                    runtime=TracedAgentRuntime(runtime, self.traces),
                    nats_url=self.endpoints.nats_url,
                    model=self.endpoints.model,
                    councils=self.councils,
                )
                dispatcher = parts.dispatcher
                self.servers["dispatcher"] = dispatcher
                self.servers["plans"] = parts.plans
                self.watch("dispatcher", dispatcher)
                self.watch("plan dispatcher", parts.plans)
                if parts.plan_consumer is not None:
                    self.servers["plan approvals"] = parts.plan_consumer
                    self.watch("plan approvals", parts.plan_consumer)
                if parts.story_consumer is not None:
                    self.watch("story transitions", parts.story_consumer)
                if self.metrics is not None:
                    self.metrics.track_dispatcher(dispatcher)
                    # Work waiting: the dispatchers' notices, and the agent calls per role when
                    # workers serve them (the autoscaling signal); read on a NATS connection.
                    probes = [dispatcher_queue(f"{s.stream}_WORK")] if s.work_sharing else []
                    if s.agent_backend == "nats":
                        probes += agent_queues(queue_names(s), [r.value for r in Role])
                    if probes:
                        await self.metrics.track_queues(self.endpoints.nats_url, probes)
            if "api" in runs and not api_child:
                if not api_first:
                    await self._open_api()
                await self._stage("gRPC API", lambda: self._start_api(graph))
            if "web" in runs:
                await self._stage("web console", lambda: self._start_web(graph))
            if api_child:
                await self._stage("gRPC API (own process)", self._start_api_process)
            self._write_run_file()
        except BaseException:
            await self.close()
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
        # Runs before app.close (newest first) and after the API, dispatcher and projections
        # stop: the snapshots that updates in flight call for are taken, not lost with the store.
        self._stack.push_async_callback(self.store.drain)

    async def _start_councils(self) -> None:
        """Apply the configured councils as events (once per configuration), then keep the
        councils' view fresh from the feed for the API and the dispatcher."""
        from fleet.council_config import configured_councils

        assert self.app is not None
        councils = CouncilEventStore(self.app, ApplicationEventFeed(self.app))
        wanted = configured_councils(self.settings)
        deadline = time.monotonic() + COUNCILS_START_WAIT_S
        while True:
            try:
                changed = await councils.apply_configuration(wanted)
                break
            except OperationalError as e:  # a cluster electing a leader: wait, do not exit
                if time.monotonic() > deadline:
                    raise
                log.warning("councils: the event store is not available yet (%s); retrying", e)
                await asyncio.sleep(1.0)
        if changed:
            log.info("councils configured: %s", ", ".join(changed))
        await councils.start()
        self._stack.push_async_callback(councils.close)
        self.councils = councils

    async def _start_projections(self) -> tuple[StatusBoard | None, GraphReader | None]:
        from projectors.cache.projection import CacheProjection
        from projectors.graph.projection import GraphProjection

        s = self.settings
        assert self.app is not None
        projects = "projectors" in s.runs
        graph: DecisionGraph | None = None
        if s.graph == "neo4j" and (s.neo4j_uri or projects):
            graph = await self._open_neo4j()
        elif projects:
            from projectors.graph.ladybug import LadybugGraph

            path = s.data_dir / "graph"
            graph = await asyncio.to_thread(LadybugGraph, path)
            self.endpoints.graph = f"ladybug:{path}"
        else:
            # The embedded graph is one process's alone (a file lock), and a graph of our own
            # (LadybugDB, or a private Neo4j) would be an empty one: read the projectors' graph
            # through their node.
            self.endpoints.graph = f"nats:{subject(s.stream, 'query')}"
        lease_ms = round(s.projection_lease_s * 1000)
        runners = []
        if graph is not None:
            self._stack.callback(graph.close)
            projection = GraphProjection(graph)
            runners.append(
                ProjectorRunner(self.app, projection, retry_on=_graph_down(), lease_ms=lease_ms)
            )

        board = await asyncio.to_thread(self._connect_cache)
        if board is not None:
            import valkey.exceptions as vx

            down = (vx.ConnectionError, vx.TimeoutError)
            runners.append(
                ProjectorRunner(self.app, CacheProjection(board), retry_on=down, lease_ms=lease_ms)
            )
        if projects and s.outbox:
            runners.append(await asyncio.to_thread(self._outbox_runner, lease_ms))
            runners.append(await asyncio.to_thread(self._agent_responses_runner, lease_ms))
        if projects:  # an API-only replica reads, never projects
            for r in runners:
                r.start()
            self.runners = runners
        # Owns the runners (a rebuild replaces one in place), so it stops whichever are running.
        self.projections = Projections(self.app, self.runners, graph=graph, board=board)
        self._stack.callback(self.projections.close)

        nc = await self._nats("fleet-projections")
        if projects:
            assert graph is not None  # the configured Neo4j, or the embedded graph opened above
            service = ProjectionService(nc, s.stream, graph, self.projections)
            await service.start()
            self._stack.push_async_callback(service.close)
            self.control = LocalProjections(self.projections)
            return board, LocalGraphReader(graph)
        requester = ProjectionRequester(nc, s.stream)
        # Verify here when every store the system has is read here (Neo4j, and the shared
        # Valkey or no cache at all): it then works while no projectors node is up.
        reads_all = graph is not None and (board is not None or not s.cache_enabled)
        self.control = RemoteProjections(requester, self.projections if reads_all else None)
        reader = LocalGraphReader(graph) if graph is not None else RemoteGraph(requester)
        return board, reader

    async def _open_neo4j(self) -> DecisionGraph:
        """The Neo4j graph: the one at ``FLEET_NEO4J_URI``, or a private server started here.

        The private server keeps its data in ``<data_dir>/neo4j``; its password is
        ``NEO4J_PASSWORD``, else one generated on first start and kept in
        ``<data_dir>/neo4j/password`` (mode 0600) for the next start and for the operator's
        own client. Neither the password nor the driver's auth is ever logged.
        """
        from neo4j import GraphDatabase

        from projectors.graph.neo4j import Neo4jGraph

        s = self.settings
        uri, auth = s.neo4j_uri, (s.neo4j_user, s.neo4j_password)
        if uri is None:
            from fleet.embedded.neo4j import Neo4jServer, stored_password

            home = s.data_dir / "neo4j"
            password = s.neo4j_password or stored_password(home / "password")
            server = Neo4jServer(
                home,
                user=s.neo4j_user,
                password=password,
                home=s.neo4j_home,
                heap_mb=s.neo4j_heap_mb,
                pagecache_mb=s.neo4j_pagecache_mb,
            )
            await asyncio.to_thread(server.start)
            self._stack.callback(server.stop)
            self.servers["neo4j"] = server
            uri, auth = server.uri, server.auth
        driver = GraphDatabase.driver(uri, auth=auth)
        # No schema set-up here: the projection does it once Neo4j answers, so an external Neo4j
        # that is still starting delays the graph instead of failing the node.
        graph = Neo4jGraph(driver, owns_driver=True)
        self.endpoints.graph = uri
        return graph

    def _outbox_runner(self, lease_ms: int) -> ProjectorRunner:
        """The integration-event outbox: its own loop thread holds its NATS connection (the
        projection is called from the runner's thread, the client is asyncio's)."""
        from eventstore._loop_thread import LoopThread
        from projectors.outbox import AppHistory, OutboxProjection
        from projectors.outbox.jetstream import JetStreamOutboxStream, OutboxUnavailableError

        assert self.app is not None
        bridge = LoopThread(name="outbox-loop")
        self._stack.callback(bridge.close)
        stream = JetStreamOutboxStream.open(
            self.endpoints.nats_url,
            bridge,
            source=self.settings.stream,
            replicas=self.settings.stream_replicas,
        )
        self._stack.callback(stream.close)
        projection = OutboxProjection(stream, AppHistory(self.app))
        return ProjectorRunner(
            self.app, projection, retry_on=(OutboxUnavailableError,), lease_ms=lease_ms
        )

    def _agent_responses_runner(self, lease_ms: int) -> ProjectorRunner:
        """The agent results of backlog-review and task-extraction deliberations, on the
        seed's ``agent.response.>`` subjects: a second outbox, with its own stream
        (``AGENT_RESPONSES``), position, lease and loop thread, so neither outbox waits on the
        other's stream."""
        from eventstore._loop_thread import LoopThread
        from projectors.outbox import AppHistory, OutboxProjection
        from projectors.outbox.agent_responses import (
            BACKLOG_REVIEW_ROLE,
            agent_responses,
            handles_agent_response,
        )
        from projectors.outbox.jetstream import (
            AGENT_RESPONSES_MAX_AGE_S,
            AGENT_RESPONSES_STREAM,
            AGENT_RESPONSES_SUBJECTS,
            JetStreamOutboxStream,
            OutboxUnavailableError,
        )

        assert self.app is not None
        bridge = LoopThread(name="agent-responses-loop")
        self._stack.callback(bridge.close)
        stream = JetStreamOutboxStream.open(
            self.endpoints.nats_url,
            bridge,
            source=self.settings.stream,
            replicas=self.settings.stream_replicas,
            stream=AGENT_RESPONSES_STREAM,
            subjects=AGENT_RESPONSES_SUBJECTS,
            probe=BACKLOG_REVIEW_ROLE,
            max_age_s=AGENT_RESPONSES_MAX_AGE_S,
            scope="agent-responses",
        )
        self._stack.callback(stream.close)
        projection = OutboxProjection(
            stream,
            AppHistory(self.app),
            name="agent-responses",
            derive=agent_responses,
            handles=handles_agent_response,
        )
        return ProjectorRunner(
            self.app, projection, retry_on=(OutboxUnavailableError,), lease_ms=lease_ms
        )

    def _connect_cache(self) -> ValkeyDeliberationBoard | None:
        s = self.settings
        if not s.cache_enabled:
            return None
        import valkey

        from projectors.cache.valkey import ValkeyDeliberationBoard

        url = s.valkey_url
        if url is None and "projectors" not in s.runs:
            # A private server here would be a cache no projector fills: read by replay instead.
            log.info("no cache URL on a node that runs no projectors: reads replay the events")
            return None
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

    async def _start_agents(self) -> AgentRuntime:
        """The agents, on the backend ``fleet.agents`` chooses (``FLEET_AGENT_BACKEND``)."""
        runtime, where = await make_agent_runtime(
            self._stack,
            self.settings,
            llm_url=self.endpoints.llm_url,
            model=self.endpoints.model,
            nats_url=self.endpoints.nats_url,
            watch=self.watch,
        )
        self.endpoints.ray = where
        self.sandbox = await checks_sandbox(self.settings, runtime)
        # Turns asked by the processes that run no agents (DeriveSubtasks on an API replica).
        from agent_runtime.nats_backend.turns import TurnService

        service = TurnService(
            await self._nats("fleet-agent-turns"),
            self.settings.stream,
            runtime,
            sandbox=lambda: self.sandbox,
        )
        await service.start()
        self._stack.push_async_callback(service.close)
        return runtime

    async def _nats(self, name: str) -> NATS:
        """A NATS connection of this node's, reconnecting for as long as the node runs."""
        import nats

        nc = await nats.connect(
            servers(self.endpoints.nats_url), name=name, max_reconnect_attempts=-1
        )
        self._stack.push_async_callback(nc.drain)
        return nc

    async def _turns(self) -> TurnRunner:
        """What DeriveSubtasks asks: this node's agents, or those of the process running them."""
        if self.runtime is not None:
            return self.runtime
        if self._remote_turns is None:
            from agent_runtime.nats_backend.turns import RemoteTurns

            nc = await self._nats("fleet-agent-turns")
            self._remote_turns = RemoteTurns(nc, self.settings.stream)
        return self._remote_turns

    def _observed_store(self) -> ObservedStore:
        """The store as the API and dispatcher use it: each write timed, traced, logged by id."""
        assert self.store is not None
        return ObservedStore(self.store, self.metrics, self.traces)

    async def _start_observability(self) -> None:
        """The watch hub (one fan-out of the event feed) and the metrics it feeds."""
        s = self.settings
        assert self.app is not None and self.store is not None
        if not s.runs & {"api", "web"} and not s.metrics_port:
            return
        app = self.app
        head = await asyncio.to_thread(app.recorder.max_notification_id) or 0
        self.hub = WatchHub(ApplicationEventFeed(app), self.store.history, after=head)
        await self._stack.enter_async_context(self.hub)
        self.watch("event watch hub", self.hub)
        if s.metrics_port:
            self.metrics = FleetMetrics()
            self.metrics.track_projections(app.recorder.max_notification_id, self.runners)
            self.metrics.track_watchers(self.hub)
            port = self.metrics.start(self.hub, s.metrics_host, s.metrics_port)
            self._stack.push_async_callback(self.metrics.close)
            self.endpoints.metrics = f"http://{s.metrics_host}:{port}/metrics"

    async def _open_api(self, *, hand_over: bool = False) -> GrpcServer:
        """Listen on the API port at once, health NOT_SERVING and every RPC UNAVAILABLE.

        A probe (Kubernetes, a load balancer, ``grpc_health_probe``) then tells a node that is
        starting from one that is down, and a port already taken fails ``fleet up`` before
        anything else starts. ``_start_api`` serves the RPCs once their parts exist.

        ``hand_over``: this node's API child will serve the port; this server holds it until
        then (``fleet.api_process``), and the child binds it beside this one.
        """
        server = self._api_server(shared=hand_over, check_free=True)
        await server.open()
        self._stack.push_async_callback(server.close)  # when start-up fails part way
        self.servers["grpc"] = self._grpc = server
        self.endpoints.grpc = f"{self.settings.grpc_host}:{server.port}"
        return server

    def _api_server(self, *, shared: bool, check_free: bool) -> GrpcServer:
        """The API's server with this node's TLS and token, not yet listening."""
        s = self.settings
        if s.node_endpoints is not None and s.node_endpoints.grpc:
            shared, check_free = True, False  # the API child of a node that holds the port
        credentials = None
        if s.tls_cert_file is not None and s.tls_key_file is not None:
            credentials = server_credentials(s.tls_cert_file, s.tls_key_file, s.tls_client_ca_file)
        elif s.api_token and s.grpc_host not in ("127.0.0.1", "localhost", "::1"):
            log.warning("FLEET_API_TOKEN without TLS: the token crosses the network in clear")
        interceptors = [BearerTokenInterceptor(s.api_token)] if s.api_token else []
        return GrpcServer(
            OrchestratorServicer(),
            host=s.grpc_host,
            port=s.grpc_port,
            credentials=credentials,
            interceptors=interceptors,
            shared=shared,
            check_free=check_free,
        )

    async def _stats(self) -> StatsFollower:
        """GetStatus's and GetMetrics' fold of the event stream: one per node, however many of
        the API and the web console read it."""
        if self._stats_follower is None:
            assert self.app is not None
            stats = StatsFollower(ApplicationEventFeed(self.app))
            await self._stack.enter_async_context(stats)
            self.watch("deliberation stats", stats)
            self._stats_follower = stats
        return self._stats_follower

    async def _api_services(self, graph: GraphReader | None) -> ApiServices:
        """What the RPCs (and the web console, which runs them in process) work with."""
        s = self.settings
        stats = await self._stats()
        assert self.queries is not None and self.hub is not None
        endpoints, sandbox = self.endpoints, self.sandbox
        turns = await self._turns()
        if s.node_endpoints is not None:
            # The API child of a node: GetNodeStatus describes that node (where its parts
            # listen, its process, where its checks run), which is what its operator asks.
            endpoints = replace(s.node_endpoints, grpc=self.endpoints.grpc)
            if self._remote_turns is not None:
                sandbox = await self._remote_turns.sandbox()
        return ApiServices(
            self._observed_store(),
            self.queries,
            default_timeout_s=s.deliberation_timeout,
            watch=self.hub,
            listing=DeliberationListing(graph),
            projections=self.control,
            endpoints=endpoints,
            plan_options=plan_options(s),
            startup_councils=tuple(startup_councils(s.councils, model=self.endpoints.model or "")),
            stats=stats,
            started_at=self.started_at,
            records=self._observed_store(),
            runtime=turns,
            derivation=DerivationOptions(
                Sampling(self.endpoints.model, 0.2, None, "", s.llm_max_tokens),
                s.agent_call_timeout,
            ),
            councils=self.councils,
            council_admin=self.councils,
            health=self._health(),
            sandbox=sandbox,
            in_flight=InFlightBound(s.max_in_flight, stats) if s.max_in_flight else None,
        )

    def _health(self) -> NodeHealth:
        """GetStatus's probes: the event store (the stream's head through the recorder), the
        model endpoints (the node's and every council member's own) and the sandbox where the
        checks run: in this node, or in the process that serves its agent turns."""
        app, councils, endpoints = self.app, self.councils, self.endpoints
        assert app is not None
        node = self

        async def store() -> list[Problem]:
            await asyncio.to_thread(app.recorder.max_notification_id)
            return []

        async def model_urls() -> list[str]:
            urls = [endpoints.llm_url]
            if councils is not None:
                views = await councils.list_councils()
                urls += [v.endpoint for v in views] + [a.endpoint for v in views for a in v.agents]
            return urls

        async def sandbox() -> list[Problem]:
            """A sandbox that was asked for and cannot start: DEV checks say "not run". Where
            they run: here, or in the process serving this node's agent turns."""
            state = node.sandbox
            if state is None and node._remote_turns is not None:
                state = await node._remote_turns.sandbox()
            if state is None or state.available or state.mode == "off":
                return []
            return [Problem(f"sandbox ({state.mode}) cannot start: {state.reason}; DEV code is "
                            "not run, so its checks say 'not run'")]  # fmt: skip

        probes: dict[str, Probe] = {"event store": store, "sandbox": sandbox}
        if endpoints.llm_url or self.runtime is not None:  # its agents call them
            probes["model endpoints"] = model_endpoints_probe(model_urls)
        return NodeHealth(probes)

    async def _start_api(self, graph: GraphReader | None) -> None:
        """Bind the RPCs to the node's parts and say SERVING."""
        assert self._grpc is not None and self.hub is not None
        server = self._grpc
        server.servicer.bind(await self._api_services(graph))
        # Stopping runs newest first: the API stops before the parts it reads (a graceful stop,
        # health NOT_SERVING first), and open streams end before that (UNAVAILABLE, "resume on
        # another node") instead of holding the grace period.
        self._stack.push_async_callback(server.close)
        self._stack.callback(self.hub.release_watchers)
        await server.ready()

    async def _launch_api_process(self) -> None:
        """The API's process, launched first: it imports Fleet while this node starts its
        servers, and waits for them (``_start_api_process``)."""
        from fleet.api_process import api_process_for

        held, self._grpc = self._grpc, None  # this node's hold on the port, if it took one

        async def hold() -> _PortHold:
            server = self._api_server(shared=True, check_free=True)
            await server.open()
            return _PortHold(server)

        child = api_process_for(
            self.settings,
            held=_PortHold(held) if held is not None else None,
            hold=hold if held is not None else None,
        )
        self._stack.push_async_callback(child.close)  # also when the start fails
        await child.launch()
        self._api_child = child

    async def _start_api_process(self) -> None:
        """The API as ``fleet up --components api`` beside this node, on its servers; started
        again when it exits, and watched: one that keeps exiting fails this node."""
        from fleet.api_process import child_environment

        child = self._api_child
        assert child is not None
        # Stopped first (newest first), before the servers it uses: pushed at its launch too,
        # for a start that fails before this, and closing twice is a no-op.
        self._stack.push_async_callback(child.close)
        info = await child.start(child_environment(self.settings, self.endpoints, os.environ))
        if self.metrics is not None:  # the child's store writes and watchers, read per scrape
            self.metrics.include(lambda: str(child.run_info.get("metrics") or ""), "api")
        self.servers.pop("grpc", None)  # the child's now
        self.servers["api process"] = child
        self.endpoints.grpc = str(info.get("grpc", ""))
        self.watch("gRPC API process", child)

    async def _start_web(self, graph: GraphReader | None) -> None:
        """The web console, behind the API's token and TLS settings.

        A taken port is a warning, not a failed node: the console is a window on the system, and
        the parts that do the work should not stop for want of it.
        """
        from fleet.web import WebConsole
        from fleet.web.tls import server_context

        s = self.settings
        if s.api_token == "" and s.web_host not in ("127.0.0.1", "localhost", "::1"):
            log.warning("web console on %s without FLEET_API_TOKEN: anyone who reaches it can "
                        "act on deliberations", s.web_host)  # fmt: skip
        console = WebConsole(
            await self._api_services(graph), token=s.api_token, councils=self.councils
        )
        context = None
        if s.tls_cert_file is not None and s.tls_key_file is not None:
            context = server_context(s.tls_cert_file, s.tls_key_file, s.tls_client_ca_file)
        try:
            url = await console.start(s.web_host, s.web_port, ssl_context=context)
        except OSError as e:
            log.warning("web console not started: cannot listen on %s:%s (%s)",
                        s.web_host, s.web_port, e.strerror or e)  # fmt: skip
            await console.close()
            return
        self._stack.push_async_callback(console.close)
        assert self.hub is not None
        self._stack.callback(self.hub.release_watchers)  # live pages end first, then the server
        self.servers["web"] = console
        self.endpoints.web = url

    def _write_run_file(self) -> None:
        path = self.settings.data_dir / RUN_FILE
        path.write_text(json.dumps(vars(self.endpoints), indent=2))
        self._stack.callback(lambda: path.unlink(missing_ok=True))

    async def close(self) -> None:
        """Stop everything started so far, newest first. Idempotent."""
        await self._stack.aclose()

    def watch(self, name: str, part: BackgroundPart) -> None:
        """Count ``part`` (anything with ``background_tasks()``) among those ``failure`` checks."""
        self._watched[name] = part

    def failure(self) -> str | None:
        """Why the node no longer works, if a part that should run as long as it does stopped
        on its own (the dispatcher's feed failed for good, say); None while all is well.

        A part that died quietly would leave a process that looks up and does nothing: better
        to exit and be restarted (the next start resumes from the events). Projections are not
        watched here: one stopped by an error shows it in ``fleet projections status`` and can
        be rebuilt while the API keeps serving.
        """
        for name, part in self._watched.items():
            for task in part.background_tasks():
                if task.done() and not task.cancelled():
                    error = task.exception()
                    return f"{name} stopped: {error!r}" if error else f"{name} stopped"
        return None

    async def wait_failed(self, poll_s: float = 1.0) -> str:
        """Return ``failure()`` once there is one (polled: parts come and go as they start)."""
        while True:  # polled, not an Event: the parts are tasks of their own, not ours to wrap
            reason = self.failure()
            if reason is not None:
                return reason
            await asyncio.sleep(poll_s)

    async def wait_projected(self, timeout: float = 30.0) -> None:
        """Block until every projection has applied the stream's current head."""
        assert self.app is not None
        head = await asyncio.to_thread(self.app.recorder.max_notification_id) or 0
        for r in self.runners:
            await asyncio.to_thread(r.wait, head, timeout)

    async def __aenter__(self) -> FleetNode:
        await self.start()
        return self


class _PortHold:
    """A node's NOT_SERVING server on its API port, closed as its API child serves: it stops
    listening at once; a probe's open call gets a moment to end."""

    GRACE_S = 0.5

    def __init__(self, server: GrpcServer) -> None:
        self._server = server

    async def close(self) -> None:
        await self._server.close(self.GRACE_S)


def _graph_down() -> tuple[type[BaseException], ...]:
    """Errors that mean the graph server is unreachable or busy for now (Neo4j; the embedded one
    cannot be): the driver retries them for a few seconds only (``RETRY_S``), then the runner
    does, with its own back-off, for as long as it takes."""
    from neo4j.exceptions import ServiceUnavailable, SessionExpired, TransientError

    return (ServiceUnavailable, SessionExpired, TransientError)
