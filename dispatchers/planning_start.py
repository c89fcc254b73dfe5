"""Where the planning consumers begin when they are first created: the cut-over setting.

A pure value (``FLEET_PLANNING_START``), parsed once into the settings; the JetStream adapter
(``dispatchers.jetstream.planning_consumer``) turns it into a deliver policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

__all__ = ["PlanningStart"]


@dataclass(frozen=True)
class PlanningStart:
    """Where a planning consumer begins the first time it is created (``FLEET_PLANNING_START``).

    ``new`` (the default): only what is published from now on; ``all``: everything the stream
    retains; an RFC 3339 time: what was stored at or after it; a number: from that stream
    sequence on.
    """

    policy: Literal["new", "all", "time", "sequence"] = "new"
    time: datetime | None = None
    sequence: int | None = None

    @classmethod
    def parse(cls, text: str | None, *, name: str = "FLEET_PLANNING_START") -> PlanningStart:
        """Read the setting; a ValueError names it and what it accepts."""
        value = (text or "new").strip()
        if value.lower() in ("new", "all"):
            return cls(policy="new" if value.lower() == "new" else "all")
        if value.isdigit():
            if int(value) < 1:
                raise ValueError(f"{name}={value}: a stream sequence starts at 1")
            return cls(policy="sequence", sequence=int(value))
        try:
            at = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            msg = (
                f"{name}={value!r} is not one of: new, all, an RFC 3339 time "
                "(2026-11-01T00:00:00Z) or a stream sequence (a positive integer)"
            )
            raise ValueError(msg) from None
        if at.tzinfo is None:
            raise ValueError(f"{name}={value!r}: an RFC 3339 time needs its offset (Z or +hh:mm)")
        return cls(policy="time", time=at.astimezone(UTC))

    def __str__(self) -> str:
        if self.policy == "time":
            assert self.time is not None
            return self.time.isoformat().replace("+00:00", "Z")
        return str(self.sequence) if self.policy == "sequence" else self.policy
