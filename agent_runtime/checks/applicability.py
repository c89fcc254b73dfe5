"""One convention for a check that cannot apply, shared by every check that may not.

A check that finds nothing it can judge (no sandbox to run code in, no peer wrote tests, no
shell block for shellcheck, ...) returns ``not_applicable(name, reason)``: it does *not* pass
(it did not run, and a check that did not run is never reported as passed), its score is 0,
its message starts with "not applicable: " and says why, and ``details["applicable"] ==
"false"`` tells every reader to leave it out: the score (``scoring.score``), "all passed"
(``aggregates.values.all_checks_passed``), ``fleet result`` ("–") and the web console.
"""

from __future__ import annotations

from collections.abc import Mapping

from aggregates.values import APPLICABLE_KEY, NOT_APPLICABLE, CheckOutcome

__all__ = ["NOT_APPLICABLE", "PREFIX", "is_applicable", "not_applicable"]

PREFIX = "not applicable: "


def not_applicable(
    name: str, reason: str, details: Mapping[str, str] | None = None
) -> CheckOutcome:
    """A check that cannot judge this answer: it says why (``reason``), does not pass and does
    not count."""
    return CheckOutcome(
        name, False, 0.0, PREFIX + reason, {**(details or {}), APPLICABLE_KEY: NOT_APPLICABLE}
    )


def is_applicable(outcome: CheckOutcome) -> bool:
    """Whether ``outcome`` counts in the score."""
    return outcome.applicable
