"""The council RPCs in the seed's messages: CreateCouncil, ListCouncils, DeleteCouncil,
RegisterAgent, UnregisterAgent.

Each write is one atomic save of the council's events (``CouncilEventStore``): a request refused
part-way records nothing. Bad input is INVALID_ARGUMENT naming the field (unknown role,
num_agents outside 1..16, a malformed or duplicate agent id); a state that refuses the change is
FAILED_PRECONDITION naming it (no council for the role, a council that exists, the last agent of
a council whose deliberations are waiting).
"""

from __future__ import annotations

from aggregates import CouncilSettings, DeliberationStatus, Role
from application.council_store import CouncilEventStore
from application.councils import CouncilView
from application.errors import ServiceUnavailableError
from application.listing import ListFilter
from application.stats import DeliberationStats
from fleet.grpc._errors import Ctx, translated
from fleet.grpc._services import ApiServices
from fleet.orchestrator.v1 import orchestrator_pb2 as pb

WAITING = (DeliberationStatus.PENDING, DeliberationStatus.IN_PROGRESS)


async def list_councils(
    services: ApiServices, role_filter: str, include_agents: bool
) -> pb.ListCouncilsResponse:
    """ListCouncils' answer (the RPC's and the web console's): every council, or the one of
    ``role_filter``, each with its members and what they are doing when ``include_agents``.

    Raises:
        ServiceUnavailableError: this node reads no councils.
        InvalidDeliberationError: an unknown role in ``role_filter``.
    """
    directory = services.councils
    if directory is None:
        raise ServiceUnavailableError("this node does not read councils")
    if role_filter.strip():
        one = await directory.council(Role.parse(role_filter).value)
        views = [one] if one is not None else []
    else:
        views = await directory.list_councils()
    # A council with no model of its own uses the node's (when this node knows it).
    node_model = services.endpoints.model if services.endpoints else ""
    follower = services.stats
    stats = follower.stats if follower is not None and follower.caught_up else None
    return pb.ListCouncilsResponse(
        councils=[council_info(v, include_agents, node_model, stats) for v in views]
    )


class CouncilRpcs:
    services: ApiServices

    def _council_admin(self) -> CouncilEventStore:
        admin = self.services.council_admin
        if admin is None:
            raise ServiceUnavailableError("this node does not manage councils")
        return admin

    async def _waiting(self, role: str) -> int:
        """The role's deliberations that are PENDING or IN_PROGRESS (1 is enough to refuse)."""
        listing = self.services.listing
        if listing is None:
            raise ServiceUnavailableError("no deliberation listing: cannot check waiting work")
        n = 0
        for status in WAITING:
            page = await listing.list(ListFilter(status=status.value, role=role), page_size=1)
            n += len(page.items)
        return n

    @translated
    async def CreateCouncil(
        self, request: pb.CreateCouncilRequest, context: Ctx
    ) -> pb.CreateCouncilResponse:
        cfg = request.config
        settings = CouncilSettings(
            model=cfg.model_profile,  # the model its members' endpoints are asked for
            deliberation_rounds=cfg.deliberation_rounds,
            enable_peer_review=cfg.enable_peer_review if request.HasField("config") else True,
            agent_type=cfg.agent_type,
            custom_params=dict(cfg.custom_params),
        )
        view = await self._council_admin().create(
            request.role, request.num_agents, settings, model_profile=cfg.model_profile
        )
        ids = [a.agent_id for a in view.agents]
        return pb.CreateCouncilResponse(
            council_id=view.council_id, agents_created=len(ids), agent_ids=ids
        )

    @translated
    async def ListCouncils(
        self, request: pb.ListCouncilsRequest, context: Ctx
    ) -> pb.ListCouncilsResponse:
        return await list_councils(self.services, request.role_filter, request.include_agents)

    @translated
    async def DeleteCouncil(
        self, request: pb.DeleteCouncilRequest, context: Ctx
    ) -> pb.DeleteCouncilResponse:
        role = Role.parse(request.role).value
        removed = await self._council_admin().delete(role)
        return pb.DeleteCouncilResponse(
            success=True,
            message=f"{role} council deleted ({len(removed)} agents removed)",
            agents_removed=len(removed),
        )

    @translated
    async def RegisterAgent(
        self, request: pb.RegisterAgentRequest, context: Ctx
    ) -> pb.RegisterAgentResponse:
        """Only agent_id and role: the agent takes the council's model and endpoint;
        ``endpoint``, ``capabilities.model_profile`` (the model its endpoint is asked for) and
        ``metadata`` override."""
        role = Role.parse(request.role).value
        profile = request.capabilities.model_profile
        view = await self._council_admin().register(
            role,
            request.agent_id,
            model=profile,
            endpoint=request.endpoint,
            model_profile=profile,
            metadata=dict(request.metadata),
        )
        return pb.RegisterAgentResponse(
            success=True,
            message=f"{request.agent_id.strip()} joined the {role} council",
            council_id=view.council_id,
        )

    @translated
    async def UnregisterAgent(
        self, request: pb.UnregisterAgentRequest, context: Ctx
    ) -> pb.UnregisterAgentResponse:
        role = Role.parse(request.role).value
        await self._council_admin().unregister(role, request.agent_id, waiting=self._waiting)
        return pb.UnregisterAgentResponse(
            success=True, message=f"{request.agent_id.strip()} left the {role} council"
        )


def council_info(
    v: CouncilView,
    include_agents: bool,
    node_model: str = "",
    stats: DeliberationStats | None = None,
) -> pb.CouncilInfo:
    """A council in the seed's shape: status "active" with members, "idle" with none.

    Each agent's ``status`` says what it is doing as the events tell this node
    (``DeliberationStats.agent_status``: ``idle``, ``busy (on N open deliberations)``,
    ``failing (N calls failed in a row: <error>)``), or ``unknown`` where the node keeps no
    statistics or has not read the history yet. Never the seed's constant "ready".
    """
    agents = [
        pb.AgentInfo(
            agent_id=a.agent_id,
            role=a.role,
            status=stats.agent_status(a.role, a.agent_id) if stats is not None else "unknown",
            capabilities=pb.AgentCapabilities(model_profile=a.model_profile),
        )
        for a in v.agents
    ]
    return pb.CouncilInfo(
        council_id=v.council_id,
        role=v.role,
        num_agents=len(v.agents),
        agents=agents if include_agents else [],
        status="active" if v.agents else "idle",
        model=v.model or node_model,
    )
