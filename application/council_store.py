"""Councils on the event store: ``CouncilDirectory`` (the read side) and the writes to them.

Reads are served from a view per role kept in memory: loaded from the events at ``start``, then
refreshed from the node's event feed whenever a council event lands (another node's write), and
replaced at once after this node's own write, so a read that follows a write here never sees the
council as it was before it. Without a feed (a one-shot CLI) every read replays the aggregate.

Every write loads the council, applies the commands to it and saves all their events as one unit:
a request that fails half-way records nothing. A concurrent writer (another node) makes the save
fail its expected version; the write is then replayed on the new state, so two nodes that
bootstrap at once apply the same configuration once.

Over 400 lines on purpose: the read view and the writes share one consistency rule (a read
after this node's write sees it; another node's write arrives through the feed), which is only
checkable with both in view.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import IntegrityError

from aggregates import (
    Council,
    CouncilSettings,
    CouncilStateError,
    InvalidDeliberationError,
    Role,
    council_id,
)
from aggregates.council import check_agent_id, check_num_agents, default_agent_ids
from application.app import FleetApplication
from application.councils import CouncilAgentView, CouncilChange, CouncilView
from application.ports import EventFeed, FleetEvent

__all__ = [
    "CouncilEventStore",
    "DesiredCouncil",
    "seed_councils",
]

log = logging.getLogger(__name__)
T = TypeVar("T")

COUNCIL_EVENTS: tuple[type, ...] = (
    Council.Created,
    Council.Recreated,
    Council.AgentRegistered,
    Council.AgentReconfigured,
    Council.AgentUnregistered,
    Council.Configured,
    Council.Deleted,
)
"""The events that change what a council read returns (the feed is narrowed to them)."""

SEED_AGENTS = 3
"""The seed's ``AUTO_INIT_COUNCILS``: three agents on each role's council."""


@dataclass(frozen=True)
class DesiredCouncil:
    """What the node's configuration says a role's council should be."""

    settings: CouncilSettings = field(default_factory=CouncilSettings)
    agents: tuple[tuple[str, str], ...] = ()
    """Members as (agent id, model; empty: the council's default)."""

    def digest(self) -> str:
        """Stable across processes: equal configurations are one digest, so a restart with the
        same configuration is recognised and records nothing."""
        s = self.settings
        raw = json.dumps(
            [
                s.model,
                s.endpoint,
                s.deliberation_rounds,
                s.enable_peer_review,
                s.agent_type,
                sorted(s.custom_params.items()),
                [list(a) for a in self.agents],
            ]
        ).encode()
        return hashlib.sha256(raw).hexdigest()[:16]


def seed_councils(
    models: Mapping[str, Sequence[str]] | None = None, *, default_model: str = ""
) -> dict[str, DesiredCouncil]:
    """The seed's default councils: every role with ``agent-<role>-001..003``.

    ``models`` (role → one model per agent, empty for the default) replaces a role's members
    with as many agents as it lists (``FLEET_COUNCILS``); a role it leaves out keeps three.
    """
    out: dict[str, DesiredCouncil] = {}
    for role in Role:
        listed = list((models or {}).get(role.value, ()))
        count = len(listed) or SEED_AGENTS
        ids = default_agent_ids(role.value, count)
        agents = tuple((aid, listed[i] if listed else "") for i, aid in enumerate(ids))
        out[role.value] = DesiredCouncil(CouncilSettings(model=default_model), agents)
    return out


def view_of(c: Council) -> CouncilView:
    """The read model of a council aggregate (agents inherit the council's model and endpoint)."""
    s = c.settings
    return CouncilView(
        council_id=str(c.id),
        role=c.role.value,
        agents=tuple(
            CouncilAgentView(
                agent_id=m.agent_id,
                role=c.role.value,
                model=m.model or s.model,
                endpoint=m.endpoint or s.endpoint,
                model_profile=m.model_profile,
                metadata=dict(m.metadata),
            )
            for m in c.members.values()
        ),
        model=s.model,
        endpoint=s.endpoint,
        deliberation_rounds=s.deliberation_rounds,
        enable_peer_review=s.enable_peer_review,
        custom_params=dict(s.custom_params),
        version=c.version,
    )


class CouncilEventStore:
    """``CouncilDirectory`` and the council writes, on ``app``'s event store.

    Args:
        app: the application whose recorder holds the stream.
        feed: the node's event feed; with it reads are served from memory (see the module).
    """

    def __init__(self, app: FleetApplication, feed: EventFeed | None = None) -> None:
        self._app = app
        self._feed = feed
        self._views: dict[str, CouncilView | None] = {}
        self._versions: dict[str, int] = {}
        """The aggregate version each view was made from (a deleted council has no view)."""
        self._follow: asyncio.Task[None] | None = None
        self._write = asyncio.Lock()

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Load every role's council and follow the feed for changes made elsewhere."""
        if self._feed is None or self._follow is not None:
            return
        head = await asyncio.to_thread(self._app.recorder.max_notification_id) or 0
        for role in Role:
            await self._refresh(role.value)
        self._follow = asyncio.create_task(self._follow_feed(head), name="council-feed")

    async def close(self) -> None:
        if self._follow is not None:
            self._follow.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._follow
            self._follow = None

    async def __aenter__(self) -> CouncilEventStore:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def _follow_feed(self, after: int) -> None:
        assert self._feed is not None
        while True:
            try:
                async for item in self._feed.follow(after, COUNCIL_EVENTS):
                    after = item.position
                    role = await self._role_of(item.event)
                    if role:
                        await self._refresh(role)
            except asyncio.CancelledError:
                raise
            except Exception:  # the view must not stop following: re-read, then go on
                log.exception("council feed failed; reloading councils")
                await asyncio.sleep(1.0)
                for r in Role:
                    await self._refresh(r.value)

    async def _role_of(self, event: FleetEvent) -> str:
        role = getattr(event, "role", "")
        if role:
            return str(role)
        for r in Role:
            if council_id(r.value) == event.originator_id:
                return r.value
        return ""

    # ------------------------------------------------------------------ reads

    async def list_councils(self) -> list[CouncilView]:
        views = [await self.council(r.value) for r in sorted(Role, key=lambda r: r.value)]
        return [v for v in views if v is not None]

    async def council(self, role: str) -> CouncilView | None:
        r = Role.parse(role).value
        if self._follow is not None and r in self._views:
            return self._views[r]
        return await self._load_view(r)

    async def _refresh(self, role: str) -> None:
        """Reload ``role``'s view from the events, unless this node's own write has already put
        a newer one in place while the load ran (a view never goes back)."""
        c = await asyncio.to_thread(self._load, role)
        self._keep(role, c)

    def _keep(self, role: str, c: Council | None) -> None:
        version = 0 if c is None else c.version
        if version < self._versions.get(role, 0):
            return
        self._versions[role] = version
        self._views[role] = None if c is None or c.deleted else view_of(c)

    async def history(self, role: str) -> list[CouncilChange]:
        """The council's events, oldest first, read from the store (never from the view)."""
        r = Role.parse(role).value

        def read() -> list[CouncilChange]:
            out = []
            for e in self._app.events.get(council_id(r)):
                when = getattr(e, "timestamp", None)  # every Council event has one
                out.append(
                    CouncilChange(
                        version=e.originator_version,
                        kind=type(e).__name__,
                        at=when.isoformat() if isinstance(when, datetime) else "",
                        agent_id=str(getattr(e, "agent_id", "")),
                    )
                )
            return out

        return await asyncio.to_thread(read)

    async def _load_view(self, role: str) -> CouncilView | None:
        c = await asyncio.to_thread(self._load, role)
        return None if c is None or c.deleted else view_of(c)

    def _load(self, role: str) -> Council | None:
        try:
            c: object = self._app.repository.get(council_id(role))
        except AggregateNotFoundError:
            return None
        return c if isinstance(c, Council) else None

    # ------------------------------------------------------------------ writes

    async def _change(
        self, role: str, change: Callable[[Council | None], Council | None]
    ) -> Council:
        """Load ``role``'s council, apply ``change`` (it returns the council to save, a new one
        when there was none), save every event it made as one unit; retried on a concurrent
        writer. The view is replaced before this returns."""
        r = Role.parse(role).value

        def attempt() -> Council:
            for _ in range(8):
                c = change(self._load(r))
                if c is None:
                    raise CouncilStateError("role", f"there is no {r} council")
                try:
                    self._app.save(c)
                except IntegrityError:
                    continue  # another node wrote first: apply to what it left
                return c
            raise CouncilStateError("role", f"the {r} council kept changing; try again")

        async with self._write:
            c = await asyncio.to_thread(attempt)
            self._keep(r, c)
            return c

    async def _other_councils_holding(self, role: str, agent_ids: Sequence[str]) -> None:
        """Raise InvalidDeliberationError naming agent_id if another council has one of them."""
        for r in Role:
            if r.value == role:
                continue
            v = await self._load_view(r.value)
            taken = {a.agent_id for a in v.agents} if v else set()
            clash = [a for a in agent_ids if a in taken]
            if clash:
                raise InvalidDeliberationError(
                    "agent_id", f"{clash[0]} is already on the {r.value} council"
                )

    async def create(
        self,
        role: str,
        num_agents: int,
        settings: CouncilSettings | None = None,
        *,
        model_profile: str = "",
    ) -> CouncilView:
        """Create (or re-create, if deleted) ``role``'s council with ``num_agents`` agents
        ``agent-<role>-001..``.

        Raises:
            InvalidDeliberationError: unknown role, num_agents outside 1..16, bad settings.
            CouncilStateError: the council exists.
        """
        r = Role.parse(role).value
        check_num_agents(num_agents)
        s = (settings or CouncilSettings()).checked()
        ids = default_agent_ids(r, num_agents)
        await self._other_councils_holding(r, ids)

        def change(c: Council | None) -> Council:
            if c is None:
                c = Council.create(r, s)
            else:
                c.recreate(s)
            for aid in ids:
                c.register(aid, model_profile=model_profile)
            return c

        return view_of(await self._change(r, change))

    async def delete(self, role: str) -> list[str]:
        """Delete ``role``'s council; returns the agents removed with it.

        Raises:
            CouncilStateError: there is no such council (or it was deleted).
        """
        removed: list[str] = []

        def change(c: Council | None) -> Council | None:
            if c is None:
                return None
            removed[:] = c.delete()
            return c

        await self._change(role, change)
        return removed

    async def register(
        self,
        role: str,
        agent_id: str,
        *,
        model: str = "",
        endpoint: str = "",
        model_profile: str = "",
        metadata: Mapping[str, str] | None = None,
    ) -> CouncilView:
        """Add ``agent_id`` to ``role``'s council (the council's model and endpoint unless
        given).

        Raises:
            InvalidDeliberationError: a malformed or duplicate agent id (on any council).
            CouncilStateError: the role has no council.
        """
        r = Role.parse(role).value
        aid = check_agent_id(agent_id)
        await self._other_councils_holding(r, [aid])

        def change(c: Council | None) -> Council | None:
            if c is not None:
                c.register(
                    aid,
                    model=model,
                    endpoint=endpoint,
                    model_profile=model_profile,
                    metadata=metadata,
                )
            return c

        return view_of(await self._change(r, change))

    async def reconfigure(
        self,
        role: str,
        agent_id: str,
        *,
        model: str = "",
        endpoint: str = "",
        model_profile: str = "",
        metadata: Mapping[str, str] | None = None,
    ) -> CouncilView:
        """Replace a member's overrides (the same errors as ``register`` for an unknown id)."""

        def change(c: Council | None) -> Council | None:
            if c is not None:
                c.reconfigure(
                    agent_id,
                    model=model,
                    endpoint=endpoint,
                    model_profile=model_profile,
                    metadata=metadata,
                )
            return c

        return view_of(await self._change(role, change))

    async def unregister(
        self,
        role: str,
        agent_id: str,
        *,
        waiting: Callable[[str], Awaitable[int]] | None = None,
    ) -> CouncilView:
        """Remove ``agent_id`` from ``role``'s council.

        ``waiting(role)`` counts the role's deliberations that are PENDING or IN_PROGRESS: the
        last agent may not leave while there are any (they would have no council to start with).

        Raises:
            InvalidDeliberationError: ``agent_id`` is not on the council.
            CouncilStateError: no council, or the last agent with deliberations waiting.
        """
        r = Role.parse(role).value
        aid = check_agent_id(agent_id)
        current = await self._load_view(r)
        if current is not None and [a.agent_id for a in current.agents] == [aid] and waiting:
            pending = await waiting(r)
            if pending:
                raise CouncilStateError(
                    "agent_id",
                    f"{aid} is the last agent of the {r} council and {pending} {r} "
                    "deliberation(s) are waiting for it",
                )

        def change(c: Council | None) -> Council | None:
            if c is not None:
                c.unregister(aid)
            return c

        return view_of(await self._change(r, change))

    async def apply_configuration(self, desired: Mapping[str, DesiredCouncil]) -> list[str]:
        """Make the councils what the node's configuration says, as events; returns the roles
        changed. A configuration already applied (its digest recorded) changes nothing: a
        restart records nothing, and two nodes starting together apply it once."""
        changed = []
        for role, want in sorted(desired.items()):
            if await self._configure(Role.parse(role).value, want):
                changed.append(Role.parse(role).value)
        return changed

    async def _configure(self, role: str, want: DesiredCouncil) -> bool:
        digest = want.digest()
        current = await asyncio.to_thread(self._load, role)
        if current is not None and current.config_digest == digest:
            return False
        applied = False

        def change(c: Council | None) -> Council:
            nonlocal applied
            if c is None:
                c = Council.create(role, want.settings)
            applied = c.configure(digest, want.settings, list(want.agents))
            return c

        await self._change(role, change)
        return applied
