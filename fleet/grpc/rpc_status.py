"""RPCs about the node itself: status and projection lag, projection rebuild and verification.

Parts read from ``ApiServices``: ``projections`` (this node's projections, or those of the node
that runs them; without it the projection RPCs answer UNAVAILABLE and GetNodeStatus lists none),
``endpoints`` and ``sandbox`` (shown by GetNodeStatus) and ``listing`` (GetNodeStatus counts the
open deliberations with it).

Rebuild and verify run in the node that runs the projectors, because it is the one writer of its
stores: the embedded graph is a directory only one process may open, and the runner's fence is
the node's. An API replica asks that node (``fleet.projection_service``); verify, asked anywhere,
compares the stores the system has or fails, never reports a clean comparison of nothing.
"""

from __future__ import annotations

from application.errors import ServiceUnavailableError
from fleet import __version__
from fleet.grpc._errors import Ctx, translated
from fleet.grpc._services import ApiServices
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from fleet.projection_service import ProjectionControl


class StatusRpcs:
    services: ApiServices

    def _projections(self) -> ProjectionControl | None:
        return self.services.projections

    def _required(self) -> ProjectionControl:
        control = self._projections()
        if control is None:
            raise ServiceUnavailableError("this node reaches no projections")
        return control

    @translated
    async def GetNodeStatus(
        self, request: pb.GetNodeStatusRequest, context: Ctx
    ) -> pb.GetNodeStatusResponse:
        resp = pb.GetNodeStatusResponse(version=__version__)
        projections = self._projections()
        if projections is not None:
            head, rows = await projections.status()
            resp.stream_head = head
            for r in rows:
                resp.projections.add(
                    name=r.name,
                    position=r.position,
                    lag_events=r.lag_events,
                    lag_seconds=r.lag_seconds,
                )
        endpoints = self.services.endpoints
        if endpoints is not None:
            resp.endpoints.update({k: str(v) for k, v in vars(endpoints).items() if v})
        listing = self.services.listing
        if listing is not None:
            resp.deliberations_in_flight = await listing.count_open()
        box = self.services.sandbox
        if box is not None:
            resp.sandbox.mode, resp.sandbox.available = box.mode, box.available
            resp.sandbox.reason = box.reason
        return resp

    @translated
    async def RebuildProjection(
        self, request: pb.RebuildProjectionRequest, context: Ctx
    ) -> pb.RebuildProjectionResponse:
        target = await self._required().rebuild(request.name)
        return pb.RebuildProjectionResponse(name=request.name, target=target)

    @translated
    async def VerifyProjections(
        self, request: pb.VerifyProjectionsRequest, context: Ctx
    ) -> pb.VerifyProjectionsResponse:
        report = await self._required().verify(context.time_remaining())
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
