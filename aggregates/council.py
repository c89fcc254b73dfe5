"""The Council aggregate: one role's council, its settings and its members, over time.

A council is a fact of history, not start-up configuration: who sat on it when a deliberation
started must stay readable after it changes. So every change is an event, and a deleted council
is not gone: ``Deleted`` closes it and ``Recreated`` opens it again on the same aggregate (its id
derives from the role, so two nodes creating DEV's council write to one aggregate and the
store's expected versions let only one of them win).

Members keep their registration order: a deliberation of N agents takes the first N.

Over 400 lines on purpose: it is one aggregate, seven events, each command's guard beside the
mutator it records, and the rules of what a council and a member may hold (ids, settings, custom
parameters) that those guards apply; read apart, a guard and its rule would no longer be seen
together.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from eventsourcing.domain import Aggregate, event

from aggregates.errors import CouncilStateError, InvalidDeliberationError
from aggregates.ids import council_id
from aggregates.values import MAX_AGENTS, MAX_ROUNDS, Role

AGENT_ID = re.compile(r"[A-Za-z0-9._:@/-]{1,128}")
"""What an agent id may hold: it is written into deliberations' events and read back by name."""

AGENT_TYPES = ("", "MOCK", "VLLM", "RAY_VLLM")
"""The seed's ``CouncilConfig.agent_type`` values (empty: the node's own runtime)."""

CUSTOM_PARAMS = ("temperature", "max_tokens")
"""The ``CouncilConfig.custom_params`` Fleet applies: each maps to the model request of every
member's calls. Any other key is refused (naming it), never kept and ignored."""

MAX_METADATA = 32
"""Most metadata entries an agent carries (they travel in every council read)."""


def default_agent_ids(role: str, count: int, start: int = 1) -> list[str]:
    """The seed's member ids: ``agent-<role lower>-001`` onwards."""
    low = Role.parse(role).value.lower()
    return [f"agent-{low}-{i:03d}" for i in range(start, start + count)]


def check_agent_id(agent_id: str) -> str:
    """The agent id stripped, or InvalidDeliberationError naming ``agent_id``."""
    aid = agent_id.strip()
    if not aid:
        raise InvalidDeliberationError("agent_id", "must not be empty")
    if not AGENT_ID.fullmatch(aid):
        raise InvalidDeliberationError(
            "agent_id", f"{aid[:40]!r} is not an agent id (1-128 of letters, digits, . _ : @ / -)"
        )
    return aid


def check_num_agents(num_agents: int) -> int:
    if not 1 <= num_agents <= MAX_AGENTS:
        raise InvalidDeliberationError("num_agents", f"{num_agents} not in 1..{MAX_AGENTS}")
    return num_agents


@dataclass(frozen=True)
class CouncilSettings:
    """How a council's deliberations run and what its members default to."""

    model: str = ""
    endpoint: str = ""
    deliberation_rounds: int = 1
    enable_peer_review: bool = True
    agent_type: str = ""
    custom_params: Mapping[str, str] = field(default_factory=dict)

    def checked(self) -> CouncilSettings:
        """These settings normalised, or InvalidDeliberationError naming the bad field."""
        rounds = self.deliberation_rounds or 1
        if not 1 <= rounds <= MAX_ROUNDS:
            raise InvalidDeliberationError(
                "config.deliberation_rounds", f"{rounds} not in 1..{MAX_ROUNDS}"
            )
        kind = self.agent_type.strip().upper()
        if kind not in AGENT_TYPES:
            raise InvalidDeliberationError(
                "config.agent_type", f"{self.agent_type!r} is not one of MOCK, VLLM, RAY_VLLM"
            )
        return CouncilSettings(
            model=self.model.strip(),
            endpoint=self.endpoint.strip(),
            deliberation_rounds=rounds,
            enable_peer_review=self.enable_peer_review,
            agent_type=kind,
            custom_params=check_custom_params(self.custom_params),
        )


def check_custom_params(params: Mapping[str, str]) -> dict[str, str]:
    """``custom_params`` normalised (keys lower case, values stripped), or
    InvalidDeliberationError naming ``config.custom_params.<key>``: an unknown key, a
    ``temperature`` outside 0..2, a ``max_tokens`` outside 1..32768."""
    out: dict[str, str] = {}
    for raw_key, raw in params.items():
        key, value = str(raw_key).strip().lower(), str(raw).strip()
        where = f"config.custom_params.{raw_key}"
        if key not in CUSTOM_PARAMS:
            known = ", ".join(CUSTOM_PARAMS)
            raise InvalidDeliberationError(where, f"unknown parameter (Fleet applies {known})")
        try:
            number = float(value) if key == "temperature" else int(value)
        except ValueError:
            kind = "a number" if key == "temperature" else "a whole number"
            raise InvalidDeliberationError(where, f"{value[:20]!r} is not {kind}") from None
        low, high = (0.0, 2.0) if key == "temperature" else (1, 32768)
        if not low <= number <= high:
            raise InvalidDeliberationError(where, f"{value} not in {low}..{high}")
        out[key] = value
    return out


@dataclass(frozen=True)
class Member:
    """One agent on the council: what it overrides of the council's defaults, and since when."""

    agent_id: str
    model: str = ""
    endpoint: str = ""
    model_profile: str = ""
    metadata: Mapping[str, str] = field(default_factory=dict)
    registered_at: datetime | None = None


def _metadata(metadata: Mapping[str, str] | None) -> dict[str, str]:
    out = {str(k): str(v) for k, v in (metadata or {}).items()}
    if len(out) > MAX_METADATA:
        raise InvalidDeliberationError("metadata", f"{len(out)} entries; at most {MAX_METADATA}")
    return out


class Council(Aggregate):
    """A role's council. Guards in the commands; mutators only change state."""

    class Event(Aggregate.Event):
        """Base of the council's events: mutators can read the time of the event applied (the
        library sets ``modified_on`` only after a mutator has run)."""

        # Typed loosely: eventsourcing's own mutate (generic over the aggregate) would not let an
        # override name this aggregate's class.
        def mutate(self, aggregate: Any) -> Any:
            if aggregate is not None:
                aggregate.event_time = self.timestamp
            return super().mutate(aggregate)

    class Created(Aggregate.Created):
        role: str
        model: str
        endpoint: str
        deliberation_rounds: int
        enable_peer_review: bool
        agent_type: str
        custom_params: dict[str, str]

    class Recreated(Event):
        """A deleted council opened again, with these settings (and no members yet)."""

        model: str
        endpoint: str
        deliberation_rounds: int
        enable_peer_review: bool
        agent_type: str
        custom_params: dict[str, str]

    class AgentRegistered(Event):
        agent_id: str
        model: str
        endpoint: str
        model_profile: str
        metadata: dict[str, str]

    class AgentReconfigured(Event):
        """A member's overrides changed (its place on the council did not)."""

        agent_id: str
        model: str
        endpoint: str
        model_profile: str
        metadata: dict[str, str]

    class AgentUnregistered(Event):
        agent_id: str

    class Configured(Event):
        """The node's start-up configuration (``digest`` of it) was applied; these members are
        the ones it named, so a later configuration removes only those, never an agent someone
        registered through the API."""

        digest: str
        agent_ids: list[str]

    class Deleted(Event):
        """The council closed; these members left with it."""

        agents_removed: list[str]

    # ------------------------------------------------------------------ creation

    @classmethod
    def create(cls, role: str, settings: CouncilSettings | None = None) -> Council:
        """A new council for ``role`` (no members yet: ``register`` them in the same save).

        Raises:
            InvalidDeliberationError: an unknown role, or a setting out of range.
        """
        r = Role.parse(role).value
        s = (settings or CouncilSettings()).checked()
        return cls._create(
            cls.Created,
            id=council_id(r),
            role=r,
            model=s.model,
            endpoint=s.endpoint,
            deliberation_rounds=s.deliberation_rounds,
            enable_peer_review=s.enable_peer_review,
            agent_type=s.agent_type,
            custom_params=dict(s.custom_params),
        )

    @event(Created)
    def __init__(
        self,
        *,
        role: str,
        model: str,
        endpoint: str,
        deliberation_rounds: int,
        enable_peer_review: bool,
        agent_type: str,
        custom_params: dict[str, str],
    ) -> None:
        self.role = Role(role)
        self.members: dict[str, Member] = {}
        self.deleted = False
        self.event_time: datetime | None = None
        self.config_digest = ""
        self.config_members: list[str] = []
        self._apply_settings(
            model, endpoint, deliberation_rounds, enable_peer_review, agent_type, custom_params
        )

    def _apply_settings(
        self,
        model: str,
        endpoint: str,
        deliberation_rounds: int,
        enable_peer_review: bool,
        agent_type: str,
        custom_params: dict[str, str],
    ) -> None:
        self.settings = CouncilSettings(
            model=model,
            endpoint=endpoint,
            deliberation_rounds=deliberation_rounds,
            enable_peer_review=enable_peer_review,
            agent_type=agent_type,
            custom_params=dict(custom_params),
        )

    # ------------------------------------------------------------------ queries

    @property
    def agent_ids(self) -> list[str]:
        """Members' ids in registration order."""
        return list(self.members)

    def _require_open(self) -> None:
        if self.deleted:
            raise CouncilStateError("role", f"the {self.role.value} council was deleted")

    # ------------------------------------------------------------------ commands

    def recreate(self, settings: CouncilSettings | None = None) -> None:
        """Open a deleted council again, with ``settings`` and no members.

        Raises:
            CouncilStateError: the council exists (is not deleted).
        """
        if not self.deleted:
            raise CouncilStateError("role", f"the {self.role.value} council exists already")
        s = (settings or CouncilSettings()).checked()
        self._recreated(
            model=s.model,
            endpoint=s.endpoint,
            deliberation_rounds=s.deliberation_rounds,
            enable_peer_review=s.enable_peer_review,
            agent_type=s.agent_type,
            custom_params=dict(s.custom_params),
        )

    @event(Recreated)
    def _recreated(
        self,
        model: str,
        endpoint: str,
        deliberation_rounds: int,
        enable_peer_review: bool,
        agent_type: str,
        custom_params: dict[str, str],
    ) -> None:
        self.deleted = False
        self.members = {}
        self._apply_settings(
            model, endpoint, deliberation_rounds, enable_peer_review, agent_type, custom_params
        )

    def register(
        self,
        agent_id: str,
        *,
        model: str = "",
        endpoint: str = "",
        model_profile: str = "",
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        """Add a member; it overrides the council's defaults where a value is given.

        Raises:
            InvalidDeliberationError: a malformed agent id, too many metadata entries, or an id
                already on this council (``agent_id``).
            CouncilStateError: the council was deleted.
        """
        self._require_open()
        aid = check_agent_id(agent_id)
        if aid in self.members:
            raise InvalidDeliberationError(
                "agent_id", f"{aid} is already on the {self.role.value} council"
            )
        if len(self.members) >= MAX_AGENTS:
            raise CouncilStateError(
                "role", f"the {self.role.value} council has {MAX_AGENTS} agents, the most it may"
            )
        self._agent_registered(
            agent_id=aid,
            model=model.strip(),
            endpoint=endpoint.strip(),
            model_profile=model_profile.strip(),
            metadata=_metadata(metadata),
        )

    @event(AgentRegistered)
    def _agent_registered(
        self, agent_id: str, model: str, endpoint: str, model_profile: str, metadata: dict[str, str]
    ) -> None:
        self.members[agent_id] = Member(
            agent_id, model, endpoint, model_profile, dict(metadata), self.event_time
        )

    def reconfigure(
        self,
        agent_id: str,
        *,
        model: str = "",
        endpoint: str = "",
        model_profile: str = "",
        metadata: Mapping[str, str] | None = None,
    ) -> bool:
        """Change a member's overrides. Returns False (records nothing) when nothing changes.

        Raises:
            InvalidDeliberationError: ``agent_id`` is not on this council.
            CouncilStateError: the council was deleted.
        """
        self._require_open()
        current = self._member(agent_id)
        meta = _metadata(metadata)
        wanted = (model.strip(), endpoint.strip(), model_profile.strip(), meta)
        if wanted == (current.model, current.endpoint, current.model_profile, current.metadata):
            return False
        self._agent_reconfigured(
            agent_id=current.agent_id,
            model=wanted[0],
            endpoint=wanted[1],
            model_profile=wanted[2],
            metadata=meta,
        )
        return True

    @event(AgentReconfigured)
    def _agent_reconfigured(
        self, agent_id: str, model: str, endpoint: str, model_profile: str, metadata: dict[str, str]
    ) -> None:
        was = self.members[agent_id]
        self.members[agent_id] = Member(
            agent_id, model, endpoint, model_profile, dict(metadata), was.registered_at
        )

    def unregister(self, agent_id: str) -> None:
        """Remove a member (it takes no new work; deliberations it sat in keep it).

        Raises:
            InvalidDeliberationError: ``agent_id`` is not on this council.
            CouncilStateError: the council was deleted.
        """
        self._require_open()
        self._agent_unregistered(agent_id=self._member(agent_id).agent_id)

    @event(AgentUnregistered)
    def _agent_unregistered(self, agent_id: str) -> None:
        del self.members[agent_id]

    def delete(self) -> list[str]:
        """Close the council; returns the members that left with it.

        Raises:
            CouncilStateError: deleted already.
        """
        self._require_open()
        removed = self.agent_ids
        self._deleted(agents_removed=removed)
        return removed

    @event(Deleted)
    def _deleted(self, agents_removed: list[str]) -> None:
        self.deleted = True
        self.members = {}

    def configure(
        self, digest: str, settings: CouncilSettings, agents: list[tuple[str, str]]
    ) -> bool:
        """Apply start-up configuration ``digest``: members ``agents`` as (agent id, model).

        Returns False (records nothing) when this digest is the last one applied, so a restart
        changes nothing. Otherwise it re-opens a deleted council, unregisters the members the
        previous configuration named and this one does not, registers the new ones and changes
        the model of those whose model changed; members registered through the API stay.
        """
        if digest == self.config_digest:
            return False
        if self.deleted:
            self.recreate(settings)
        wanted = [check_agent_id(a) for a, _ in agents]
        for aid in self.config_members:
            if aid in self.members and aid not in wanted:
                self.unregister(aid)
        for aid, model in agents:
            have = self.members.get(aid)
            if have is None:
                self.register(aid, model=model)
            elif have.model != model.strip():
                self.reconfigure(
                    aid,
                    model=model,
                    endpoint=have.endpoint,
                    model_profile=have.model_profile,
                    metadata=have.metadata,
                )
        self._configured(digest=digest, agent_ids=wanted)
        return True

    @event(Configured)
    def _configured(self, digest: str, agent_ids: list[str]) -> None:
        self.config_digest = digest
        self.config_members = list(agent_ids)

    def _member(self, agent_id: str) -> Member:
        aid = agent_id.strip()
        member = self.members.get(aid)
        if member is None:
            raise InvalidDeliberationError(
                "agent_id", f"{aid!r} is not on the {self.role.value} council"
            )
        return member
