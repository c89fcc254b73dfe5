"""The report: its differences, at most a few per deliberation, and values shown for a reader."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum

from projectors.verify._log_scan import Log

_MAX_PER_DELIBERATION = 20


@dataclass(frozen=True)
class Difference:
    projection: str
    deliberation_id: str
    task_id: str
    detail: str


@dataclass
class VerifyReport:
    head: int = 0
    deliberations: int = 0
    positions: dict[str, int] = field(default_factory=dict)
    cache_misses: int = 0
    """Entries absent because they may have expired (reads fall back to a replay)."""
    differences: list[Difference] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.differences


def differences_of(projection: str, log: Log, d_id: str, details: list[str]) -> list[Difference]:
    """One deliberation's differences, at most ``_MAX_PER_DELIBERATION`` (then how many more)."""
    if len(details) > _MAX_PER_DELIBERATION:
        kept = details[: _MAX_PER_DELIBERATION - 1]
        details = [*kept, f"… and {len(details) - len(kept)} more differences"]
    task_id = log.task_id(d_id)
    return [Difference(projection, d_id, task_id, detail) for detail in details]


def pair(projection: str, found: object, expected: object) -> str:
    return f"{projection} {_show(found, expected)}, replay {_show(expected, found)}"


def _show(value: object, other: object, width: int = 60) -> str:
    """``value`` for a reader: short, and for long texts the part around the first difference."""
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, datetime):
        value = value.isoformat()
    if isinstance(value, str) and isinstance(other, str) and len(value) > width:
        start = next(
            (i for i, (a, b) in enumerate(zip(value, other, strict=False)) if a != b), len(other)
        )
        start = max(0, start - width // 3)
        cut = value[start : start + width]
        return ("…" if start else "") + repr(cut) + ("…" if start + width < len(value) else "")
    text = repr(value)
    return text if len(text) <= 2 * width else text[: 2 * width] + "…"
