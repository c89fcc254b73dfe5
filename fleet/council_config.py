"""The councils a node's configuration asks for: the seed's defaults, or ``FLEET_COUNCILS``
(parsed here, once, when ``Settings`` are made).

A node applies them as events when it starts (``CouncilEventStore.apply_configuration``): on an
empty store that creates the seed's councils (5 roles × 3 agents), on a restart with the same
configuration it records nothing, and a changed ``FLEET_COUNCILS`` is applied as the register,
unregister and reconfigure events it takes.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from application.council_store import DesiredCouncil, seed_councils
from dispatchers.councils import CouncilConfigError, Councils, parse_councils
from fleet.config import ConfigError, Settings


def parse_councils_setting(raw: str | None) -> Councils:
    """``FLEET_COUNCILS``: inline JSON, or a path to a JSON or YAML file. Every fault is one
    ``ConfigError`` line naming the variable (and the council field, when it is one)."""
    if not raw:
        return Councils()
    text, yaml_file = raw, False
    try:
        if not raw.lstrip().startswith("{"):
            text, yaml_file = Path(raw).read_text(), Path(raw).suffix in (".yaml", ".yml")
        data = (yaml.safe_load(text) or {}) if yaml_file else json.loads(text)
        if not isinstance(data, dict):
            raise ConfigError("FLEET_COUNCILS must be an object of role → council")
        return parse_councils(data)
    except OSError as e:
        raise ConfigError(f"FLEET_COUNCILS={raw!r}: {e}") from None
    except json.JSONDecodeError as e:
        raise ConfigError(f"FLEET_COUNCILS is not JSON: {e}") from None
    except CouncilConfigError as e:
        raise ConfigError(f"FLEET_COUNCILS: {e}") from None
    except yaml.YAMLError as e:
        one_line = " ".join(str(e).split())  # YAML's message spans lines
        raise ConfigError(f"FLEET_COUNCILS={raw!r} is not YAML: {one_line}") from None


def configured_councils(settings: Settings) -> dict[str, DesiredCouncil]:
    """Every role's council: ``FLEET_COUNCILS`` sets the members (one per listed agent, ids
    ``agent-<role>-001..``, with the agent's model) of the roles it names; the others keep the
    seed's three agents, unless ``AUTO_INIT_COUNCILS`` is off: then only the roles
    ``FLEET_COUNCILS`` names (none without it), and the rest get councils through the API.
    ``Settings`` parsed ``FLEET_COUNCILS`` already (a malformed one never gets this far).
    """
    by_role = settings.councils.by_role
    models = {role: [spec.model for spec in specs] for role, specs in by_role.items()}
    wanted = seed_councils(models)
    if not settings.auto_init_councils:
        wanted = {role: c for role, c in wanted.items() if role in models}
    return wanted
