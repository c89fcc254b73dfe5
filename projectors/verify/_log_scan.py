"""The log scan: one pass over the stream, each deliberation's events decoded once, its replays
folded from them, and the values the shared Agent and Plan nodes take over the log."""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, cast
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.utils import get_topic

from aggregates import Council, Deliberation, Plan, Role, council_id
from application.app import fold
from application.events import FleetEvent, fleet_event

_PAGE = 1000
_PLAN_UNSET: Record = {
    "story_id": None, "approved_by": None, "approved_at": None, "roles": None,
    "description": None, "tasks": None, "skipped_roles": None, "nothing_dispatched": None,
}  # fmt: skip
"""A Plan node's values before anything set them (a deliberation's request sets story_id only)."""

Record = dict[str, Any]
_PlanEvent = Plan.Approved | Plan.RoleSkipped | Plan.NothingDispatched


class History:
    """One deliberation's events (decoded, in version order) and their stream positions."""

    def __init__(self) -> None:
        self.positions: list[int] = []
        self.events: list[FleetEvent] = []
        self._replays: dict[int, Deliberation] = {}

    def at(self, position: int) -> int:
        """The version once the log is applied up to ``position`` (0: not yet requested)."""
        return bisect.bisect_right(self.positions, position)

    def replay(self, version: int) -> Deliberation:
        """The aggregate folded from its first ``version`` events (version >= 1)."""
        if version not in self._replays:
            folded = fold(None, self.events[:version])
            self._replays[version] = cast(Deliberation, folded)
        return self._replays[version]


@dataclass
class Log:
    """The log read so far: every deliberation's history, and the shared nodes' values over it."""

    read_to: int = 0
    histories: dict[UUID, History] = field(default_factory=lambda: defaultdict(History))
    shared: dict[str, list[tuple[int, Record, str]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    """``Agent[<id>]``, ``Plan[<id>]``: (position, the node's values from then on, deliberation)."""
    councils: list[tuple[int, FleetEvent]] = field(default_factory=list)
    """Every council event, with its stream position, in stream order."""
    _roles: dict[str, str] = field(default_factory=dict)

    def history(self, d_id: str) -> History:
        return self.histories[UUID(d_id)]

    def task_id(self, d_id: str) -> str:
        """The deliberation's task id ("" for one the log does not hold)."""
        try:
            history = self.histories.get(UUID(d_id))
        except ValueError:
            return ""
        return str(getattr(history.events[0], "task_id", "")) if history else ""

    def extend(self, app: Application[UUID], stop: int) -> None:
        prefix = get_topic(Deliberation) + "."
        council_prefix = get_topic(Council) + "."
        plan_topics = {
            get_topic(t) for t in (Plan.Approved, Plan.RoleSkipped, Plan.NothingDispatched)
        }
        while self.read_to < stop:
            page = app.recorder.select_notifications(self.read_to + 1, _PAGE, stop=stop)
            if not page:
                break
            for n in page:
                if n.topic.startswith(prefix):
                    event = fleet_event(app.mapper.to_domain_event(n))
                    history = self.histories[UUID(str(n.originator_id))]
                    history.positions.append(n.id)
                    history.events.append(event)
                    self._share(event, n.id)
                elif n.topic in plan_topics:
                    # The topic says which: one of ``plan_topics``.
                    plan_event = cast(_PlanEvent, app.mapper.to_domain_event(n))
                    self._share_plan(plan_event, n.id)
                elif n.topic.startswith(council_prefix):
                    council_event = fleet_event(app.mapper.to_domain_event(n))
                    self.councils.append((n.id, council_event))
                    self._share_member(council_event, n.id)
            self.read_to = page[-1].id

    def _share(self, e: FleetEvent, position: int) -> None:
        """Track what the event sets on shared nodes (the statements' MERGEs: last one wins)."""
        d_id = str(e.originator_id)
        if isinstance(e, Deliberation.Requested):
            self._roles[d_id] = e.role
            if e.plan_id:
                values = self.shared[f"Plan[{e.plan_id}]"]
                plan: Record = {**(values[-1][1] if values else _PLAN_UNSET)}
                values.append((position, {**plan, "story_id": e.story_id}, d_id))
            return
        if isinstance(e, Deliberation.ArchitectSelected) and e.architect_id:
            values = self.shared[f"Agent[{e.architect_id}]"]
            was: Record = dict(values[-1][1]) if values else {"role": None, "model": None}
            values.append((position, {**was, "role": "ARCHITECT"}, d_id))
            return
        agents: list[str] = []
        model: str | None = None
        if isinstance(e, Deliberation.Started):
            members = [str(p.get("member") or a) for a, p in sorted(e.seats.items())]
            agents = list(dict.fromkeys([*e.agents, *members]))
        elif isinstance(e, Deliberation.ProposalReceived):  # revisions too
            agents, model = [e.agent_id], e.model
        elif isinstance(e, Deliberation.LateProposalReceived | Deliberation.AgentFailed):
            agents = [e.agent_id]
        for agent in agents:
            values = self.shared[f"Agent[{agent}]"]
            held: Record = dict(values[-1][1]) if values else {"role": None, "model": None}
            held["role"] = self._roles.get(d_id)
            if model is not None:
                held["model"] = model
            values.append((position, held, d_id))

    def _share_plan(self, e: _PlanEvent, position: int) -> None:
        """A plan approval sets its Plan node's approval, a skipped role is appended to its
        ``skipped_roles``, a plan with no deliberation says why (the statements' MERGE and SET)."""
        values = self.shared[f"Plan[{e.plan_id}]"]
        held: Record = {**(values[-1][1] if values else _PLAN_UNSET)}
        if isinstance(e, Plan.RoleSkipped):
            skipped = [*(held["skipped_roles"] or []), f"{e.role}: {e.reason}"]
            values.append((position, {**held, "skipped_roles": skipped}, ""))
            return
        if isinstance(e, Plan.NothingDispatched):
            values.append((position, {**held, "nothing_dispatched": e.reason}, ""))
            return
        approval = {
            "story_id": e.story_id, "approved_by": e.approved_by,
            "approved_at": e.approved_at.isoformat(), "roles": list(e.roles),
            "description": e.description, "tasks": list(e.tasks),
            "skipped_roles": held["skipped_roles"],
            "nothing_dispatched": held["nothing_dispatched"],
        }  # fmt: skip
        values.append((position, approval, ""))

    def _share_member(self, e: FleetEvent, position: int) -> None:
        """A registered agent's Agent node takes its council's role (the statements' MERGE)."""
        if not isinstance(e, Council.AgentRegistered):
            return
        role = next((r.value for r in Role if council_id(r.value) == e.originator_id), None)
        values = self.shared[f"Agent[{e.agent_id}]"]
        held: Record = dict(values[-1][1]) if values else {"role": None, "model": None}
        held["role"] = role
        values.append((position, held, ""))
