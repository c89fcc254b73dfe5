"""GetStatus in the seed's message, and GetMetrics: both from the events (``application.stats``)
and the councils (``ApiServices.councils``, or the start-up configuration without it).

GetStatus's status word, from what the node can reach (``fleet.health``, probes cached a few
seconds): ``unhealthy`` when it cannot do its work (the event store or every model endpoint
unreachable); ``degraded`` when it serves with a part missing (a model endpoint down, the
statistics fold stopped on an error, or no statistics on this node); ``starting`` while the
statistics fold is still reading the history; ``healthy`` otherwise. ``problems`` (Fleet's
field) says what is wrong. Fleet's own status (stream head, projections, endpoints) is
GetNodeStatus.
"""

from __future__ import annotations

from aggregates import InvalidDeliberationError
from application.councils import CouncilView
from application.errors import ServiceUnavailableError
from application.stats import (
    StatsFollower,
    agent_metrics,
    council_health,
    performance,
    since,
)
from fleet.grpc._errors import Ctx, translated
from fleet.grpc._services import ApiServices
from fleet.health import DEGRADED, HEALTHY, UNHEALTHY, Health
from fleet.orchestrator.v1 import orchestrator_pb2 as pb

METRIC_TYPES = ("performance", "agents", "councils", "all")


class SeedStatusRpcs:
    services: ApiServices

    async def _councils(self) -> list[CouncilView]:
        directory = self.services.councils
        if directory is not None:
            return await directory.list_councils()
        return list(self.services.startup_councils)

    def _stats(self) -> StatsFollower:
        follower = self.services.stats
        if follower is None:
            raise ServiceUnavailableError("this node keeps no deliberation statistics")
        return follower

    @translated
    async def GetStatus(self, request: pb.GetStatusRequest, context: Ctx) -> pb.GetStatusResponse:
        s = self.services
        follower = s.stats
        health = await s.health.check() if s.health is not None else Health(HEALTHY, ())
        problems = list(health.problems)
        if follower is None:
            problems.append("statistics: this node keeps none")
        elif follower.failed:
            problems.append("statistics: the fold of the stream stopped on an error")
        if health.status == UNHEALTHY:
            word = UNHEALTHY
        elif problems:
            word = DEGRADED
        else:
            word = HEALTHY if follower is not None and follower.caught_up else "starting"
        uptime = int((s.clock() - s.started_at).total_seconds())
        resp = pb.GetStatusResponse(status=word, uptime_seconds=max(uptime, 0), problems=problems)
        if request.include_stats and follower is not None:
            st = follower.stats
            councils = await self._councils()
            resp.stats.CopyFrom(
                pb.OrchestratorStats(
                    total_deliberations=st.total,
                    total_orchestrations=st.orchestrations,
                    avg_deliberation_time_ms=st.avg_ms,
                    active_councils=sum(1 for c in councils if c.agents),
                    role_counts=dict(st.role_counts),
                )
            )
        return resp

    @translated
    async def GetMetrics(
        self, request: pb.GetMetricsRequest, context: Ctx
    ) -> pb.GetMetricsResponse:
        """``metric_type`` one of performance, agents, councils, all ("" = all): else
        INVALID_ARGUMENT naming it. ``time_range_ms`` 0 = all time."""
        kind = request.metric_type.strip().lower() or "all"
        if kind not in METRIC_TYPES:
            raise InvalidDeliberationError("metric_type", f"{kind!r} not one of {METRIC_TYPES}")
        st = self._stats().stats
        window = since(self.services.clock(), request.time_range_ms)
        councils = await self._councils()
        resp = pb.GetMetricsResponse()
        if kind in ("performance", "all"):
            p = performance(st, window)
            resp.performance.CopyFrom(
                pb.PerformanceMetrics(
                    avg_deliberation_ms=p.avg_deliberation_ms,
                    avg_orchestration_ms=p.avg_orchestration_ms,
                    p50_latency_ms=p.p50_ms,
                    p95_latency_ms=p.p95_ms,
                    p99_latency_ms=p.p99_ms,
                )
            )
        if kind in ("agents", "all"):
            a = agent_metrics(st, councils, window)
            resp.agents.CopyFrom(
                pb.AgentMetrics(
                    total_agents=a.total,
                    active_agents=a.active,
                    agents_per_role=a.per_role,
                    avg_agent_response_time_ms=a.avg_response_ms,
                )
            )
        if kind in ("councils", "all"):
            health = council_health(st, councils, window)
            resp.councils.total_councils = len(councils)
            resp.councils.active_councils = sum(1 for c in councils if c.agents)
            for council_id, h in health.items():
                resp.councils.health_per_council[council_id].CopyFrom(
                    pb.CouncilHealth(
                        status=h.status,
                        available_agents=h.available,
                        busy_agents=h.busy,
                        success_rate=h.success_rate,
                    )
                )
        return resp
