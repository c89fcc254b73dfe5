"""RPCs about the node itself: status and projection lag, projection rebuild and verification.

Extras read from ``ApiServices.extras``: ``"projections"`` (a ``projectors.control.Projections``;
without it the projection RPCs answer UNAVAILABLE and GetStatus lists none), ``"endpoints"``
(``fleet.bootstrap.Endpoints``, shown by GetStatus) and, optionally, ``"in_flight"`` (an async
callable returning how many deliberations are open: ``DeliberationListing.count_open``).

Rebuild and verify run in the node because the node is the one writer of its stores: the
embedded graph is a directory only one process may open, and the runner's fence is the node's.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeAlias

import grpc

from fleet import __version__
from fleet.grpc._errors import translated
from fleet.grpc._services import ApiServices
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet.queries import ServiceUnavailableError
from projectors.control import Projections

Ctx: TypeAlias = grpc.aio.ServicerContext[Any, Any]


class StatusRpcs:
    services: ApiServices

    def _projections(self) -> Projections:
        projections = self.services.extras.get("projections")
        if not isinstance(projections, Projections):
            raise ServiceUnavailableError("this node runs no projections")
        return projections

    @translated
    async def GetStatus(self, request: pb.GetStatusRequest, context: Ctx) -> pb.GetStatusResponse:
        resp = pb.GetStatusResponse(version=__version__)
        projections = self.services.extras.get("projections")
        if isinstance(projections, Projections):
            head, rows = await asyncio.to_thread(projections.status)
            resp.stream_head = head
            for r in rows:
                resp.projections.add(
                    name=r.name,
                    position=r.position,
                    lag_events=r.lag_events,
                    lag_seconds=r.lag_seconds,
                )
        endpoints = self.services.extras.get("endpoints")
        if endpoints is not None:
            resp.endpoints.update({k: str(v) for k, v in vars(endpoints).items() if v})
        in_flight = self.services.extras.get("in_flight")
        if callable(in_flight):
            resp.deliberations_in_flight = int(await in_flight())
        return resp

    @translated
    async def RebuildProjection(
        self, request: pb.RebuildProjectionRequest, context: Ctx
    ) -> pb.RebuildProjectionResponse:
        projections = self._projections()
        if request.name not in projections.names:
            have = ", ".join(projections.names) or "none"
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"name: no projection {request.name!r} on this node (have: {have})",
            )
        target = await asyncio.to_thread(projections.rebuild, request.name)
        return pb.RebuildProjectionResponse(name=request.name, target=target)

    @translated
    async def VerifyProjections(
        self, request: pb.VerifyProjectionsRequest, context: Ctx
    ) -> pb.VerifyProjectionsResponse:
        report = await asyncio.to_thread(self._projections().verify)
        resp = pb.VerifyProjectionsResponse(
            stream_head=report.head,
            deliberations=report.deliberations,
            cache_misses=report.cache_misses,
        )
        resp.positions.update(report.positions)
        for d in report.differences:
            resp.differences.add(
                projection=d.projection,
                deliberation_id=d.deliberation_id,
                task_id=d.task_id,
                detail=d.detail,
            )
        return resp
