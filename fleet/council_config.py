"""The councils a node's configuration asks for: the seed's defaults, or ``FLEET_COUNCILS``
(parsed once, with every other setting, by ``fleet.config``).

A node applies them as events when it starts (``CouncilEventStore.apply_configuration``): on an
empty store that creates the seed's councils (5 roles × 3 agents), on a restart with the same
configuration it records nothing, and a changed ``FLEET_COUNCILS`` is applied as the register,
unregister and reconfigure events it takes.
"""

from __future__ import annotations

from application.council_store import DesiredCouncil, seed_councils
from fleet.config import Settings


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
