"""RPCs about the node itself: status and projection lag, projection rebuild and verification.

Parts read from ``ApiServices``: ``projections`` (this node's projections, or those of the node
that runs them; without it the projection RPCs answer UNAVAILABLE and GetNodeStatus lists none),
``endpoints`` and ``sandbox`` (shown by GetNodeStatus) and ``listing`` (GetNodeStatus counts the
open deliberations with it).

Rebuild and verify run in the node that runs the projectors, because it is the one writer of its
stores: the embedded graph is a directory only one process may open, and the runner's fence is
the node's. An API replica asks that node (``projectors.service``); verify, asked anywhere,
compares the stores the system has or fails, never reports a clean comparison of nothing.
"""

from __future__ import annotations

from application.errors import ServiceUnavailableError
from fleet import __version__
from fleet.grpc._errors import Ctx, translated
from fleet.grpc._services import ApiServices
from fleet.orchestrator.v1 import orchestrator_pb2 as pb
from projectors.service import ProjectionControl


async def node_status(services: ApiServices) -> pb.GetNodeStatusResponse:
    """GetNodeStatus's answer (the RPC's and the web console's): version, stream head,
    projections and their lag, endpoints, open deliberations, the sandbox as found at start."""
    resp = pb.GetNodeStatusResponse(version=__version__)
    projections = services.projections
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
    endpoints = services.endpoints
    if endpoints is not None:
        resp.endpoints.update({k: str(v) for k, v in vars(endpoints).items() if v})
    listing = services.listing
    if listing is not None:
        resp.deliberations_in_flight = await listing.count_open()
    box = services.sandbox
    if box is not None:
        resp.sandbox.mode, resp.sandbox.available = box.mode, box.available
        resp.sandbox.reason = box.reason
        resp.sandbox.slots, resp.sandbox.cpus = box.slots, box.cpus
    return resp


def _required(services: ApiServices) -> ProjectionControl:
    control = services.projections
    if control is None:
        raise ServiceUnavailableError("this node reaches no projections")
    return control


async def verify(services: ApiServices, time_left_s: float | None) -> pb.VerifyProjectionsResponse:
    """VerifyProjections' answer (the RPC's and the web console's), sized to ``time_left_s``.

    Raises:
        ServiceUnavailableError: this node reaches no projections.
    """
    report = await _required(services).verify(time_left_s)
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


class StatusRpcs:
    services: ApiServices

    @translated
    async def GetNodeStatus(
        self, request: pb.GetNodeStatusRequest, context: Ctx
    ) -> pb.GetNodeStatusResponse:
        return await node_status(self.services)

    @translated
    async def RebuildProjection(
        self, request: pb.RebuildProjectionRequest, context: Ctx
    ) -> pb.RebuildProjectionResponse:
        target = await _required(self.services).rebuild(request.name)
        return pb.RebuildProjectionResponse(name=request.name, target=target)

    @translated
    async def VerifyProjections(
        self, request: pb.VerifyProjectionsRequest, context: Ctx
    ) -> pb.VerifyProjectionsResponse:
        return await verify(self.services, context.time_remaining())
