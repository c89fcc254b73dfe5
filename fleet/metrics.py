"""Prometheus metrics on an HTTP port (``FLEET_METRICS_PORT``; off when unset or 0).

Most numbers are derived from the event stream (the node's ``WatchHub`` feeds every event to
``FleetMetrics.observe``), not from instrumenting other packages, so they mean what the events
mean. Counters count events this process saw since it started (Prometheus' usual reset-on-restart
semantics); with several API replicas each exports the same counts, so aggregate with ``max``.

Metric names:

* ``fleet_deliberations_total{status}``: deliberations entering a status (PENDING on request,
  IN_PROGRESS on start, then COMPLETED / FAILED / TIMEOUT / CANCELLED).
* ``fleet_agent_call_seconds{model}``: agent call latency (histogram, from ProposalReceived).
* ``fleet_agent_tokens_total{model,kind}``: tokens, kind = completion | prompt.
* ``fleet_agent_failures_total``: AgentFailed events.
* ``fleet_store_write_seconds{op}``: event-store write latency, op = create | update |
  update_in_order | create_plan | update_plan
  (``fleet.observed_store.ObservedStore``, wrapped around the store the API and dispatcher use).
* ``fleet_projection_lag_events{projection}`` and ``fleet_stream_head``: read at scrape time.
* ``fleet_dispatcher_active_deliberations``: deliberations this dispatcher is driving.
* ``fleet_dispatcher_pending_notices{state}``: work waiting for the dispatchers, read from the
  work queue's shared consumer: ``waiting`` (no dispatcher has it yet), ``claimed`` (one drives
  it, or one died with it and the lease has not lapsed). The same for every process that reports
  it: aggregate with ``max``.
* ``fleet_agent_pending_calls{role,state}``: the NATS agent backend's calls per role, from the
  role's worker consumer: ``waiting`` (for a worker: the autoscaling signal), ``running`` (taken,
  not answered yet). Both families are read every few seconds (``track_queues``), not at scrape
  time: a scrape runs on another thread than NATS. While NATS cannot be read they are absent
  rather than stale.
* ``fleet_watch_streams``: open StreamDeliberation watchers.
"""

from __future__ import annotations

import asyncio
import logging
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import nats
from nats.aio.client import Client as NATS
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample

from agent_runtime.nats_backend.runtime import QueueNames
from aggregates import Deliberation
from application.watch import WatchHub, _Closed
from natsio import close_connection, servers

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

log = logging.getLogger(__name__)

_STATUS_OF: dict[type[object], str] = {
    Deliberation.Requested: "PENDING",
    Deliberation.Started: "IN_PROGRESS",
    Deliberation.Completed: "COMPLETED",
    Deliberation.Failed: "FAILED",
    Deliberation.TimedOut: "TIMEOUT",
    Deliberation.Cancelled: "CANCELLED",
}
_LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 60, 120, 300)


class PositionedProjection(Protocol):
    """A projection's runner as the lag gauge reads it (``projectors.runner.ProjectorRunner``)."""

    @property
    def name(self) -> str: ...

    def position(self) -> int: ...


class ActiveCount(Protocol):
    """Something driving deliberations (``dispatchers.deliberations.DeliberationDispatcher``)."""

    @property
    def active(self) -> int: ...


class _Lag(Collector):
    def __init__(
        self, head: Callable[[], int | None], runners: Sequence[PositionedProjection]
    ) -> None:
        self._head = head
        self._runners = runners

    def collect(self) -> Iterable[GaugeMetricFamily]:
        try:
            head = int(self._head() or 0)
        except Exception as e:  # a scrape must not fail because the store blinked
            log.warning("metrics: cannot read the stream head (%s)", e)
            return
        yield GaugeMetricFamily("fleet_stream_head", "Last stream sequence", value=head)
        lag = GaugeMetricFamily(
            "fleet_projection_lag_events", "Events behind the head", labels=["projection"]
        )
        for r in self._runners:
            lag.add_metric([str(r.name)], max(0, head - int(r.position())))
        yield lag


@dataclass(frozen=True)
class QueueProbe:
    """One JetStream work queue whose backlog is exported, and under which labels."""

    stream: str
    durable: str
    """The consumer its processes share; until one made it, the stream's messages are counted."""
    subjects: str | None = None
    """The consumer's filter (one role's subjects), for counting the stream before it exists."""
    role: str = ""
    """Empty for the dispatchers' notices; the role of an agent call queue."""


def dispatcher_queue(stream: str, durable: str = "fleet-dispatchers") -> QueueProbe:
    """The dispatchers' work queue (``dispatchers.jetstream.work_queue``: ``<stream>_WORK``, one
    consumer)."""
    return QueueProbe(stream, durable)


def agent_queues(names: QueueNames, roles: Iterable[str]) -> list[QueueProbe]:
    """The NATS agent backend's call queue of each role (``agents-<ROLE>`` consumers)."""
    return [
        QueueProbe(names.work_stream, names.worker_durable(r), names.role_filter(r), r.upper())
        for r in roles
    ]


async def queue_depth(js: JetStreamContext, probe: QueueProbe) -> tuple[int, int]:
    """(waiting, taken) on the probe's queue: the consumer's pending and ack-pending counts."""
    try:
        info = await js.consumer_info(probe.stream, probe.durable)
        return int(info.num_pending or 0), int(info.num_ack_pending or 0)
    except NotFoundError:  # no dispatcher or worker of the role started yet: all is waiting
        pass
    try:
        stream = await js.stream_info(probe.stream, subjects_filter=probe.subjects)
    except NotFoundError:  # nothing was ever queued
        return 0, 0
    if probe.subjects is None:
        return int(stream.state.messages or 0), 0
    return sum((stream.state.subjects or {}).values()), 0


class _QueueDepths(Collector):
    """The last depths read; ``collect`` (the scrape thread) reads a dict the loop replaces."""

    def __init__(self) -> None:
        self.values: dict[QueueProbe, tuple[int, int]] = {}

    def collect(self) -> Iterable[GaugeMetricFamily]:
        notices = GaugeMetricFamily(
            "fleet_dispatcher_pending_notices",
            "Deliberations on the dispatchers' work queue: waiting, or claimed by a dispatcher",
            labels=["state"],
        )
        calls = GaugeMetricFamily(
            "fleet_agent_pending_calls",
            "Agent calls on the NATS backend's queue per role: waiting, or running on a worker",
            labels=["role", "state"],
        )
        for probe, (waiting, taken) in self.values.items():
            if probe.role:
                calls.add_metric([probe.role, "waiting"], waiting)
                calls.add_metric([probe.role, "running"], taken)
            else:
                notices.add_metric(["waiting"], waiting)
                notices.add_metric(["claimed"], taken)
        yield notices
        yield calls

    async def refresh(self, js: JetStreamContext, probes: Sequence[QueueProbe]) -> None:
        values: dict[QueueProbe, tuple[int, int]] = {}
        for probe in probes:
            try:
                values[probe] = await queue_depth(js, probe)
            except (NatsError, TimeoutError) as e:  # absent, not stale, until NATS answers
                log.debug("metrics: queue %s/%s unreadable: %r", probe.stream, probe.durable, e)
        self.values = values


PER_PROCESS = ("fleet_store_write_seconds", "fleet_watch_streams")
"""The families a node's API child measures itself (its store writes, its watchers), which the
node's ``/metrics`` carries beside its own (``FleetMetrics.include``). The others derive from the
event stream, which both processes see alike."""


class _Registry(CollectorRegistry):
    """A node's registry, with the ``PER_PROCESS`` samples of the processes it ``include``s
    merged into its own families (one family per name, as the exposition format requires)."""

    def __init__(self) -> None:
        super().__init__()
        self.included: list[tuple[Callable[[], str], str]] = []

    def collect(self) -> Iterator[Metric]:
        extra: dict[str, list[Sample]] = {}
        for url, process in list(self.included):
            for family in _scrape(url()):
                if family.name in PER_PROCESS:
                    extra.setdefault(family.name, []).extend(
                        s._replace(labels={**s.labels, "process": process}) for s in family.samples
                    )
        for family in super().collect():
            family.samples.extend(extra.get(family.name, ()))  # a new Metric per collect
            yield family


def _scrape(url: str) -> list[Metric]:
    """The families served at ``url`` (none when unset or it does not answer in a second: a
    child restarting leaves a gap in its series, not a failed scrape of the node)."""
    if not url:
        return []
    try:
        with urllib.request.urlopen(url, timeout=1.0) as r:
            text = r.read().decode()
    except (OSError, ValueError) as e:
        log.debug("metrics of %s not read: %s", url, e)
        return []
    return list(text_string_to_metric_families(text))


class FleetMetrics:
    """One registry per node (not the global one: tests run several nodes in one process)."""

    def __init__(self) -> None:
        self.registry = _Registry()
        r = self.registry
        self.deliberations = Counter(
            "fleet_deliberations", "Deliberations entering a status", ["status"], registry=r
        )
        self.agent_seconds = Histogram(
            "fleet_agent_call_seconds", "Agent call latency", ["model"],
            buckets=_LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        self.tokens = Counter(
            "fleet_agent_tokens", "Tokens used by agents", ["model", "kind"], registry=r
        )
        self.agent_failures = Counter("fleet_agent_failures", "AgentFailed events", registry=r)
        self.store_seconds = Histogram(
            "fleet_store_write_seconds", "Event-store write latency", ["op"], registry=r
        )
        self.dispatcher_active = Gauge(
            "fleet_dispatcher_active_deliberations", "Deliberations being driven", registry=r
        )
        self.watch_streams = Gauge(
            "fleet_watch_streams", "Open StreamDeliberation watchers", registry=r
        )
        self._server: WSGIServer | None = None
        self._task: asyncio.Task[None] | None = None
        self._queues = _QueueDepths()
        self._queues_task: asyncio.Task[None] | None = None
        self._queues_nc: NATS | None = None

    def observe(self, e: object) -> None:
        """Count one domain event."""
        status = _STATUS_OF.get(type(e))
        if status is not None:
            self.deliberations.labels(status).inc()
        if isinstance(e, Deliberation.ProposalReceived):
            model = e.model or "unknown"
            self.agent_seconds.labels(model).observe(e.latency_ms / 1000)
            self.tokens.labels(model, "completion").inc(max(0, e.tokens))
            self.tokens.labels(model, "prompt").inc(max(0, e.prompt_tokens or 0))
        elif isinstance(e, Deliberation.AgentFailed):
            self.agent_failures.inc()

    def track_projections(
        self, head: Callable[[], int | None], runners: Sequence[PositionedProjection]
    ) -> None:
        self.registry.register(_Lag(head, runners))

    def include(self, url: Callable[[], str], process: str) -> None:
        """Serve the ``PER_PROCESS`` samples of the process whose metrics are at ``url()``
        (read at each scrape) beside this one's, labelled ``process``."""
        self.registry.included.append((url, process))

    def track_dispatcher(self, dispatcher: ActiveCount) -> None:
        self.dispatcher_active.set_function(lambda: float(dispatcher.active))

    def track_watchers(self, hub: WatchHub) -> None:
        self.watch_streams.set_function(lambda: float(hub.watchers))

    async def track_queues(
        self, nats_url: str, probes: Sequence[QueueProbe], *, interval_s: float = 5.0
    ) -> None:
        """Export the backlog of ``probes`` (``dispatcher_queue``, ``agent_queues``), read every
        ``interval_s`` on a NATS connection of the metrics' own (closed by ``close``)."""
        if self._queues_task is not None:
            raise RuntimeError("track_queues: already tracking queues")
        nc = await nats.connect(servers(nats_url), name="fleet-metrics", max_reconnect_attempts=-1)
        self._queues_nc = nc
        js = nc.jetstream()
        await self._queues.refresh(js, probes)  # the first scrape already has them
        self.registry.register(self._queues)

        async def poll() -> None:
            while True:
                await asyncio.sleep(interval_s)
                await self._queues.refresh(js, probes)

        self._queues_task = asyncio.create_task(poll(), name="metrics-queues")

    async def follow(self, hub: WatchHub) -> None:
        """Observe every event the hub routes, until cancelled or the hub stops."""
        async with hub.subscribe(None) as q:
            while True:
                e = await q.get()
                if isinstance(e, _Closed):
                    return
                self.observe(e)

    def start(self, hub: WatchHub, host: str, port: int) -> int:
        """Serve /metrics on (host, port) and follow ``hub``; returns the bound port."""
        bound = self.serve(host, port)
        self._task = asyncio.create_task(self.follow(hub), name="metrics")
        return bound

    def serve(self, host: str, port: int) -> int:
        """Serve /metrics on (host, port) with no event feed (``fleet worker``); the bound port."""
        from prometheus_client import start_http_server

        server, _ = start_http_server(port, addr=host, registry=self.registry)
        self._server = server
        return int(server.server_address[1])

    async def close(self) -> None:
        for task in (self._task, self._queues_task):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        self._task = self._queues_task = None
        if self._queues_nc is not None:
            await close_connection(self._queues_nc)
            self._queues_nc = None
        server, self._server = self._server, None
        if server is not None:
            await asyncio.to_thread(server.shutdown)
            server.server_close()
