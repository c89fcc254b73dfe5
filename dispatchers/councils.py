"""Councils: who sits on each role's council and how each member samples (model, temperature,
seed, persona, tokens), from configuration (``FLEET_COUNCILS``: a JSON or YAML file, or JSON).

Shape (every field optional; agent ``i`` of a deliberation takes entry ``i`` mod the list)::

    {"DEV": {"agents": [{"model": "Qwen/Qwen3-0.6B", "temperature": 0.2, "seed": 1,
                          "persona": "You care most about edge cases."},
                         {"temperature": 0.9}]},
     "QA": [{"temperature": 0.5}]}

A role without an entry (or a field left out) keeps ``sampling.council_sampling``'s spread, so a
council is diverse by default and configured where someone cared to.

Who sits on a deliberation comes from the role's event-sourced council at the moment it starts
(``seat``): its members' ids, models and endpoints are recorded in its Started event.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from agent_runtime.api import Sampling
from aggregates import AgentId, Role
from application.councils import CouncilView
from dispatchers.sampling import council_sampling


class CouncilConfigError(ValueError):
    """The councils configuration is malformed; the message names the role and field."""


@dataclass(frozen=True)
class AgentSpec:
    model: str = ""
    temperature: float | None = None
    seed: int | None = None
    persona: str = ""
    max_tokens: int | None = None


@dataclass(frozen=True)
class Councils:
    by_role: Mapping[str, tuple[AgentSpec, ...]] = field(default_factory=dict)

    def sampling(self, role: str, index: int, model: str, max_tokens: int) -> Sampling:
        """Agent ``index``'s sampling: the configured spec over the default spread."""
        base = replace(council_sampling(role, index, model), max_tokens=max_tokens)
        specs = self.by_role.get(role.upper())
        if not specs:
            return base
        spec = specs[index % len(specs)]
        return replace(
            base,
            model=spec.model or base.model,
            temperature=base.temperature if spec.temperature is None else spec.temperature,
            seed=base.seed if spec.seed is None else spec.seed,
            persona=spec.persona or base.persona,
            max_tokens=spec.max_tokens or base.max_tokens,
        )


def parse_councils(data: Mapping[str, Any]) -> Councils:
    """Councils from parsed JSON/YAML (see the module docstring).

    Raises:
        CouncilConfigError: an unknown role, or a field of the wrong type.
    """
    out: dict[str, tuple[AgentSpec, ...]] = {}
    for raw_role, value in data.items():
        try:
            role = Role.parse(str(raw_role)).value
        except ValueError as e:
            raise CouncilConfigError(f"councils: {e}") from None
        agents = value.get("agents", []) if isinstance(value, Mapping) else value
        if not isinstance(agents, list):
            raise CouncilConfigError(f"councils.{role}: agents must be a list")
        specs = []
        for i, a in enumerate(agents):
            if not isinstance(a, Mapping):
                raise CouncilConfigError(f"councils.{role}.agents[{i}] must be a mapping")
            try:
                specs.append(
                    AgentSpec(
                        model=str(a.get("model", "")),
                        temperature=None
                        if a.get("temperature") is None
                        else float(a["temperature"]),
                        seed=None if a.get("seed") is None else int(a["seed"]),
                        persona=str(a.get("persona", "")),
                        max_tokens=None if a.get("max_tokens") is None else int(a["max_tokens"]),
                    )
                )
            except (TypeError, ValueError) as e:
                raise CouncilConfigError(f"councils.{role}.agents[{i}]: {e}") from None
        out[role] = tuple(specs)
    return Councils(out)


@dataclass(frozen=True)
class Seating:
    """Who sits on a deliberation: its agent ids, and for each the council member there."""

    agents: list[AgentId]
    seats: dict[str, dict[str, str]]
    council_version: int


def seat(council: CouncilView | None, num_agents: int) -> Seating | None:
    """The first ``num_agents`` members of ``council``, as they stand now.

    When the council has fewer members than the deliberation asks for, the members take a
    second (third, …) seat in order, each seat a distinct agent id ``<member>.<n>`` with the
    member's model and endpoint (so a 5-agent deliberation on a 3-member council is members
    1, 2, 3, 1.2, 2.2). None (the node's default agents) when the role has no council or an
    empty one.
    """
    if council is None or not council.agents:
        return None
    members = list(council.agents)
    agents: list[AgentId] = []
    seats: dict[str, dict[str, str]] = {}
    for i in range(num_agents):
        m = members[i % len(members)]
        turn = i // len(members) + 1
        aid = m.agent_id if turn == 1 else f"{m.agent_id}.{turn}"
        agents.append(AgentId(aid))
        seats[aid] = {"member": m.agent_id, "model": m.model, "endpoint": m.endpoint}
    return Seating(agents, seats, council.version)
