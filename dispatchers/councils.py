"""Councils: who sits on each role's council and how each member samples (model, temperature,
seed, persona, tokens), from configuration (``FLEET_COUNCILS``: a JSON or YAML file, or JSON).

Shape (every field optional; agent ``i`` of a deliberation takes entry ``i`` mod the list)::

    {"DEV": {"agents": [{"model": "Qwen/Qwen3-0.6B", "temperature": 0.2, "seed": 1,
                          "persona": "You care most about edge cases."},
                         {"temperature": 0.9}]},
     "QA": [{"temperature": 0.5}],
     "DEVOPS": {"checks": {"shellcheck": 1.0, "yamllint": 0.5}}}

A role without an entry (or a field left out) keeps ``sampling.council_sampling``'s spread, so a
council is diverse by default and configured where someone cared to.

``checks`` names the role checks the council runs and their weights (``role_checks``; a list
of names gives each weight 1); without it the role runs all of its checks at weight 1.

Who sits on a deliberation comes from the role's event-sourced council at the moment it starts
(``seat``): its members' ids, models and endpoints are recorded in its Started event.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from agent_runtime.api import Sampling
from agent_runtime.checks.role_checks.names import CHECKS_BY_ROLE, unknown_checks
from aggregates import AgentId, Role
from application.councils import CouncilAgentView, CouncilView
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
    checks: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    """Role → its role checks' weights (only the roles whose council names them)."""

    def check_weights(self, role: str) -> Mapping[str, float]:
        """The role checks ``role``'s council runs, with weights; empty: all, weight 1."""
        return self.checks.get(role.upper(), {})

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
    checks: dict[str, Mapping[str, float]] = {}
    for raw_role, value in data.items():
        try:
            role = Role.parse(str(raw_role)).value
        except ValueError as e:
            raise CouncilConfigError(f"councils: {e}") from None
        if isinstance(value, Mapping) and "checks" in value:
            checks[role] = parse_check_weights(role, value["checks"])
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
    return Councils(out, checks)


DEFAULT_COUNCIL_SIZE = 3
"""Agents per council when nothing else says (the seed's ``AUTO_INIT_COUNCILS``: 3 per role)."""


def startup_councils(
    councils: Councils, *, size: int = DEFAULT_COUNCIL_SIZE, model: str = ""
) -> list[CouncilView]:
    """The councils this configuration starts with, one per role, as the read model shows them:
    what readers fall back to where no council directory (event-sourced councils) is wired.
    A role's size is its configured agent list's length, else ``size``; agent ids are those a
    deliberation gives its council (``<role>-agent-<n>``)."""
    out = []
    for role in Role:
        specs = councils.by_role.get(role.value, ())
        n = len(specs) or size
        agents = [
            CouncilAgentView(
                agent_id=f"{role.value.lower()}-agent-{i + 1}",
                role=role.value,
                model=(specs[i].model if specs else "") or model,
            )
            for i in range(n)
        ]
        out.append(
            CouncilView(council_id=f"council-{role.value.lower()}", role=role.value,
                        agents=agents, model=model)
        )  # fmt: skip
    return out


def parse_check_weights(role: str, raw: object) -> dict[str, float]:
    """``councils.<ROLE>.checks``: a mapping of check name to weight, or a list of names.

    Raises:
        CouncilConfigError: not a mapping or list, an unknown check for the role (the message
            lists the role's checks), or a weight that is not a finite number >= 0.
    """
    where = f"councils.{role}.checks"
    if isinstance(raw, list):
        raw = {str(name): 1.0 for name in raw}
    if not isinstance(raw, Mapping):
        msg = f"{where} must be a mapping of check name to weight, or a list of names"
        raise CouncilConfigError(msg)
    unknown = unknown_checks(role, [str(k) for k in raw])
    if unknown:
        known = ", ".join(CHECKS_BY_ROLE.get(role, ())) or "none"
        msg = f"{where}: unknown check {unknown[0]!r} for {role} (its checks: {known})"
        raise CouncilConfigError(msg)
    weights: dict[str, float] = {}
    for name, weight in raw.items():
        if isinstance(weight, bool) or not isinstance(weight, int | float):
            raise CouncilConfigError(f"{where}.{name}: weight must be a number, got {weight!r}")
        if not math.isfinite(weight) or weight < 0:
            raise CouncilConfigError(f"{where}.{name}: weight must be finite and >= 0")
        weights[str(name)] = float(weight)
    return weights


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
    1, 2, 3, 1.2, 2.2). Each seat also carries the council's ``custom_params`` (``temperature``,
    ``max_tokens``) that its model requests take. None when the role has no council or an empty
    one (the dispatcher then invents no agents: the deliberation fails, saying why).
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
        seats[aid] = {
            "member": m.agent_id,
            "model": m.model,
            "endpoint": m.endpoint,
            **dict(council.custom_params),  # temperature, max_tokens: the council's, recorded
        }
    return Seating(agents, seats, council.version)
