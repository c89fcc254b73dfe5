"""Diversity across a council: each agent samples differently, and reproducibly.

Agent ``i`` of a role always gets the same temperature, seed and persona, so a rerun with the same
council on a deterministic endpoint gives the same answers, and the spread between agents is by
design rather than by accident of scheduling.
"""

from __future__ import annotations

import zlib

from agent_runtime.api import Sampling
from agent_runtime.member.prompts import DEFAULT_PERSONAS


def council_sampling(role: str, index: int, model: str = "") -> Sampling:
    """Sampling for agent ``index`` (0-based) of a ``role`` council."""
    return Sampling(
        model=model,
        temperature=round(min(1.0, 0.3 + 0.25 * (index % 4)), 2),
        seed=zlib.crc32(f"{role}:{index}".encode()) % 2**31,
        persona=DEFAULT_PERSONAS[index % len(DEFAULT_PERSONAS)],
    )
