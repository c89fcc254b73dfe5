"""RPCs that start, watch, list and cancel deliberations, and read their outcome.

StreamDeliberation needs ``ApiServices.watch`` and ListDeliberations ``ApiServices.listing``;
without them those RPCs answer UNAVAILABLE.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import TypeVar

from aggregates import Deliberation, deliberation_id
from application.errors import DeliberationNotFoundError, ServiceUnavailableError
from application.watch import ProgressTracker
from fleet.grpc import _mapping
from fleet.grpc._errors import Ctx, translated, translated_stream
from fleet.grpc._services import ApiServices
from fleet.orchestrator.v1 import orchestrator_pb2 as pb

P = TypeVar("P")


def _served(part: P | None, name: str) -> P:
    """``part``, or UNAVAILABLE on a node that does not serve it."""
    if part is None:
        raise ServiceUnavailableError(f"this node does not serve {name!r}")
    return part


class DeliberationRpcs:
    services: ApiServices

    async def _create(self, request: pb.DeliberateRequest) -> Deliberation:
        stored, _ = await self.services.deliberations.submit(_mapping.new_deliberation(request))
        return stored

    @translated
    async def Deliberate(
        self, request: pb.DeliberateRequest, context: Ctx
    ) -> pb.DeliberateResponse:
        return _mapping.deliberate_response(await self._create(request))

    @translated
    async def GetDeliberationResult(
        self, request: pb.GetDeliberationResultRequest, context: Ctx
    ) -> pb.GetDeliberationResultResponse:
        view = await self.services.queries.result(_mapping.task_id(request.task_id))
        return _mapping.result_response(view)

    @translated_stream
    async def StreamDeliberation(
        self, request: pb.DeliberateRequest, context: Ctx
    ) -> AsyncIterator[pb.DeliberationUpdate]:
        """Resume the deliberation ``task_id`` names, or start it; then stream to its end.

        A resumed stream replays the progress so far, then continues live. A task id that names
        nothing, with no task description to start it from, is NOT_FOUND.
        """
        hub = _served(self.services.watch, "watch")
        d_id = await self._stream_target(request)
        tracker = ProgressTracker()
        role = request.role
        async for event in hub.watch(d_id):
            if isinstance(event, Deliberation.Requested):
                role = event.role
            for p in tracker.apply(event):
                yield _mapping.update(p, role)

    async def _stream_target(self, request: pb.DeliberateRequest) -> uuid.UUID:
        if request.task_id:
            d_id = deliberation_id(_mapping.task_id(request.task_id))
            try:
                await self.services.store.get(d_id)
                return d_id
            except DeliberationNotFoundError:
                if not request.task_description:
                    raise  # watching something never requested
        return (await self._create(request)).id

    @translated
    async def ListDeliberations(
        self, request: pb.ListDeliberationsRequest, context: Ctx
    ) -> pb.ListDeliberationsResponse:
        listing = _served(self.services.listing, "listing")
        page = await listing.list(
            _mapping.list_filter(request),
            page_size=request.page_size,
            page_token=request.page_token,
        )
        return _mapping.list_response(page)

    @translated
    async def CancelDeliberation(
        self, request: pb.CancelDeliberationRequest, context: Ctx
    ) -> pb.CancelDeliberationResponse:
        """CANCELLED now; FAILED_PRECONDITION when it already ended, NOT_FOUND when unknown."""
        d = await self.services.deliberations.cancel(request.task_id, request.reason)
        return _mapping.cancel_response(d)
