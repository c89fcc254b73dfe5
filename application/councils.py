"""What the API, the dispatcher and the status RPCs read about councils: their current members.

Councils are event-sourced (``aggregates.council``): this module holds only the read model that
every reader shares, so a status RPC or the web console never depends on how a council is stored.
``application.council_store`` implements ``application.ports.CouncilDirectory`` on the event store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["CouncilAgentView", "CouncilChange", "CouncilView"]


@dataclass(frozen=True)
class CouncilAgentView:
    """One member of a council as it stands now."""

    agent_id: str
    role: str
    model: str = ""
    """The model it samples; empty means the council's (or the node's) default."""
    endpoint: str = ""
    """The OpenAI-compatible URL it calls; empty means the node's default."""
    model_profile: str = ""
    metadata: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CouncilView:
    """A role's council as it stands now (a deleted one is not listed)."""

    council_id: str
    role: str
    agents: Sequence[CouncilAgentView] = ()
    model: str = ""
    """The council's default model for agents registered without one."""
    endpoint: str = ""
    deliberation_rounds: int = 1
    enable_peer_review: bool = True
    custom_params: Mapping[str, str] = field(default_factory=dict)
    """What every member's model request takes (``temperature``, ``max_tokens``)."""
    version: int = 0
    """The council aggregate's version: a deliberation records the version it started with."""


@dataclass(frozen=True)
class CouncilChange:
    """One event of a council's history, as a reader shows it (oldest first)."""

    version: int
    kind: str
    """The event's name: Created, AgentRegistered, AgentUnregistered, Deleted, ..."""
    at: str
    """When it was recorded (ISO 8601)."""
    agent_id: str = ""
