"""One convention for a check that cannot apply, shared by every check that may not.

A check that finds nothing it can judge (no sandbox to run code in, no peer wrote tests, no
shell block for shellcheck, ...) returns ``not_applicable(name, reason)``: it *passes*
(it found nothing wrong, so a suite's ``all_passed`` is not spoiled by it), its message starts
with "not applicable: " and says why, and ``details["applicable"] == "false"`` tells the score
(``checks.score``) and ``fleet result`` ("–") to leave it out. Its score is a placeholder
that nothing reads.
"""

from __future__ import annotations

from collections.abc import Mapping

from aggregates.values import CheckOutcome

__all__ = ["NOT_APPLICABLE", "PREFIX", "is_applicable", "not_applicable"]

NOT_APPLICABLE = "false"
"""The value of ``details["applicable"]`` on a check that does not count."""
PREFIX = "not applicable: "


def not_applicable(
    name: str, reason: str, details: Mapping[str, str] | None = None
) -> CheckOutcome:
    """A check that cannot judge this answer: it says why (``reason``) and does not count."""
    return CheckOutcome(
        name, True, 1.0, PREFIX + reason, {**(details or {}), "applicable": NOT_APPLICABLE}
    )


def is_applicable(outcome: CheckOutcome) -> bool:
    """Whether ``outcome`` counts in the score."""
    return outcome.details.get("applicable") != NOT_APPLICABLE
