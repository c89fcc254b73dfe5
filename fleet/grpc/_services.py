"""What the servicer's methods work with: one frozen bundle, built by ``fleet/bootstrap.py``.

Each part an RPC needs is a typed field; the optional ones are None on a node (or in a test)
that does not serve them, and the RPCs that need them answer UNAVAILABLE there.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from agent_runtime.api import TurnRunner
from agent_runtime.checks.sandbox import SandboxState
from application.admission import InFlightBound
from application.council_store import CouncilEventStore
from application.councils import CouncilView
from application.deliberations import DeliberationCommands
from application.listing import DeliberationListing
from application.plans import PlanOptions
from application.ports import CouncilDirectory, NodeStore, PlanDeliberationStore
from application.queries import DeliberationQueries
from application.stats import StatsFollower
from application.watch import WatchHub
from dispatchers.derivation import DerivationOptions
from fleet.endpoints import Endpoints
from fleet.health import NodeHealth
from fleet.telemetry import current_traceparent
from projectors.service import ProjectionControl


def _utc_now() -> datetime:
    return datetime.now(tz=UTC)


@dataclass(frozen=True)
class ApiServices:
    store: PlanDeliberationStore
    """Where the API's writes go (``fleet.observed_store.ObservedStore`` in a node)."""
    queries: DeliberationQueries
    default_timeout_s: int
    clock: Callable[[], datetime] = field(default=_utc_now)
    watch: WatchHub | None = None
    """Live events, for StreamDeliberation."""
    listing: DeliberationListing | None = None
    """ListDeliberations, and the count of open deliberations GetNodeStatus shows."""
    projections: ProjectionControl | None = None
    """This node's projections, or those of the node that runs them: their status, rebuild and
    verify (GetNodeStatus lists none without it)."""
    endpoints: Endpoints | None = None
    """Where this node's parts listen, shown by GetNodeStatus."""
    plan_options: PlanOptions = field(default_factory=PlanOptions)
    """How ApprovePlan shapes a plan's deliberations (as the plan dispatcher does)."""
    councils: CouncilDirectory | None = None
    """The councils as they stand now (from the events), for every RPC that reads them; None:
    ``startup_councils`` are read instead."""
    council_admin: CouncilEventStore | None = None
    """Council writes (CreateCouncil, RegisterAgent, ...); the same store as ``councils`` in a
    node."""
    startup_councils: tuple[CouncilView, ...] = ()
    """The councils of the start-up configuration (``dispatchers.councils.startup_councils``)."""
    stats: StatsFollower | None = None
    """Counts and timings folded from the events: GetStatus's stats and GetMetrics."""
    started_at: datetime = field(default_factory=_utc_now)
    """When this node started (GetStatus's uptime)."""
    records: NodeStore | None = None
    """Stories, derivations and plans, as stored (ProcessPlanningEvent's TRANSITION,
    DeriveSubtasks, GetTaskContext)."""
    runtime: TurnRunner | None = None
    """What DeriveSubtasks asks the councils through: this node's agents, or, on a node without
    them, the process that runs them (over NATS: ``agent_runtime.nats_backend.turns``)."""
    derivation: DerivationOptions = field(default_factory=DerivationOptions)
    health: NodeHealth | None = None
    """Probes of the parts this node reaches (GetStatus's status word); None: not probed."""
    sandbox: SandboxState | None = None
    """Where this node's agent checks run, as found at start (GetNodeStatus); None on a node
    that runs no agents, or whose checks run in ``fleet worker`` processes."""
    in_flight: InFlightBound | None = None
    """The bound on open deliberations new submissions meet (``FLEET_MAX_IN_FLIGHT``); None:
    unbounded."""

    @functools.cached_property
    def deliberations(self) -> DeliberationCommands:
        """Submit and cancel (Deliberate, Orchestrate, DeliberateForBacklogReview,
        CancelDeliberation, the web console's actions), built from the fields above."""
        return DeliberationCommands(
            self.store,
            default_timeout_s=self.default_timeout_s,
            clock=self.clock,
            councils=self.councils,
            in_flight=self.in_flight,
            trace_context=current_traceparent,  # the dispatcher's work joins the caller's trace
        )
